// SPDX-License-Identifier: MIT OR Apache-2.0
//! The cuDLA C API (`libcudla.so.1`, JetPack), as far as the hybrid-mode and standalone-mode
//! runners use it:
//! `#[repr(C)]` mirrors of its structures and the function signatures, resolved at run time.
//! Layouts follow `cudla.h` (JetPack 6), checked against cuDLA 1.5's header by
//! tests/tests/nvidia_headers.rs (docs/NVIDIA_HEADERS.md); the tests pin every size and offset.

use std::ffi::{c_char, c_void};

/// `cudlaStatus`.
pub type Status = i32;
pub const SUCCESS: Status = 0;

/// `cudlaDevHandle`, `cudlaModule`: opaque pointers.
pub type DevHandle = *mut c_void;
pub type ModuleHandle = *mut c_void;

/// `cudlaDevHandle` creation flags.
pub const CUDLA_CUDA_DLA: u32 = 0;
pub const CUDLA_STANDALONE: u32 = 1;

/// `cudlaModuleAttributeType`.
pub const NUM_INPUT_TENSORS: u32 = 0;
pub const NUM_OUTPUT_TENSORS: u32 = 1;
pub const INPUT_TENSOR_DESCRIPTORS: u32 = 2;
pub const OUTPUT_TENSOR_DESCRIPTORS: u32 = 3;

/// `cudlaModuleTensorDescriptor` (168 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TensorDescriptor {
    pub name: [c_char; 81],
    pub size: u64,
    pub n: u64,
    pub c: u64,
    pub h: u64,
    pub w: u64,
    pub data_format: u8,
    pub data_type: u8,
    pub data_category: u8,
    pub pixel_format: u8,
    pub pixel_mapping: u8,
    pub stride: [u32; 8],
}

impl Default for TensorDescriptor {
    fn default() -> Self {
        // SAFETY: plain data; all-zero is a valid value of every field.
        unsafe { std::mem::zeroed() }
    }
}

/// `cudlaTensorDescriptor data formats`.
pub const FORMAT_NCHW: u8 = 1;
pub const FORMAT_NHWC: u8 = 2;
pub const FORMAT_NCXHWX: u8 = 3;

/// `cudlaDataType`.
pub const TYPE_FLOAT: u8 = 1;
pub const TYPE_HALF: u8 = 2;
pub const TYPE_INT16: u8 = 3;
pub const TYPE_INT8: u8 = 4;
pub const TYPE_UINT8: u8 = 5;
pub const TYPE_UINT16: u8 = 6;

/// `cudlaModuleAttribute`: a union; the runner reads the count or the descriptor pointer.
#[repr(C)]
#[derive(Clone, Copy)]
pub union ModuleAttribute {
    pub num_tensors: u32,
    pub descriptors: *mut TensorDescriptor,
}

/// `cudlaTask` (48 bytes). Wait and signal events are NULL in hybrid mode.
#[repr(C)]
pub struct Task {
    pub module_handle: ModuleHandle,
    pub output_tensor: *const *mut u64,
    pub num_output_tensors: u32,
    pub num_input_tensors: u32,
    pub input_tensor: *const *mut u64,
    pub wait_events: *const WaitEvents,
    pub signal_events: *mut SignalEvents,
}

/// `cudlaSubmissionFlags`: the task is skipped, its wait and signal events still honoured.
pub const SUBMIT_NOOP: u32 = 1;

/// `cudlaNvSciSyncAttributes` (the reverse of CUDA's `CUDA_NVSCISYNC_ATTR_*`).
pub const NVSCISYNC_ATTR_WAIT: u32 = 1;
pub const NVSCISYNC_ATTR_SIGNAL: u32 = 2;

/// `cudlaAccessPermissionFlags` of `cudlaImportExternalMemory`.
pub const READ_WRITE_PERM: u32 = 0;
pub const READ_ONLY_PERM: u32 = 1;

/// `cudlaFenceType`.
pub const NVSCISYNC_FENCE: u32 = 1;
pub const NVSCISYNC_FENCE_SOF: u32 = 2;

/// `cudlaExternalMemoryHandleDesc` (16 bytes): an `NvSciBufObj` and its size.
#[repr(C)]
pub struct ExternalMemoryHandleDesc {
    pub ext_buf_object: *const c_void,
    pub size: u64,
}

/// `cudlaExternalSemaphoreHandleDesc` (8 bytes): an `NvSciSyncObj`.
#[repr(C)]
pub struct ExternalSemaphoreHandleDesc {
    pub ext_sync_object: *const c_void,
}

/// `CudlaFence` (16 bytes): an `NvSciSyncFence*` and whether it marks the start or the end of
/// the task.
#[repr(C)]
pub struct Fence {
    pub fence: *mut c_void,
    pub fence_type: u32,
}

/// `cudlaWaitEvents` (16 bytes): fences the task waits on before it starts.
#[repr(C)]
pub struct WaitEvents {
    pub pre_fences: *const Fence,
    pub num_events: u32,
}

/// `cudlaSignalEvents` (24 bytes): imported sync objects the task signals, and the fences cuDLA
/// fills for them at submission.
#[repr(C)]
pub struct SignalEvents {
    pub dev_ptrs: *const *mut u64,
    pub eof_fences: *mut Fence,
    pub num_events: u32,
}

pub type GetVersion = unsafe extern "C" fn(*mut u64) -> Status;
pub type DeviceGetCount = unsafe extern "C" fn(*mut u64) -> Status;
pub type CreateDevice = unsafe extern "C" fn(u64, *mut DevHandle, u32) -> Status;
pub type DestroyDevice = unsafe extern "C" fn(DevHandle) -> Status;
pub type MemRegister =
    unsafe extern "C" fn(DevHandle, *const u64, usize, *mut *mut u64, u32) -> Status;
pub type MemUnregister = unsafe extern "C" fn(DevHandle, *const u64) -> Status;
pub type ModuleLoadFromMemory =
    unsafe extern "C" fn(DevHandle, *const u8, usize, *mut ModuleHandle, u32) -> Status;
pub type ModuleGetAttributes =
    unsafe extern "C" fn(ModuleHandle, u32, *mut ModuleAttribute) -> Status;
pub type ModuleUnload = unsafe extern "C" fn(ModuleHandle, u32) -> Status;
pub type SubmitTask = unsafe extern "C" fn(DevHandle, *const Task, u32, *mut c_void, u32) -> Status;
pub type GetLastError = unsafe extern "C" fn(DevHandle) -> Status;
pub type ImportExternalMemory =
    unsafe extern "C" fn(DevHandle, *const ExternalMemoryHandleDesc, *mut *mut u64, u32) -> Status;
pub type ImportExternalSemaphore = unsafe extern "C" fn(
    DevHandle,
    *const ExternalSemaphoreHandleDesc,
    *mut *mut u64,
    u32,
) -> Status;
pub type GetNvSciSyncAttributes = unsafe extern "C" fn(*mut u64, u32) -> Status;

/// The name of a `cudlaStatus`, as `cudla.h` spells it.
pub fn status_name(status: Status) -> String {
    let name = match status {
        0 => "cudlaSuccess",
        1 => "cudlaErrorInvalidParam",
        2 => "cudlaErrorOutOfResources",
        3 => "cudlaErrorCreationFailed",
        4 => "cudlaErrorInvalidAddress",
        5 => "cudlaErrorOs",
        6 => "cudlaErrorCuda",
        7 => "cudlaErrorUmd",
        8 => "cudlaErrorInvalidDevice",
        9 => "cudlaErrorInvalidAttribute",
        10 => "cudlaErrorIncompatibleDlaSWVersion",
        11 => "cudlaErrorMemoryRegistered",
        12 => "cudlaErrorInvalidModule",
        13 => "cudlaErrorUnsupportedOperation",
        14 => "cudlaErrorNvSci",
        15 => "cudlaErrorDriverNotFound",
        0x4000_0001 => "cudlaErrorDlaErrInvalidInput",
        0x4000_0002 => "cudlaErrorDlaErrInvalidPreAction",
        0x4000_0003 => "cudlaErrorDlaErrNoMem",
        0x4000_0004 => "cudlaErrorDlaErrProcessorBusy",
        0x4000_0005 => "cudlaErrorDlaErrTaskStatusMismatch",
        0x4000_0006 => "cudlaErrorDlaErrEngineTimeout",
        0x4000_0007 => "cudlaErrorDlaErrDataMismatch",
        0x7fff_ffff => "cudlaErrorUnknown",
        other => return format!("cudlaStatus {other}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use std::mem::{offset_of, size_of};

    use super::*;

    #[test]
    fn structures_match_cudla_h() {
        assert_eq!(size_of::<Task>(), 48);
        assert_eq!(offset_of!(Task, module_handle), 0);
        assert_eq!(offset_of!(Task, output_tensor), 8);
        assert_eq!(offset_of!(Task, num_output_tensors), 16);
        assert_eq!(offset_of!(Task, num_input_tensors), 20);
        assert_eq!(offset_of!(Task, input_tensor), 24);
        assert_eq!(offset_of!(Task, wait_events), 32);
        assert_eq!(offset_of!(Task, signal_events), 40);

        assert_eq!(size_of::<TensorDescriptor>(), 168);
        assert_eq!(offset_of!(TensorDescriptor, name), 0);
        assert_eq!(offset_of!(TensorDescriptor, size), 88);
        assert_eq!(offset_of!(TensorDescriptor, n), 96);
        assert_eq!(offset_of!(TensorDescriptor, c), 104);
        assert_eq!(offset_of!(TensorDescriptor, h), 112);
        assert_eq!(offset_of!(TensorDescriptor, w), 120);
        assert_eq!(offset_of!(TensorDescriptor, data_format), 128);
        assert_eq!(offset_of!(TensorDescriptor, data_type), 129);
        assert_eq!(offset_of!(TensorDescriptor, data_category), 130);
        assert_eq!(offset_of!(TensorDescriptor, pixel_format), 131);
        assert_eq!(offset_of!(TensorDescriptor, pixel_mapping), 132);
        assert_eq!(offset_of!(TensorDescriptor, stride), 136);

        assert_eq!(size_of::<ModuleAttribute>(), 8);

        assert_eq!(size_of::<ExternalMemoryHandleDesc>(), 16);
        assert_eq!(offset_of!(ExternalMemoryHandleDesc, size), 8);
        assert_eq!(size_of::<ExternalSemaphoreHandleDesc>(), 8);
        assert_eq!(size_of::<Fence>(), 16);
        assert_eq!(offset_of!(Fence, fence_type), 8);
        assert_eq!(size_of::<WaitEvents>(), 16);
        assert_eq!(offset_of!(WaitEvents, num_events), 8);
        assert_eq!(size_of::<SignalEvents>(), 24);
        assert_eq!(offset_of!(SignalEvents, eof_fences), 8);
        assert_eq!(offset_of!(SignalEvents, num_events), 16);
    }

    #[test]
    fn statuses_have_their_header_names() {
        assert_eq!(status_name(0), "cudlaSuccess");
        assert_eq!(status_name(7), "cudlaErrorUmd");
        assert_eq!(status_name(10), "cudlaErrorIncompatibleDlaSWVersion");
        assert_eq!(status_name(14), "cudlaErrorNvSci");
        assert_eq!(status_name(0x4000_0006), "cudlaErrorDlaErrEngineTimeout");
        assert_eq!(status_name(0x4000_0007), "cudlaErrorDlaErrDataMismatch");
        assert_eq!(status_name(99), "cudlaStatus 99");
        // Regression (cudla.h of cuDLA 1.5): the catch-all and the missing-driver codes are named.
        assert_eq!(status_name(0x7fff_ffff), "cudlaErrorUnknown");
        assert_eq!(status_name(15), "cudlaErrorDriverNotFound");
        // Every documented code has a name of its own.
        let names: std::collections::HashSet<String> = (0..=15)
            .chain(0x4000_0001..=0x4000_0007)
            .chain([0x7fff_ffff])
            .map(status_name)
            .collect();
        assert_eq!(names.len(), 24);
    }
}
