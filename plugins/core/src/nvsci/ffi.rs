// SPDX-License-Identifier: MIT OR Apache-2.0
//! The raw NvSciBuf and NvSciSync C API (`libnvscibuf.so.1`, `libnvscisync.so.1`; Jetson Linux
//! and DRIVE OS), as far as Ferrostream uses it: `#[repr(C)]` mirrors of the structures, the
//! attribute keys and values, error codes and function signatures, resolved at run time.
//!
//! Layouts and values follow NVIDIA's `nvscibuf.h`, `nvscisync.h` and `nvscierror.h`; they are
//! checked against the published headers by tests/tests/nvidia_headers.rs (versions in
//! docs/NVIDIA_HEADERS.md), and the unit tests below pin every size and offset.

use std::ffi::c_void;

/// `NvSciError`.
pub type NvSciError = u32;
pub const SUCCESS: NvSciError = 0;

/// Opaque handles (`NvSciBufModule`, `NvSciBufAttrList`, `NvSciBufObj`, and NvSciSync's).
pub type BufModule = *mut c_void;
pub type BufAttrList = *mut c_void;
pub type BufObj = *mut c_void;
pub type SyncModule = *mut c_void;
pub type SyncAttrList = *mut c_void;
pub type SyncObj = *mut c_void;
pub type SyncCpuWaitContext = *mut c_void;

/// `NvSciBufType` (an enum: 4 bytes).
pub type BufType = u32;
pub const BUF_TYPE_RAW_BUFFER: BufType = 1;
pub const BUF_TYPE_TENSOR: BufType = 3;

/// `NvSciBufAttrKey`: general keys start at 0, raw-buffer keys at `1 << 16` (the type in bits
/// 16..26, `NV_SCI_BUF_ATTRKEY_BIT_COUNT`).
pub const BUF_KEY_TYPES: u32 = 1;
pub const BUF_KEY_NEED_CPU_ACCESS: u32 = 2;
pub const BUF_KEY_REQUIRED_PERM: u32 = 3;
pub const BUF_KEY_ENABLE_CPU_CACHE: u32 = 4;
pub const BUF_KEY_GPU_ID: u32 = 5;
pub const BUF_KEY_RAW_SIZE: u32 = BUF_TYPE_RAW_BUFFER << 16;
pub const BUF_KEY_RAW_ALIGN: u32 = BUF_KEY_RAW_SIZE + 1;

/// `NvSciBufAttrValAccessPerm` (an enum: 4 bytes).
pub type BufAccessPerm = u32;
pub const BUF_PERM_READ_ONLY: BufAccessPerm = 1;
pub const BUF_PERM_READ_WRITE: BufAccessPerm = 3;

/// `NvSciBufAttrKeyValuePair` (24 bytes): `value` points at `len` bytes of the key's type.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct BufAttrKeyValuePair {
    pub key: u32,
    pub value: *const c_void,
    pub len: usize,
}

/// `NvSciRmGpuId`: a GPU's UUID (`cuDeviceGetUuid`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuId {
    pub bytes: [u8; 16],
}

/// `NvSciSyncAttrKey`.
pub const SYNC_KEY_NEED_CPU_ACCESS: u32 = 1;
pub const SYNC_KEY_REQUIRED_PERM: u32 = 2;

/// `NvSciSyncAccessPerm` (a `uint64_t`).
pub type SyncAccessPerm = u64;
pub const SYNC_PERM_WAIT_ONLY: SyncAccessPerm = 1;
pub const SYNC_PERM_SIGNAL_ONLY: SyncAccessPerm = 2;
pub const SYNC_PERM_WAIT_SIGNAL: SyncAccessPerm = 3;

/// `NvSciSyncFenceMaxTimeout`: the longest wait `NvSciSyncFenceWait` accepts, in microseconds.
pub const FENCE_MAX_TIMEOUT_US: i64 = i64::MAX / 1000;

/// `NvSciSyncAttrKeyValuePair` (24 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct SyncAttrKeyValuePair {
    pub key: u32,
    pub value: *const c_void,
    pub len: usize,
}

/// `NvSciSyncFence` (48 bytes): opaque to applications; all-zero is the cleared fence
/// (`NvSciSyncFenceInitializer`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncFence {
    pub payload: [u64; 6],
}

// libnvscibuf.
pub type BufModuleOpen = unsafe extern "C" fn(*mut BufModule) -> NvSciError;
pub type BufModuleClose = unsafe extern "C" fn(BufModule);
pub type BufAttrListCreate = unsafe extern "C" fn(BufModule, *mut BufAttrList) -> NvSciError;
pub type BufAttrListFree = unsafe extern "C" fn(BufAttrList);
pub type BufAttrListSetAttrs =
    unsafe extern "C" fn(BufAttrList, *mut BufAttrKeyValuePair, usize) -> NvSciError;
pub type BufAttrListGetAttrs =
    unsafe extern "C" fn(BufAttrList, *mut BufAttrKeyValuePair, usize) -> NvSciError;
pub type BufAttrListReconcile = unsafe extern "C" fn(
    *const BufAttrList,
    usize,
    *mut BufAttrList,
    *mut BufAttrList,
) -> NvSciError;
pub type BufObjAlloc = unsafe extern "C" fn(BufAttrList, *mut BufObj) -> NvSciError;
pub type BufObjFree = unsafe extern "C" fn(BufObj);
pub type BufObjGetCpuPtr = unsafe extern "C" fn(BufObj, *mut *mut c_void) -> NvSciError;

// libnvscisync.
pub type SyncModuleOpen = unsafe extern "C" fn(*mut SyncModule) -> NvSciError;
pub type SyncModuleClose = unsafe extern "C" fn(SyncModule);
pub type SyncAttrListCreate = unsafe extern "C" fn(SyncModule, *mut SyncAttrList) -> NvSciError;
pub type SyncAttrListFree = unsafe extern "C" fn(SyncAttrList);
pub type SyncAttrListSetAttrs =
    unsafe extern "C" fn(SyncAttrList, *const SyncAttrKeyValuePair, usize) -> NvSciError;
pub type SyncAttrListReconcile = unsafe extern "C" fn(
    *const SyncAttrList,
    usize,
    *mut SyncAttrList,
    *mut SyncAttrList,
) -> NvSciError;
pub type SyncObjAlloc = unsafe extern "C" fn(SyncAttrList, *mut SyncObj) -> NvSciError;
pub type SyncObjFree = unsafe extern "C" fn(SyncObj);
pub type SyncFenceClear = unsafe extern "C" fn(*mut SyncFence);
pub type SyncCpuWaitContextAlloc =
    unsafe extern "C" fn(SyncModule, *mut SyncCpuWaitContext) -> NvSciError;
pub type SyncCpuWaitContextFree = unsafe extern "C" fn(SyncCpuWaitContext);
pub type SyncFenceWait =
    unsafe extern "C" fn(*const SyncFence, SyncCpuWaitContext, i64) -> NvSciError;

/// Every `NvSciError` of `nvscierror.h` (DRIVE OS 6.0.10's, the fullest published set; Jetson
/// Linux's is a subset), by value. tests/tests/nvidia_headers.rs checks each header's list
/// against it.
pub const ERRORS: &[(NvSciError, &str)] = &[
    (0x0, "NvSciError_Success"),
    (0x1, "NvSciError_Unknown"),
    (0x10, "NvSciError_NotImplemented"),
    (0x11, "NvSciError_NotSupported"),
    (0x20, "NvSciError_AccessDenied"),
    (0x21, "NvSciError_NotPermitted"),
    (0x22, "NvSciError_InvalidState"),
    (0x23, "NvSciError_InvalidOperation"),
    (0x24, "NvSciError_NotInitialized"),
    (0x25, "NvSciError_AlreadyInUse"),
    (0x26, "NvSciError_AlreadyDone"),
    (0x27, "NvSciError_NotYetAvailable"),
    (0x28, "NvSciError_NoLongerAvailable"),
    (0x30, "NvSciError_InsufficientMemory"),
    (0x31, "NvSciError_InsufficientResource"),
    (0x32, "NvSciError_ResourceError"),
    (0x100, "NvSciError_BadParameter"),
    (0x101, "NvSciError_BadAddress"),
    (0x102, "NvSciError_TooBig"),
    (0x103, "NvSciError_Overflow"),
    (0x104, "NvSciError_InconsistentData"),
    (0x105, "NvSciError_InsufficientData"),
    (0x106, "NvSciError_IndexOutOfRange"),
    (0x107, "NvSciError_ValueOutOfRange"),
    (0x108, "NvSciError_Revalidation_Success"),
    (0x200, "NvSciError_Timeout"),
    (0x201, "NvSciError_TryItAgain"),
    (0x202, "NvSciError_Busy"),
    (0x203, "NvSciError_InterruptedCall"),
    (0x1000, "NvSciError_NoSuchDevice"),
    (0x1001, "NvSciError_NoSpace"),
    (0x1002, "NvSciError_NoSuchDevAddr"),
    (0x1003, "NvSciError_IO"),
    (0x1004, "NvSciError_InvalidIoctlNum"),
    (0x1100, "NvSciError_NoSuchEntry"),
    (0x1101, "NvSciError_BadFileDesc"),
    (0x1102, "NvSciError_CorruptedFileSys"),
    (0x1103, "NvSciError_FileExists"),
    (0x1104, "NvSciError_IsDirectory"),
    (0x1105, "NvSciError_ReadOnlyFileSys"),
    (0x1106, "NvSciError_TextFileBusy"),
    (0x1107, "NvSciError_FileNameTooLong"),
    (0x1108, "NvSciError_FileTooBig"),
    (0x1109, "NvSciError_TooManySymbolLinks"),
    (0x110a, "NvSciError_TooManyOpenFiles"),
    (0x110b, "NvSciError_FileTableOverflow"),
    (0x110c, "NvSciError_EndOfFile"),
    (0x1200, "NvSciError_ConnectionReset"),
    (0x1201, "NvSciError_AlreadyInProgress"),
    (0x1202, "NvSciError_NoData"),
    (0x1203, "NvSciError_NoDesiredMessage"),
    (0x1204, "NvSciError_MessageSize"),
    (0x1205, "NvSciError_NoRemote"),
    (0x2000, "NvSciError_NoSuchProcess"),
    (0x2100, "NvSciError_MutexNotRecoverable"),
    (0x2101, "NvSciError_LockOwnerDead"),
    (0x2102, "NvSciError_ResourceDeadlock"),
    (0x10100, "NvSciError_ReconciliationFailed"),
    (0x10101, "NvSciError_AttrListValidationFailed"),
    (0x10102, "NvSciError_ObjValidationFailed"),
    (0xffffff, "NvSciError_CommonEnd"),
    (0x1000000, "NvSciError_NvSciBufUnknown"),
    (0x1ffffff, "NvSciError_NvSciBufEnd"),
    (0x2000000, "NvSciError_NvSciSyncUnknown"),
    (0x2000001, "NvSciError_UnsupportedConfig"),
    (0x2000002, "NvSciError_ClearedFence"),
    (0x2ffffff, "NvSciError_NvSciSyncEnd"),
    (0x3000000, "NvSciError_NvSciStreamUnknown"),
    (0x3000001, "NvSciError_StreamInternalError"),
    (0x3000100, "NvSciError_StreamBadBlock"),
    (0x3000101, "NvSciError_StreamBadPacket"),
    (0x3000102, "NvSciError_StreamBadCookie"),
    (0x3000200, "NvSciError_StreamNotConnected"),
    (0x3000201, "NvSciError_StreamNotSetupPhase"),
    (0x3000202, "NvSciError_StreamNotSafetyPhase"),
    (0x3001000, "NvSciError_NoStreamPacket"),
    (0x3001001, "NvSciError_StreamPacketInaccessible"),
    (0x3001002, "NvSciError_StreamPacketDeleted"),
    (0x3003000, "NvSciError_StreamInfoNotProvided"),
    (0x3400000, "NvSciError_StreamLockFailed"),
    (0x3800000, "NvSciError_StreamBadSrcIndex"),
    (0x3800001, "NvSciError_StreamBadDstIndex"),
    (0x3ffffff, "NvSciError_NvSciStreamEnd"),
    (0x4000000, "NvSciError_NvSciIpcUnknown"),
    (0x4000001, "NvSciError_PcieUncorrectableFatal"),
    (0x4000002, "NvSciError_PcieUncorrectableNonFatal"),
    (0x4000003, "NvSciError_PcieEdmaTransferErr"),
    (0x4000004, "NvSciError_PcieValidationError"),
    (0x4ffffff, "NvSciError_NvSciIpcEnd"),
    (0x5000000, "NvSciError_NvSciEventUnknown"),
    (0x5ffffff, "NvSciError_NvSciEventEnd"),
];

/// The name of an `NvSciError`, as `nvscierror.h` spells it.
pub fn error_name(code: NvSciError) -> String {
    match ERRORS.binary_search_by_key(&code, |&(value, _)| value) {
        Ok(i) => ERRORS[i].1.to_string(),
        Err(_) => format!("NvSciError {code:#x}"),
    }
}

#[cfg(test)]
mod tests {
    use std::mem::{offset_of, size_of};

    use super::*;

    #[test]
    fn structures_match_the_headers() {
        assert_eq!(size_of::<BufAttrKeyValuePair>(), 24);
        assert_eq!(offset_of!(BufAttrKeyValuePair, key), 0);
        assert_eq!(offset_of!(BufAttrKeyValuePair, value), 8);
        assert_eq!(offset_of!(BufAttrKeyValuePair, len), 16);
        assert_eq!(size_of::<SyncAttrKeyValuePair>(), 24);
        assert_eq!(offset_of!(SyncAttrKeyValuePair, value), 8);
        assert_eq!(offset_of!(SyncAttrKeyValuePair, len), 16);
        assert_eq!(size_of::<SyncFence>(), 48);
        assert_eq!(size_of::<GpuId>(), 16);
    }

    #[test]
    fn keys_and_values_match_the_headers() {
        // NV_SCI_BUF_RAW_BUF_ATTR_KEY_START = NvSciBufType_RawBuffer << 16.
        assert_eq!(BUF_KEY_RAW_SIZE, 0x10000);
        assert_eq!(BUF_KEY_RAW_ALIGN, 0x10001);
        assert_eq!(BUF_KEY_GPU_ID, 5);
        assert_eq!(
            SYNC_PERM_WAIT_SIGNAL,
            SYNC_PERM_WAIT_ONLY | SYNC_PERM_SIGNAL_ONLY
        );
    }

    #[test]
    fn errors_have_their_header_names() {
        assert_eq!(error_name(0), "NvSciError_Success");
        assert_eq!(error_name(0x11), "NvSciError_NotSupported");
        assert_eq!(error_name(0x10100), "NvSciError_ReconciliationFailed");
        // What NvSciSync reconciliation returns for a signaler/waiter mismatch.
        assert_eq!(error_name(0x0200_0001), "NvSciError_UnsupportedConfig");
        assert!(
            ERRORS.windows(2).all(|w| w[0].0 < w[1].0),
            "sorted, each value once"
        );
        assert_eq!(error_name(0x4242), "NvSciError 0x4242");
    }
}
