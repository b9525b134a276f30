/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * C interface of Ferrostream's shim around nvinfer custom parsers (fs_nvdsparse.cpp). Rust
 * resolves the parser function in its library and calls it through these functions, which
 * build the C++ arguments (std::vector, std::string), catch C++ exceptions and copy results
 * out through callbacks.
 */
#ifndef FS_NVDSPARSE_H
#define FS_NVDSPARSE_H

#include <stddef.h>

#include "nvdsinfer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the parser said: it returned true, returned false, or threw. */
enum {
    FS_PARSE_OK = 0,
    FS_PARSE_FALSE = 1,
    FS_PARSE_THREW = 2
};

/* The configuration a bounding-box or instance-mask parser is given. */
typedef struct {
    unsigned int num_classes;
    const float *pre_cluster_thresholds;  /* num_classes values */
    const float *post_cluster_thresholds; /* num_classes values */
} FsDetectionParams;

/* One bounding box as the shim hands it over, whichever layout the library used: DeepStream 9's
 * NvDsInferObjectDetectionInfo (28 bytes), rotation_angle (radians) 0 for libraries built against
 * DeepStream 6-8. */
typedef struct {
    unsigned int classId;
    float left;
    float top;
    float width;
    float height;
    float detectionConfidence;
    float rotation_angle;
} FsObjectInfo;

typedef void (*FsEmitObject)(void *ctx, const FsObjectInfo *object);
typedef void (*FsEmitMaskObject)(void *ctx, const NvDsInferInstanceMaskInfo *object);
typedef void (*FsEmitAttribute)(void *ctx, const NvDsInferAttribute *attribute);

/* Calls an NvDsInferParseCustomFunc; each object goes to `emit`. On FS_PARSE_THREW, `error`
 * holds the exception's message. */
int fs_nvds_parse_bbox(void *func, const NvDsInferLayerInfo *layers, size_t num_layers,
                       const NvDsInferNetworkInfo *network, const FsDetectionParams *params,
                       FsEmitObject emit, void *ctx, char *error, size_t error_len);

/* The same for a library built against DeepStream 9's headers (9.0 and later), whose
 * NvDsInferObjectDetectionInfo has a rotation angle after the confidence (28 bytes, not 24). */
int fs_nvds_parse_bbox_ds9(void *func, const NvDsInferLayerInfo *layers, size_t num_layers,
                           const NvDsInferNetworkInfo *network, const FsDetectionParams *params,
                           FsEmitObject emit, void *ctx, char *error, size_t error_len);

/* Calls an NvDsInferInstanceMaskParseCustomFunc; each object goes to `emit`, then its mask is
 * released with delete[]. */
int fs_nvds_parse_instance_mask(void *func, const NvDsInferLayerInfo *layers,
                                size_t num_layers, const NvDsInferNetworkInfo *network,
                                const FsDetectionParams *params, FsEmitMaskObject emit, void *ctx,
                                char *error, size_t error_len);

/* Calls an NvDsInferClassiferParseCustomFunc; each attribute goes to `emit`, then its label is
 * released with free(). The description string is copied into `description` (truncated,
 * always NUL-terminated). */
int fs_nvds_parse_classifier(void *func, const NvDsInferLayerInfo *layers, size_t num_layers,
                             const NvDsInferNetworkInfo *network, float threshold,
                             FsEmitAttribute emit, void *ctx, char *description,
                             size_t description_len, char *error, size_t error_len);

/* Calls an NvDsInferSemSegmentationParseCustomFunc with `class_map` (network width x height
 * ints, which the caller allocated, as nvinfer does). The parser may point its probability map at
 * memory of its own or at an output; that pointer is not used, nor freed (nvinfer does not free
 * it either). */
int fs_nvds_parse_segmentation(void *func, const NvDsInferLayerInfo *layers, size_t num_layers,
                               const NvDsInferNetworkInfo *network, float threshold,
                               unsigned int num_classes, int *class_map, char *error,
                               size_t error_len);

/* sizeof of the structures, for the Rust mirror's layout tests. */
size_t fs_nvds_sizeof_layer_info(void);
size_t fs_nvds_sizeof_detection_params(void);
/* DeepStream 9's NvDsInferObjectDetectionInfo as the shim reads it: its size and the offset of
 * rotation_angle. */
size_t fs_nvds_sizeof_object_ds9(void);
size_t fs_nvds_offsetof_rotation_angle_ds9(void);

#ifdef __cplusplus
}
#endif

#endif /* FS_NVDSPARSE_H */
