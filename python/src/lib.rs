// SPDX-License-Identifier: MIT OR Apache-2.0
//! The `ferrostream` Python package: applications written with PyGObject read and change the
//! results of Ferrostream elements while the buffer is in the pipeline, and see frames as
//! arrays without a copy.
//!
//! The package is a thin client of the plugin's C ABI (`ferrostream_abi`): it finds the plugin
//! that GStreamer loaded and calls it, so the metadata is registered once and read by the code
//! that wrote it.

use pyo3::prelude::*;

mod arrays;
mod errors;
mod json;
mod library;
mod meta;
mod view;

use meta::{BatchMeta, Writable};

/// Results of Ferrostream elements, read and changed from Python.
///
/// Read the objects of any buffer (in a pad probe, or from an appsink sample):
///
///     batch = ferrostream.batch_meta(info.get_buffer())
///     for frame in batch.frames:
///         for obj in frame.objects:
///             print(frame.source_id, obj.object_id, obj.label, obj.confidence, obj.bbox)
///
/// Change them before downstream elements see the buffer:
///
///     with ferrostream.writable(info) as batch:
///         for frame in batch.frames:
///             for obj in frame.objects:
///                 if obj.bbox.width < 20:
///                     frame.remove_object(obj)
///             frame.add_text(f"{len(frame.objects)} objects", 10, 10)
///             frame.set_user_meta("site", {"zone": "gate"})
///
/// Names follow the JSON that rsmetaexport writes (`source_id`, `frame_num`, `pts_ns`,
/// `object_id`, `class_id`, `label`, `confidence`, `bbox`, ...); `to_dict()` returns exactly that
/// record. Frames as arrays: `frame_array(buffer, caps, index)`.
#[pymodule]
fn ferrostream(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ABI_VERSION", ferrostream_abi::ABI_VERSION)?;
    m.add_function(wrap_pyfunction!(batch_meta, m)?)?;
    m.add_function(wrap_pyfunction!(writable, m)?)?;
    m.add_function(wrap_pyfunction!(frame_array, m)?)?;
    m.add_function(wrap_pyfunction!(plugin_path, m)?)?;
    m.add_class::<BatchMeta>()?;
    m.add_class::<meta::FrameMeta>()?;
    m.add_class::<meta::ObjectMeta>()?;
    m.add_class::<meta::BBox>()?;
    m.add_class::<meta::Classification>()?;
    m.add_class::<Writable>()?;
    m.add_class::<arrays::Plane>()?;
    m.add_class::<arrays::FrameMapping>()?;
    m.add("Error", py.get_type::<errors::Error>())?;
    m.add("PluginError", py.get_type::<errors::PluginError>())?;
    m.add(
        "NotWritableError",
        py.get_type::<errors::NotWritableError>(),
    )?;
    m.add("StaleMetaError", py.get_type::<errors::StaleMetaError>())?;
    m.add("UNTRACKED", ferrostream_abi::UNTRACKED)?;
    m.add(
        "MAX_USER_VALUE_BYTES",
        ferrostream_abi::MAX_USER_VALUE_BYTES,
    )?;
    m.add("MAX_USER_DEPTH", ferrostream_abi::MAX_USER_DEPTH)?;
    Ok(())
}

/// The Ferrostream metadata of `buffer` (a `Gst.Buffer` from a pad probe or an appsink sample),
/// or None when it has none. The view reads the buffer now; its objects are read when first
/// asked for. It changes the buffer only when the buffer is writable (see `writable`).
#[pyfunction]
fn batch_meta(py: Python<'_>, buffer: &Bound<'_, PyAny>) -> PyResult<Option<BatchMeta>> {
    let gi = library::gi(py)?;
    let ptr = library::pointer_of(buffer, &gi.buffer, "Gst.Buffer", gi.pointer_offset)?;
    BatchMeta::read(py, ptr, buffer.clone().unbind(), false)
}

/// `with ferrostream.writable(info) as batch:` inside a pad probe (`info` is its
/// `Gst.PadProbeInfo`): makes the probe's buffer writable (copying it when it is shared; the
/// probe then passes the copy downstream) and gives its metadata, open for changes until the
/// block ends. `batch` is None when the buffer carries no metadata, unless `caps` (the pad's
/// plain video caps) are given: a frame no Ferrostream element has seen then gets an empty
/// batch of their size, so the application can add its own objects (its own detector, say).
/// Caps that are not fixed raw video caps, or describe a frame larger than the buffer, raise
/// ValueError.
#[pyfunction]
#[pyo3(signature = (info, caps=None))]
fn writable(info: &Bound<'_, PyAny>, caps: Option<&Bound<'_, PyAny>>) -> Writable {
    Writable::new(info.clone().unbind(), caps.map(|c| c.clone().unbind()))
}

/// The pixels of frame `index` of `buffer` without a copy, read-only (writable arrays come
/// from `batch.frame_array(caps, index)` inside a `writable` block). `caps` are the pad's caps
/// (`pad.get_current_caps()`, `sample.get_caps()`). System memory gives NumPy arrays: RGB, BGR,
/// RGBA, BGRA, RGBx, BGRx (and the other 8-bit packed RGB orders) and GRAY8 as one
/// `height x width x channels` array; the planar formats as their planes in GStreamer's order:
/// NV12 (Y, UV), NV21 (Y, VU), I420 (Y, U, V), YV12 (Y, V, U). CUDA memory gives `Plane`
/// objects with `__cuda_array_interface__` and `__dlpack__` (`cupy.asarray(plane)`,
/// `torch.from_dlpack(plane)`); GPU work on a writable plane must be finished (synchronised)
/// before the block ends. The buffer stays mapped as long as an array of it lives; inside a
/// `writable` block the metadata cannot be changed meanwhile: change it first.
#[pyfunction]
#[pyo3(signature = (buffer, caps, index=0))]
fn frame_array<'py>(
    py: Python<'py>,
    buffer: &Bound<'py, PyAny>,
    caps: &Bound<'py, PyAny>,
    index: u32,
) -> PyResult<Bound<'py, PyAny>> {
    let gi = library::gi(py)?;
    let ptr = library::pointer_of(buffer, &gi.buffer, "Gst.Buffer", gi.pointer_offset)?;
    arrays::frame_array_of(py, ptr, caps, index, None)
}

/// The path of the plugin library this package uses (the one GStreamer loaded).
#[pyfunction]
fn plugin_path(py: Python<'_>) -> PyResult<String> {
    Ok(library::lib(py)?.path.clone())
}
