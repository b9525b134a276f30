// SPDX-License-Identifier: MIT OR Apache-2.0
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::base_src::CreateSuccess;
use gst_base::subclass::prelude::*;

use crate::consumer::{Consumer, Event};
use ferrostream_core::nvmm::NvmmAbi;

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "rsipcsrc",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream frames from another process"),
    )
});

#[derive(Debug, Clone)]
struct Settings {
    socket_path: Option<PathBuf>,
    nvmm_abi: NvmmAbi,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            socket_path: None,
            nvmm_abi: NvmmAbi::Ds8,
        }
    }
}

#[derive(Default)]
pub struct IpcSrc {
    settings: Mutex<Settings>,
    consumer: Mutex<Option<Consumer>>,
    flushing: AtomicBool,
}

#[glib::object_subclass]
impl ObjectSubclass for IpcSrc {
    const NAME: &'static str = "GstRsIpcSrc";
    type Type = super::IpcSrc;
    type ParentType = gst_base::PushSrc;
}

impl ObjectImpl for IpcSrc {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            vec![
                glib::ParamSpecString::builder("socket-path")
                    .nick("Socket path")
                    .blurb("Unix socket of the rsipcsink to receive from")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("nvmm-abi")
                    .nick("NVMM ABI")
                    .blurb("NvBufSurface layout of device frames: ds8 (DeepStream 8+) or ds7")
                    .default_value(Some("ds8"))
                    .mutable_ready()
                    .build(),
            ]
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        let mut s = self.settings.lock().unwrap();
        match pspec.name() {
            "socket-path" => {
                s.socket_path = value
                    .get::<Option<String>>()
                    .expect("type checked upstream")
                    .filter(|p| !p.is_empty())
                    .map(PathBuf::from)
            }
            "nvmm-abi" => {
                let v: Option<String> = value.get().expect("type checked upstream");
                match v.as_deref() {
                    Some("ds8") | None => s.nvmm_abi = NvmmAbi::Ds8,
                    Some("ds7") => s.nvmm_abi = NvmmAbi::Ds7,
                    Some(other) => gst::element_imp_warning!(
                        self,
                        gst::LibraryError::Settings,
                        (
                            "nvmm-abi {other:?} is not ds8 or ds7; kept {:?}",
                            s.nvmm_abi
                        )
                    ),
                }
            }
            _ => unreachable!("no other properties"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let s = self.settings.lock().unwrap();
        match pspec.name() {
            "socket-path" => s
                .socket_path
                .as_ref()
                .map(|p| p.display().to_string())
                .to_value(),
            "nvmm-abi" => match s.nvmm_abi {
                NvmmAbi::Ds8 => "ds8",
                NvmmAbi::Ds7 => "ds7",
            }
            .to_value(),
            _ => unreachable!("no other properties"),
        }
    }

    fn constructed(&self) {
        self.parent_constructed();
        let obj = self.obj();
        obj.set_live(true);
        obj.set_format(gst::Format::Time);
    }
}

impl GstObjectImpl for IpcSrc {}

impl ElementImpl for IpcSrc {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "Ferrostream IPC source",
                "Source/Video",
                "Receives frames and their analytics metadata from an rsipcsink in another process; GPU frames are mapped, not copied",
                "Ferrostream developers",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            vec![
                gst::PadTemplate::new(
                    "src",
                    gst::PadDirection::Src,
                    gst::PadPresence::Always,
                    &super::all_caps(),
                )
                .expect("valid template"),
            ]
        });
        TEMPLATES.as_ref()
    }
}

impl BaseSrcImpl for IpcSrc {
    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let s = self.settings.lock().unwrap().clone();
        let path = s.socket_path.ok_or_else(|| {
            gst::error_msg!(gst::ResourceError::Settings, ["socket-path is not set"])
        })?;
        let consumer = Consumer::connect(&path, s.nvmm_abi)
            .map_err(|e| gst::error_msg!(gst::ResourceError::OpenRead, ["{e}"]))?;
        gst::info!(CAT, imp = self, "attached to {}", path.display());
        *self.consumer.lock().unwrap() = Some(consumer);
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        // Closing the connection tells the producer; buffers still downstream are released
        // to nobody.
        self.consumer.lock().unwrap().take();
        Ok(())
    }

    fn is_seekable(&self) -> bool {
        false
    }

    fn unlock(&self) -> Result<(), gst::ErrorMessage> {
        self.flushing.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn unlock_stop(&self) -> Result<(), gst::ErrorMessage> {
        self.flushing.store(false, Ordering::SeqCst);
        Ok(())
    }
}

impl PushSrcImpl for IpcSrc {
    fn create(
        &self,
        _buffer: Option<&mut gst::BufferRef>,
    ) -> Result<CreateSuccess, gst::FlowError> {
        let element = self.obj();
        // This pipeline's running time, for restamping (none before it has a clock).
        let now = || {
            let clock = element.clock()?;
            let base = element.base_time()?;
            clock.time().checked_sub(base).map(|t| t.nseconds())
        };
        loop {
            let event = {
                let mut guard = self.consumer.lock().unwrap();
                let consumer = guard.as_mut().ok_or(gst::FlowError::Flushing)?;
                consumer.next(&self.flushing, &now)
            };
            match event {
                Ok(None) => return Err(gst::FlowError::Flushing),
                Ok(Some(Event::Caps(caps))) => {
                    gst::debug!(CAT, imp = self, "caps {caps}");
                    element.set_caps(&caps).map_err(|_| {
                        gst::element_imp_error!(
                            self,
                            gst::CoreError::Negotiation,
                            ["Downstream does not take the producer's caps {caps}"]
                        );
                        gst::FlowError::NotNegotiated
                    })?;
                }
                Ok(Some(Event::Buffer(buffer))) => return Ok(CreateSuccess::NewBuffer(buffer)),
                Ok(Some(Event::Eos)) => return Err(gst::FlowError::Eos),
                Err(e) => {
                    gst::element_imp_error!(self, gst::ResourceError::Read, ["{e}"]);
                    return Err(gst::FlowError::Error);
                }
            }
        }
    }
}
