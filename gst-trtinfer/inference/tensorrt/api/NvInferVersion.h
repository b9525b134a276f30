/* SPDX-License-Identifier: MIT OR Apache-2.0 */
// The TensorRT version Ferrostream's declarations (NvInfer.h beside this file) stand for. FOR THE
// COMPILE CHECK ONLY. Like the SDK's file of this name, it is where build.rs reads the version of
// the headers it compiles against.
//
// The declarations are of TensorRT 10.x, so CI's compile check builds the shim's 10.x path (the
// INT8 calibrator). Its TensorRT 11 path is compiled against NVIDIA's 11.x headers by the header
// test instead (tests/tests/nvidia_headers.rs, docs/NVIDIA_HEADERS.md).
#pragma once

#define NV_TENSORRT_MAJOR 10
#define NV_TENSORRT_MINOR 3
#define NV_TENSORRT_PATCH 0
