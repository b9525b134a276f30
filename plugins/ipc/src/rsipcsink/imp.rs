// SPDX-License-Identifier: MIT OR Apache-2.0
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::prelude::*;

use crate::describe::Describer;
use crate::producer::{Notice, Producer, SendError, Settings as ProducerSettings};
use crate::socket::Listener;
use crate::wire;

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "rsipcsink",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream frames to other processes"),
    )
});

/// Slots of shared memory for frames that must be copied, per kind.
const SLOT_LIMIT: usize = 1024;
/// How often consumers are attached and their releases read while no buffer arrives.
const SERVICE_PERIOD: Duration = Duration::from_millis(20);

#[derive(Debug, Clone)]
struct Settings {
    socket_path: Option<PathBuf>,
    max_buffers: u32,
    leaky: bool,
    block_timeout_ms: u32,
    max_consumers: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            socket_path: None,
            max_buffers: 4,
            leaky: false,
            block_timeout_ms: 2000,
            max_consumers: 8,
        }
    }
}

struct Shared {
    producer: Mutex<Producer>,
    flushing: AtomicBool,
    stop: AtomicBool,
}

struct State {
    shared: Arc<Shared>,
    describer: Describer,
    service: Option<JoinHandle<()>>,
}

#[derive(Default)]
pub struct IpcSink {
    settings: Mutex<Settings>,
    state: Mutex<Option<State>>,
    /// Buffers not sent for being longer than a message may be: warned of at the 1st, 2nd,
    /// 4th, 8th... so that a stream of them does not flood the bus.
    too_long: AtomicU64,
    consumers: Arc<std::sync::atomic::AtomicUsize>,
}

impl IpcSink {
    fn post_notices(element: &super::IpcSink, notices: Vec<Notice>) {
        for notice in notices {
            match notice {
                Notice::Attached(id) => gst::info!(CAT, obj = element, "consumer {id} attached"),
                Notice::Detached {
                    consumer,
                    reason,
                    warn: true,
                } => gst::element_warning!(
                    element,
                    gst::ResourceError::Write,
                    ("Consumer {consumer} disconnected: {reason}")
                ),
                Notice::Detached {
                    consumer, reason, ..
                } => gst::info!(CAT, obj = element, "consumer {consumer} {reason}"),
            }
        }
    }
}

#[glib::object_subclass]
impl ObjectSubclass for IpcSink {
    const NAME: &'static str = "GstRsIpcSink";
    type Type = super::IpcSink;
    type ParentType = gst_base::BaseSink;
}

impl ObjectImpl for IpcSink {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let d = Settings::default();
            vec![
                glib::ParamSpecString::builder("socket-path")
                    .nick("Socket path")
                    .blurb("Unix socket consumers connect to (owner-only; removed at stop)")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("max-buffers")
                    .nick("Max buffers")
                    .blurb("Buffers a consumer may hold before it counts as behind")
                    .minimum(1)
                    .maximum(64)
                    .default_value(d.max_buffers)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecBoolean::builder("leaky")
                    .nick("Leaky")
                    .blurb("Skip buffers for a consumer that is behind instead of waiting for it")
                    .default_value(d.leaky)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("block-timeout")
                    .nick("Block timeout")
                    .blurb("Milliseconds to wait for a consumer that is behind before disconnecting it (leaky=false)")
                    .minimum(1)
                    .maximum(600_000)
                    .default_value(d.block_timeout_ms)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("max-consumers")
                    .nick("Max consumers")
                    .blurb("Consumers attached at once; more are refused")
                    .minimum(1)
                    .maximum(64)
                    .default_value(d.max_consumers)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("consumers")
                    .nick("Consumers")
                    .blurb("Consumers attached now")
                    .read_only()
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
            "max-buffers" => s.max_buffers = value.get().expect("type checked upstream"),
            "leaky" => s.leaky = value.get().expect("type checked upstream"),
            "block-timeout" => s.block_timeout_ms = value.get().expect("type checked upstream"),
            "max-consumers" => s.max_consumers = value.get().expect("type checked upstream"),
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
            "max-buffers" => s.max_buffers.to_value(),
            "leaky" => s.leaky.to_value(),
            "block-timeout" => s.block_timeout_ms.to_value(),
            "max-consumers" => s.max_consumers.to_value(),
            "consumers" => (self.consumers.load(Ordering::Relaxed) as u32).to_value(),
            _ => unreachable!("no other properties"),
        }
    }
}

impl GstObjectImpl for IpcSink {}

impl ElementImpl for IpcSink {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "Ferrostream IPC sink",
                "Sink/Video",
                "Serves frames and their analytics metadata to rsipcsrc consumers in other processes; GPU frames stay in one device allocation",
                "Ferrostream developers",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            vec![
                gst::PadTemplate::new(
                    "sink",
                    gst::PadDirection::Sink,
                    gst::PadPresence::Always,
                    &crate::rsipcsrc::all_caps(),
                )
                .expect("valid template"),
            ]
        });
        TEMPLATES.as_ref()
    }
}

impl BaseSinkImpl for IpcSink {
    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.too_long.store(0, Ordering::Relaxed);
        let s = self.settings.lock().unwrap().clone();
        let path = s.socket_path.ok_or_else(|| {
            gst::error_msg!(gst::ResourceError::Settings, ["socket-path is not set"])
        })?;
        let listener = Listener::bind(&path).map_err(|e| {
            gst::error_msg!(
                gst::ResourceError::OpenWrite,
                ["Cannot listen at {}: {e}", path.display()]
            )
        })?;
        let producer = Producer::new(
            listener,
            ProducerSettings {
                max_buffers: s.max_buffers as usize,
                leaky: s.leaky,
                block_timeout: Duration::from_millis(s.block_timeout_ms as u64),
                max_consumers: s.max_consumers as usize,
            },
        );
        let shared = Arc::new(Shared {
            producer: Mutex::new(producer),
            flushing: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        // Attaches consumers and reads their releases between buffers (and when none come).
        let service = {
            let shared = shared.clone();
            let element = self.obj().downgrade();
            let consumers = self.consumers.clone();
            std::thread::Builder::new()
                .name("rsipcsink-service".into())
                .spawn(move || {
                    while !shared.stop.load(Ordering::SeqCst) {
                        let notices = {
                            let mut p = shared.producer.lock().unwrap();
                            p.service();
                            consumers.store(p.consumer_count(), Ordering::Relaxed);
                            p.take_notices()
                        };
                        if let Some(element) = element.upgrade() {
                            IpcSink::post_notices(&element, notices);
                        }
                        std::thread::sleep(SERVICE_PERIOD);
                    }
                })
                .map_err(|e| {
                    gst::error_msg!(
                        gst::CoreError::Failed,
                        ["Cannot start the service thread: {e}"]
                    )
                })?
        };
        gst::info!(CAT, imp = self, "listening at {}", path.display());
        *self.state.lock().unwrap() = Some(State {
            shared,
            describer: Describer::new(SLOT_LIMIT),
            service: Some(service),
        });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        if let Some(mut state) = self.state.lock().unwrap().take() {
            state.shared.stop.store(true, Ordering::SeqCst);
            if let Some(t) = state.service.take() {
                let _ = t.join();
            }
        }
        self.consumers.store(0, Ordering::Relaxed);
        Ok(())
    }

    fn set_caps(&self, caps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let guard = self.state.lock().unwrap();
        let state = guard
            .as_ref()
            .ok_or_else(|| gst::loggable_error!(CAT, "caps before start"))?;
        state
            .shared
            .producer
            .lock()
            .unwrap()
            .set_caps(caps.to_string());
        Ok(())
    }

    fn render(&self, buffer: &gst::Buffer) -> Result<gst::FlowSuccess, gst::FlowError> {
        let caps = self
            .obj()
            .sink_pad()
            .current_caps()
            .ok_or(gst::FlowError::NotNegotiated)?;
        let mut guard = self.state.lock().unwrap();
        let state = guard.as_mut().ok_or(gst::FlowError::Flushing)?;
        let shared = state.shared.clone();
        if shared.producer.lock().unwrap().consumer_count() == 0 {
            // Nobody to serve: no copy, no description.
            return Ok(gst::FlowSuccess::Ok);
        }
        let outgoing = state.describer.describe(buffer, &caps).map_err(|e| {
            gst::element_imp_error!(self, gst::StreamError::Failed, ["{e}"]);
            gst::FlowError::Error
        })?;
        drop(guard);
        let (result, notices) = {
            let mut p = shared.producer.lock().unwrap();
            let r = p.send(outgoing, &shared.flushing);
            self.consumers.store(p.consumer_count(), Ordering::Relaxed);
            (r, p.take_notices())
        };
        Self::post_notices(&self.obj(), notices);
        match result {
            Ok(n) => {
                gst::trace!(CAT, imp = self, "buffer sent to {n} consumers");
                Ok(gst::FlowSuccess::Ok)
            }
            Err(SendError::Flushing) => Err(gst::FlowError::Flushing),
            Err(SendError::TooLong(size)) => {
                let count = self.too_long.fetch_add(1, Ordering::Relaxed) + 1;
                if count.is_power_of_two() {
                    gst::element_imp_warning!(
                        self,
                        gst::StreamError::Encode,
                        (
                            "A buffer was not sent to consumers: its description (mostly its \
                             metadata) is {size} bytes, more than the {} bytes one message may \
                             carry (buffers not sent so far: {count})",
                            wire::MAX_MESSAGE
                        )
                    );
                }
                Ok(gst::FlowSuccess::Ok)
            }
        }
    }

    fn event(&self, event: gst::Event) -> bool {
        if let gst::EventView::Eos(_) = event.view()
            && let Some(state) = self.state.lock().unwrap().as_ref()
        {
            state.shared.producer.lock().unwrap().send_eos();
        }
        self.parent_event(event)
    }

    fn unlock(&self) -> Result<(), gst::ErrorMessage> {
        if let Some(state) = self.state.lock().unwrap().as_ref() {
            state.shared.flushing.store(true, Ordering::SeqCst);
        }
        Ok(())
    }

    fn unlock_stop(&self) -> Result<(), gst::ErrorMessage> {
        if let Some(state) = self.state.lock().unwrap().as_ref() {
            state.shared.flushing.store(false, Ordering::SeqCst);
        }
        Ok(())
    }
}
