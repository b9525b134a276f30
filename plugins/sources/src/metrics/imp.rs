// SPDX-License-Identifier: MIT OR Apache-2.0
use std::sync::{Arc, LazyLock, Mutex};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;

use ferrostream_core::element::top_level;
use ferrostream_core::http::{self, Request, Response};

use crate::multiurisrcbin::prometheus;
use crate::multiurisrcbin::rest::{self, Action, Reply};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "rsmetrics",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream metrics and health over HTTP"),
    )
});

#[derive(Debug, Clone)]
struct Settings {
    address: String,
    port: u32,
    token: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            address: "127.0.0.1".into(),
            port: 9100,
            token: None,
        }
    }
}

#[derive(Default)]
pub struct RsMetrics {
    settings: Mutex<Settings>,
    server: Mutex<Option<http::Server>>,
}

impl RsMetrics {
    fn pipeline_playing(&self) -> bool {
        top_level(self.obj().upcast_ref()).current_state() == gst::State::Playing
    }

    /// `/metrics` and the health probes of the REST API's routes; the rest is not here.
    fn serve(&self, request: &Request) -> Response {
        let token = self.settings.lock().unwrap().token.clone();
        if !rest::authorized(request, token.as_deref()) {
            return rest::unauthorized();
        }
        match rest::route(request) {
            Ok(Action::Metrics | Action::StreamMetrics { prometheus: true }) => prometheus(),
            Ok(Action::Live) => {
                rest::health("live", "ds-liveness", true, "GET_LIVE_INFO_SUCCESS").response()
            }
            Ok(Action::Ready) => rest::health(
                "ready",
                "ds-ready",
                self.pipeline_playing(),
                "GET_READY_INFO_SUCCESS",
            )
            .response(),
            Ok(_) => Reply::new(
                404,
                format!(
                    "rsmetrics serves /metrics and the health probes, not {}",
                    request.path
                ),
            )
            .response(),
            Err(reply) => reply.response(),
        }
    }
}

#[glib::object_subclass]
impl ObjectSubclass for RsMetrics {
    const NAME: &'static str = "GstRsMetrics";
    type Type = super::RsMetrics;
    type ParentType = gst::Element;
}

impl ObjectImpl for RsMetrics {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let d = Settings::default();
            vec![
                glib::ParamSpecString::builder("address")
                    .nick("Address")
                    .blurb("Address to listen on")
                    .default_value(Some(d.address.as_str()))
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("port")
                    .nick("Port")
                    .blurb("TCP port (0: any free port, see bound-port)")
                    .maximum(65535)
                    .default_value(d.port)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("token")
                    .nick("Token")
                    .blurb("When set, every request must carry Authorization: Bearer <token>")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("bound-port")
                    .nick("Bound port")
                    .blurb("The port the server listens on (0 while it does not)")
                    .maximum(65535)
                    .read_only()
                    .build(),
            ]
        });
        PROPERTIES.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        ferrostream_core::element::warn_if_set_late(self.obj().upcast_ref(), pspec);
        let mut s = self.settings.lock().unwrap();
        let text = || {
            value
                .get::<Option<String>>()
                .expect("type checked upstream")
        };
        match pspec.name() {
            "address" => s.address = text().unwrap_or_else(|| "127.0.0.1".into()),
            "port" => s.port = value.get().expect("type checked upstream"),
            "token" => s.token = text().filter(|t| !t.is_empty()),
            other => unreachable!("unknown property {other}"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let s = self.settings.lock().unwrap();
        match pspec.name() {
            "address" => s.address.to_value(),
            "port" => s.port.to_value(),
            "token" => s.token.to_value(),
            "bound-port" => self
                .server
                .lock()
                .unwrap()
                .as_ref()
                .map_or(0u32, |srv| u32::from(srv.local_addr().port()))
                .to_value(),
            other => unreachable!("unknown property {other}"),
        }
    }
}

impl GstObjectImpl for RsMetrics {}

impl ElementImpl for RsMetrics {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static METADATA: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "Ferrostream metrics",
                "Generic",
                "Serves the process's Prometheus metrics and health probes over HTTP",
                "Ferrostream developers",
            )
        });
        Some(&*METADATA)
    }

    fn change_state(
        &self,
        transition: gst::StateChange,
    ) -> Result<gst::StateChangeSuccess, gst::StateChangeError> {
        if transition == gst::StateChange::NullToReady {
            let s = self.settings.lock().unwrap().clone();
            let this = self.obj().downgrade();
            let handler: http::Handler = Arc::new(move |request| match this.upgrade() {
                Some(e) => e.imp().serve(request),
                None => Reply::new(503, "the element is gone").response(),
            });
            match http::Server::start(&s.address, s.port as u16, "rsmetrics", handler) {
                Ok(server) => {
                    gst::info!(
                        CAT,
                        imp = self,
                        "metrics on http://{}/metrics",
                        server.local_addr()
                    );
                    *self.server.lock().unwrap() = Some(server);
                }
                Err(e) => {
                    gst::element_imp_error!(
                        self,
                        gst::ResourceError::OpenReadWrite,
                        ("cannot serve metrics on {}:{}: {e}", s.address, s.port)
                    );
                    return Err(gst::StateChangeError);
                }
            }
        }
        let result = self.parent_change_state(transition);
        if transition == gst::StateChange::ReadyToNull {
            self.server.lock().unwrap().take();
        }
        // Nothing to preroll: a sink-less element must not hold the pipeline's state change.
        match (transition, result) {
            (gst::StateChange::ReadyToPaused, Ok(_)) => Ok(gst::StateChangeSuccess::Success),
            (_, r) => r,
        }
    }
}
