/* SPDX-License-Identifier: MIT OR Apache-2.0 */
// Declarations of the part of the TensorRT 10.x C++ API that Ferrostream's shim (fs_trt.cpp)
// uses, with the documented signatures. FOR THE COMPILE CHECK ONLY: these declarations let CI
// compile and type-check the shim without the TensorRT SDK, which cannot be installed there.
// They do not reproduce TensorRT's binary interface (its interfaces forward to internal
// implementation classes), so a shim built against them refuses to load TensorRT at run time
// (FS_TRT_COMPILE_CHECK). Real builds use the SDK's own NvInfer.h (TENSORRT_ROOT). The version
// they stand for is in NvInferVersion.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "NvInferVersion.h"

#define FS_TRT_COMPILE_CHECK 1
#define NV_TENSORRT_VERSION ((NV_TENSORRT_MAJOR * 10000) + (NV_TENSORRT_MINOR * 100) + NV_TENSORRT_PATCH)

typedef struct CUstream_st* cudaStream_t;

namespace nvinfer1 {

using AsciiChar = char;

class Dims64 {
public:
    static constexpr int32_t MAX_DIMS{8};
    int32_t nbDims;
    int64_t d[MAX_DIMS];
};
using Dims = Dims64;

enum class DataType : int32_t {
    kFLOAT = 0, kHALF = 1, kINT8 = 2, kINT32 = 3, kBOOL = 4, kUINT8 = 5, kFP8 = 6, kBF16 = 7,
    kINT64 = 8, kINT4 = 9
};
enum class TensorIOMode : int32_t { kNONE = 0, kINPUT = 1, kOUTPUT = 2 };
enum class TensorFormat : int32_t {
    kLINEAR = 0, kCHW2 = 1, kHWC8 = 2, kCHW4 = 3, kCHW16 = 4, kCHW32 = 5, kDHWC8 = 6,
    kCDHW32 = 7, kHWC = 8, kDLA_LINEAR = 9, kDLA_HWC4 = 10, kHWC16 = 11, kDHWC = 12
};
enum class DeviceType : int32_t { kGPU = 0, kDLA = 1 };
enum class BuilderFlag : int32_t {
    kFP16 = 0, kINT8 = 1, kDEBUG = 2, kGPU_FALLBACK = 3, kREFIT = 4, kDISABLE_TIMING_CACHE = 5,
    kTF32 = 6, kSPARSE_WEIGHTS = 7, kSAFETY_SCOPE = 8, kOBEY_PRECISION_CONSTRAINTS = 9,
    kPREFER_PRECISION_CONSTRAINTS = 10, kDIRECT_IO = 11
};
enum class MemoryPoolType : int32_t { kWORKSPACE = 0, kDLA_MANAGED_SRAM = 1, kDLA_LOCAL_DRAM = 2, kDLA_GLOBAL_DRAM = 3 };
enum class OptProfileSelector : int32_t { kMIN = 0, kOPT = 1, kMAX = 2 };
enum class CalibrationAlgoType : int32_t {
    kLEGACY_CALIBRATION = 0, kENTROPY_CALIBRATION = 1, kENTROPY_CALIBRATION_2 = 2,
    kMINMAX_CALIBRATION = 3
};
// Only the layer types the shim looks for.
enum class LayerType : int32_t { kQUANTIZE = 32, kDEQUANTIZE = 33 };
using NetworkDefinitionCreationFlags = uint32_t;

class ILogger {
public:
    enum class Severity : int32_t {
        kINTERNAL_ERROR = 0, kERROR = 1, kWARNING = 2, kINFO = 3, kVERBOSE = 4
    };
    virtual void log(Severity severity, AsciiChar const* msg) noexcept = 0;
    ILogger() = default;
    virtual ~ILogger() = default;
};

class IHostMemory {
public:
    virtual ~IHostMemory() noexcept = default;
    virtual void* data() const noexcept = 0;
    virtual std::size_t size() const noexcept = 0;
};

class IExecutionContext {
public:
    virtual ~IExecutionContext() noexcept = default;
    virtual bool setTensorAddress(char const* tensorName, void* data) noexcept = 0;
    virtual bool setInputShape(char const* tensorName, Dims const& dims) noexcept = 0;
    virtual bool setOptimizationProfileAsync(int32_t profileIndex, cudaStream_t stream) noexcept = 0;
    virtual bool enqueueV3(cudaStream_t stream) noexcept = 0;
};

class ICudaEngine {
public:
    virtual ~ICudaEngine() noexcept = default;
    virtual int32_t getNbIOTensors() const noexcept = 0;
    virtual char const* getIOTensorName(int32_t index) const noexcept = 0;
    virtual Dims getTensorShape(char const* tensorName) const noexcept = 0;
    virtual DataType getTensorDataType(char const* tensorName) const noexcept = 0;
    virtual TensorIOMode getTensorIOMode(char const* tensorName) const noexcept = 0;
    virtual TensorFormat getTensorFormat(char const* tensorName) const noexcept = 0;
    virtual int32_t getNbOptimizationProfiles() const noexcept = 0;
    virtual Dims getProfileShape(char const* tensorName, int32_t profileIndex, OptProfileSelector select) const noexcept = 0;
    virtual IExecutionContext* createExecutionContext() noexcept = 0;
};

class IRuntime {
public:
    virtual ~IRuntime() noexcept = default;
    virtual ICudaEngine* deserializeCudaEngine(void const* blob, std::size_t size) noexcept = 0;
    virtual void setDLACore(int32_t dlaCore) noexcept = 0;
    virtual int32_t getNbDLACores() const noexcept = 0;
};

class ITensor {
public:
    virtual char const* getName() const noexcept = 0;
    virtual Dims getDimensions() const noexcept = 0;
};

class ILayer {
public:
    virtual LayerType getType() const noexcept = 0;
};

class INetworkDefinition {
public:
    virtual ~INetworkDefinition() noexcept = default;
    virtual int32_t getNbInputs() const noexcept = 0;
    virtual ITensor* getInput(int32_t index) const noexcept = 0;
    virtual int32_t getNbLayers() const noexcept = 0;
    virtual ILayer* getLayer(int32_t index) const noexcept = 0;
};

class IOptimizationProfile {
public:
    virtual bool setDimensions(char const* inputName, OptProfileSelector select, Dims const& dims) noexcept = 0;
};

class IInt8Calibrator {
public:
    virtual ~IInt8Calibrator() noexcept = default;
    virtual int32_t getBatchSize() const noexcept = 0;
    virtual bool getBatch(void* bindings[], char const* names[], int32_t nbBindings) noexcept = 0;
    virtual void const* readCalibrationCache(std::size_t& length) noexcept = 0;
    virtual void writeCalibrationCache(void const* ptr, std::size_t length) noexcept = 0;
    virtual CalibrationAlgoType getAlgorithm() noexcept = 0;
};

class IInt8EntropyCalibrator2 : public IInt8Calibrator {
public:
    CalibrationAlgoType getAlgorithm() noexcept override { return CalibrationAlgoType::kENTROPY_CALIBRATION_2; }
};

class IBuilderConfig {
public:
    virtual ~IBuilderConfig() noexcept = default;
    virtual void setFlag(BuilderFlag builderFlag) noexcept = 0;
    virtual void setDefaultDeviceType(DeviceType deviceType) noexcept = 0;
    virtual void setDLACore(int32_t dlaCore) noexcept = 0;
    virtual void setMemoryPoolLimit(MemoryPoolType pool, std::size_t poolSize) noexcept = 0;
    virtual int32_t addOptimizationProfile(IOptimizationProfile const* profile) noexcept = 0;
    virtual void setInt8Calibrator(IInt8Calibrator* calibrator) noexcept = 0;
};

class IBuilder {
public:
    virtual ~IBuilder() noexcept = default;
    virtual INetworkDefinition* createNetworkV2(NetworkDefinitionCreationFlags flags) noexcept = 0;
    virtual IBuilderConfig* createBuilderConfig() noexcept = 0;
    virtual IOptimizationProfile* createOptimizationProfile() noexcept = 0;
    virtual IHostMemory* buildSerializedNetwork(INetworkDefinition& network, IBuilderConfig& config) noexcept = 0;
    virtual int32_t getNbDLACores() const noexcept = 0;
};

} // namespace nvinfer1
