// SPDX-License-Identifier: MIT OR Apache-2.0
//! The plugin library that GStreamer loaded, and the C ABI functions this package calls in it.
//!
//! The package never registers or reads the metadata itself: the meta holds Rust data of the
//! plugin's own build. It asks GStreamer's registry for the `ferrostream` plugin, makes sure it
//! is loaded, and resolves the functions of `ferrostream_abi` in that very library (opened with
//! `RTLD_NOLOAD`, so no second copy can ever be loaded by this package).

use std::ffi::{c_char, c_void};

use ferrostream_abi::symbols as sym;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use crate::errors::PluginError;

/// The functions of the plugin's C ABI, resolved once.
pub struct Lib {
    pub path: String,
    pub batch_get: sym::BatchGet,
    pub batch_n_frames: sym::BatchNFrames,
    pub batch_revision: sym::BatchRevision,
    pub batch_frame: sym::BatchFrame,
    pub batch_object: sym::BatchObject,
    pub batch_classification: sym::BatchClassification,
    pub batch_attribute: sym::BatchAttribute,
    pub batch_object_orientation: sym::BatchObjectOrientation,
    pub batch_frame_json: sym::BatchFrameJson,
    pub batch_object_json: sym::BatchObjectJson,
    pub batch_edit: sym::BatchEdit,
    pub batch_ensure: sym::BatchEnsure,
    pub probe_make_writable: sym::ProbeMakeWritable,
    pub frame_map: sym::FrameMap,
    pub frame_unmap: sym::FrameUnmap,
    g_free: unsafe extern "C" fn(*mut c_void),
    _plugin: libloading::os::unix::Library,
    _glib: libloading::os::unix::Library,
}

/// The PyGObject classes the package accepts, and where PyGObject keeps the C pointer.
pub struct Gi {
    pub buffer: Py<PyType>,
    pub caps: Py<PyType>,
    pub probe_info: Py<PyType>,
    /// `object.__basicsize__`: PyGObject's boxed and pointer wrappers store the C pointer right
    /// after the object header (`PyGBoxed.boxed`, `PyGPointer.pointer`, public in pygobject.h).
    pub pointer_offset: usize,
}

static LIB: PyOnceLock<Lib> = PyOnceLock::new();
static GI: PyOnceLock<Gi> = PyOnceLock::new();
static VIDEO_INFO: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// PyGObject's Gst module, initialised.
fn gst_module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    let gi = py.import("gi").map_err(|e| {
        PluginError::new_err(format!(
            "PyGObject is needed (Debian/Ubuntu: apt install python3-gi gir1.2-gstreamer-1.0): {e}"
        ))
    })?;
    // A program that already chose the version gets it; 1.0 is the only one there is.
    let _ = gi.call_method1("require_version", ("Gst", "1.0"));
    let gst = py.import("gi.repository.Gst").map_err(|e| {
        PluginError::new_err(format!(
            "GStreamer's introspection data is missing (apt install gir1.2-gstreamer-1.0): {e}"
        ))
    })?;
    if !gst.call_method0("is_initialized")?.is_truthy()? {
        gst.call_method1("init", (py.None(),))?;
    }
    Ok(gst)
}

pub fn gi(py: Python<'_>) -> PyResult<&Gi> {
    GI.get_or_try_init(py, || {
        let gst = gst_module(py)?;
        let class = |name: &str| -> PyResult<Py<PyType>> {
            Ok(gst.getattr(name)?.cast_into::<PyType>()?.unbind())
        };
        let pointer_offset: usize = py
            .import("builtins")?
            .getattr("object")?
            .getattr("__basicsize__")?
            .extract()?;
        Ok(Gi {
            buffer: class("Buffer")?,
            caps: class("Caps")?,
            probe_info: class("PadProbeInfo")?,
            pointer_offset,
        })
    })
}

/// PyGObject's `GstVideo.VideoInfo`: the layout of the frame that caps describe. Imported when
/// first needed (only `writable` with caps needs it).
pub fn video_info(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    VIDEO_INFO
        .get_or_try_init(py, || {
            gst_module(py)?;
            let _ = py
                .import("gi")?
                .call_method1("require_version", ("GstVideo", "1.0"));
            let video = py.import("gi.repository.GstVideo").map_err(|e| {
                PluginError::new_err(format!(
                    "GStreamer's video introspection data is missing (apt install \
                     gir1.2-gst-plugins-base-1.0): {e}"
                ))
            })?;
            Ok(video.getattr("VideoInfo")?.unbind())
        })
        .map(|class| class.bind(py))
}

/// The C pointer of `caps`, checked to describe one kind of raw video frame: fixed
/// `video/x-raw` caps (GStreamer asserts, printing a CRITICAL, when asked for a frame of others).
pub fn video_caps(caps: &Bound<'_, PyAny>) -> PyResult<*mut c_void> {
    let gi = gi(caps.py())?;
    let ptr = pointer_of(caps, &gi.caps, "Gst.Caps", gi.pointer_offset)?;
    let text = || -> PyResult<String> { caps.call_method0("to_string")?.extract() };
    let problem = if caps.call_method0("is_any")?.is_truthy()? {
        "the caps are ANY".to_owned()
    } else if caps.call_method0("is_empty")?.is_truthy()? {
        "the caps are EMPTY".to_owned()
    } else if !caps.call_method0("is_fixed")?.is_truthy()? {
        format!("the caps {} are not fixed", text()?)
    } else if caps
        .call_method1("get_structure", (0,))?
        .call_method0("get_name")?
        .extract::<String>()?
        != "video/x-raw"
    {
        format!("{} are not raw video caps", text()?)
    } else {
        return Ok(ptr);
    };
    Err(pyo3::exceptions::PyValueError::new_err(format!(
        "{problem}: pass the pad's negotiated caps (pad.get_current_caps(), sample.get_caps())"
    )))
}

pub fn lib(py: Python<'_>) -> PyResult<&Lib> {
    LIB.get_or_try_init(py, || load(py))
}

fn load(py: Python<'_>) -> PyResult<Lib> {
    let gst = gst_module(py)?;
    let registry = gst.getattr("Registry")?.call_method0("get")?;
    let plugin = registry.call_method1("find_plugin", ("ferrostream",))?;
    if plugin.is_none() {
        return Err(PluginError::new_err(
            "GStreamer has no 'ferrostream' plugin: install it (meson setup build && ninja -C \
             build install) or put the directory of libgstferrostream.so on GST_PLUGIN_PATH",
        ));
    }
    let loaded = plugin.call_method0("load")?;
    if loaded.is_none() {
        return Err(PluginError::new_err(
            "GStreamer found the 'ferrostream' plugin but could not load it (run gst-inspect-1.0 ferrostream to see why)",
        ));
    }
    let path: String = loaded.call_method0("get_filename")?.extract()?;
    // SAFETY: the library is already loaded (RTLD_NOLOAD fails otherwise), so opening it runs no
    // code; each symbol is resolved with the signature `ferrostream_abi` declares for it.
    unsafe {
        use libc::RTLD_NOLOAD;
        use libloading::os::unix::{Library, RTLD_NOW};
        let plugin = Library::open(Some(&path), RTLD_NOW | RTLD_NOLOAD).map_err(|e| {
            PluginError::new_err(format!("the ferrostream plugin {path} is not loaded: {e}"))
        })?;
        let glib = Library::open(Some("libglib-2.0.so.0"), RTLD_NOW | RTLD_NOLOAD)
            .map_err(|e| PluginError::new_err(format!("GLib is not loaded: {e}")))?;
        let path_ref = &path;
        let lookup = |name: &[u8]| {
            let shown =
                String::from_utf8_lossy(name.strip_suffix(b"\0").unwrap_or(name)).into_owned();
            move |e: libloading::Error| {
                PluginError::new_err(format!(
                    "{path_ref} lacks {shown} of the Ferrostream C ABI ({e}): the plugin is older \
                     than this Python package; rebuild both from the same release"
                ))
            }
        };
        let version: sym::AbiVersion = *plugin
            .get(sym::ABI_VERSION)
            .map_err(lookup(sym::ABI_VERSION))?;
        let have = version();
        if have != ferrostream_abi::ABI_VERSION {
            return Err(PluginError::new_err(format!(
                "{path} implements version {have} of the Ferrostream C ABI, this package version \
                 {}: rebuild both from the same release",
                ferrostream_abi::ABI_VERSION
            )));
        }
        Ok(Lib {
            batch_get: *plugin.get(sym::BATCH_GET).map_err(lookup(sym::BATCH_GET))?,
            batch_n_frames: *plugin
                .get(sym::BATCH_N_FRAMES)
                .map_err(lookup(sym::BATCH_N_FRAMES))?,
            batch_revision: *plugin
                .get(sym::BATCH_REVISION)
                .map_err(lookup(sym::BATCH_REVISION))?,
            batch_frame: *plugin
                .get(sym::BATCH_FRAME)
                .map_err(lookup(sym::BATCH_FRAME))?,
            batch_object: *plugin
                .get(sym::BATCH_OBJECT)
                .map_err(lookup(sym::BATCH_OBJECT))?,
            batch_classification: *plugin
                .get(sym::BATCH_CLASSIFICATION)
                .map_err(lookup(sym::BATCH_CLASSIFICATION))?,
            batch_attribute: *plugin
                .get(sym::BATCH_ATTRIBUTE)
                .map_err(lookup(sym::BATCH_ATTRIBUTE))?,
            batch_object_orientation: *plugin
                .get(sym::BATCH_OBJECT_ORIENTATION)
                .map_err(lookup(sym::BATCH_OBJECT_ORIENTATION))?,
            batch_frame_json: *plugin
                .get(sym::BATCH_FRAME_JSON)
                .map_err(lookup(sym::BATCH_FRAME_JSON))?,
            batch_object_json: *plugin
                .get(sym::BATCH_OBJECT_JSON)
                .map_err(lookup(sym::BATCH_OBJECT_JSON))?,
            batch_edit: *plugin
                .get(sym::BATCH_EDIT)
                .map_err(lookup(sym::BATCH_EDIT))?,
            batch_ensure: *plugin
                .get(sym::BATCH_ENSURE)
                .map_err(lookup(sym::BATCH_ENSURE))?,
            probe_make_writable: *plugin
                .get(sym::PROBE_MAKE_WRITABLE)
                .map_err(lookup(sym::PROBE_MAKE_WRITABLE))?,
            frame_map: *plugin.get(sym::FRAME_MAP).map_err(lookup(sym::FRAME_MAP))?,
            frame_unmap: *plugin
                .get(sym::FRAME_UNMAP)
                .map_err(lookup(sym::FRAME_UNMAP))?,
            g_free: *glib
                .get(b"g_free\0")
                .map_err(|e| PluginError::new_err(format!("GLib lacks g_free: {e}")))?,
            path,
            _plugin: plugin,
            _glib: glib,
        })
    }
}

impl Lib {
    /// Takes a `g_malloc`ed string from the library (NULL gives None) and frees it.
    pub fn take_string(&self, ptr: *mut c_char) -> Option<String> {
        if ptr.is_null() {
            return None;
        }
        // SAFETY: the library returns NUL-terminated g_malloc'ed strings; freed once here.
        unsafe {
            let text = std::ffi::CStr::from_ptr(ptr).to_string_lossy().into_owned();
            (self.g_free)(ptr.cast());
            Some(text)
        }
    }
}

/// The C pointer a PyGObject wrapper of class `class` holds, after checking the class.
pub fn pointer_of(
    object: &Bound<'_, PyAny>,
    class: &Py<PyType>,
    what: &str,
    offset: usize,
) -> PyResult<*mut c_void> {
    let py = object.py();
    if !object.is_instance(class.bind(py))? {
        let got = object.get_type().name()?;
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "expected a {what} (from gi.repository.Gst), got {got}"
        )));
    }
    // SAFETY: instances of PyGObject's boxed and struct wrappers (and of their Python
    // subclasses, which cannot change the C layout) store the pointer right after the object
    // header; the object is alive for the call.
    let ptr = unsafe {
        let base = object.as_ptr() as *const u8;
        *(base.add(offset) as *const *mut c_void)
    };
    if ptr.is_null() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "the {what} wraps no GStreamer object"
        )));
    }
    Ok(ptr)
}
