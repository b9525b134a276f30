/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Ferrostream's declarations of the custom-parser interface of DeepStream's nvinfer, with the
 * same names, types and calling convention as DeepStream's documented `nvdsinfer_custom_impl.h`:
 * the detection parameters handed to a bounding-box parser and the three parser signatures. A
 * parser library exports its functions with C linkage (extern "C"); they take C++ references
 * (std::vector, std::string), so the library and its caller must share the C++ standard
 * library's ABI (on Linux, libstdc++).
 */
#ifndef FERROSTREAM_NVDSINFER_CUSTOM_IMPL_H
#define FERROSTREAM_NVDSINFER_CUSTOM_IMPL_H

#include <string>
#include <type_traits>
#include <vector>

#include "nvdsinfer.h"

/* What a bounding-box parser is told about the configuration: the number of classes
 * (num-detected-classes) and each class's pre- and post-clustering thresholds.
 * `perClassThreshold` is the older name of the pre-clustering thresholds: a reference member
 * bound to them (so the structure refers to itself and is built in place, never copied). */
typedef struct _NvDsInferParseDetectionParams {
    unsigned int numClassesConfigured;
    std::vector<float> perClassPreclusterThreshold;
    std::vector<float> perClassPostclusterThreshold;
    std::vector<float> &perClassThreshold = perClassPreclusterThreshold;
} NvDsInferParseDetectionParams;

/* parse-bbox-func-name: outputs of one frame -> objects in network-input pixels. */
typedef bool (*NvDsInferParseCustomFunc)(
    std::vector<NvDsInferLayerInfo> const &outputLayersInfo,
    NvDsInferNetworkInfo const &networkInfo,
    NvDsInferParseDetectionParams const &detectionParams,
    std::vector<NvDsInferObjectDetectionInfo> &objectList);

/* parse-bbox-instance-mask-func-name: as above, with an instance mask per object. */
typedef bool (*NvDsInferInstanceMaskParseCustomFunc)(
    std::vector<NvDsInferLayerInfo> const &outputLayersInfo,
    NvDsInferNetworkInfo const &networkInfo,
    NvDsInferParseDetectionParams const &detectionParams,
    std::vector<NvDsInferInstanceMaskInfo> &objectList);

/* parse-classifier-func-name: outputs of one object -> attributes (and a description). */
typedef bool (*NvDsInferClassiferParseCustomFunc)(
    std::vector<NvDsInferLayerInfo> const &outputLayersInfo,
    NvDsInferNetworkInfo const &networkInfo,
    float classifierThreshold,
    std::vector<NvDsInferAttribute> &attrList,
    std::string &descString);

/* parse-segmentation-func-name: outputs of one frame -> a class per pixel of the network input
 * (classificationMap: width x height ints, allocated by the caller; -1 where none) and,
 * optionally, a pointer to per-class probabilities the parser keeps (the caller never frees it). */
typedef bool (*NvDsInferSemSegmentationParseCustomFunc)(
    std::vector<NvDsInferLayerInfo> const &outputLayersInfo,
    NvDsInferNetworkInfo const &networkInfo,
    float segmentationThreshold,
    unsigned int numClasses,
    int *classificationMap,
    float *&classProbabilityMap);

/* Compile-time checks that a parser has the signature its kind requires, placed after the
 * function's definition in a parser library. */
#define CHECK_CUSTOM_PARSE_FUNC_PROTOTYPE(func)                                                  \
    static_assert(std::is_same<decltype(&func), NvDsInferParseCustomFunc>::value,              \
                  #func " does not have the signature of a bounding-box parser")
#define CHECK_CUSTOM_INSTANCE_MASK_PARSE_FUNC_PROTOTYPE(func)                                    \
    static_assert(std::is_same<decltype(&func), NvDsInferInstanceMaskParseCustomFunc>::value,  \
                  #func " does not have the signature of an instance-mask parser")
#define CHECK_CUSTOM_CLASSIFIER_PARSE_FUNC_PROTOTYPE(func)                                       \
    static_assert(std::is_same<decltype(&func), NvDsInferClassiferParseCustomFunc>::value,     \
                  #func " does not have the signature of a classifier parser")
#define CHECK_CUSTOM_SEM_SEGMENTATION_PARSE_FUNC_PROTOTYPE(func)                                 \
    static_assert(std::is_same<decltype(&func), NvDsInferSemSegmentationParseCustomFunc>::value, \
                  #func " does not have the signature of a segmentation parser")

static_assert(sizeof(NvDsInferParseDetectionParams) == 8 + 2 * sizeof(std::vector<float>) + 8,
              "NvDsInferParseDetectionParams layout");

#endif /* FERROSTREAM_NVDSINFER_CUSTOM_IMPL_H */
