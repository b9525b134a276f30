// SPDX-License-Identifier: MIT OR Apache-2.0
// Prints the layout facts of the NVIDIA headers on the include path that Ferrostream mirrors:
// sizes and field offsets of structures, and the values of the enum constants and macros it
// uses, one "key value" line each, in sections named after the header. A header that is not on
// the include path gives no section. Built and compared with Ferrostream's own definitions by
// tests/tests/nvidia_headers.rs; see that file for where the headers come from.
//
//   c++ -std=c++17 -I<headers> tests/nvidia-headers/nv_layout.cpp -o nv_layout && ./nv_layout

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <type_traits>

#define SECTION(name) std::printf("section %s\n", name)
#define SIZE(T) std::printf("%s.sizeof %zu\n", #T, sizeof(T))
#define OFF(T, f) std::printf("%s.%s %zu\n", #T, #f, offsetof(T, f))
#define VAL(v) std::printf("%s %lld\n", #v, static_cast<long long>(v))
#define NAMED(name, v) std::printf("%s %lld\n", name, static_cast<long long>(v))

// Fields that only some versions of a header have: printed when the structure has them.
#define OPTIONAL_FIELD(T, f)                                                                   \
    template <typename U, typename = void>                                                     \
    struct has_##T##_##f : std::false_type {};                                                 \
    template <typename U>                                                                      \
    struct has_##T##_##f<U, std::void_t<decltype(&U::f)>> : std::true_type {};                 \
    template <typename U>                                                                      \
    static void print_##T##_##f() {                                                            \
        if constexpr (has_##T##_##f<U>::value) {                                               \
            std::printf("%s.%s %zu\n", #T, #f, offsetof(U, f));                                \
        }                                                                                      \
    }

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
// Newer TensorRT 10.x deprecates some of the values printed (kFP16, kINT8, the calibrators).
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

#if __has_include(<nvds_version.h>)
#include <nvds_version.h>
#endif

// ---------------------------------------------------------------------------------------------
#if __has_include(<nvbufsurface.h>)
#include <nvbufsurface.h>
OPTIONAL_FIELD(NvBufSurface, isImportedBuf)
OPTIONAL_FIELD(NvBufSurfaceMappedAddr, nvmmPtr)
OPTIONAL_FIELD(NvBufSurfaceMappedAddr, cudaPtr)
OPTIONAL_FIELD(NvBufSurfaceParams, cudaBuffer)

static void nvbufsurface() {
    SECTION("nvbufsurface");
#ifdef NVDS_VERSION_MAJOR
    VAL(NVDS_VERSION_MAJOR);
    VAL(NVDS_VERSION_MINOR);
#endif
    VAL(STRUCTURE_PADDING);
    VAL(NVBUF_MAX_PLANES);
    SIZE(NvBufSurfacePlaneParams);
    OFF(NvBufSurfacePlaneParams, num_planes);
    OFF(NvBufSurfacePlaneParams, width);
    OFF(NvBufSurfacePlaneParams, height);
    OFF(NvBufSurfacePlaneParams, pitch);
    OFF(NvBufSurfacePlaneParams, offset);
    OFF(NvBufSurfacePlaneParams, psize);
    OFF(NvBufSurfacePlaneParams, bytesPerPix);
    OFF(NvBufSurfacePlaneParams, _reserved);
    SIZE(NvBufSurfaceMappedAddr);
    OFF(NvBufSurfaceMappedAddr, addr);
    OFF(NvBufSurfaceMappedAddr, eglImage);
    print_NvBufSurfaceMappedAddr_nvmmPtr<NvBufSurfaceMappedAddr>();
    print_NvBufSurfaceMappedAddr_cudaPtr<NvBufSurfaceMappedAddr>();
    OFF(NvBufSurfaceMappedAddr, _reserved);
    SIZE(NvBufSurfaceParams);
    OFF(NvBufSurfaceParams, width);
    OFF(NvBufSurfaceParams, height);
    OFF(NvBufSurfaceParams, pitch);
    OFF(NvBufSurfaceParams, colorFormat);
    OFF(NvBufSurfaceParams, layout);
    OFF(NvBufSurfaceParams, bufferDesc);
    OFF(NvBufSurfaceParams, dataSize);
    OFF(NvBufSurfaceParams, dataPtr);
    OFF(NvBufSurfaceParams, planeParams);
    OFF(NvBufSurfaceParams, mappedAddr);
    OFF(NvBufSurfaceParams, paramex);
    print_NvBufSurfaceParams_cudaBuffer<NvBufSurfaceParams>();
    OFF(NvBufSurfaceParams, _reserved);
    SIZE(NvBufSurface);
    OFF(NvBufSurface, gpuId);
    OFF(NvBufSurface, batchSize);
    OFF(NvBufSurface, numFilled);
    OFF(NvBufSurface, isContiguous);
    OFF(NvBufSurface, memType);
    OFF(NvBufSurface, surfaceList);
    print_NvBufSurface_isImportedBuf<NvBufSurface>();
    OFF(NvBufSurface, _reserved);
    VAL(NVBUF_MEM_DEFAULT);
    VAL(NVBUF_MEM_CUDA_PINNED);
    VAL(NVBUF_MEM_CUDA_DEVICE);
    VAL(NVBUF_MEM_CUDA_UNIFIED);
    VAL(NVBUF_MEM_SURFACE_ARRAY);
    VAL(NVBUF_MEM_HANDLE);
    VAL(NVBUF_MEM_SYSTEM);
    VAL(NVBUF_LAYOUT_PITCH);
    VAL(NVBUF_LAYOUT_BLOCK_LINEAR);
    VAL(NVBUF_MAP_READ);
    VAL(NVBUF_MAP_WRITE);
    VAL(NVBUF_MAP_READ_WRITE);
    VAL(NVBUF_COLOR_FORMAT_GRAY8);
    VAL(NVBUF_COLOR_FORMAT_YUV420);
    VAL(NVBUF_COLOR_FORMAT_YVU420);
    VAL(NVBUF_COLOR_FORMAT_NV12);
    VAL(NVBUF_COLOR_FORMAT_NV12_ER);
    VAL(NVBUF_COLOR_FORMAT_NV21);
    VAL(NVBUF_COLOR_FORMAT_YUV444);
    VAL(NVBUF_COLOR_FORMAT_RGBA);
    VAL(NVBUF_COLOR_FORMAT_BGRA);
    VAL(NVBUF_COLOR_FORMAT_RGBx);
    VAL(NVBUF_COLOR_FORMAT_BGRx);
    VAL(NVBUF_COLOR_FORMAT_RGB);
    VAL(NVBUF_COLOR_FORMAT_BGR);
    VAL(NVBUF_COLOR_FORMAT_NV12_10LE);
    VAL(NVBUF_COLOR_FORMAT_NV12_709);
    VAL(NVBUF_COLOR_FORMAT_NV12_709_ER);
    VAL(NVBUF_COLOR_FORMAT_NV12_2020);
}
#else
static void nvbufsurface() {}
#endif

// ---------------------------------------------------------------------------------------------
#if __has_include(<cudla.h>)
#include <cudla.h>
static void cudla() {
    SECTION("cudla");
    VAL(CUDLA_VER_MAJOR);
    VAL(CUDLA_VER_MINOR);
    SIZE(cudlaTask);
    OFF(cudlaTask, moduleHandle);
    OFF(cudlaTask, outputTensor);
    OFF(cudlaTask, numOutputTensors);
    OFF(cudlaTask, numInputTensors);
    OFF(cudlaTask, inputTensor);
    OFF(cudlaTask, waitEvents);
    OFF(cudlaTask, signalEvents);
    SIZE(cudlaModuleTensorDescriptor);
    OFF(cudlaModuleTensorDescriptor, name);
    OFF(cudlaModuleTensorDescriptor, size);
    OFF(cudlaModuleTensorDescriptor, n);
    OFF(cudlaModuleTensorDescriptor, c);
    OFF(cudlaModuleTensorDescriptor, h);
    OFF(cudlaModuleTensorDescriptor, w);
    OFF(cudlaModuleTensorDescriptor, dataFormat);
    OFF(cudlaModuleTensorDescriptor, dataType);
    OFF(cudlaModuleTensorDescriptor, dataCategory);
    OFF(cudlaModuleTensorDescriptor, pixelFormat);
    OFF(cudlaModuleTensorDescriptor, pixelMapping);
    OFF(cudlaModuleTensorDescriptor, stride);
    SIZE(cudlaModuleAttribute);
    SIZE(cudlaExternalMemoryHandleDesc);
    OFF(cudlaExternalMemoryHandleDesc, extBufObject);
    OFF(cudlaExternalMemoryHandleDesc, size);
    VAL(CUDLA_CUDA_DLA);
    VAL(CUDLA_STANDALONE);
    VAL(CUDLA_NUM_INPUT_TENSORS);
    VAL(CUDLA_NUM_OUTPUT_TENSORS);
    VAL(CUDLA_INPUT_TENSOR_DESCRIPTORS);
    VAL(CUDLA_OUTPUT_TENSOR_DESCRIPTORS);
    VAL(CUDLA_DATA_FORMAT_NCHW);
    VAL(CUDLA_DATA_FORMAT_NHWC);
    VAL(CUDLA_DATA_FORMAT_NCxHWx);
    VAL(CUDLA_DATA_TYPE_FLOAT);
    VAL(CUDLA_DATA_TYPE_HALF);
    VAL(CUDLA_DATA_TYPE_INT16);
    VAL(CUDLA_DATA_TYPE_INT8);
    VAL(CUDLA_DATA_TYPE_UINT8);
    VAL(CUDLA_DATA_TYPE_UINT16);
    VAL(CUDLA_RUNTIME_TENSOR_DESC_NAME_MAX_LEN);
    VAL(CUDLA_LOADABLE_TENSOR_DESC_NUM_STRIDES);
    VAL(cudlaSuccess);
    VAL(cudlaErrorInvalidParam);
    VAL(cudlaErrorOutOfResources);
    VAL(cudlaErrorCreationFailed);
    VAL(cudlaErrorInvalidAddress);
    VAL(cudlaErrorOs);
    VAL(cudlaErrorCuda);
    VAL(cudlaErrorUmd);
    VAL(cudlaErrorInvalidDevice);
    VAL(cudlaErrorInvalidAttribute);
    VAL(cudlaErrorIncompatibleDlaSWVersion);
    VAL(cudlaErrorMemoryRegistered);
    VAL(cudlaErrorInvalidModule);
    VAL(cudlaErrorUnsupportedOperation);
    VAL(cudlaErrorNvSci);
    VAL(cudlaErrorDlaErrInvalidInput);
    VAL(cudlaErrorDlaErrInvalidPreAction);
    VAL(cudlaErrorDlaErrNoMem);
    VAL(cudlaErrorDlaErrProcessorBusy);
    VAL(cudlaErrorDlaErrTaskStatusMismatch);
    VAL(cudlaErrorDlaErrEngineTimeout);
    VAL(cudlaErrorDlaErrDataMismatch);
    VAL(cudlaErrorUnknown);
    // Standalone mode: NvSci imports, fences and task events.
    SIZE(cudlaExternalSemaphoreHandleDesc);
    OFF(cudlaExternalSemaphoreHandleDesc, extSyncObject);
    SIZE(CudlaFence);
    OFF(CudlaFence, fence);
    OFF(CudlaFence, type);
    SIZE(cudlaWaitEvents);
    OFF(cudlaWaitEvents, preFences);
    OFF(cudlaWaitEvents, numEvents);
    SIZE(cudlaSignalEvents);
    OFF(cudlaSignalEvents, devPtrs);
    OFF(cudlaSignalEvents, eofFences);
    OFF(cudlaSignalEvents, numEvents);
    VAL(CUDLA_NVSCISYNC_ATTR_WAIT);
    VAL(CUDLA_NVSCISYNC_ATTR_SIGNAL);
    VAL(CUDLA_NVSCISYNC_FENCE);
    VAL(CUDLA_NVSCISYNC_FENCE_SOF);
    VAL(CUDLA_READ_WRITE_PERM);
    VAL(CUDLA_READ_ONLY_PERM);
    VAL(CUDLA_SUBMIT_NOOP);
}
#else
static void cudla() {}
#endif

// ---------------------------------------------------------------------------------------------
// What CUDA offers for NvSci (cuda.h): the handle types and attribute flags Ferrostream passes
// through cudarc's bindings.
#if __has_include(<cuda.h>)
#include <cuda.h>
static void cuda_nvsci() {
    SECTION("cuda_nvsci");
    VAL(CUDA_VERSION);
    VAL(CUDA_NVSCISYNC_ATTR_SIGNAL);
    VAL(CUDA_NVSCISYNC_ATTR_WAIT);
    VAL(CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD);
    VAL(CU_EXTERNAL_MEMORY_HANDLE_TYPE_NVSCIBUF);
    VAL(CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_NVSCISYNC);
    SIZE(CUDA_EXTERNAL_MEMORY_HANDLE_DESC);
    OFF(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, handle);
    OFF(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, size);
    SIZE(CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS);
    SIZE(CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS);
    NAMED("CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS.params.nvSciSync",
          offsetof(CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS, params.nvSciSync));
    NAMED("CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS.params.nvSciSync",
          offsetof(CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, params.nvSciSync));
}
#else
static void cuda_nvsci() {}
#endif

// ---------------------------------------------------------------------------------------------
// NvSciBuf and NvSciSync (Jetson Linux, DRIVE OS).
#if __has_include(<nvscibuf.h>) && __has_include(<nvscisync.h>)
#include <nvscibuf.h>
#include <nvscisync.h>
static void nvsci() {
    SECTION("nvsci");
    VAL(NvSciBufMajorVersion);
    VAL(NvSciBufMinorVersion);
    VAL(NvSciSyncMajorVersion);
    VAL(NvSciSyncMinorVersion);
    SIZE(NvSciBufAttrKeyValuePair);
    OFF(NvSciBufAttrKeyValuePair, key);
    OFF(NvSciBufAttrKeyValuePair, value);
    OFF(NvSciBufAttrKeyValuePair, len);
    SIZE(NvSciSyncAttrKeyValuePair);
    OFF(NvSciSyncAttrKeyValuePair, attrKey);
    OFF(NvSciSyncAttrKeyValuePair, value);
    OFF(NvSciSyncAttrKeyValuePair, len);
    SIZE(NvSciSyncFence);
    SIZE(NvSciRmGpuId);
    SIZE(NvSciBufAttrValAccessPerm);
    SIZE(NvSciBufType);
    SIZE(NvSciSyncAccessPerm);
    VAL(NvSciBufType_RawBuffer);
    VAL(NvSciBufType_Tensor);
    VAL(NvSciBufGeneralAttrKey_Types);
    VAL(NvSciBufGeneralAttrKey_NeedCpuAccess);
    VAL(NvSciBufGeneralAttrKey_RequiredPerm);
    VAL(NvSciBufGeneralAttrKey_EnableCpuCache);
    VAL(NvSciBufGeneralAttrKey_GpuId);
    VAL(NvSciBufRawBufferAttrKey_Size);
    VAL(NvSciBufRawBufferAttrKey_Align);
    VAL(NvSciBufAccessPerm_Readonly);
    VAL(NvSciBufAccessPerm_ReadWrite);
    VAL(NvSciSyncAttrKey_NeedCpuAccess);
    VAL(NvSciSyncAttrKey_RequiredPerm);
    VAL(NvSciSyncAccessPerm_WaitOnly);
    VAL(NvSciSyncAccessPerm_SignalOnly);
    VAL(NvSciSyncAccessPerm_WaitSignal);
    VAL(NvSciSyncFenceMaxTimeout);
}
#else
static void nvsci() {}
#endif

// ---------------------------------------------------------------------------------------------
#if __has_include(<cudaEGL.h>) && __has_include(<EGL/egl.h>)
#include <cudaEGL.h>
static void cuda_egl() {
    SECTION("cudaEGL");
    VAL(CUDA_VERSION);
    SIZE(CUeglFrame);
    OFF(CUeglFrame, frame);
    OFF(CUeglFrame, width);
    OFF(CUeglFrame, height);
    OFF(CUeglFrame, depth);
    OFF(CUeglFrame, pitch);
    OFF(CUeglFrame, planeCount);
    OFF(CUeglFrame, numChannels);
    OFF(CUeglFrame, frameType);
    OFF(CUeglFrame, eglColorFormat);
    OFF(CUeglFrame, cuFormat);
    VAL(CU_EGL_FRAME_TYPE_ARRAY);
    VAL(CU_EGL_FRAME_TYPE_PITCH);
    VAL(CU_GRAPHICS_REGISTER_FLAGS_NONE);
    VAL(CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY);
    VAL(CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD);
    VAL(CU_DEVICE_ATTRIBUTE_INTEGRATED);
}
#else
static void cuda_egl() {}
#endif

// ---------------------------------------------------------------------------------------------
// nvdsinfer_custom_impl.h includes NvInfer.h. DeepStream 6 and older are left out: their header
// needs TensorRT 8's Caffe parser, and the custom parser interface Ferrostream follows is
// DeepStream 7's and 8's.
#if __has_include(<nvdsinfer_custom_impl.h>) && __has_include(<NvInfer.h>) && \
    !(defined(NVDS_VERSION_MAJOR) && NVDS_VERSION_MAJOR < 7)
#include <nvdsinfer_custom_impl.h>
OPTIONAL_FIELD(NvDsInferObjectDetectionInfo, rotation_angle)
static void nvdsinfer() {
    SECTION("nvdsinfer");
    SIZE(NvDsInferDims);
    OFF(NvDsInferDims, numDims);
    OFF(NvDsInferDims, d);
    OFF(NvDsInferDims, numElements);
    VAL(NVDSINFER_MAX_DIMS);
    SIZE(NvDsInferLayerInfo);
    OFF(NvDsInferLayerInfo, dataType);
    OFF(NvDsInferLayerInfo, inferDims);
    OFF(NvDsInferLayerInfo, bindingIndex);
    OFF(NvDsInferLayerInfo, layerName);
    OFF(NvDsInferLayerInfo, buffer);
    OFF(NvDsInferLayerInfo, isInput);
    SIZE(NvDsInferNetworkInfo);
    OFF(NvDsInferNetworkInfo, width);
    OFF(NvDsInferNetworkInfo, height);
    OFF(NvDsInferNetworkInfo, channels);
    SIZE(NvDsInferObjectDetectionInfo);
    OFF(NvDsInferObjectDetectionInfo, classId);
    OFF(NvDsInferObjectDetectionInfo, left);
    OFF(NvDsInferObjectDetectionInfo, top);
    OFF(NvDsInferObjectDetectionInfo, width);
    OFF(NvDsInferObjectDetectionInfo, height);
    OFF(NvDsInferObjectDetectionInfo, detectionConfidence);
    print_NvDsInferObjectDetectionInfo_rotation_angle<NvDsInferObjectDetectionInfo>();
    SIZE(NvDsInferInstanceMaskInfo);
    OFF(NvDsInferInstanceMaskInfo, classId);
    OFF(NvDsInferInstanceMaskInfo, detectionConfidence);
    OFF(NvDsInferInstanceMaskInfo, mask);
    OFF(NvDsInferInstanceMaskInfo, mask_width);
    OFF(NvDsInferInstanceMaskInfo, mask_height);
    OFF(NvDsInferInstanceMaskInfo, mask_size);
    SIZE(NvDsInferAttribute);
    OFF(NvDsInferAttribute, attributeIndex);
    OFF(NvDsInferAttribute, attributeValue);
    OFF(NvDsInferAttribute, attributeConfidence);
    OFF(NvDsInferAttribute, attributeLabel);
    SIZE(NvDsInferParseDetectionParams);
    OFF(NvDsInferParseDetectionParams, numClassesConfigured);
    OFF(NvDsInferParseDetectionParams, perClassPreclusterThreshold);
    OFF(NvDsInferParseDetectionParams, perClassPostclusterThreshold);
    VAL(FLOAT);
    VAL(HALF);
    VAL(INT8);
    VAL(INT32);
}
#else
static void nvdsinfer() {}
#endif

// ---------------------------------------------------------------------------------------------
#if __has_include(<NvInfer.h>)
#include <NvInfer.h>
#define TRT(e) NAMED(#e, static_cast<int32_t>(nvinfer1::e))
static void tensorrt() {
    SECTION("tensorrt");
    VAL(NV_TENSORRT_MAJOR);
    VAL(NV_TENSORRT_MINOR);
    SIZE(nvinfer1::Dims64);
    NAMED("Dims64.MAX_DIMS", nvinfer1::Dims64::MAX_DIMS);
    TRT(DataType::kFLOAT); TRT(DataType::kHALF); TRT(DataType::kINT8); TRT(DataType::kINT32);
    TRT(DataType::kBOOL); TRT(DataType::kUINT8); TRT(DataType::kFP8); TRT(DataType::kBF16);
    TRT(DataType::kINT64); TRT(DataType::kINT4);
    TRT(TensorIOMode::kNONE); TRT(TensorIOMode::kINPUT); TRT(TensorIOMode::kOUTPUT);
    TRT(TensorFormat::kLINEAR); TRT(TensorFormat::kCHW2); TRT(TensorFormat::kHWC8);
    TRT(TensorFormat::kCHW4); TRT(TensorFormat::kCHW16); TRT(TensorFormat::kCHW32);
    TRT(TensorFormat::kDHWC8); TRT(TensorFormat::kCDHW32); TRT(TensorFormat::kHWC);
    TRT(TensorFormat::kDLA_LINEAR); TRT(TensorFormat::kDLA_HWC4); TRT(TensorFormat::kHWC16);
    TRT(TensorFormat::kDHWC);
    TRT(DeviceType::kGPU); TRT(DeviceType::kDLA);
    TRT(BuilderFlag::kDEBUG);
    TRT(BuilderFlag::kGPU_FALLBACK); TRT(BuilderFlag::kREFIT);
    TRT(BuilderFlag::kDISABLE_TIMING_CACHE); TRT(BuilderFlag::kTF32);
    TRT(BuilderFlag::kSPARSE_WEIGHTS); TRT(BuilderFlag::kSAFETY_SCOPE);
    TRT(BuilderFlag::kDIRECT_IO);
    TRT(MemoryPoolType::kWORKSPACE); TRT(MemoryPoolType::kDLA_MANAGED_SRAM);
    TRT(MemoryPoolType::kDLA_LOCAL_DRAM); TRT(MemoryPoolType::kDLA_GLOBAL_DRAM);
    TRT(OptProfileSelector::kMIN); TRT(OptProfileSelector::kOPT); TRT(OptProfileSelector::kMAX);
    TRT(LayerType::kQUANTIZE); TRT(LayerType::kDEQUANTIZE);
#if NV_TENSORRT_MAJOR < 11
    // TensorRT 11 removed the precision flags and implicit quantisation (the calibrators);
    // tests/tests/nvidia_headers.rs leaves them out of the comparison with 11's headers.
    TRT(BuilderFlag::kFP16); TRT(BuilderFlag::kINT8);
    TRT(BuilderFlag::kOBEY_PRECISION_CONSTRAINTS);
    TRT(BuilderFlag::kPREFER_PRECISION_CONSTRAINTS);
    TRT(CalibrationAlgoType::kLEGACY_CALIBRATION); TRT(CalibrationAlgoType::kENTROPY_CALIBRATION);
    TRT(CalibrationAlgoType::kENTROPY_CALIBRATION_2); TRT(CalibrationAlgoType::kMINMAX_CALIBRATION);
#endif
    TRT(ILogger::Severity::kINTERNAL_ERROR); TRT(ILogger::Severity::kERROR);
    TRT(ILogger::Severity::kWARNING); TRT(ILogger::Severity::kINFO);
    TRT(ILogger::Severity::kVERBOSE);
}
#else
static void tensorrt() {}
#endif

int main() {
    nvbufsurface();
    cudla();
    cuda_nvsci();
    nvsci();
    cuda_egl();
    nvdsinfer();
    tensorrt();
    return 0;
}
