// SPDX-License-Identifier: MIT OR Apache-2.0
// Ferrostream's TensorRT 10.x and 11.x shim: see fs_trt.h. Compiled against the TensorRT SDK's
// headers (TENSORRT_ROOT), or for a compile check against Ferrostream's declarations in api/, in
// which case FS_TRT_COMPILE_CHECK is defined and fs_trt_library_open refuses to load TensorRT.
//
// The two major versions differ in how an engine gets its precision. TensorRT 10 builds a
// network in the precisions the builder flags allow (kFP16, kINT8), INT8 scales coming from a
// calibrator (here a calibration cache, nvinfer's int8-calib-file) or from the model's Q/DQ
// nodes. TensorRT 11 removed those flags and the calibrator API: every network is strongly typed,
// built in the types its model declares, so FP16 needs an FP16 model and INT8 a model with Q/DQ
// nodes (explicit quantisation). The shim checks that the model can give what network-mode asks
// for rather than let TensorRT 11 build an FP32 engine.

#include "fs_trt.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <NvInfer.h>
#include <NvOnnxParser.h>

#ifndef FS_TRT_COMPILE_CHECK
#define FS_TRT_COMPILE_CHECK 0
#endif

#if NV_TENSORRT_MAJOR != 10 && NV_TENSORRT_MAJOR != 11
#error "the TensorRT shim supports the TensorRT 10.x and 11.x headers only"
#endif

namespace {

// FsTrtBuildConfig::builder_flags are numbered as TensorRT 10's BuilderFlag (fs_trt.h; the Rust
// side's options.rs). Bits 0 and 1 ask for FP16 and INT8.
constexpr uint64_t kFlagFp16 = 1ULL << 0;
constexpr uint64_t kFlagInt8 = 1ULL << 1;
#if NV_TENSORRT_MAJOR < 11
static_assert(static_cast<int32_t>(nvinfer1::BuilderFlag::kFP16) == 0 &&
                  static_cast<int32_t>(nvinfer1::BuilderFlag::kINT8) == 1,
              "builder_flags follow TensorRT 10's BuilderFlag numbering");
#else
// TensorRT 11 kept 10's numbers for kDEBUG (2) to kSPARSE_WEIGHTS (7), kGPU_FALLBACK among them,
// and renumbered the flags after those it removed: only bits 2 to 7 mean the same flag in both.
constexpr uint64_t kFlagsAlikeIn11 = 0xFCULL;
static_assert(static_cast<int32_t>(nvinfer1::BuilderFlag::kDEBUG) == 2 &&
                  static_cast<int32_t>(nvinfer1::BuilderFlag::kSPARSE_WEIGHTS) == 7,
              "BuilderFlag 2 to 7 keep TensorRT 10's numbers");
#endif

using CreateRuntimeFn = void* (*)(void* logger, int32_t version);
using CreateBuilderFn = void* (*)(void* logger, int32_t version);
using CreateParserFn = void* (*)(void* network, void* logger, int32_t version);
using VersionFn = int32_t (*)();

void set_error(char* err, size_t len, const std::string& message) {
    if (err == nullptr || len == 0) {
        return;
    }
    std::snprintf(err, len, "%s", message.c_str());
}

std::string dl_error() {
    const char* e = dlerror();
    return e != nullptr ? e : "unknown dlopen error";
}

// Forwards TensorRT's log to the Rust side.
class Logger final : public nvinfer1::ILogger {
public:
    Logger(FsTrtLogFn fn, void* user) : fn_(fn), user_(user) {}
    void log(Severity severity, nvinfer1::AsciiChar const* msg) noexcept override {
        if (fn_ != nullptr) {
            fn_(user_, static_cast<int32_t>(severity), msg != nullptr ? msg : "");
        }
    }

private:
    FsTrtLogFn fn_;
    void* user_;
};

nvinfer1::Dims to_trt(const FsTrtDims& d) {
    nvinfer1::Dims out{};
    out.nbDims = d.nb_dims;
    for (int i = 0; i < FS_TRT_MAX_DIMS; ++i) {
        out.d[i] = d.d[i];
    }
    return out;
}

FsTrtDims from_trt(const nvinfer1::Dims& d) {
    FsTrtDims out{};
    out.nb_dims = d.nbDims;
    for (int i = 0; i < FS_TRT_MAX_DIMS && i < d.nbDims; ++i) {
        out.d[i] = d.d[i];
    }
    return out;
}

// Whether the model is explicitly quantised: it has QuantizeLinear/DequantizeLinear nodes, whose
// scales replace a calibration.
bool has_qdq(const nvinfer1::INetworkDefinition& network) {
    for (int32_t i = 0; i < network.getNbLayers(); ++i) {
        const nvinfer1::LayerType type = network.getLayer(i)->getType();
        if (type == nvinfer1::LayerType::kQUANTIZE || type == nvinfer1::LayerType::kDEQUANTIZE) {
            return true;
        }
    }
    return false;
}

#if NV_TENSORRT_MAJOR >= 11
// Whether any tensor of the network (inputs, layer outputs) has the type FP16.
bool has_fp16(const nvinfer1::INetworkDefinition& network) {
    for (int32_t i = 0; i < network.getNbInputs(); ++i) {
        if (network.getInput(i)->getType() == nvinfer1::DataType::kHALF) {
            return true;
        }
    }
    for (int32_t i = 0; i < network.getNbLayers(); ++i) {
        const nvinfer1::ILayer* layer = network.getLayer(i);
        for (int32_t k = 0; k < layer->getNbOutputs(); ++k) {
            if (layer->getOutput(k)->getType() == nvinfer1::DataType::kHALF) {
                return true;
            }
        }
    }
    return false;
}

// TensorRT 11: checks that the model itself has the precision network-mode asks for, and sets
// the other flags. Returns why the build cannot go on, or "".
std::string set_flags(nvinfer1::IBuilderConfig& cfg, const nvinfer1::INetworkDefinition& network,
                      const FsTrtBuildConfig& config, Logger& logger) {
    if ((config.builder_flags & kFlagInt8) != 0) {
        if (!has_qdq(network)) {
            return "network-mode=int8: TensorRT 11 removed implicit INT8 quantisation "
                   "(calibration, int8-calib-file) and this model has no "
                   "QuantizeLinear/DequantizeLinear nodes; give a model quantised with "
                   "symmetric INT8 Q/DQ nodes (explicit quantisation), or use network-mode=fp16 "
                   "with an FP16 model, or network-mode=fp32";
        }
        if (config.int8_calibration_cache != nullptr) {
            logger.log(nvinfer1::ILogger::Severity::kWARNING,
                       "int8-calib-file is not used: TensorRT 11 takes the INT8 scales from the "
                       "model's Q/DQ nodes");
        }
    } else if ((config.builder_flags & kFlagFp16) != 0 && !has_fp16(network)) {
        return "network-mode=fp16: TensorRT 11 builds a model in the types it declares (it "
               "has no FP16 builder flag), and this model has no FP16 tensors even after "
               "Ferrostream's FP16 conversion (its report in the log says what stayed FP32); "
               "use network-mode=fp32";
    }
    const uint64_t flags = config.builder_flags & ~(kFlagFp16 | kFlagInt8);
    for (int32_t flag = 0; flag < 64; ++flag) {
        if (((flags >> flag) & 1U) == 0) {
            continue;
        }
        if (((kFlagsAlikeIn11 >> flag) & 1U) == 0) {
            return "builder flag " + std::to_string(flag) +
                   " (TensorRT 10 numbering) has no known TensorRT 11 equivalent";
        }
        cfg.setFlag(static_cast<nvinfer1::BuilderFlag>(flag));
    }
    return "";
}
#else
// TensorRT 10: sets the flags as they are, and never fails (the signature is 11's).
std::string set_flags(nvinfer1::IBuilderConfig& cfg, const nvinfer1::INetworkDefinition& network,
                      const FsTrtBuildConfig& config, Logger& logger) {
    for (int32_t flag = 0; flag < 64; ++flag) {
        if ((config.builder_flags >> flag) & 1U) {
            cfg.setFlag(static_cast<nvinfer1::BuilderFlag>(flag));
        }
    }
    if ((config.builder_flags & kFlagInt8) != 0 && config.int8_calibration_cache == nullptr &&
        !has_qdq(network)) {
        logger.log(nvinfer1::ILogger::Severity::kWARNING,
                   "network-mode=int8 without int8-calib-file, and the model has no Q/DQ "
                   "nodes: TensorRT has no INT8 scales for it, so its layers fall back to FP16 "
                   "or FP32");
    }
    return "";
}

// Calibration from a cache file only (nvinfer's int8-calib-file): no calibration data is fed.
// TensorRT 11 has no calibrators.
class CacheCalibrator final : public nvinfer1::IInt8EntropyCalibrator2 {
public:
    explicit CacheCalibrator(std::vector<char> cache) : cache_(std::move(cache)) {}
    int32_t getBatchSize() const noexcept override { return 1; }
    bool getBatch(void* /*bindings*/[], char const* /*names*/[], int32_t /*nb*/) noexcept override {
        return false;
    }
    void const* readCalibrationCache(std::size_t& length) noexcept override {
        length = cache_.size();
        return cache_.empty() ? nullptr : cache_.data();
    }
    void writeCalibrationCache(void const* /*ptr*/, std::size_t /*length*/) noexcept override {}

private:
    std::vector<char> cache_;
};
#endif  // NV_TENSORRT_MAJOR

}  // namespace

struct FsTrtLibrary {
    void* nvinfer = nullptr;
    void* parser = nullptr;
    CreateRuntimeFn create_runtime = nullptr;
    CreateBuilderFn create_builder = nullptr;
    CreateParserFn create_parser = nullptr;
    int32_t version = 0;
};

struct FsTrtRuntime {
    std::unique_ptr<Logger> logger;
    std::unique_ptr<nvinfer1::IRuntime> runtime;
};

struct FsTrtEngine {
    std::unique_ptr<nvinfer1::ICudaEngine> engine;
};

struct FsTrtContext {
    std::unique_ptr<nvinfer1::IExecutionContext> context;
};

struct FsTrtBlob {
    std::unique_ptr<nvinfer1::IHostMemory> memory;
};

extern "C" {

void fs_trt_layout(FsTrtLayout* out) {
    out->dims_size = sizeof(FsTrtDims);
    out->dims_d = offsetof(FsTrtDims, d);
    out->tensor_desc_size = sizeof(FsTrtTensorDesc);
    out->tensor_desc_shape = offsetof(FsTrtTensorDesc, shape);
    out->tensor_desc_profile_max = offsetof(FsTrtTensorDesc, profile_max);
    out->build_config_size = sizeof(FsTrtBuildConfig);
    out->build_config_dla_core = offsetof(FsTrtBuildConfig, dla_core);
    out->build_config_int8_calibration_cache = offsetof(FsTrtBuildConfig, int8_calibration_cache);
}

int32_t fs_trt_header_version(void) { return NV_TENSORRT_VERSION; }

int32_t fs_trt_compile_check_only(void) { return FS_TRT_COMPILE_CHECK; }

FsTrtLibrary* fs_trt_library_open(const char* nvinfer, const char* onnxparser, char* err,
                                  size_t err_len) {
    if (FS_TRT_COMPILE_CHECK) {
        set_error(err, err_len,
                  "this build's TensorRT shim was compiled against Ferrostream's API "
                  "declarations for a compile check only; rebuild with the TensorRT SDK "
                  "(TENSORRT_ROOT) to use TensorRT");
        return nullptr;
    }
    auto lib = std::make_unique<FsTrtLibrary>();
    lib->nvinfer = dlopen(nvinfer, RTLD_NOW | RTLD_LOCAL);
    if (lib->nvinfer == nullptr) {
        set_error(err, err_len, std::string("cannot load ") + nvinfer + ": " + dl_error());
        return nullptr;
    }
    auto version = reinterpret_cast<VersionFn>(dlsym(lib->nvinfer, "getInferLibVersion"));
    lib->create_runtime =
        reinterpret_cast<CreateRuntimeFn>(dlsym(lib->nvinfer, "createInferRuntime_INTERNAL"));
    lib->create_builder =
        reinterpret_cast<CreateBuilderFn>(dlsym(lib->nvinfer, "createInferBuilder_INTERNAL"));
    if (version == nullptr || lib->create_runtime == nullptr || lib->create_builder == nullptr) {
        set_error(err, err_len, std::string(nvinfer) + " lacks TensorRT's factory functions");
        dlclose(lib->nvinfer);
        return nullptr;
    }
    lib->version = version();
    if (lib->version / 10000 != NV_TENSORRT_VERSION / 10000) {
        set_error(err, err_len,
                  std::string(nvinfer) + " is TensorRT " + std::to_string(lib->version) +
                      " but this build was compiled against TensorRT " +
                      std::to_string(NV_TENSORRT_VERSION) + " headers (major versions differ)");
        dlclose(lib->nvinfer);
        return nullptr;
    }
    if (onnxparser != nullptr) {
        lib->parser = dlopen(onnxparser, RTLD_NOW | RTLD_LOCAL);
        if (lib->parser != nullptr) {
            lib->create_parser = reinterpret_cast<CreateParserFn>(
                dlsym(lib->parser, "createNvOnnxParser_INTERNAL"));
        }
    }
    return lib.release();
}

int32_t fs_trt_library_version(const FsTrtLibrary* lib) { return lib->version; }

int32_t fs_trt_library_has_onnx_parser(const FsTrtLibrary* lib) {
    return lib->create_parser != nullptr ? 1 : 0;
}

void fs_trt_library_free(FsTrtLibrary* lib) {
    if (lib == nullptr) {
        return;
    }
    if (lib->parser != nullptr) {
        dlclose(lib->parser);
    }
    dlclose(lib->nvinfer);
    delete lib;
}

FsTrtRuntime* fs_trt_runtime_new(FsTrtLibrary* lib, FsTrtLogFn log, void* user, char* err,
                                 size_t err_len) {
    auto runtime = std::make_unique<FsTrtRuntime>();
    runtime->logger = std::make_unique<Logger>(log, user);
    runtime->runtime.reset(static_cast<nvinfer1::IRuntime*>(
        lib->create_runtime(runtime->logger.get(), NV_TENSORRT_VERSION)));
    if (!runtime->runtime) {
        set_error(err, err_len, "createInferRuntime failed (see the TensorRT log)");
        return nullptr;
    }
    return runtime.release();
}

int32_t fs_trt_runtime_dla_cores(const FsTrtRuntime* runtime) {
    return runtime->runtime->getNbDLACores();
}

void fs_trt_runtime_free(FsTrtRuntime* runtime) {
    if (runtime == nullptr) {
        return;
    }
    runtime->runtime.reset();
    delete runtime;
}

FsTrtEngine* fs_trt_engine_new(FsTrtRuntime* runtime, const void* data, size_t len,
                               int32_t dla_core, char* err, size_t err_len) {
    if (dla_core >= 0) {
        runtime->runtime->setDLACore(dla_core);
    }
    auto engine = std::make_unique<FsTrtEngine>();
    engine->engine.reset(runtime->runtime->deserializeCudaEngine(data, len));
    if (!engine->engine) {
        set_error(err, err_len,
                  "deserializing the engine failed: built for another GPU or TensorRT "
                  "version, or not an engine file (see the TensorRT log)");
        return nullptr;
    }
    return engine.release();
}

int32_t fs_trt_engine_io_count(const FsTrtEngine* engine) {
    return engine->engine->getNbIOTensors();
}

int fs_trt_engine_io(const FsTrtEngine* engine, int32_t index, FsTrtTensorDesc* out) {
    const nvinfer1::ICudaEngine& e = *engine->engine;
    if (index < 0 || index >= e.getNbIOTensors()) {
        return -1;
    }
    const char* name = e.getIOTensorName(index);
    *out = FsTrtTensorDesc{};
    out->name = name;
    out->io_mode = static_cast<int32_t>(e.getTensorIOMode(name));
    out->data_type = static_cast<int32_t>(e.getTensorDataType(name));
    out->format = static_cast<int32_t>(e.getTensorFormat(name));
    out->shape = from_trt(e.getTensorShape(name));
    if (e.getTensorIOMode(name) == nvinfer1::TensorIOMode::kINPUT &&
        e.getNbOptimizationProfiles() > 0) {
        out->profile_min = from_trt(e.getProfileShape(name, 0, nvinfer1::OptProfileSelector::kMIN));
        out->profile_max = from_trt(e.getProfileShape(name, 0, nvinfer1::OptProfileSelector::kMAX));
    }
    return 0;
}

void fs_trt_engine_free(FsTrtEngine* engine) { delete engine; }

FsTrtContext* fs_trt_context_new(FsTrtEngine* engine, char* err, size_t err_len) {
    auto context = std::make_unique<FsTrtContext>();
    context->context.reset(engine->engine->createExecutionContext());
    if (!context->context) {
        set_error(err, err_len, "createExecutionContext failed (out of GPU memory?)");
        return nullptr;
    }
    return context.release();
}

int fs_trt_context_set_input_shape(FsTrtContext* context, const char* name,
                                   const FsTrtDims* dims) {
    return context->context->setInputShape(name, to_trt(*dims)) ? 0 : -1;
}

int fs_trt_context_set_address(FsTrtContext* context, const char* name, void* address) {
    return context->context->setTensorAddress(name, address) ? 0 : -1;
}

int fs_trt_context_enqueue(FsTrtContext* context, void* stream) {
    return context->context->enqueueV3(static_cast<cudaStream_t>(stream)) ? 0 : -1;
}

void fs_trt_context_free(FsTrtContext* context) { delete context; }

FsTrtBlob* fs_trt_build_onnx(FsTrtLibrary* lib, const FsTrtBuildConfig* config,
                             const void* onnx, size_t onnx_len, FsTrtLogFn log, void* user,
                             char* err, size_t err_len) {
    if (lib->create_parser == nullptr) {
        set_error(err, err_len,
                  "libnvonnxparser is not available: engines cannot be built from ONNX");
        return nullptr;
    }
    Logger logger(log, user);
    std::unique_ptr<nvinfer1::IBuilder> builder(static_cast<nvinfer1::IBuilder*>(
        lib->create_builder(&logger, NV_TENSORRT_VERSION)));
    if (!builder) {
        set_error(err, err_len, "createInferBuilder failed");
        return nullptr;
    }
    std::unique_ptr<nvinfer1::INetworkDefinition> network(builder->createNetworkV2(0U));
    std::unique_ptr<nvinfer1::IBuilderConfig> cfg(builder->createBuilderConfig());
    if (!network || !cfg) {
        set_error(err, err_len, "creating the network definition failed");
        return nullptr;
    }
    std::unique_ptr<nvonnxparser::IParser> parser(static_cast<nvonnxparser::IParser*>(
        lib->create_parser(network.get(), &logger, NV_ONNX_PARSER_VERSION)));
    if (!parser) {
        set_error(err, err_len, "createNvOnnxParser failed");
        return nullptr;
    }
    if (!parser->parse(onnx, onnx_len)) {
        std::string message = "the ONNX parser rejected the model";
        for (int32_t i = 0; i < parser->getNbErrors(); ++i) {
            const nvonnxparser::IParserError* e = parser->getError(i);
            message += std::string("; node ") + std::to_string(e->node()) + ": " + e->desc();
        }
        set_error(err, err_len, message);
        return nullptr;
    }
    const std::string problem = set_flags(*cfg, *network, *config, logger);
    if (!problem.empty()) {
        set_error(err, err_len, problem);
        return nullptr;
    }
    if (config->workspace_bytes > 0) {
        cfg->setMemoryPoolLimit(nvinfer1::MemoryPoolType::kWORKSPACE, config->workspace_bytes);
    }
    if (config->dla_core >= 0) {
        if (builder->getNbDLACores() <= config->dla_core) {
            set_error(err, err_len,
                      "DLA core " + std::to_string(config->dla_core) + " requested, but this "
                      "device has " + std::to_string(builder->getNbDLACores()) + " DLA core(s)");
            return nullptr;
        }
        cfg->setDefaultDeviceType(nvinfer1::DeviceType::kDLA);
        cfg->setDLACore(config->dla_core);
    }
    // One profile over the batch dimension of every input with a dynamic batch.
    nvinfer1::IOptimizationProfile* profile = builder->createOptimizationProfile();
    bool dynamic = false;
    for (int32_t i = 0; i < network->getNbInputs(); ++i) {
        nvinfer1::ITensor* input = network->getInput(i);
        nvinfer1::Dims dims = input->getDimensions();
        if (dims.nbDims < 1 || dims.d[0] != -1) {
            continue;
        }
        for (int32_t k = 1; k < dims.nbDims; ++k) {
            if (dims.d[k] < 0) {
                set_error(err, err_len,
                          std::string("input ") + input->getName() + " has a dynamic dimension " +
                              std::to_string(k) + " besides the batch; export it with a fixed "
                              "size");
                return nullptr;
            }
        }
        nvinfer1::Dims lo = dims, opt = dims, hi = dims;
        lo.d[0] = config->min_batch;
        opt.d[0] = config->opt_batch;
        hi.d[0] = config->max_batch;
        profile->setDimensions(input->getName(), nvinfer1::OptProfileSelector::kMIN, lo);
        profile->setDimensions(input->getName(), nvinfer1::OptProfileSelector::kOPT, opt);
        profile->setDimensions(input->getName(), nvinfer1::OptProfileSelector::kMAX, hi);
        dynamic = true;
    }
    if (dynamic) {
        cfg->addOptimizationProfile(profile);
    }
#if NV_TENSORRT_MAJOR < 11
    std::unique_ptr<CacheCalibrator> calibrator;
    if (config->int8_calibration_cache != nullptr) {
        std::ifstream file(config->int8_calibration_cache, std::ios::binary);
        if (!file) {
            set_error(err, err_len,
                      std::string("cannot read the INT8 calibration cache ") +
                          config->int8_calibration_cache);
            return nullptr;
        }
        std::vector<char> cache((std::istreambuf_iterator<char>(file)),
                                std::istreambuf_iterator<char>());
        calibrator = std::make_unique<CacheCalibrator>(std::move(cache));
        cfg->setInt8Calibrator(calibrator.get());
    }
#endif
    auto blob = std::make_unique<FsTrtBlob>();
    blob->memory.reset(builder->buildSerializedNetwork(*network, *cfg));
    if (!blob->memory || blob->memory->size() == 0) {
        set_error(err, err_len, "building the engine failed (see the TensorRT log)");
        return nullptr;
    }
    return blob.release();
}

const void* fs_trt_blob_data(const FsTrtBlob* blob) { return blob->memory->data(); }

size_t fs_trt_blob_size(const FsTrtBlob* blob) { return blob->memory->size(); }

void fs_trt_blob_free(FsTrtBlob* blob) { delete blob; }

}  // extern "C"
