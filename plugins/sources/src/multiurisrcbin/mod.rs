// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rsmultiurisrcbin`: many cameras batched into one stream, added and removed while playing,
//! with DeepStream's nvmultiurisrcbin REST API, health, Prometheus metrics and smart record.
//!
//! Inside, each camera is an `rsurisrcbin` (reconnecting, looping files, recording) followed by
//! `videoconvert ! video/x-raw,format=<format>` (none with `format=""`), on an `rsstreammux`
//! sink pad whose index is the camera's stream id. The bin's `src` pad is the muxer's, so it
//! replaces "N sources + rsstreammux" in a pipeline; the muxer's properties (`batch-size`,
//! `batched-push-timeout`, `max-latency`, `sync-inputs`, `width`, `height`,
//! `latency-tracking`) and the sources' (`reconnect-interval`, `initial-reconnect-interval`,
//! `reconnect-attempts`, `reconnect-backoff-max`, `file-loop`, `latency`, `rtp-protocol`,
//! `num-buffers`, `drop-frame-interval`, `record-*`) are the bin's. A source property takes
//! effect for the cameras added after it is set; `drop-frame-interval`, which may change while
//! PLAYING, also for every camera already playing. DeepStream's `[source-attr-all]` keys are
//! these: `latency`, `drop-frame-interval`, `rtsp-reconnect-interval-sec`
//! (`reconnect-interval`), `rtsp-reconnect-attempts` (`reconnect-attempts`),
//! `init-rtsp-reconnect-interval-sec` (`initial-reconnect-interval`) and `select-rtp-protocol`
//! (`rtp-protocol`: 0 or `auto`, 4 or `tcp`), as on `rsurisrcbin`.
//!
//! Cameras come from `uri-list` (with `sensor-id-list` and `sensor-name-list`, in order) at
//! start, and from the REST API or the `add-source` / `remove-source` action signals at any
//! time. A camera keeps its stream id for the element's life (removed and added again, it gets
//! the same id); at most `max-sources` play at once. A removed camera is stopped, its muxer pad
//! released, and downstream told that its stream ended (`ferrostream-stream-eos`): `rstracker`
//! and `rsanalytics` release its targets, `rsmsgbroker` reports its objects as left. A camera
//! that fails for good (after `reconnect-attempts`) becomes a warning, not an error: the others
//! go on, and it stays listed as `failed` until removed. Messages:
//! `rsmultiurisrcbin-stream-added` (`camera-id`, `camera-name`, `stream-id`),
//! `rsmultiurisrcbin-stream-removed` (`camera-id`, `stream-id`), and every `rsurisrcbin-*`
//! message of a camera with `camera-id` and `stream-id` added.
//!
//! ## REST API
//!
//! On `rest-address`:`rest-port` (default 127.0.0.1:9000; port 0: none), from READY to NULL, on
//! threads of its own (a request never runs on a streaming thread). With `rest-token`, every
//! request needs `Authorization: Bearer <token>` (401 otherwise). Bodies and replies are
//! DeepStream's (see [`rest`] for the one difference: the HTTP status is the outcome):
//!
//! | method and path | body | does |
//! |---|---|---|
//! | `POST /api/v1/stream/add` | `{"key":"sensor","value":{"camera_id","camera_name","camera_url","change":"camera_add","metadata"}}` | adds a camera (`stream_id` in the reply) |
//! | `POST /api/v1/stream/remove` | the same with `"change":"camera_remove"` | removes it (`camera_url`, when given, must match) |
//! | `GET /api/v1/stream/get-stream-info` | | `stream-info`: `stream-count`, per camera `camera_id`, `camera_name`, `source_id`, `state`, `frames`, `fps`, `reconnections` |
//! | `GET /api/v1/health/get-dsready-state` | | `health-info.ds-ready`: YES when PAUSED or PLAYING |
//! | `GET /api/v1/health/live` (`/live`, `/api/v1/live`) | | 200 unless batches stopped for 30 s while a camera plays (503) |
//! | `GET /api/v1/health/ready` (`/ready`, `/api/v1/ready`) | | readiness (below): 200 with `ready-info.ds-ready` YES, else 503; `ready-info.cameras-without-frames` names the cameras that gave no frame yet (`camera_id`, `source_id`, `state`) |
//! | `GET /api/v1/startup` (`/startup`) | | `startup-info.ds-startup`: YES (200) once PAUSED or PLAYING, else NO (503) |
//! | `GET /metrics` | | the process's Prometheus metrics |
//! | `GET /api/v1/metrics` | | DeepStream's `metrics-info` (`stream-stats`), or Prometheus with `Accept: text/plain` |
//! | `POST /api/v1/infer/set-interval` | `{"stream":{"stream_id":"0","interval":2}}` | sets `interval` on every primary `rstrtinfer`/`rsdlainfer` of the pipeline (or on `"element"`) |
//! | `POST /api/v1/inferserver/set-interval` | the same | the same (nvinferserver's endpoint; `rstrtinfer` plays that part), answered `INFERSERVER_INTERVAL_UPDATE_*` |
//! | `POST /api/v1/roi/update` | `{"stream":{"stream_id":"0","roi_count":1,"roi":[{"roi_id":"0","left":100,"top":300,"width":400,"height":400}]}}` | replaces that stream's `rsanalytics` regions of interest |
//! | `POST /api/v1/mux/batched-push-timeout` | `{"stream":{"batched_push_timeout":100000}}` | the muxer's timeout, in µs |
//! | `POST /api/v1/mux/max-latency` | `{"stream":{"max_latency":0}}` | the muxer's max-latency (while playing too) |
//! | `POST /api/v1/record/start` | `{"stream":{"camera_id":"cam1","duration":10}}` | smart record (`file` in the reply) |
//! | `POST /api/v1/record/stop` | `{"stream":{"camera_id":"cam1"}}` | ends the open recording |
//! | `POST /api/v1/dec/drop-frame-interval` | `{"stream":{"stream_id":"0","drop_frame_interval":2}}` | that camera keeps every 2nd frame (0 to 30; 0 and 1 keep all) |
//! | `POST /api/v1/app/quit` | `{"stream":{"app_quit":1}}` | every camera's stream ends (EOS reaches the pipeline's sinks, as at the end of files); an element message `ferrostream-force-pipeline-eos` with `app-quit` tells the application whether to quit as well (`ferrostream-app` ends at the EOS) |
//! | `GET /version` | | the API version |
//!
//! Errors: 400 (not JSON, a field missing or of the wrong type, an unknown `change`), 404 (no
//! such camera, endpoint, or element to change), 405 (wrong method), 409 (a camera id that is
//! playing, smart record off or nothing recorded yet), 413 (a body over 1 MiB), 503
//! (`max-sources` cameras play).
//!
//! ## Readiness
//!
//! `GET /api/v1/health/ready` answers 200 once the bin is PLAYING and one camera has delivered a
//! frame (or none is configured: cameras come through the API), as DeepStream counts a pipeline
//! ready; a camera that cannot be reached (retrying for ever) does not hold the others back.
//! `ready-needs-every-camera=true` waits instead for every camera to give a frame or be given
//! up (`reconnect-attempts`). Either way the answer names the cameras without a frame yet.
//!
//! ## Smart record
//!
//! With `record-cache` > 0 each camera keeps a ring of its encoded video (see
//! [`crate::record`]); `POST /api/v1/record/start`, the `start-record` action signal (camera
//! id, seconds; 0: `record-duration`), or an
//! `rsanalytics` event of the pipeline named in `record-on` (`line-crossing[:LINE]`,
//! `overcrowding[:REGION]`) writes `record-dir`/`<record-prefix>_<camera id>_<unix ms>_<n>.mp4`
//! from the last keyframe at or before the trigger minus `record-cache` to `record-duration`
//! after it. For an event, the trigger is the event's frame (its PTS); for a request, the newest
//! frame of that camera. Triggers during a recording extend it. `POST /api/v1/record/stop` or
//! the `stop-record` action signal (camera id; returns whether a recording was open) ends it.
//!
//! ```text
//! gst-launch-1.0 rsmultiurisrcbin name=src rest-port=9000 batch-size=4 \
//!         batched-push-timeout=40000 uri-list=file:///data/vtest.avi,rtsp://camera-2/stream \
//!         sensor-id-list=entrance,yard file-loop=true record-cache=5 record-dir=/var/rec \
//!         record-on=line-crossing \
//!     ! rstrtinfer config-file-path=pipelines/coco_ssd.txt ! rstracker \
//!     ! rsanalytics config-file-path=pipelines/analytics_vtest.txt ! fakesink
//! curl -XPOST http://127.0.0.1:9000/api/v1/stream/add -d '{"key":"sensor","value":{
//!     "camera_id":"door","camera_url":"rtsp://camera-3/stream","change":"camera_add"}}'
//! ```

use gst::glib;
use gst::prelude::*;

mod ids;
mod imp;
pub mod rest;

pub use imp::prometheus;

glib::wrapper! {
    pub struct RsMultiUriSrcBin(ObjectSubclass<imp::RsMultiUriSrcBin>)
        @extends gst::Bin, gst::Element, gst::Object,
        @implements gst::ChildProxy;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "rsmultiurisrcbin",
        gst::Rank::NONE,
        RsMultiUriSrcBin::static_type(),
    )
}
