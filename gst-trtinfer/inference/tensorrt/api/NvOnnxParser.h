/* SPDX-License-Identifier: MIT OR Apache-2.0 */
// Declarations of the part of TensorRT 10.x's ONNX parser API that Ferrostream's shim uses, with
// the documented signatures. FOR THE COMPILE CHECK ONLY; see NvInfer.h beside this file. Real
// builds use the SDK's own NvOnnxParser.h.
#pragma once

#include "NvInfer.h"

#define NV_ONNX_PARSER_MAJOR 0
#define NV_ONNX_PARSER_MINOR 1
#define NV_ONNX_PARSER_PATCH 0
#define NV_ONNX_PARSER_VERSION ((NV_ONNX_PARSER_MAJOR * 10000) + (NV_ONNX_PARSER_MINOR * 100) + NV_ONNX_PARSER_PATCH)

namespace nvonnxparser {

class IParserError {
public:
    virtual char const* desc() const = 0;
    virtual int node() const = 0;
};

class IParser {
public:
    virtual ~IParser() noexcept = default;
    virtual bool parse(void const* serialized_onnx_model, size_t serialized_onnx_model_size,
                       const char* model_path = nullptr) noexcept = 0;
    virtual int32_t getNbErrors() const noexcept = 0;
    virtual IParserError const* getError(int32_t index) const noexcept = 0;
};

} // namespace nvonnxparser
