// SPDX-License-Identifier: MIT OR Apache-2.0
//! Ferrostream's mirrors of NVIDIA interfaces, checked against NVIDIA's published headers where
//! they are present. `tests/nvidia-headers/nv_layout.cpp` is compiled against the headers found
//! at `DEEPSTREAM_ROOT` (nvbufsurface.h, nvdsinfer.h: an installed DeepStream's
//! `sources/includes`, `includes` of NVIDIA's DeepStream repository, or the `include` of Jetson's
//! Multimedia API, `/usr/src/jetson_multimedia_api`), `CUDA_HOME` (cuda.h,
//! cudaEGL.h, and cudla.h on Jetson; EGL's own headers from the system) and `TENSORRT_ROOT`
//! (NvInfer.h and NvOnnxParser.h under `include`) and `NVSCI_ROOT` (nvscibuf.h, nvscisync.h and
//! the headers they include: Jetson Linux's or DRIVE OS's), and prints the sizes, offsets and
//! constants Ferrostream relies on. They are compared with:
//! - the `#[repr(C)]` Rust structures and constants (NvBufSurface in the DeepStream 7 or 8
//!   layout, whichever the header has; cuDLA, hybrid and standalone mode; CUeglFrame; NvSciBuf
//!   and NvSciSync; the NvSci handle types and parameters of cuda.h that Ferrostream passes
//!   through cudarc's bindings);
//! - Ferrostream's own C and C++ declarations, compiled into the same program (the nvinfer
//!   custom-parser interface in `gst-trtinfer/inference/nvdsinfer/include`, the TensorRT API subset in
//!   `gst-trtinfer/inference/tensorrt/api`);
//!
//! and the TensorRT shim (`gst-trtinfer/inference/tensorrt/fs_trt.cpp`) is compiled against the real
//! TensorRT headers, and the custom-parser shim (`gst-trtinfer/inference/nvdsinfer/fs_nvdsparse.cpp`)
//! against DeepStream's, with every warning an error. Without any of those variables the test says
//! which it looked for and checks nothing (set `FERROSTREAM_REQUIRE_NVIDIA_HEADERS=1` to make
//! that a failure). docs/NVIDIA_HEADERS.md records the versions checked.

use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

use cudarc::driver::sys as cuda;
use ferrostream_core::nvmm::abi::{self, ds7, ds8};
use ferrostream_core::nvmm::loader;
use ferrostream_core::nvsci::ffi as nvsci;
use ferrostream_tests::repo_root;
use gst_dlainfer::cudla::ffi as cudla;

/// `section -> key -> value`, as nv_layout prints them.
type Facts = BTreeMap<String, BTreeMap<String, i64>>;

struct Headers {
    deepstream: Option<PathBuf>,
    cuda: Option<PathBuf>,
    tensorrt: Option<PathBuf>,
    nvsci: Option<PathBuf>,
}

fn dir_with(root: &str, candidates: &[&str], file: &str) -> Option<PathBuf> {
    let root = PathBuf::from(std::env::var_os(root)?);
    let found = candidates
        .iter()
        .map(|c| root.join(c))
        .find(|dir| dir.join(file).is_file());
    assert!(
        found.is_some(),
        "{} is set but has no {file} in {candidates:?}",
        root.display()
    );
    found
}

fn headers() -> Headers {
    Headers {
        deepstream: dir_with(
            "DEEPSTREAM_ROOT",
            &["sources/includes", "includes", "include", "."],
            "nvbufsurface.h",
        ),
        cuda: dir_with("CUDA_HOME", &["include", "."], "cuda.h"),
        tensorrt: dir_with("TENSORRT_ROOT", &["include", "."], "NvInfer.h"),
        nvsci: dir_with("NVSCI_ROOT", &["include", "usr/include", "."], "nvscibuf.h"),
    }
}

fn out_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nvidia-headers");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(command: &mut Command) -> String {
    let output = command
        .output()
        .expect("the system C++ compiler (c++) runs");
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Builds nv_layout.cpp with these include directories (`system`: NVIDIA's, whose own warnings
/// are not ours to fix) and reads its facts.
fn layout_facts(name: &str, includes: &[&Path], system: &[&Path]) -> Facts {
    let exe = out_dir().join(format!("nv_layout-{name}-{}", std::process::id()));
    let mut cc = Command::new("c++");
    cc.args(["-std=c++17", "-Wall", "-Wextra", "-Werror"]);
    for dir in includes {
        cc.arg("-I").arg(dir);
    }
    for dir in system {
        cc.arg("-isystem").arg(dir);
    }
    cc.arg(repo_root().join("tests/nvidia-headers/nv_layout.cpp"))
        .arg("-o")
        .arg(&exe);
    run(&mut cc);
    let text = run(&mut Command::new(&exe));
    let mut facts = Facts::new();
    let mut section = String::new();
    for line in text.lines() {
        let (key, value) = line.split_once(' ').unwrap();
        if key == "section" {
            section = value.to_string();
            facts.entry(section.clone()).or_default();
        } else {
            let value = value.parse().unwrap_or_else(|_| panic!("{line}"));
            facts.get_mut(&section).unwrap().insert(key.into(), value);
        }
    }
    facts
}

/// Every `(key, ours)` against the header's value; returns the differences.
fn compare(section: &str, header: &BTreeMap<String, i64>, ours: &[(&str, i64)]) -> Vec<String> {
    let mut differences = Vec::new();
    for (key, value) in ours {
        match header.get(*key) {
            Some(h) if h == value => {}
            Some(h) => differences.push(format!(
                "{section}: {key} is {h} in the header, {value} in Ferrostream"
            )),
            None => differences.push(format!("{section}: {key} is not in the header")),
        }
    }
    differences
}

macro_rules! off {
    ($key:literal, $t:ty, $field:ident) => {
        ($key, offset_of!($t, $field) as i64)
    };
}
macro_rules! size {
    ($key:literal, $t:ty) => {
        ($key, size_of::<$t>() as i64)
    };
}
macro_rules! val {
    ($key:literal, $v:expr) => {
        ($key, $v as i64)
    };
}

fn nvbufsurface_facts(ds8_layout: bool) -> Vec<(&'static str, i64)> {
    type P = abi::NvBufSurfacePlaneParams;
    let mut facts = vec![
        val!("STRUCTURE_PADDING", abi::STRUCTURE_PADDING),
        val!("NVBUF_MAX_PLANES", abi::NVBUF_MAX_PLANES),
        size!("NvBufSurfacePlaneParams.sizeof", P),
        off!("NvBufSurfacePlaneParams.num_planes", P, num_planes),
        off!("NvBufSurfacePlaneParams.width", P, width),
        off!("NvBufSurfacePlaneParams.height", P, height),
        off!("NvBufSurfacePlaneParams.pitch", P, pitch),
        off!("NvBufSurfacePlaneParams.offset", P, offset),
        off!("NvBufSurfacePlaneParams.psize", P, psize),
        off!("NvBufSurfacePlaneParams.bytesPerPix", P, bytes_per_pix),
        off!("NvBufSurfacePlaneParams._reserved", P, _reserved),
        val!("NVBUF_MEM_DEFAULT", abi::NVBUF_MEM_DEFAULT),
        val!("NVBUF_MEM_CUDA_PINNED", abi::NVBUF_MEM_CUDA_PINNED),
        val!("NVBUF_MEM_CUDA_DEVICE", abi::NVBUF_MEM_CUDA_DEVICE),
        val!("NVBUF_MEM_CUDA_UNIFIED", abi::NVBUF_MEM_CUDA_UNIFIED),
        val!("NVBUF_MEM_SURFACE_ARRAY", abi::NVBUF_MEM_SURFACE_ARRAY),
        val!("NVBUF_MEM_HANDLE", abi::NVBUF_MEM_HANDLE),
        val!("NVBUF_MEM_SYSTEM", abi::NVBUF_MEM_SYSTEM),
        val!("NVBUF_LAYOUT_PITCH", abi::NVBUF_LAYOUT_PITCH),
        val!("NVBUF_LAYOUT_BLOCK_LINEAR", abi::NVBUF_LAYOUT_BLOCK_LINEAR),
        val!("NVBUF_MAP_READ", abi::NVBUF_MAP_READ),
        val!("NVBUF_MAP_WRITE", abi::NVBUF_MAP_WRITE),
        val!("NVBUF_MAP_READ_WRITE", abi::NVBUF_MAP_READ_WRITE),
        val!("NVBUF_COLOR_FORMAT_GRAY8", abi::NVBUF_COLOR_FORMAT_GRAY8),
        val!("NVBUF_COLOR_FORMAT_YUV420", abi::NVBUF_COLOR_FORMAT_YUV420),
        val!("NVBUF_COLOR_FORMAT_YVU420", abi::NVBUF_COLOR_FORMAT_YVU420),
        val!("NVBUF_COLOR_FORMAT_NV12", abi::NVBUF_COLOR_FORMAT_NV12),
        val!(
            "NVBUF_COLOR_FORMAT_NV12_ER",
            abi::NVBUF_COLOR_FORMAT_NV12_ER
        ),
        val!("NVBUF_COLOR_FORMAT_NV21", abi::NVBUF_COLOR_FORMAT_NV21),
        val!("NVBUF_COLOR_FORMAT_YUV444", abi::NVBUF_COLOR_FORMAT_YUV444),
        val!("NVBUF_COLOR_FORMAT_RGBA", abi::NVBUF_COLOR_FORMAT_RGBA),
        val!("NVBUF_COLOR_FORMAT_BGRA", abi::NVBUF_COLOR_FORMAT_BGRA),
        val!("NVBUF_COLOR_FORMAT_RGBx", abi::NVBUF_COLOR_FORMAT_RGBX),
        val!("NVBUF_COLOR_FORMAT_BGRx", abi::NVBUF_COLOR_FORMAT_BGRX),
        val!("NVBUF_COLOR_FORMAT_RGB", abi::NVBUF_COLOR_FORMAT_RGB),
        val!("NVBUF_COLOR_FORMAT_BGR", abi::NVBUF_COLOR_FORMAT_BGR),
        val!(
            "NVBUF_COLOR_FORMAT_NV12_10LE",
            abi::NVBUF_COLOR_FORMAT_NV12_10LE
        ),
        val!(
            "NVBUF_COLOR_FORMAT_NV12_709",
            abi::NVBUF_COLOR_FORMAT_NV12_709
        ),
        val!(
            "NVBUF_COLOR_FORMAT_NV12_709_ER",
            abi::NVBUF_COLOR_FORMAT_NV12_709_ER
        ),
        val!(
            "NVBUF_COLOR_FORMAT_NV12_2020",
            abi::NVBUF_COLOR_FORMAT_NV12_2020
        ),
    ];
    macro_rules! surface_layout {
        ($m:ident) => {{
            type A = $m::NvBufSurfaceMappedAddr;
            type SP = $m::NvBufSurfaceParams;
            type S = $m::NvBufSurface;
            facts.extend([
                size!("NvBufSurfaceMappedAddr.sizeof", A),
                off!("NvBufSurfaceMappedAddr.addr", A, addr),
                off!("NvBufSurfaceMappedAddr.eglImage", A, egl_image),
                off!("NvBufSurfaceMappedAddr._reserved", A, _reserved),
                size!("NvBufSurfaceParams.sizeof", SP),
                off!("NvBufSurfaceParams.width", SP, width),
                off!("NvBufSurfaceParams.height", SP, height),
                off!("NvBufSurfaceParams.pitch", SP, pitch),
                off!("NvBufSurfaceParams.colorFormat", SP, color_format),
                off!("NvBufSurfaceParams.layout", SP, layout),
                off!("NvBufSurfaceParams.bufferDesc", SP, buffer_desc),
                off!("NvBufSurfaceParams.dataSize", SP, data_size),
                off!("NvBufSurfaceParams.dataPtr", SP, data_ptr),
                off!("NvBufSurfaceParams.planeParams", SP, plane_params),
                off!("NvBufSurfaceParams.mappedAddr", SP, mapped_addr),
                off!("NvBufSurfaceParams.paramex", SP, paramex),
                off!("NvBufSurfaceParams._reserved", SP, _reserved),
                size!("NvBufSurface.sizeof", S),
                off!("NvBufSurface.gpuId", S, gpu_id),
                off!("NvBufSurface.batchSize", S, batch_size),
                off!("NvBufSurface.numFilled", S, num_filled),
                off!("NvBufSurface.isContiguous", S, is_contiguous),
                off!("NvBufSurface.memType", S, mem_type),
                off!("NvBufSurface.surfaceList", S, surface_list),
                off!("NvBufSurface._reserved", S, _reserved),
            ]);
        }};
    }
    if ds8_layout {
        surface_layout!(ds8);
        facts.extend([
            off!(
                "NvBufSurfaceMappedAddr.nvmmPtr",
                ds8::NvBufSurfaceMappedAddr,
                nvmm_ptr
            ),
            off!(
                "NvBufSurfaceMappedAddr.cudaPtr",
                ds8::NvBufSurfaceMappedAddr,
                cuda_ptr
            ),
            off!(
                "NvBufSurfaceParams.cudaBuffer",
                ds8::NvBufSurfaceParams,
                cuda_buffer
            ),
            off!(
                "NvBufSurface.isImportedBuf",
                ds8::NvBufSurface,
                is_imported_buf
            ),
        ]);
    } else {
        surface_layout!(ds7);
    }
    facts
}

fn cudla_facts() -> Vec<(&'static str, i64)> {
    type T = cudla::Task;
    type D = cudla::TensorDescriptor;
    vec![
        size!("cudlaTask.sizeof", T),
        off!("cudlaTask.moduleHandle", T, module_handle),
        off!("cudlaTask.outputTensor", T, output_tensor),
        off!("cudlaTask.numOutputTensors", T, num_output_tensors),
        off!("cudlaTask.numInputTensors", T, num_input_tensors),
        off!("cudlaTask.inputTensor", T, input_tensor),
        off!("cudlaTask.waitEvents", T, wait_events),
        off!("cudlaTask.signalEvents", T, signal_events),
        size!("cudlaModuleTensorDescriptor.sizeof", D),
        off!("cudlaModuleTensorDescriptor.name", D, name),
        off!("cudlaModuleTensorDescriptor.size", D, size),
        off!("cudlaModuleTensorDescriptor.n", D, n),
        off!("cudlaModuleTensorDescriptor.c", D, c),
        off!("cudlaModuleTensorDescriptor.h", D, h),
        off!("cudlaModuleTensorDescriptor.w", D, w),
        off!("cudlaModuleTensorDescriptor.dataFormat", D, data_format),
        off!("cudlaModuleTensorDescriptor.dataType", D, data_type),
        off!("cudlaModuleTensorDescriptor.dataCategory", D, data_category),
        off!("cudlaModuleTensorDescriptor.pixelFormat", D, pixel_format),
        off!("cudlaModuleTensorDescriptor.pixelMapping", D, pixel_mapping),
        off!("cudlaModuleTensorDescriptor.stride", D, stride),
        size!("cudlaModuleAttribute.sizeof", cudla::ModuleAttribute),
        val!("CUDLA_CUDA_DLA", cudla::CUDLA_CUDA_DLA),
        val!("CUDLA_STANDALONE", cudla::CUDLA_STANDALONE),
        val!("CUDLA_NUM_INPUT_TENSORS", cudla::NUM_INPUT_TENSORS),
        val!("CUDLA_NUM_OUTPUT_TENSORS", cudla::NUM_OUTPUT_TENSORS),
        val!(
            "CUDLA_INPUT_TENSOR_DESCRIPTORS",
            cudla::INPUT_TENSOR_DESCRIPTORS
        ),
        val!(
            "CUDLA_OUTPUT_TENSOR_DESCRIPTORS",
            cudla::OUTPUT_TENSOR_DESCRIPTORS
        ),
        val!("CUDLA_DATA_FORMAT_NCHW", cudla::FORMAT_NCHW),
        val!("CUDLA_DATA_FORMAT_NHWC", cudla::FORMAT_NHWC),
        val!("CUDLA_DATA_FORMAT_NCxHWx", cudla::FORMAT_NCXHWX),
        val!("CUDLA_DATA_TYPE_FLOAT", cudla::TYPE_FLOAT),
        val!("CUDLA_DATA_TYPE_HALF", cudla::TYPE_HALF),
        val!("CUDLA_DATA_TYPE_INT16", cudla::TYPE_INT16),
        val!("CUDLA_DATA_TYPE_INT8", cudla::TYPE_INT8),
        val!("CUDLA_DATA_TYPE_UINT8", cudla::TYPE_UINT8),
        val!("CUDLA_DATA_TYPE_UINT16", cudla::TYPE_UINT16),
        size!(
            "cudlaExternalSemaphoreHandleDesc.sizeof",
            cudla::ExternalSemaphoreHandleDesc
        ),
        off!(
            "cudlaExternalSemaphoreHandleDesc.extSyncObject",
            cudla::ExternalSemaphoreHandleDesc,
            ext_sync_object
        ),
        size!(
            "cudlaExternalMemoryHandleDesc.sizeof",
            cudla::ExternalMemoryHandleDesc
        ),
        off!(
            "cudlaExternalMemoryHandleDesc.extBufObject",
            cudla::ExternalMemoryHandleDesc,
            ext_buf_object
        ),
        off!(
            "cudlaExternalMemoryHandleDesc.size",
            cudla::ExternalMemoryHandleDesc,
            size
        ),
        size!("CudlaFence.sizeof", cudla::Fence),
        off!("CudlaFence.fence", cudla::Fence, fence),
        off!("CudlaFence.type", cudla::Fence, fence_type),
        size!("cudlaWaitEvents.sizeof", cudla::WaitEvents),
        off!("cudlaWaitEvents.preFences", cudla::WaitEvents, pre_fences),
        off!("cudlaWaitEvents.numEvents", cudla::WaitEvents, num_events),
        size!("cudlaSignalEvents.sizeof", cudla::SignalEvents),
        off!("cudlaSignalEvents.devPtrs", cudla::SignalEvents, dev_ptrs),
        off!(
            "cudlaSignalEvents.eofFences",
            cudla::SignalEvents,
            eof_fences
        ),
        off!(
            "cudlaSignalEvents.numEvents",
            cudla::SignalEvents,
            num_events
        ),
        val!("CUDLA_NVSCISYNC_ATTR_WAIT", cudla::NVSCISYNC_ATTR_WAIT),
        val!("CUDLA_NVSCISYNC_ATTR_SIGNAL", cudla::NVSCISYNC_ATTR_SIGNAL),
        val!("CUDLA_NVSCISYNC_FENCE", cudla::NVSCISYNC_FENCE),
        val!("CUDLA_NVSCISYNC_FENCE_SOF", cudla::NVSCISYNC_FENCE_SOF),
        val!("CUDLA_READ_WRITE_PERM", cudla::READ_WRITE_PERM),
        val!("CUDLA_READ_ONLY_PERM", cudla::READ_ONLY_PERM),
        val!("CUDLA_SUBMIT_NOOP", cudla::SUBMIT_NOOP),
    ]
}

/// cuda.h's NvSci interop as cudarc's bindings (which Ferrostream calls) declare it.
fn cuda_nvsci_facts() -> Vec<(&'static str, i64)> {
    use cuda::CUexternalMemoryHandleType as M;
    use cuda::CUexternalSemaphoreHandleType as S;
    type Signal = cuda::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS;
    type Wait = cuda::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS;
    let params_signal = offset_of!(Signal, params)
        + offset_of!(
            cuda::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS_st__bindgen_ty_1,
            nvSciSync
        );
    let params_wait = offset_of!(Wait, params)
        + offset_of!(
            cuda::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS_st__bindgen_ty_1,
            nvSciSync
        );
    vec![
        val!(
            "CUDA_NVSCISYNC_ATTR_SIGNAL",
            cuda::CUDA_NVSCISYNC_ATTR_SIGNAL
        ),
        val!("CUDA_NVSCISYNC_ATTR_WAIT", cuda::CUDA_NVSCISYNC_ATTR_WAIT),
        val!(
            "CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD",
            M::CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD
        ),
        val!(
            "CU_EXTERNAL_MEMORY_HANDLE_TYPE_NVSCIBUF",
            M::CU_EXTERNAL_MEMORY_HANDLE_TYPE_NVSCIBUF
        ),
        val!(
            "CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_NVSCISYNC",
            S::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_NVSCISYNC
        ),
        size!(
            "CUDA_EXTERNAL_MEMORY_HANDLE_DESC.sizeof",
            cuda::CUDA_EXTERNAL_MEMORY_HANDLE_DESC
        ),
        off!(
            "CUDA_EXTERNAL_MEMORY_HANDLE_DESC.handle",
            cuda::CUDA_EXTERNAL_MEMORY_HANDLE_DESC,
            handle
        ),
        off!(
            "CUDA_EXTERNAL_MEMORY_HANDLE_DESC.size",
            cuda::CUDA_EXTERNAL_MEMORY_HANDLE_DESC,
            size
        ),
        size!("CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS.sizeof", Signal),
        size!("CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS.sizeof", Wait),
        (
            "CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS.params.nvSciSync",
            params_signal as i64,
        ),
        (
            "CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS.params.nvSciSync",
            params_wait as i64,
        ),
    ]
}

fn nvsci_facts() -> Vec<(&'static str, i64)> {
    type B = nvsci::BufAttrKeyValuePair;
    type S = nvsci::SyncAttrKeyValuePair;
    vec![
        size!("NvSciBufAttrKeyValuePair.sizeof", B),
        off!("NvSciBufAttrKeyValuePair.key", B, key),
        off!("NvSciBufAttrKeyValuePair.value", B, value),
        off!("NvSciBufAttrKeyValuePair.len", B, len),
        size!("NvSciSyncAttrKeyValuePair.sizeof", S),
        off!("NvSciSyncAttrKeyValuePair.attrKey", S, key),
        off!("NvSciSyncAttrKeyValuePair.value", S, value),
        off!("NvSciSyncAttrKeyValuePair.len", S, len),
        size!("NvSciSyncFence.sizeof", nvsci::SyncFence),
        size!("NvSciRmGpuId.sizeof", nvsci::GpuId),
        // The value types Ferrostream passes.
        size!("NvSciBufAttrValAccessPerm.sizeof", nvsci::BufAccessPerm),
        size!("NvSciBufType.sizeof", nvsci::BufType),
        size!("NvSciSyncAccessPerm.sizeof", nvsci::SyncAccessPerm),
        val!("NvSciSyncFenceMaxTimeout", nvsci::FENCE_MAX_TIMEOUT_US),
        val!("NvSciBufType_RawBuffer", nvsci::BUF_TYPE_RAW_BUFFER),
        val!("NvSciBufType_Tensor", nvsci::BUF_TYPE_TENSOR),
        val!("NvSciBufGeneralAttrKey_Types", nvsci::BUF_KEY_TYPES),
        val!(
            "NvSciBufGeneralAttrKey_NeedCpuAccess",
            nvsci::BUF_KEY_NEED_CPU_ACCESS
        ),
        val!(
            "NvSciBufGeneralAttrKey_RequiredPerm",
            nvsci::BUF_KEY_REQUIRED_PERM
        ),
        val!(
            "NvSciBufGeneralAttrKey_EnableCpuCache",
            nvsci::BUF_KEY_ENABLE_CPU_CACHE
        ),
        val!("NvSciBufGeneralAttrKey_GpuId", nvsci::BUF_KEY_GPU_ID),
        val!("NvSciBufRawBufferAttrKey_Size", nvsci::BUF_KEY_RAW_SIZE),
        val!("NvSciBufRawBufferAttrKey_Align", nvsci::BUF_KEY_RAW_ALIGN),
        val!("NvSciBufAccessPerm_Readonly", nvsci::BUF_PERM_READ_ONLY),
        val!("NvSciBufAccessPerm_ReadWrite", nvsci::BUF_PERM_READ_WRITE),
        val!(
            "NvSciSyncAttrKey_NeedCpuAccess",
            nvsci::SYNC_KEY_NEED_CPU_ACCESS
        ),
        val!(
            "NvSciSyncAttrKey_RequiredPerm",
            nvsci::SYNC_KEY_REQUIRED_PERM
        ),
        val!("NvSciSyncAccessPerm_WaitOnly", nvsci::SYNC_PERM_WAIT_ONLY),
        val!(
            "NvSciSyncAccessPerm_SignalOnly",
            nvsci::SYNC_PERM_SIGNAL_ONLY
        ),
        val!(
            "NvSciSyncAccessPerm_WaitSignal",
            nvsci::SYNC_PERM_WAIT_SIGNAL
        ),
    ]
}

fn cuda_egl_facts() -> Vec<(&'static str, i64)> {
    type F = loader::CUeglFrame;
    vec![
        size!("CUeglFrame.sizeof", F),
        off!("CUeglFrame.frame", F, frame),
        off!("CUeglFrame.width", F, width),
        off!("CUeglFrame.height", F, height),
        off!("CUeglFrame.depth", F, depth),
        off!("CUeglFrame.pitch", F, pitch),
        off!("CUeglFrame.planeCount", F, plane_count),
        off!("CUeglFrame.numChannels", F, num_channels),
        off!("CUeglFrame.frameType", F, frame_type),
        off!("CUeglFrame.eglColorFormat", F, egl_color_format),
        off!("CUeglFrame.cuFormat", F, cu_format),
        val!("CU_EGL_FRAME_TYPE_ARRAY", loader::CU_EGL_FRAME_TYPE_ARRAY),
        val!("CU_EGL_FRAME_TYPE_PITCH", loader::CU_EGL_FRAME_TYPE_PITCH),
        val!(
            "CU_GRAPHICS_REGISTER_FLAGS_NONE",
            loader::CU_GRAPHICS_REGISTER_FLAGS_NONE
        ),
        val!(
            "CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY",
            loader::CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY
        ),
        val!(
            "CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD",
            loader::CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD
        ),
        val!(
            "CU_DEVICE_ATTRIBUTE_INTEGRATED",
            loader::CU_DEVICE_ATTRIBUTE_INTEGRATED
        ),
    ]
}

/// Constants of Ferrostream's TensorRT declarations (of 10.x, for CI's compile check) that
/// TensorRT 11 removed with implicit quantisation and the precision flags: nv_layout prints them
/// only for 10.x headers, and the shim's 11.x path does without them.
const REMOVED_IN_TENSORRT_11: &[&str] = &[
    "BuilderFlag::kFP16",
    "BuilderFlag::kINT8",
    "BuilderFlag::kOBEY_PRECISION_CONSTRAINTS",
    "BuilderFlag::kPREFER_PRECISION_CONSTRAINTS",
    "CalibrationAlgoType::kLEGACY_CALIBRATION",
    "CalibrationAlgoType::kENTROPY_CALIBRATION",
    "CalibrationAlgoType::kENTROPY_CALIBRATION_2",
    "CalibrationAlgoType::kMINMAX_CALIBRATION",
];

/// Every key of Ferrostream's own declarations (`ours`) has the header's value, but the keys in
/// `skip` (versions, constants the header's version no longer has).
fn compare_declarations(
    section: &str,
    header: &BTreeMap<String, i64>,
    ours: &BTreeMap<String, i64>,
    skip: &[&str],
) -> Vec<String> {
    let ours: Vec<(&str, i64)> = ours
        .iter()
        .filter(|(k, _)| !skip.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    compare(section, header, &ours)
}

#[test]
fn mirrors_match_nvidia_headers() {
    let found = headers();
    let mut checked = Vec::new();
    let mut differences = Vec::new();
    let ours_dir = repo_root().join("gst-trtinfer/inference");
    let ours = layout_facts(
        "ours",
        &[
            &ours_dir.join("nvdsinfer/include"),
            &ours_dir.join("tensorrt/api"),
        ],
        &[],
    );

    // TensorRT's and CUDA's headers, which nvdsinfer_custom_impl.h and NvInfer.h include.
    let system: Vec<&Path> = [&found.tensorrt, &found.cuda]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .collect();
    if let Some(ds) = &found.deepstream {
        let with_deepstream: Vec<&Path> = std::iter::once(ds.as_path())
            .chain(system.iter().copied())
            .collect();
        let facts = layout_facts("deepstream", &[], &with_deepstream);
        let surface = &facts["nvbufsurface"];
        let ds8_layout = surface.contains_key("NvBufSurface.isImportedBuf");
        differences.extend(compare(
            "nvbufsurface.h",
            surface,
            &nvbufsurface_facts(ds8_layout),
        ));
        let version = match (
            surface.get("NVDS_VERSION_MAJOR"),
            surface.get("NVDS_VERSION_MINOR"),
        ) {
            (Some(major), Some(minor)) => format!("DeepStream {major}.{minor}"),
            // The Jetson Multimedia API ships nvbufsurface.h without DeepStream's version header.
            _ => "no nvds_version.h".to_string(),
        };
        checked.push(format!(
            "nvbufsurface.h ({version}, {} layout)",
            if ds8_layout {
                "DeepStream 8"
            } else {
                "DeepStream 7"
            }
        ));
        if let Some(infer) = facts.get("nvdsinfer") {
            let mut ours = ours["nvdsinfer"].clone();
            if surface.get("NVDS_VERSION_MAJOR").is_some_and(|v| *v >= 9) {
                // DeepStream 9's objects carry a rotation angle: what the shim reads with
                // custom-lib-deepstream-version=9.
                let (size, rotation) = gst_trtinfer::custom::deepstream9_object_layout();
                ours.insert("NvDsInferObjectDetectionInfo.sizeof".into(), size as i64);
                ours.insert(
                    "NvDsInferObjectDetectionInfo.rotation_angle".into(),
                    rotation as i64,
                );
            }
            differences.extend(compare_declarations("nvdsinfer.h", infer, &ours, &[]));
            checked.push(format!("nvdsinfer.h, nvdsinfer_custom_impl.h ({version})"));
            // The custom-parser shim itself, against these headers instead of Ferrostream's
            // copy, every warning an error: it pins both object layouts (DeepStream 6 to 8, and
            // 9) rather than taking the header's.
            let mut cc = Command::new("c++");
            cc.args(["-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror"])
                .arg("-I")
                .arg(ours_dir.join("nvdsinfer"));
            for dir in &with_deepstream {
                cc.arg("-isystem").arg(dir);
            }
            cc.arg(ours_dir.join("nvdsinfer/fs_nvdsparse.cpp"));
            run(&mut cc);
            checked.push(format!("the custom-parser shim ({version})"));
        }
    }
    if let Some(cuda) = &found.cuda {
        let facts = layout_facts("cuda", &[], &[cuda]);
        if let Some(egl) = facts.get("cudaEGL") {
            differences.extend(compare("cudaEGL.h", egl, &cuda_egl_facts()));
            checked.push(format!("cudaEGL.h (CUDA_VERSION {})", egl["CUDA_VERSION"]));
        }
        if let Some(interop) = facts.get("cuda_nvsci") {
            differences.extend(compare("cuda.h", interop, &cuda_nvsci_facts()));
            checked.push(format!(
                "cuda.h external memory and semaphores (CUDA_VERSION {})",
                interop["CUDA_VERSION"]
            ));
        }
        if let Some(dla) = facts.get("cudla") {
            differences.extend(compare("cudla.h", dla, &cudla_facts()));
            // Every status of the header has Ferrostream's name for it.
            for (key, value) in dla.iter().filter(|(k, _)| k.starts_with("cudlaError")) {
                let name = cudla::status_name(*value as i32);
                if name != *key {
                    differences.push(format!(
                        "cudla.h: status {value} is {key}, Ferrostream says {name}"
                    ));
                }
            }
            checked.push(format!(
                "cudla.h (cuDLA {}.{})",
                dla["CUDLA_VER_MAJOR"], dla["CUDLA_VER_MINOR"]
            ));
        }
    }
    if let Some(dir) = &found.nvsci {
        let facts = layout_facts("nvsci", &[], &[dir]);
        let sci = &facts["nvsci"];
        differences.extend(compare("nvscibuf.h, nvscisync.h", sci, &nvsci_facts()));
        // Every error of nvscierror.h, read from its text, has its name and value in
        // Ferrostream's table (so no error prints as a bare number).
        let text = std::fs::read_to_string(dir.join("nvscierror.h")).unwrap();
        let mut errors = 0;
        for line in text.lines() {
            let Some((name, value)) = line.trim().split_once('=') else {
                continue;
            };
            let (name, value) = (name.trim(), value.trim().trim_end_matches(','));
            let Some(hex) = value.strip_prefix("0x") else {
                continue;
            };
            if !name.starts_with("NvSciError_") {
                continue;
            }
            let value = u32::from_str_radix(hex, 16).unwrap();
            errors += 1;
            let ours = nvsci::error_name(value);
            if ours != name {
                differences.push(format!(
                    "nvscierror.h: error {value:#x} is {name}, Ferrostream says {ours}"
                ));
            }
        }
        assert!(errors > 50, "nvscierror.h: only {errors} errors read");
        checked.push(format!(
            "nvscibuf.h {}.{}, nvscisync.h {}.{}",
            sci["NvSciBufMajorVersion"],
            sci["NvSciBufMinorVersion"],
            sci["NvSciSyncMajorVersion"],
            sci["NvSciSyncMinorVersion"]
        ));
    }
    if found.tensorrt.is_some() {
        let facts = layout_facts("tensorrt", &[], &system);
        let real = &facts["tensorrt"];
        let mut skip = vec!["NV_TENSORRT_MAJOR", "NV_TENSORRT_MINOR"];
        if real["NV_TENSORRT_MAJOR"] >= 11 {
            skip.extend(REMOVED_IN_TENSORRT_11);
        }
        differences.extend(compare_declarations(
            "NvInfer.h",
            real,
            &ours["tensorrt"],
            &skip,
        ));
        // The shim itself, against the real headers, every warning an error but deprecations
        // (as gst-trtinfer's build: on 10.x, setInt8Calibrator and the precision flags are
        // deprecated and still the way to build FP16 and calibrated INT8 engines). With 11.x
        // headers this compiles the shim's 11 path, which CI's compile check does not.
        let mut cc = Command::new("c++");
        cc.args(["-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror"])
            .arg("-Wno-deprecated-declarations")
            .arg("-I")
            .arg(ours_dir.join("tensorrt"));
        for dir in &system {
            cc.arg("-isystem").arg(dir);
        }
        cc.arg(ours_dir.join("tensorrt/fs_trt.cpp"));
        run(&mut cc);
        checked.push(format!(
            "NvInfer.h, NvOnnxParser.h and the TensorRT shim (TensorRT {}.{})",
            real["NV_TENSORRT_MAJOR"], real["NV_TENSORRT_MINOR"]
        ));
    }

    if checked.is_empty() {
        let message = "no NVIDIA headers found: set DEEPSTREAM_ROOT, CUDA_HOME, TENSORRT_ROOT or \
                       NVSCI_ROOT (docs/NVIDIA_HEADERS.md); nothing was checked";
        assert!(
            std::env::var("FERROSTREAM_REQUIRE_NVIDIA_HEADERS").as_deref() != Ok("1"),
            "{message}"
        );
        eprintln!("SKIPPED: {message}");
        return;
    }
    for what in &checked {
        eprintln!("checked against NVIDIA's headers: {what}");
    }
    assert!(
        differences.is_empty(),
        "Ferrostream differs from NVIDIA's headers:\n{}",
        differences.join("\n")
    );
}
