/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Ferrostream's declarations of the data types that DeepStream's nvinfer passes to custom output
 * parsers, with the same layout and names as DeepStream's documented `nvdsinfer.h`, so that a
 * parser library written for nvinfer builds against either header and loads in rstrtinfer
 * unchanged. Only the parser-facing part of that interface is declared.
 *
 * Layouts (x86_64 and aarch64, LP64) are pinned by static_asserts below and by the Rust mirror's
 * tests (gst-trtinfer/src/custom/abi.rs).
 */
#ifndef FERROSTREAM_NVDSINFER_H
#define FERROSTREAM_NVDSINFER_H

#ifdef __cplusplus
extern "C" {
#endif

/* The most dimensions a layer has. */
#define NVDSINFER_MAX_DIMS 8

/* Dimensions of one batch item of a layer (the batch dimension excluded). */
typedef struct {
    unsigned int numDims;
    unsigned int d[NVDSINFER_MAX_DIMS];
    unsigned int numElements;
} NvDsInferDims;

/* Dimensions of a layer in channels, height, width order. */
typedef struct {
    unsigned int c;
    unsigned int h;
    unsigned int w;
} NvDsInferDimsCHW;

/* Element type of a layer's buffer (INT64 and UINT8 since DeepStream 8). */
typedef enum {
    FLOAT = 0,
    HALF = 1,
    INT8 = 2,
    INT32 = 3,
    INT64 = 4,
    UINT8 = 5
} NvDsInferDataType;

/* One layer of the network: its type, dimensions, name and (host) buffer for one batch item. */
typedef struct {
    NvDsInferDataType dataType;
    union {
        NvDsInferDims inferDims;
        NvDsInferDims dims; /* older name of inferDims */
    };
    int bindingIndex;
    const char *layerName;
    void *buffer;
    int isInput;
} NvDsInferLayerInfo;

/* The network input size. */
typedef struct {
    unsigned int width;
    unsigned int height;
    unsigned int channels;
} NvDsInferNetworkInfo;

/* One detected object, in network-input pixels. (DeepStream 9 appends a rotation angle, making
 * it 28 bytes: rstrtinfer reads libraries built against DeepStream 9's headers in that layout
 * when custom-lib-deepstream-version=9.) */
typedef struct {
    unsigned int classId;
    float left;
    float top;
    float width;
    float height;
    float detectionConfidence;
} NvDsInferObjectDetectionInfo;

typedef NvDsInferObjectDetectionInfo NvDsInferParseObjectInfo;

/* One detected object with its instance mask: `mask` holds mask_width x mask_height floats
 * (mask_size bytes), allocated by the parser with new[]. */
typedef struct {
    unsigned int classId;
    float left;
    float top;
    float width;
    float height;
    float detectionConfidence;
    float *mask;
    unsigned int mask_width;
    unsigned int mask_height;
    unsigned int mask_size;
} NvDsInferInstanceMaskInfo;

/* One attribute a classifier found: `attributeLabel` is allocated by the parser (malloc/strdup)
 * and freed by the caller with free(). */
typedef struct {
    unsigned int attributeIndex;
    unsigned int attributeValue;
    float attributeConfidence;
    char *attributeLabel;
} NvDsInferAttribute;

#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
static_assert(sizeof(NvDsInferDims) == 40, "NvDsInferDims layout");
static_assert(sizeof(NvDsInferLayerInfo) == 72, "NvDsInferLayerInfo layout");
static_assert(sizeof(NvDsInferNetworkInfo) == 12, "NvDsInferNetworkInfo layout");
static_assert(sizeof(NvDsInferObjectDetectionInfo) == 24, "NvDsInferObjectDetectionInfo layout");
static_assert(sizeof(NvDsInferInstanceMaskInfo) == 48, "NvDsInferInstanceMaskInfo layout");
static_assert(sizeof(NvDsInferAttribute) == 24, "NvDsInferAttribute layout");
#endif

#endif /* FERROSTREAM_NVDSINFER_H */
