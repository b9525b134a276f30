// SPDX-License-Identifier: MIT OR Apache-2.0
//! Ferrostream's NvSciBuf / NvSciSync layer (`ferrostream_core::nvsci`), which rsdlainfer's
//! standalone mode allocates its tensors and fences with, run against a stand-in for NVIDIA's
//! libraries (`tests/nvsci-fake/fake_nvsci.c`, built here under both library names): NvSci
//! exists only on Jetson and DRIVE OS. The stand-in checks every attribute's key, value size and
//! value as NVIDIA's headers type them, and keeps a registry of live handles, so these tests show
//! that the layer passes what the headers ask for, reports failures by their NvSci names, and
//! frees every handle exactly once (lists, objects, modules, the conflict lists of a failed
//! reconciliation, and fences' references).
//!
//! What the stand-in cannot show is NVIDIA's own behaviour (which engines a reconciled buffer
//! lands in, real fences): that needs a Jetson.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use ferrostream_core::nvsci::{
    self, BufAttrList, CpuWaitContext, Fence, LIBRARY_DIR_VARIABLE, Libraries, RawBuffer,
    SyncAttrList, SyncObj, ffi,
};
use ferrostream_tests::{assert_passes_in_child, is_child, repo_root};

/// Builds the stand-in as `libnvscibuf.so.1` and `libnvscisync.so.1` in a directory of its own.
fn build_stand_in() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("nvsci-fake-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = repo_root().join("tests/nvsci-fake/fake_nvsci.c");
    for name in ["libnvscibuf.so.1", "libnvscisync.so.1"] {
        let status = Command::new("cc")
            .args([
                "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o",
            ])
            .arg(dir.join(name))
            .arg(&source)
            .status()
            .expect("a C compiler (cc)");
        assert!(status.success(), "building the NvSci stand-in failed");
    }
    dir
}

/// The stand-in's own counters, read from the copy loaded under `name` (the same file the layer
/// loaded, so the same state).
struct Counters {
    lib: libloading::Library,
}

impl Counters {
    fn open(dir: &Path, name: &str) -> Self {
        // SAFETY: the stand-in has no initialisers.
        let lib = unsafe { libloading::Library::new(dir.join(name)) }.unwrap();
        Self { lib }
    }

    fn get(&self, symbol: &[u8]) -> i32 {
        // SAFETY: the stand-in's counters take nothing and return an int.
        unsafe {
            (self
                .lib
                .get::<unsafe extern "C" fn() -> i32>(symbol)
                .unwrap())()
        }
    }

    fn live(&self) -> i32 {
        self.get(b"fake_nvsci_live\0")
    }

    fn bad_frees(&self) -> i32 {
        self.get(b"fake_nvsci_bad_frees\0")
    }
}

fn child_dir() -> PathBuf {
    PathBuf::from(std::env::var_os(LIBRARY_DIR_VARIABLE).expect("set by the parent"))
}

/// Runs `test` again in a child process whose NvSci layer loads the stand-in (the folder it
/// tries first, before a Jetson's own libraries).
fn in_child_with_stand_in(test: &str) {
    let dir = build_stand_in();
    assert_passes_in_child(test, &[(LIBRARY_DIR_VARIABLE, dir.to_str().unwrap())]);
}

#[test]
fn raw_buffers_are_allocated_with_the_header_types_and_freed_once() {
    if !is_child() {
        return in_child_with_stand_in(
            "raw_buffers_are_allocated_with_the_header_types_and_freed_once",
        );
    }
    let dir = child_dir();
    let nvsci = Libraries::load().expect("the stand-in loads");
    let buf = Counters::open(&dir, "libnvscibuf.so.1");
    assert_eq!(buf.live(), 1, "one module open");
    {
        // A tensor the CPU maps: its size comes back from the reconciled list, its bytes are
        // the CPU's to write.
        let request = RawBuffer {
            size: 1000,
            align: 128,
            gpu: Some([0x5a; 16]),
            cpu_access: true,
        };
        let obj = request.allocate(&nvsci, &[]).expect("allocated");
        assert_eq!(obj.size(), 1000);
        let ptr = obj.cpu_ptr().unwrap();
        // SAFETY: the stand-in's buffer holds `size` bytes, alive while `obj` is.
        let bytes = unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), 1000) };
        bytes.fill(7);
        assert_eq!(bytes[999], 7);
        // The reconciliation's input list was freed at once; the module and the object live.
        assert_eq!(buf.live(), 2);

        // Without CPU access, mapping it is an error by NvSci's own name.
        let gpu_only = RawBuffer {
            cpu_access: false,
            ..request
        }
        .allocate(&nvsci, &[])
        .unwrap();
        let e = gpu_only.cpu_ptr().unwrap_err().to_string();
        assert!(
            e.contains("NvSciBufObjGetCpuPtr") && e.contains("NvSciError_NotPermitted"),
            "{e}"
        );

        // Another accessor's list joins the reconciliation when its size is the same; a list
        // asking another size does not reconcile (nvscibuf.h: raw sizes must match).
        let other = |size| {
            RawBuffer {
                size,
                align: 256,
                gpu: None,
                cpu_access: false,
            }
            .attributes(&nvsci)
            .unwrap()
        };
        let joint = request.allocate(&nvsci, &[&other(1000)]).unwrap();
        assert_eq!(joint.size(), 1000);
        let Err(e) = request.allocate(&nvsci, &[&other(4096)]) else {
            panic!("raw buffers of 1000 and 4096 bytes reconciled");
        };
        assert!(
            e.to_string().contains("NvSciError_ReconciliationFailed"),
            "{e}"
        );

        // A request the library refuses fails by name, and the conflict list it returned is
        // freed too.
        let before = buf.live();
        let Err(e) = (RawBuffer { size: 0, ..request }).allocate(&nvsci, &[]) else {
            panic!("a buffer of 0 bytes was allocated");
        };
        assert_eq!(
            e,
            nvsci::NvSciError::Call {
                call: "NvSciBufAttrListReconcile",
                code: 0x10100
            }
        );
        assert!(e.to_string().contains("NvSciError_ReconciliationFailed"));
        assert_eq!(buf.live(), before, "no list left behind by the failure");

        // An empty reconciliation is refused before the library is called.
        assert!(BufAttrList::reconcile(&[]).is_err());
    }
    assert_eq!(
        buf.live(),
        1,
        "every list and object freed; the module is open"
    );
    drop(nvsci);
    assert_eq!(buf.live(), 0, "the module closed");
    assert_eq!(buf.bad_frees(), 0, "nothing freed twice");
}

#[test]
fn sync_objects_and_fences_release_what_they_hold() {
    if !is_child() {
        return in_child_with_stand_in("sync_objects_and_fences_release_what_they_hold");
    }
    let dir = child_dir();
    let nvsci = Libraries::load().expect("the stand-in loads");
    let sync = Counters::open(&dir, "libnvscisync.so.1");
    type Fill = unsafe extern "C" fn(ffi::SyncObj, *mut ffi::SyncFence) -> u32;
    type Signal = unsafe extern "C" fn(ffi::SyncObj);
    // SAFETY: the stand-in's signaler entry points, with these signatures.
    let (fill, signal) = unsafe {
        (
            *sync.lib.get::<Fill>(b"fake_nvsci_fill_fence\0").unwrap(),
            *sync.lib.get::<Signal>(b"fake_nvsci_signal\0").unwrap(),
        )
    };
    let fence_refs = || sync.get(b"fake_nvsci_fence_refs\0");
    {
        // One signaler and one waiter reconcile; the lists passed in stay the caller's.
        let signaler = SyncAttrList::cpu(&nvsci, ffi::SYNC_PERM_SIGNAL_ONLY).unwrap();
        let waiter = SyncAttrList::cpu(&nvsci, ffi::SYNC_PERM_WAIT_ONLY).unwrap();
        let obj = SyncObj::allocate(&[&signaler, &waiter]).expect("reconciled");
        drop((signaler, waiter));
        let context = CpuWaitContext::new(&nvsci).unwrap();

        // A fence nobody filled is reached at once.
        let mut fence = Fence::new(&nvsci);
        assert!(fence.is_cleared());
        fence.wait(&context, Duration::ZERO).unwrap();

        // Filled by the signaler: not reached until it signals; the timeout is NvSci's.
        // SAFETY: a live object and the fence's own storage.
        assert_eq!(unsafe { fill(obj.as_raw(), fence.as_mut_ptr()) }, 0);
        assert!(!fence.is_cleared());
        assert_eq!(fence_refs(), 1);
        let e = fence
            .wait(&context, Duration::from_millis(1))
            .unwrap_err()
            .to_string();
        assert!(e.contains("NvSciError_Timeout"), "{e}");
        // SAFETY: a live object.
        unsafe { signal(obj.as_raw()) };
        fence.wait(&context, Duration::from_millis(1)).unwrap();

        // Clearing releases the fence's reference; dropping a filled fence does too.
        fence.clear();
        assert!(fence.is_cleared());
        assert_eq!(fence_refs(), 0);
        // SAFETY: as above.
        assert_eq!(unsafe { fill(obj.as_raw(), fence.as_mut_ptr()) }, 0);
        assert_eq!(fence_refs(), 1);
        drop(fence);
        assert_eq!(fence_refs(), 0, "a dropped fence releases its object");

        // Two waiters and no signaler do not reconcile: an error by name, nothing left behind.
        let before = sync.live();
        let a = SyncAttrList::cpu(&nvsci, ffi::SYNC_PERM_WAIT_ONLY).unwrap();
        let b = SyncAttrList::cpu(&nvsci, ffi::SYNC_PERM_WAIT_ONLY).unwrap();
        let Err(e) = SyncObj::allocate(&[&a, &b]) else {
            panic!("a sync object without a signaler was allocated");
        };
        assert!(
            e.to_string()
                .contains("NvSciSyncAttrListReconcile failed: NvSciError_ReconciliationFailed"),
            "{e}"
        );
        drop((a, b));
        assert_eq!(sync.live(), before);
        drop(obj);
    }
    assert_eq!(sync.live(), 1, "only the module is left");
    drop(nvsci);
    assert_eq!(sync.live(), 0);
    assert_eq!(sync.bad_frees(), 0, "nothing freed twice");
}
