// SPDX-License-Identifier: MIT OR Apache-2.0
//! Where a Python view of a buffer's metadata reads and writes: the buffer, what keeps it alive,
//! the revision of the metadata it read, and the frame mappings taken through a writable view.
//! The metadata views (`crate::meta`) and the frame arrays (`crate::arrays`) share it.

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ferrostream_abi::FsBatch;
use pyo3::prelude::*;
use serde_json::Value;

use crate::errors::{self, NotWritableError, StaleMetaError};
use crate::library::{Lib, lib};

/// Where a view's buffer is, and the revision of the metadata it read.
pub struct View {
    /// The GstBuffer; 0 once a `writable` block ended.
    buffer: AtomicUsize,
    /// What keeps the buffer alive: the `Gst.Buffer` wrapper, or the probe's info.
    _keep: Py<PyAny>,
    revision: AtomicU64,
    /// Views from `ferrostream.writable(info)`: their buffer is the probe's, writable.
    pub writable: bool,
    /// Weak references to the writable frame mappings taken through this view.
    mappings: Mutex<Vec<Py<PyAny>>>,
}

impl View {
    pub fn new(buffer: *mut c_void, keep: Py<PyAny>, revision: u64, writable: bool) -> Arc<Self> {
        Arc::new(Self {
            buffer: AtomicUsize::new(buffer as usize),
            _keep: keep,
            revision: AtomicU64::new(revision),
            writable,
            mappings: Mutex::new(Vec::new()),
        })
    }

    /// Remembers a writable mapping taken through this view (weakly).
    pub fn track_mapping(&self, py: Python<'_>, mapping: &Bound<'_, PyAny>) -> PyResult<()> {
        let weak = py
            .import("weakref")?
            .call_method1("ref", (mapping,))?
            .unbind();
        self.mappings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(weak);
        Ok(())
    }

    /// How many writable mappings taken through this view are still alive.
    pub fn live_mappings(&self, py: Python<'_>) -> PyResult<usize> {
        let weak: Vec<Py<PyAny>> = self
            .mappings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|w| w.clone_ref(py))
            .collect();
        let mut alive = 0;
        for w in weak {
            if !w.bind(py).call0()?.is_none() {
                alive += 1;
            }
        }
        Ok(alive)
    }

    /// Why the buffer of a writable view is shared now.
    pub fn shared_error(&self, py: Python<'_>) -> PyErr {
        if self.live_mappings(py).unwrap_or(0) > 0 {
            NotWritableError::new_err(SHARED_BY_AN_ARRAY)
        } else {
            NotWritableError::new_err(SHARED_BY_A_WRAPPER)
        }
    }

    pub fn close(&self) {
        self.buffer.store(0, Ordering::Release);
    }

    pub fn buffer(&self) -> PyResult<*mut c_void> {
        match self.buffer.load(Ordering::Acquire) {
            0 => Err(StaleMetaError::new_err(
                "this view was taken with ferrostream.writable(info) and its `with` block has \
                 ended: the buffer has gone downstream",
            )),
            b => Ok(b as *mut c_void),
        }
    }

    /// The batch handle, checked to be the revision this view read.
    pub fn batch(&self, lib: &Lib) -> PyResult<*const FsBatch> {
        let buffer = self.buffer()?;
        // SAFETY: the buffer is alive (kept by `_keep`, or by the running probe).
        let batch = unsafe { (lib.batch_get)(buffer) };
        if batch.is_null() {
            return Err(StaleMetaError::new_err(
                "the buffer no longer carries Ferrostream metadata",
            ));
        }
        // SAFETY: a handle just returned by the library.
        let now = unsafe { (lib.batch_revision)(batch) };
        let read = self.revision.load(Ordering::Acquire);
        if now != read {
            return Err(StaleMetaError::new_err(format!(
                "the metadata was changed through another view (revision {now}, this view read \
                 {read}): take ferrostream.batch_meta(buffer) again"
            )));
        }
        Ok(batch)
    }

    /// Applies one edit; returns its result (an added object's index).
    pub fn edit(&self, py: Python<'_>, edit: Value) -> PyResult<i64> {
        if !self.writable {
            return Err(NotWritableError::new_err(
                "a view from ferrostream.batch_meta() is read-only: change metadata in a pad \
                 probe, with `with ferrostream.writable(info) as batch:`",
            ));
        }
        let lib = lib(py)?;
        let buffer = self.buffer()?;
        let text = edit.to_string();
        let mut revision = 0u64;
        let mut result = 0i64;
        let mut error: *mut c_char = std::ptr::null_mut();
        // SAFETY: the buffer is alive (see `batch`); the text outlives the call; the out
        // pointers are locals.
        let code = unsafe {
            (lib.batch_edit)(
                buffer,
                self.revision.load(Ordering::Acquire),
                text.as_ptr() as *const c_char,
                text.len(),
                &mut revision,
                &mut result,
                &mut error,
            )
        };
        let message = lib.take_string(error);
        if code == ferrostream_abi::status::NOT_WRITABLE {
            return Err(self.shared_error(py));
        }
        if code != ferrostream_abi::status::OK {
            return Err(errors::from_status(code, message));
        }
        self.revision.store(revision, Ordering::Release);
        Ok(result)
    }
}

/// Why the buffer of a `writable` block is not writable: only an array of its pixels can hold it.
pub const SHARED_BY_AN_ARRAY: &str = "the buffer is held by a frame array taken in this block \
     (an array keeps its buffer mapped, and so shared): make metadata changes before taking \
     frame_array, or delete the array first";

/// Why the buffer of a `writable` block is not writable when no array holds it.
pub const SHARED_BY_A_WRAPPER: &str = "the buffer is shared: a Gst.Buffer of it taken inside the \
     block (info.get_buffer()) or a frame array kept from earlier holds it; inside the block, use \
     the batch it gave and batch.frame_array()";
