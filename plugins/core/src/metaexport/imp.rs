use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::{LazyLock, Mutex};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use crate::analytics::Frame;
use crate::json::write_frame_line;
use crate::meta::BatchMeta;

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

struct State {
    out: Box<dyn Write + Send>,
    /// Frame size from the caps, for buffers that carry no metadata.
    size: (u32, u32),
    frames_without_meta: u64,
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
        if let Err(e) = self.write_frames(state, buffer) {
            drop(guard);
            gst::element_imp_error!(
                self,
                gst::ResourceError::Write,
                ("Writing metadata failed: {e}")
            );
            return Err(gst::FlowError::Error);
        }
        Ok(gst::FlowSuccess::Ok)
    }

    fn write_frames(&self, state: &mut State, buffer: &gst::BufferRef) -> std::io::Result<()> {
        match buffer.meta::<BatchMeta>() {
            Some(meta) => {
                for frame in &meta.batch().frames {
                    write_frame_line(&mut state.out, frame)?;
                }
            }
            None => {
                let mut frame =
                    Frame::new(0, state.frames_without_meta, state.size.0, state.size.1);
                frame.pts = buffer.pts();
                state.frames_without_meta += 1;
                write_frame_line(&mut state.out, &frame)?;
            }
        }
        state.out.flush()
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

impl ElementImpl for MetaExport {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static METADATA: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "Analytics metadata JSON export",
                "Filter/Analytics",
                "Writes the objects of every frame as one line of JSON (pass-through)",
                "Ferrostream developers",
            )
        });
        Some(&*METADATA)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static PAD_TEMPLATES: LazyLock<Vec<gst::PadTemplate>> =
            LazyLock::new(|| crate::element::filter_pad_templates(&gst::Caps::new_any()));
        PAD_TEMPLATES.as_ref()
    }
}

impl BaseTransformImpl for MetaExport {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::AlwaysInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = true;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = true;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let location = self.settings.lock().unwrap().location.clone();
        let out: Box<dyn Write + Send> = match &location {
            Some(path) => {
                let file = File::create(path).map_err(|e| {
                    gst::error_msg!(
                        gst::ResourceError::OpenWrite,
                        ("Cannot create metadata file {path}: {e}")
                    )
                })?;
                Box::new(BufWriter::new(file))
            }
            None => Box::new(std::io::stdout()),
        };
        gst::info!(
            CAT,
            imp = self,
            "writing metadata to {}",
            location.as_deref().unwrap_or("stdout")
        );
        *self.state.lock().unwrap() = Some(State {
            out,
            size: (0, 0),
            frames_without_meta: 0,
        });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        if let Some(mut state) = self.state.lock().unwrap().take() {
            state.out.flush().map_err(|e| {
                gst::error_msg!(gst::ResourceError::Write, ("Flushing metadata output: {e}"))
            })?;
        }
        Ok(())
    }

    fn set_caps(&self, incaps: &gst::Caps, _outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let size = incaps
            .structure(0)
            .and_then(|s| Some((s.get::<i32>("width").ok()?, s.get::<i32>("height").ok()?)))
            .map(|(w, h)| (w.max(0) as u32, h.max(0) as u32))
            .unwrap_or((0, 0));
        if let Some(state) = self.state.lock().unwrap().as_mut() {
            state.size = size;
        }
        Ok(())
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
