/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Ferrostream's C interface to TensorRT 10.x and 11.x (the shim, fs_trt.cpp). TensorRT is C++ with only
 * its factories exported as C symbols; the shim turns the part rstrtinfer uses into plain C
 * functions over opaque handles. It loads libnvinfer and libnvonnxparser itself (dlopen), so
 * nothing links against TensorRT and a build with the shim still starts without it.
 *
 * Conventions: functions returning a handle return NULL on failure and, where they take
 * (err, err_len), write a NUL-terminated message there. Functions returning int return 0 on
 * success. Handles are freed by their *_free function; a context must be freed before its
 * engine, an engine before its runtime. Every struct here is mirrored in Rust (engine/tensorrt/
 * ffi.rs) and checked by fs_trt_layout. */
#ifndef FS_TRT_H
#define FS_TRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FS_TRT_MAX_DIMS 8

/* nvinfer1::Dims64: a shape of up to 8 dimensions; -1 marks a dynamic one. */
typedef struct FsTrtDims {
    int32_t nb_dims;
    int32_t reserved;
    int64_t d[FS_TRT_MAX_DIMS];
} FsTrtDims;

/* One input or output of an engine. `name` belongs to the engine. Profile shapes are those of
 * optimisation profile 0 (inputs only; zero dims otherwise). */
typedef struct FsTrtTensorDesc {
    const char* name;
    int32_t io_mode;   /* nvinfer1::TensorIOMode: 1 input, 2 output */
    int32_t data_type; /* nvinfer1::DataType */
    int32_t format;    /* nvinfer1::TensorFormat */
    int32_t reserved;
    FsTrtDims shape;
    FsTrtDims profile_min;
    FsTrtDims profile_max;
} FsTrtTensorDesc;

/* How to build an engine from ONNX. */
typedef struct FsTrtBuildConfig {
    /* Bits of nvinfer1::BuilderFlag to set (1 << kFP16, 1 << kINT8, 1 << kGPU_FALLBACK...). */
    uint64_t builder_flags;
    /* nvinfer1::MemoryPoolType::kWORKSPACE limit in bytes; 0 keeps TensorRT's default. */
    uint64_t workspace_bytes;
    /* Optimisation profile of the (first) input's batch dimension. */
    int32_t min_batch;
    int32_t opt_batch;
    int32_t max_batch;
    /* DLA core to build for (default device type kDLA), or -1 for the GPU. */
    int32_t dla_core;
    /* INT8 calibration cache to read (nvinfer's int8-calib-file), or NULL. */
    const char* int8_calibration_cache;
} FsTrtBuildConfig;

/* Sizes and offsets of the structs above as this compiler lays them out. */
typedef struct FsTrtLayout {
    uint32_t dims_size;
    uint32_t dims_d;
    uint32_t tensor_desc_size;
    uint32_t tensor_desc_shape;
    uint32_t tensor_desc_profile_max;
    uint32_t build_config_size;
    uint32_t build_config_dla_core;
    uint32_t build_config_int8_calibration_cache;
} FsTrtLayout;

/* Receives TensorRT's log: severity 0 internal error, 1 error, 2 warning, 3 info, 4 verbose. */
typedef void (*FsTrtLogFn)(void* user, int32_t severity, const char* message);

typedef struct FsTrtLibrary FsTrtLibrary;
typedef struct FsTrtRuntime FsTrtRuntime;
typedef struct FsTrtEngine FsTrtEngine;
typedef struct FsTrtContext FsTrtContext;
typedef struct FsTrtBlob FsTrtBlob;

void fs_trt_layout(FsTrtLayout* out);

/* NV_TENSORRT_VERSION of the headers the shim was compiled against (major*10000 + minor*100 +
 * patch), and whether those were Ferrostream's declarations for the compile check only (such a
 * shim never loads TensorRT). */
int32_t fs_trt_header_version(void);
int32_t fs_trt_compile_check_only(void);

/* Loads libnvinfer (and libnvonnxparser, which may be NULL or missing: building from ONNX is
 * then unavailable) from the given paths, as dlopen resolves them. */
FsTrtLibrary* fs_trt_library_open(const char* nvinfer, const char* onnxparser, char* err,
                                  size_t err_len);
/* getInferLibVersion() of the loaded library. */
int32_t fs_trt_library_version(const FsTrtLibrary* lib);
int32_t fs_trt_library_has_onnx_parser(const FsTrtLibrary* lib);
void fs_trt_library_free(FsTrtLibrary* lib);

FsTrtRuntime* fs_trt_runtime_new(FsTrtLibrary* lib, FsTrtLogFn log, void* user, char* err,
                                 size_t err_len);
int32_t fs_trt_runtime_dla_cores(const FsTrtRuntime* runtime);
void fs_trt_runtime_free(FsTrtRuntime* runtime);

/* Deserialises an engine (a .engine/.plan file's bytes); dla_core >= 0 selects the DLA core an
 * engine built for the DLA runs on. */
FsTrtEngine* fs_trt_engine_new(FsTrtRuntime* runtime, const void* data, size_t len,
                               int32_t dla_core, char* err, size_t err_len);
int32_t fs_trt_engine_io_count(const FsTrtEngine* engine);
int fs_trt_engine_io(const FsTrtEngine* engine, int32_t index, FsTrtTensorDesc* out);
void fs_trt_engine_free(FsTrtEngine* engine);

FsTrtContext* fs_trt_context_new(FsTrtEngine* engine, char* err, size_t err_len);
int fs_trt_context_set_input_shape(FsTrtContext* context, const char* name,
                                   const FsTrtDims* dims);
int fs_trt_context_set_address(FsTrtContext* context, const char* name, void* address);
/* Enqueues the inference on `stream` (a CUstream / cudaStream_t). */
int fs_trt_context_enqueue(FsTrtContext* context, void* stream);
void fs_trt_context_free(FsTrtContext* context);

/* Parses an ONNX model and builds a serialised engine. Progress and problems go to `log`. */
FsTrtBlob* fs_trt_build_onnx(FsTrtLibrary* lib, const FsTrtBuildConfig* config,
                             const void* onnx, size_t onnx_len, FsTrtLogFn log, void* user,
                             char* err, size_t err_len);
const void* fs_trt_blob_data(const FsTrtBlob* blob);
size_t fs_trt_blob_size(const FsTrtBlob* blob);
void fs_trt_blob_free(FsTrtBlob* blob);

#ifdef __cplusplus
}
#endif

#endif
