// SPDX-License-Identifier: MIT OR Apache-2.0
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::sync::{LazyLock, Mutex};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use ferrostream_core::analytics::Frame;
use ferrostream_core::json::write_frame_line;
use ferrostream_core::latency::{LatencyRecorder, now_ns};
use ferrostream_core::meta::BatchMeta;

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "rsmetaexport",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream metadata JSON export"),
    )
});

#[derive(Debug, Clone, Default)]
struct Settings {
    location: Option<String>,
}

/// Where the lines go. Standard output is a duplicate of descriptor 1, written without Rust's
/// `Stdout`, which ignores writes to a closed descriptor.
enum Output {
    File { file: File, path: String },
    Stdout(File),
}

impl Output {
    fn name(&self) -> &str {
        match self {
            Output::File { path, .. } => path,
            Output::Stdout(_) => "standard output",
        }
    }

    fn file(&mut self) -> &mut File {
        match self {
            Output::File { file, .. } | Output::Stdout(file) => file,
        }
    }
}

/// A duplicate of descriptor 1, if it is open for writing. A process started with its standard
/// output closed has it closed (EBADF), or reused by the next file it opened, often read-only:
/// writing there would go nowhere, or into another file.
fn writable_stdout() -> std::io::Result<File> {
    let fd = std::io::stdout().as_fd().try_clone_to_owned()?;
    // SAFETY: F_GETFL on a descriptor this function owns.
    let flags = unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&fd), libc::F_GETFL) };
    if flags < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if flags & libc::O_ACCMODE == libc::O_RDONLY {
        return Err(std::io::Error::other(
            "descriptor 1 is not open for writing (standard output was closed)",
        ));
    }
    Ok(File::from(fd))
}

struct State {
    out: Output,
    /// One buffer's lines, written with one call.
    lines: Vec<u8>,
    /// Bytes of complete lines in the file: where a failed write is cut back to.
    committed: u64,
    /// A write failed (posted once): every later buffer fails without writing.
    failed: bool,
    /// Frame size from the caps, for buffers that carry no metadata.
    size: (u32, u32),
    frames_without_meta: u64,
    latency: LatencyRecorder,
}

#[derive(Default)]
pub struct MetaExport {
    settings: Mutex<Settings>,
    state: Mutex<Option<State>>,
}

impl MetaExport {
    fn export(&self, buffer: &gst::BufferRef) -> Result<gst::FlowSuccess, gst::FlowError> {
        let mut guard = self.state.lock().unwrap();
        let Some(state) = guard.as_mut() else {
            return Err(gst::FlowError::Flushing);
        };
        if state.failed {
            return Err(gst::FlowError::Error);
        }
        if let Err(e) = Self::write_frames(state, buffer) {
            state.failed = true;
            let cut = Self::cut_back(state);
            let name = state.out.name().to_string();
            drop(guard);
            gst::element_imp_error!(
                self,
                gst::ResourceError::Write,
                ("Writing metadata to {name} failed: {e}"),
                ["{cut}"]
            );
            return Err(gst::FlowError::Error);
        }
        Ok(gst::FlowSuccess::Ok)
    }

    /// Writes the buffer's frames, one complete line each, with one write.
    fn write_frames(state: &mut State, buffer: &gst::BufferRef) -> std::io::Result<()> {
        state.lines.clear();
        match buffer.meta::<BatchMeta>() {
            Some(meta) => {
                for frame in &meta.batch().frames {
                    write_frame_line(&mut state.lines, frame)?;
                }
            }
            None => {
                let mut frame =
                    Frame::new(0, state.frames_without_meta, state.size.0, state.size.1);
                frame.pts = buffer.pts();
                state.frames_without_meta += 1;
                write_frame_line(&mut state.lines, &frame)?;
            }
        }
        state.out.file().write_all(&state.lines)?;
        state.committed += state.lines.len() as u64;
        Ok(())
    }

    /// After a failed write: a file is cut back to its last complete line (a full disk may
    /// have taken part of the buffer's lines). Says what was done, for the error's details.
    fn cut_back(state: &mut State) -> String {
        let committed = state.committed;
        match &mut state.out {
            Output::File { file, path } if !file.metadata().is_ok_and(|m| m.is_file()) => {
                format!("{path} is not a regular file: nothing to cut back")
            }
            Output::File { file, path } => match file.set_len(committed) {
                Ok(()) => format!("{path} ends after its last complete line ({committed} bytes)"),
                Err(e) => format!("{path} could not be cut back to {committed} bytes: {e}"),
            },
            Output::Stdout(_) => "standard output may end in a partial line".into(),
        }
    }
}

#[glib::object_subclass]
impl ObjectSubclass for MetaExport {
    const NAME: &'static str = "GstRsMetaExport";
    type Type = super::MetaExport;
    type ParentType = gst_base::BaseTransform;
}

impl ObjectImpl for MetaExport {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            vec![
                glib::ParamSpecString::builder("location")
                    .nick("Location")
                    .blurb(
                        "File to write one JSON object per frame to (standard output when unset)",
                    )
                    .mutable_ready()
                    .build(),
            ]
        });
        PROPERTIES.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        ferrostream_core::element::warn_if_set_late(self.obj().upcast_ref(), pspec);
        let mut settings = self.settings.lock().unwrap();
        match pspec.name() {
            "location" => {
                settings.location = value
                    .get::<Option<String>>()
                    .expect("type checked upstream")
                    .filter(|s| !s.is_empty());
            }
            _ => unreachable!(),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let settings = self.settings.lock().unwrap();
        match pspec.name() {
            "location" => settings.location.to_value(),
            _ => unreachable!(),
        }
    }
}

impl GstObjectImpl for MetaExport {}

ferrostream_core::metadata_element_impl!(
    MetaExport,
    "Analytics metadata JSON export",
    "Filter/Analytics",
    "Writes the objects of every frame as one line of JSON (pass-through)",
);

impl BaseTransformImpl for MetaExport {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::AlwaysInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = true;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = true;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let location = self.settings.lock().unwrap().location.clone();
        let out = match &location {
            Some(path) => {
                let file = File::create(path).map_err(|e| {
                    gst::error_msg!(
                        gst::ResourceError::OpenWrite,
                        ("Cannot create metadata file {path}: {e}")
                    )
                })?;
                Output::File {
                    file,
                    path: path.clone(),
                }
            }
            None => Output::Stdout(writable_stdout().map_err(|e| {
                gst::error_msg!(
                    gst::ResourceError::OpenWrite,
                    ("Cannot write metadata to standard output: {e}"),
                    ["set location to write to a file"]
                )
            })?),
        };
        gst::info!(CAT, imp = self, "writing metadata to {}", out.name());
        *self.state.lock().unwrap() = Some(State {
            out,
            lines: Vec::new(),
            committed: 0,
            failed: false,
            size: (0, 0),
            frames_without_meta: 0,
            latency: LatencyRecorder::new(self.obj().name()),
        });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        // Every buffer's lines were written whole (nothing is held back): stopping writes
        // nothing, so it cannot fail, after a write error either.
        self.state.lock().unwrap().take();
        Ok(())
    }

    fn set_caps(&self, incaps: &gst::Caps, _outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let size = ferrostream_core::element::caps_frame_size(incaps);
        if let Some(state) = self.state.lock().unwrap().as_mut() {
            state.size = size;
        }
        Ok(())
    }

    fn submit_input_buffer(
        &self,
        is_discont: bool,
        mut inbuf: gst::Buffer,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        // Recorded before the lines are written, so they carry it. Here, where the buffer is
        // ours to make writable: the element otherwise passes it through untouched.
        let entry = now_ns();
        if let Some(state) = self.state.lock().unwrap().as_ref() {
            state.latency.record_buffer(&mut inbuf, entry);
        }
        self.parent_submit_input_buffer(is_discont, inbuf)
    }

    fn transform_ip_passthrough(
        &self,
        buf: &gst::Buffer,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        self.export(buf)
    }

    fn transform_ip(&self, buf: &mut gst::BufferRef) -> Result<gst::FlowSuccess, gst::FlowError> {
        self.export(buf)
    }
}
