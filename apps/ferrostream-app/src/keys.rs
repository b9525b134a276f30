// SPDX-License-Identifier: MIT OR Apache-2.0
//! Every group and key that deepstream-app's configuration parser reads, one row each, saying
//! what Ferrostream does with it: honoured (stored into [`crate::model`] and translated), or
//! accepted with a one-line notice saying why it has no effect here. A value Ferrostream cannot
//! honour is refused by its row's setter, with the reason. The documentation table
//! (docs/DEEPSTREAM_APP.md) is generated from these rows ([`markdown`]), and a test keeps it
//! in step.

use std::collections::BTreeSet;
use std::path::Path;

use ferrostream_core::ini::{ConfigError, Section};

use crate::document::Document;
use crate::model::*;
use crate::value::Value;

/// What a row does with its key.
pub enum Handling<T: 'static> {
    /// Stored by the setter (which refuses values it cannot honour); the text says what
    /// Ferrostream does with it.
    Honoured(fn(&mut T, &Value) -> Result<(), String>, &'static str),
    /// Accepted with a one-line notice: why it has no effect here.
    NoEffect(&'static str),
}

/// One key of a group. A name ending in `%d` matches the name followed by a number.
pub struct Key<T: 'static> {
    pub name: &'static str,
    pub handling: Handling<T>,
}

macro_rules! honour {
    ($name:literal, $doc:literal, |$c:ident, $v:ident| $body:expr) => {
        Key {
            name: $name,
            handling: Handling::Honoured(
                |$c, $v| {
                    #[allow(clippy::unit_arg)]
                    Ok($body)
                },
                $doc,
            ),
        }
    };
}

macro_rules! notice {
    ($name:literal, $why:expr) => {
        Key {
            name: $name,
            handling: Handling::NoEffect($why),
        }
    };
}

const WHERE_FRAMES_ARE: &str = "the element works on the GPU that holds the frames (the decoder's, \
                                shared through GStreamer's CUDA context); rstrtinfer's gpu-id \
                                and global-gpu-id choose the inference GPU";
const DECODER_GPU: &str = "uridecodebin picks the decoder by rank; choose a GPU's NVDEC with \
                           GST_PLUGIN_FEATURE_RANK (nvh264device1dec:MAX)";
const MEMORY: &str = "memory types follow caps negotiation: frames stay in the memory the decoder \
                      gives (system, CUDA or NVMM) and every element reads them there";
const COMPUTE_HW: &str = "scaling and compositing run where the frames are (CUDA kernels for \
                          GPU memory, the CPU otherwise)";
const POOL: &str = "buffer pools are sized by negotiation";
const SEI: &str = "SEI user data is not extracted";
const DECODER: &str = "decoders are chosen and configured by uridecodebin (rank order)";
const AUDIO: &str = "audio is not analysed: Ferrostream runs video models";
const DRM: &str = "DRM/overlay planes are Jetson display settings; a display sink uses the \
                   desktop's video sink";
const MSGCONV: &str = "rsmsgbroker makes its own payloads (docs/EVENTS.md)";

fn gpu(v: &Value) -> Result<Option<u32>, String> {
    v.uint().map(Some)
}

fn non_zero(v: &Value, what: &str) -> Result<u32, String> {
    match v.uint()? {
        0 => Err(format!("{what} must be at least 1")),
        n => Ok(n),
    }
}

pub static APPLICATION: &[Key<Application>] = &[
    honour!(
        "enable-perf-measurement",
        "`**PERF:` lines: frames/s per stream (current and average), and for live sources the \
         share of each frame interval the pipeline used",
        |c, v| c.perf = v.boolean()?
    ),
    honour!(
        "perf-measurement-interval-sec",
        "seconds between `**PERF:` lines",
        |c, v| c.perf_interval = non_zero(v, "perf-measurement-interval-sec")?
    ),
    honour!(
        "gie-kitti-output-dir",
        "KITTI files of the detections, one per frame (`00_<stream>_<frame>.txt`)",
        |c, v| c.kitti_dir = Some(v.path()?)
    ),
    honour!(
        "kitti-track-output-dir",
        "KITTI files of the tracked objects with their ids, one per frame",
        |c, v| c.kitti_track_dir = Some(v.path()?)
    ),
    notice!(
        "reid-track-output-dir",
        "rstracker computes no ReID features of its own (appearance comes from a secondary \
         model's embedding, exported with the object)"
    ),
    honour!(
        "global-gpu-id",
        "the GPU of every element that has no gpu-id of its own",
        |c, v| c.global_gpu_id = gpu(v)?
    ),
    honour!(
        "terminated-track-output-dir",
        "one file per frame listing the ids of the tracks that ended in it",
        |c, v| c.terminated_track_dir = Some(v.path()?)
    ),
    notice!(
        "shadow-track-output-dir",
        "shadow tracks are reported as objects of their frame (rstracker \
         report-shadow-tracks) and so appear in the KITTI track files"
    ),
];

pub static TILER: &[Key<Tiler>] = &[
    honour!(
        "enable",
        "1 (or 2, 3): frames tiled by rstiler; 0: no tiler",
        |c, v| c.enable = v.int_in(0, 3)? != 0
    ),
    honour!("rows", "rstiler rows", |c, v| c.rows = non_zero(v, "rows")?),
    honour!("columns", "rstiler columns", |c, v| c.columns =
        non_zero(v, "columns")?),
    honour!("width", "rstiler width", |c, v| c.width =
        non_zero(v, "width")?),
    honour!("height", "rstiler height", |c, v| c.height =
        non_zero(v, "height")?),
    notice!("gpu-id", WHERE_FRAMES_ARE),
    notice!("nvbuf-memory-type", MEMORY),
    notice!("compute-hw", COMPUTE_HW),
    notice!("buffer-pool-size", POOL),
    notice!(
        "square-seq-grid",
        "rstiler places sources in order of their ids, row by row"
    ),
];

fn source_type(v: &Value) -> Result<SourceType, String> {
    Ok(match v.int()? {
        1 => SourceType::CameraV4l2,
        2 => SourceType::Uri,
        3 => SourceType::MultiUri,
        4 => SourceType::Rtsp,
        5 => SourceType::CameraCsi,
        6..=8 => {
            return Err(format!(
                "audio sources (type {}) are not supported: {AUDIO}",
                v.text
            ));
        }
        9 => {
            return Err(
                "IPC sources (type 9, nvunixfdsrc) are not supported: Ferrostream's rsipcsrc \
                 reads rsipcsink producers, not NVIDIA's protocol"
                    .into(),
            );
        }
        n => {
            return Err(format!(
                "unknown source type {n} (1 to 5 are video sources)"
            ));
        }
    })
}

pub static SOURCE: &[Key<Source>] = &[
    honour!(
        "type",
        "1 v4l2src, 2 and 4 rsurisrcbin, 3 rsurisrcbin `num-sources` times, 5 nvarguscamerasrc \
         (Jetson); audio (6-8) and IPC (9) are refused",
        |c, v| c.kind = source_type(v)?
    ),
    honour!("enable", "a disabled source is left out", |c, v| c.enable =
        v.boolean()?),
    honour!("camera-width", "the camera's caps (width)", |c, v| c
        .camera_width =
        Some(non_zero(v, "camera-width")?)),
    honour!("camera-height", "the camera's caps (height)", |c, v| c
        .camera_height =
        Some(non_zero(v, "camera-height")?)),
    honour!(
        "camera-fps-n",
        "the camera's caps (frame rate numerator)",
        |c, v| c.camera_fps.0 = Some(non_zero(v, "camera-fps-n")?)
    ),
    honour!(
        "camera-fps-d",
        "the camera's caps (frame rate denominator)",
        |c, v| c.camera_fps.1 = Some(non_zero(v, "camera-fps-d")?)
    ),
    honour!(
        "camera-csi-sensor-id",
        "nvarguscamerasrc sensor-id",
        |c, v| c.csi_sensor_id = Some(v.uint()?)
    ),
    honour!(
        "camera-v4l2-dev-node",
        "v4l2src device=/dev/video<N>",
        |c, v| c.v4l2_dev_node = Some(v.uint()?)
    ),
    notice!("alsa-device", AUDIO),
    notice!(
        "udp-buffer-size",
        "rtspsrc keeps its own UDP buffer size; select-rtp-protocol=4 avoids UDP"
    ),
    notice!(
        "sensorID-padID-mapping",
        "sensor ids are given by [source-list] sensor-id-list or camera-id"
    ),
    notice!("video-format", "the format is negotiated with the muxer"),
    honour!(
        "uri",
        "rsurisrcbin uri (relative file:// paths resolved against the file)",
        |c, v| c.uri = Some(v.string()?)
    ),
    honour!(
        "latency",
        "rsurisrcbin latency (ms, RTSP jitter buffer)",
        |c, v| c.latency_ms = Some(v.uint()?)
    ),
    honour!(
        "num-sources",
        "type 3: the URI is opened this many times",
        |c, v| c.num_sources = non_zero(v, "num-sources")?
    ),
    notice!("gpu-id", DECODER_GPU),
    notice!("num-decode-surfaces", DECODER),
    notice!("num-extra-surfaces", DECODER),
    honour!(
        "drop-frame-interval",
        "rsurisrcbin drop-frame-interval: one decoded frame in N is kept",
        |c, v| c.drop_frame_interval = Some(v.uint()?)
    ),
    notice!(
        "drop-on-latency",
        "late RTP packets are handled by rtspsrc's jitter buffer defaults"
    ),
    honour!(
        "camera-id",
        "the source's id (the muxer pad and source_id of its frames)",
        |c, v| c.camera_id = Some(v.uint()?)
    ),
    honour!(
        "rtsp-reconnect-interval-sec",
        "rsurisrcbin reconnect-interval (s without frames before reconnecting)",
        |c, v| c.reconnect_interval = Some(v.uint()?)
    ),
    honour!(
        "init-rtsp-reconnect-interval-sec",
        "rsurisrcbin initial-reconnect-interval (until the first frame)",
        |c, v| c.init_reconnect_interval = Some(v.uint()?)
    ),
    honour!(
        "rtsp-reconnect-attempts",
        "rsurisrcbin reconnect-attempts (-1: forever)",
        |c, v| c.reconnect_attempts = Some(v.int_in(-1, i64::from(i32::MAX))?)
    ),
    notice!(
        "simulate-fps-interval-ms",
        "sources run at their own pace; no frame-rate simulation"
    ),
    notice!(
        "intra-decode-enable",
        "every frame is decoded; use drop-frame-interval or the GIE interval to skip work"
    ),
    notice!("low-latency-decode", DECODER),
    notice!("cudadec-memtype", MEMORY),
    notice!("nvbuf-memory-type", MEMORY),
    honour!(
        "select-rtp-protocol",
        "4: RTP over TCP only (rsurisrcbin rtp-protocol=tcp); 0: as rtspsrc negotiates",
        |c, v| c.rtp_tcp = match v.int()? {
            0 => false,
            4 => true,
            n => return Err(format!("expected 0 (UDP or TCP) or 4 (TCP), found {n}")),
        }
    ),
    notice!(
        "set-rtp-protocol",
        "select-rtp-protocol chooses the transport"
    ),
    honour!(
        "leaky",
        "a leaky queue after the source (1 upstream, 2 downstream)",
        |c, v| c.leaky = Some(v.int_in(0, 2)? as u32)
    ),
    honour!(
        "max-size-buffers",
        "the size of that queue, in buffers",
        |c, v| c.max_size_buffers = Some(v.uint()?)
    ),
    notice!(
        "buffer-mode",
        "rtspsrc's jitter buffer mode is left at its default"
    ),
    honour!("source-id", "the source's id, as camera-id", |c, v| c
        .source_id =
        Some(v.uint()?)),
    honour!(
        "smart-record",
        "rsurisrcbin smart record: 1 records on demand ([message-consumer<N>] messages, the REST \
         API or start-record), 2 also every smart-rec-interval s for smart-rec-duration s",
        |c, v| c.smart_record.mode = v.int_in(0, 2)? as u32
    ),
    honour!("smart-rec-dir-path", "rsurisrcbin record-dir", |c, v| c
        .smart_record
        .dir =
        Some(v.path()?)),
    honour!(
        "smart-rec-file-prefix",
        "rsurisrcbin record-prefix",
        |c, v| c.smart_record.prefix = Some(v.string()?)
    ),
    honour!(
        "smart-rec-video-cache",
        "rsurisrcbin record-cache (s; the older key)",
        |c, v| c.smart_record.cache = Some(v.uint()?)
    ),
    honour!(
        "smart-rec-cache",
        "rsurisrcbin record-cache (s of video kept before an event)",
        |c, v| c.smart_record.cache = Some(v.uint()?)
    ),
    honour!(
        "smart-rec-container",
        "rsurisrcbin record-container (0 MP4, 1 MKV)",
        |c, v| c.smart_record.container = v.int_in(0, 1)? as u32
    ),
    honour!(
        "smart-rec-start-time",
        "how far before an event a file starts (limits record-cache)",
        |c, v| c.smart_record.start_time = Some(v.uint()?)
    ),
    honour!(
        "smart-rec-default-duration",
        "rsurisrcbin record-duration (s after an event)",
        |c, v| c.smart_record.default_duration = Some(v.uint()?)
    ),
    honour!(
        "smart-rec-duration",
        "seconds each periodic recording lasts (smart-record=2)",
        |c, v| c.smart_record.duration = Some(v.uint()?)
    ),
    honour!(
        "smart-rec-interval",
        "seconds between periodic recordings (smart-record=2)",
        |c, v| c.smart_record.interval = Some(non_zero(v, "smart-rec-interval")?)
    ),
    notice!("extract-sei-type5-data", SEI),
    notice!("copy-hw", COMPUTE_HW),
];

pub static SOURCE_LIST: &[Key<SourceList>] = &[
    honour!(
        "num-source-bins",
        "checked against the number of URIs in list",
        |c, v| c.num_source_bins = Some(v.uint()?)
    ),
    notice!(
        "dummy-payload",
        "messages carry the real metadata; no dummy payloads"
    ),
    notice!(
        "custom-ts-to-rfc",
        "timestamps are written as rsmsgbroker writes them (docs/EVENTS.md)"
    ),
    notice!("batched-sensor-name", MSGCONV),
    honour!("list", "the URIs, `;`-separated", |c, v| c.uris =
        v.strings()),
    honour!(
        "sensor-id-list",
        "rsmultiurisrcbin sensor-id-list (the REST API's camera ids)",
        |c, v| c.sensor_ids = v.strings()
    ),
    honour!(
        "sensor-name-list",
        "rsmultiurisrcbin sensor-name-list",
        |c, v| c.sensor_names = v.strings()
    ),
    honour!(
        "use-nvmultiurisrcbin",
        "1: one rsmultiurisrcbin owns the sources and the muxer and serves the REST API; 0: one \
         rsurisrcbin per URI into rsstreammux",
        |c, v| c.use_multiurisrcbin = v.boolean()?
    ),
    notice!(
        "stream-name-display",
        "rsosd draws source names given by its source-text property"
    ),
    honour!("http-ip", "rsmultiurisrcbin rest-address", |c, v| c
        .http_ip =
        Some(v.string()?)),
    honour!(
        "http-port",
        "rsmultiurisrcbin rest-port (REST API and /metrics)",
        |c, v| c.http_port = Some(v.int_in(0, 65535)? as u32)
    ),
    honour!(
        "max-batch-size",
        "rsmultiurisrcbin max-sources and the batch size",
        |c, v| c.max_batch_size = Some(non_zero(v, "max-batch-size")?)
    ),
    honour!(
        "sgie-batch-size",
        "the batch size of secondary GIEs that set none",
        |c, v| c.sgie_batch_size = Some(non_zero(v, "sgie-batch-size")?)
    ),
    notice!("extract-sei-type5-data", SEI),
    notice!("low-latency-mode", DECODER),
    notice!("sei-uuid", SEI),
    notice!(
        "enable-error-propagation",
        "a failing source posts a warning and is reconnected or removed; the others go on"
    ),
    notice!(
        "proto-lib",
        "sources are added and removed through the REST API (http-port), not a message broker"
    ),
    notice!(
        "conn-str",
        "sources are added and removed through the REST API (http-port), not a message broker"
    ),
    notice!(
        "topic",
        "sources are added and removed through the REST API (http-port), not a message broker"
    ),
];

pub static STREAMMUX: &[Key<StreamMux>] = &[
    notice!("compute-hw", COMPUTE_HW),
    notice!("sort-batch", "frames are batched in pad order"),
    notice!(
        "cache-buffer",
        "rsstreammux batches what has arrived at each push"
    ),
    notice!(
        "cache-buffer-timeout",
        "rsstreammux batches what has arrived at each push"
    ),
    notice!(
        "sync-inputs-ntp",
        "sources are synchronised on running time (sync-inputs)"
    ),
    notice!(
        "width",
        "frames keep their native sizes in the batch (as the new nvstreammux); boxes are in \
         source pixels and rstiler scales for display"
    ),
    notice!(
        "height",
        "frames keep their native sizes in the batch (as the new nvstreammux); boxes are in \
         source pixels and rstiler scales for display"
    ),
    notice!("gpu-id", WHERE_FRAMES_ARE),
    notice!(
        "enable-padding",
        "no scaling in the muxer, so no padding; rstrtinfer keeps aspect ratio per its config"
    ),
    notice!(
        "frame-duration",
        "batches are pushed when full or at batched-push-timeout"
    ),
    notice!("buffer-pool-size", POOL),
    honour!("batch-size", "rsstreammux batch-size", |c, v| c
        .batch_size =
        Some(non_zero(v, "batch-size")?)),
    notice!(
        "live-source",
        "liveness comes from the sources themselves (RTSP and cameras are live)"
    ),
    notice!(
        "attach-sys-ts-as-ntp",
        "frames carry their PTS; no NTP timestamps are attached"
    ),
    notice!(
        "frame-num-reset-on-stream-reset",
        "frame numbers continue per source"
    ),
    honour!(
        "batched-push-timeout",
        "rsstreammux batched-push-timeout (µs)",
        |c, v| c.batched_push_timeout = Some(v.int_in(-1, i64::from(i32::MAX))?)
    ),
    notice!("nvbuf-memory-type", MEMORY),
    notice!(
        "config-file-path",
        "rsstreammux takes its settings from this group; the new nvstreammux's own file is not read"
    ),
    honour!("sync-inputs", "rsstreammux sync-inputs", |c, v| c
        .sync_inputs =
        Some(v.boolean()?)),
    honour!("max-latency", "rsstreammux max-latency (ms)", |c, v| c
        .max_latency =
        Some(v.uint()?)),
    notice!(
        "frame-num-reset-on-eos",
        "frame numbers continue per source"
    ),
    notice!(
        "async-process",
        "batches are pushed from the muxer's own thread"
    ),
    notice!(
        "drop-pipeline-eos",
        "the pipeline ends when every source has ended (rsmultiurisrcbin with the REST API keeps \
         running while sources can be added)"
    ),
    notice!("num-surfaces-per-frame", "one surface per frame"),
    notice!("extract-sei-type5-data", SEI),
    notice!("extract-sei-sim-time", SEI),
    notice!(
        "align-first-buffer",
        "sources are synchronised on running time"
    ),
    notice!("failsafe-flush-count", "no failsafe flushing is needed"),
    notice!("drop-backward-sei", SEI),
];

pub static GIE: &[Key<Gie>] = &[
    honour!("enable", "a disabled GIE is left out", |c, v| c.enable =
        v.boolean()?),
    honour!(
        "input-tensor-meta",
        "0 only: rstrtinfer pre-processes itself (nvdspreprocess tensors are not supported)",
        |_c, v| if v.boolean()? {
            return Err(
                "1 needs nvdspreprocess tensors, which Ferrostream does not make; rstrtinfer \
                 pre-processes frames and objects itself (remove the key)"
                    .into(),
            );
        }
    ),
    honour!(
        "operate-on-class-ids",
        "rstrtinfer operate-on-class-ids (secondary)",
        |c, v| c.operate_on_class_ids = v.ints()?
    ),
    honour!("batch-size", "rstrtinfer batch-size", |c, v| c.batch_size =
        Some(non_zero(v, "batch-size")?)),
    honour!(
        "model-engine-file",
        "rstrtinfer model-engine-file (TensorRT engines where TensorRT is built in; else the \
         config's ONNX model runs)",
        |c, v| c.model_engine_file = Some(v.path()?)
    ),
    honour!(
        "plugin-type",
        "0 nvinfer configuration, 1 nvinferserver configuration (run on rstrtinfer's KServe v2 \
         backend); rstrtinfer tells the two apart by the file's content",
        |_c, v| match v.int()? {
            0 | 1 => (),
            n =>
                return Err(format!(
                    "expected 0 (nvinfer) or 1 (nvinferserver), found {n}"
                )),
        }
    ),
    notice!("audio-transform", AUDIO),
    notice!("audio-framesize", AUDIO),
    notice!("audio-hopsize", AUDIO),
    notice!("audio-input-rate", AUDIO),
    notice!(
        "model-variant",
        "vision-encoder settings; rstrtinfer's model is named by config-file"
    ),
    notice!(
        "device",
        "vision-encoder settings; rstrtinfer's device is chosen by its backend"
    ),
    notice!(
        "min-crop-size",
        "objects are filtered by input-object-min-width/height in the GIE's config file"
    ),
    notice!("verbose", "rstrtinfer logs through GST_DEBUG"),
    notice!(
        "backend",
        "vision-encoder settings; the backend is rstrtinfer's `backend` in config-file"
    ),
    notice!(
        "triton-url",
        "vision-encoder settings; nvinferserver configurations (plugin-type=1) name the server"
    ),
    notice!(
        "triton-model",
        "vision-encoder settings; nvinferserver configurations (plugin-type=1) name the model"
    ),
    honour!("labelfile-path", "rstrtinfer labelfile-path", |c, v| c
        .labelfile =
        Some(v.path()?)),
    honour!(
        "config-file",
        "rstrtinfer config-file-path (nvinfer or nvinferserver file, .txt or .yml)",
        |c, v| c.config_file = Some(v.path()?)
    ),
    honour!("interval", "rstrtinfer interval", |c, v| c.interval =
        Some(v.uint()?)),
    honour!("gie-unique-id", "rstrtinfer gie-unique-id", |c, v| c
        .unique_id =
        Some(non_zero(v, "gie-unique-id")?)),
    honour!(
        "operate-on-gie-id",
        "rstrtinfer operate-on-gie-id (secondary)",
        |c, v| c.operate_on_gie_id = Some(v.int_in(-1, i64::from(i32::MAX))?)
    ),
    notice!(
        "infer-raw-output-dir",
        "raw outputs are attached to the metadata with the config's output-tensor-meta=1 \
         instead of written to files"
    ),
    honour!("gpu-id", "rstrtinfer gpu-id", |c, v| c.gpu_id = gpu(v)?),
    notice!("nvbuf-memory-type", MEMORY),
    honour!(
        "bbox-border-color%d",
        "rsosd's border colour of that class",
        |c, v| c.border_colors.push((v.index, v.rgba()?))
    ),
    honour!(
        "bbox-bg-color%d",
        "rsosd's box fill of that class",
        |c, v| c.bg_colors.push((v.index, v.rgba()?))
    ),
];

pub static TRACKER: &[Key<Tracker>] = &[
    honour!("enable", "rstracker after the primary GIE", |c, v| c
        .enable =
        v.boolean()?),
    notice!(
        "tracker-width",
        "rstracker works on boxes in source pixels; it scales no frames (no visual tracker)"
    ),
    notice!(
        "tracker-height",
        "rstracker works on boxes in source pixels; it scales no frames (no visual tracker)"
    ),
    notice!("gpu-id", "rstracker associates boxes on the CPU"),
    notice!("tracker-surface-type", "rstracker scales no frames"),
    honour!(
        "ll-config-file",
        "rstracker config-file-path: NvMultiObjectTracker YAML mapped onto rstracker's settings \
         (sections it does not run are named in one warning)",
        |c, v| c.ll_config_file = Some(v.path()?)
    ),
    honour!(
        "ll-lib-file",
        "NvMultiObjectTracker's library: rstracker runs instead; other low-level libraries are \
         refused",
        |_c, v| {
            let name = Path::new(v.text.trim())
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if !name.starts_with("libnvds_nvmultiobjecttracker") {
                return Err(format!(
                    "low-level tracker library `{name}` cannot be loaded: rstracker replaces \
                     NvMultiObjectTracker only"
                ));
            }
        }
    ),
    notice!("tracking-surface-type", "rstracker scales no frames"),
    honour!(
        "display-tracking-id",
        "rsosd shows track ids in labels",
        |c, v| c.display_tracking_id = Some(v.boolean()?)
    ),
    notice!(
        "tracking-id-reset-mode",
        "ids stay unique for the whole run; a source's targets restart at its stream reset"
    ),
    honour!(
        "input-tensor-meta",
        "0 only: nvdspreprocess tensors are not supported",
        |_c, v| if v.boolean()? {
            return Err("1 needs nvdspreprocess tensors, which Ferrostream does not make".into());
        }
    ),
    notice!(
        "tensor-meta-gie-id",
        "appearance embeddings come from a secondary GIE's output-tensor-meta (rstracker \
         embedding-attribute)"
    ),
    notice!("compute-hw", COMPUTE_HW),
    notice!("user-meta-pool-size", POOL),
    notice!(
        "sub-batches",
        "rstracker tracks every source of a batch in one element"
    ),
    notice!(
        "sub-batch-err-recovery-trial-cnt",
        "rstracker tracks every source of a batch in one element"
    ),
    honour!(
        "operate-on-class-ids",
        "rstracker operate-on-class-ids",
        |c, v| c.operate_on_class_ids = v.ints()?
    ),
];

pub static ANALYTICS: &[Key<Analytics>] = &[
    honour!("enable", "rsanalytics after the tracker", |c, v| c.enable =
        v.boolean()?),
    honour!(
        "config-file",
        "rsanalytics config-file-path (nvdsanalytics format)",
        |c, v| c.config_file = Some(v.path()?)
    ),
];

pub static OSD: &[Key<Osd>] = &[
    honour!("enable", "rsosd draws on the frames", |c, v| c.enable =
        v.boolean()?),
    notice!("process-mode", COMPUTE_HW),
    honour!("border-width", "rsosd border-width", |c, v| c
        .border_width =
        Some(v.uint()?)),
    honour!("text-size", "rsosd text-size", |c, v| c.text_size =
        Some(non_zero(v, "text-size")?)),
    honour!("text-color", "rsosd text-color", |c, v| c.text_color =
        Some(v.rgba()?)),
    honour!("text-bg-color", "rsosd text-bg-color", |c, v| c
        .text_bg_color =
        Some(v.rgba()?)),
    honour!(
        "font",
        "rsosd font when it names a font file; a family name gives a notice and the first system font",
        |c, v| c.font = Some(v.string()?)
    ),
    honour!("show-clock", "rsosd display-clock", |c, v| c.show_clock =
        v.boolean()?),
    honour!("clock-x-offset", "rsosd x-clock-offset", |c, v| c.clock_x =
        Some(v.uint()?)),
    honour!("clock-y-offset", "rsosd y-clock-offset", |c, v| c.clock_y =
        Some(v.uint()?)),
    honour!("clock-text-size", "rsosd clock-font-size", |c, v| c
        .clock_size =
        Some(v.uint()?.clamp(4, 512))),
    notice!("hw-blend-color-attr", COMPUTE_HW),
    notice!("nvbuf-memory-type", MEMORY),
    honour!("clock-color", "rsosd clock-color", |c, v| c.clock_color =
        Some(v.rgba()?)),
    notice!("gpu-id", WHERE_FRAMES_ARE),
    honour!("display-text", "rsosd display-text", |c, v| c
        .display_text =
        Some(v.boolean()?)),
    honour!("display-bbox", "rsosd display-bbox", |c, v| c
        .display_bbox =
        Some(v.boolean()?)),
    honour!("display-mask", "rsosd display-mask", |c, v| c
        .display_mask =
        Some(v.boolean()?)),
];

fn sink_type(v: &Value) -> Result<SinkType, String> {
    Ok(match v.int()? {
        1 => SinkType::Fake,
        2 | 5 => SinkType::Display,
        3 => SinkType::File,
        4 => SinkType::Rtsp,
        6 => SinkType::MsgBroker,
        n => return Err(format!("unknown sink type {n} (1 to 6)")),
    })
}

pub static SINK: &[Key<Sink>] = &[
    honour!("enable", "a disabled sink is left out", |c, v| c.enable =
        v.boolean()?),
    honour!(
        "type",
        "1 fakesink, 2 and 5 a window (autovideosink; fakesink with a warning when there is no \
         display), 3 an encoded file, 4 RTSP streaming out, 6 rsmsgbroker",
        |c, v| c.kind = sink_type(v)?
    ),
    honour!(
        "link-to-demux",
        "the sink takes one stream (source-id) from rsstreamdemux",
        |c, v| c.link_to_demux = v.boolean()?
    ),
    notice!("nvdslogger", "enable-perf-measurement prints frames/s"),
    notice!("show-fps", "enable-perf-measurement prints frames/s"),
    notice!(
        "show-latency",
        "per-element latency: rsstreammux latency-tracking (docs/ARCHITECTURE.md)"
    ),
    notice!(
        "width",
        "a window takes the size of the video (rstiler width/height sets it)"
    ),
    notice!(
        "height",
        "a window takes the size of the video (rstiler width/height sets it)"
    ),
    honour!("qos", "the sink's qos", |c, v| c.qos = Some(v.boolean()?)),
    honour!(
        "sync",
        "the sink's sync (play at the stream's pace)",
        |c, v| c.sync = Some(v.boolean()?)
    ),
    notice!("nvbuf-memory-type", MEMORY),
    honour!("container", "1 mp4mux, 2 matroskamux", |c, v| c.container =
        v.int_in(1, 2)? as u32),
    honour!("codec", "1 H.264, 2 H.265, 3 MPEG-4 Part 2", |c, v| c
        .codec =
        v.int_in(1, 3)? as u32),
    honour!(
        "enc-type",
        "0 a hardware encoder where one is installed (nvh264enc, nvv4l2h264enc), else software \
         with a notice; 1 software (x264enc, x265enc, avenc_mpeg4)",
        |c, v| c.enc_type = v.int_in(0, 1)? as u32
    ),
    notice!("copy-meta", "metadata stays with the buffers"),
    notice!(
        "output-io-mode",
        "encoder I/O modes are Jetson V4L2 settings"
    ),
    honour!(
        "sw-preset",
        "x264enc/x265enc speed-preset (1 ultrafast .. 10 placebo)",
        |c, v| c.sw_preset = Some(v.int_in(0, 10)? as u32)
    ),
    honour!("bitrate", "the encoder's bitrate (bit/s)", |c, v| c
        .bitrate =
        Some(non_zero(v, "bitrate")?)),
    honour!(
        "profile",
        "H.264 0 baseline, 2 main, 4 high; H.265 0 main, 1 main-10 (as caps after the encoder)",
        |c, v| c.profile = Some(v.int_in(0, 4)? as u32)
    ),
    honour!(
        "iframeinterval",
        "the encoder's key-frame interval (frames)",
        |c, v| c.iframe_interval = Some(non_zero(v, "iframeinterval")?)
    ),
    honour!("output-file", "filesink location", |c, v| c.output_file =
        Some(v.path()?)),
    honour!(
        "source-id",
        "with link-to-demux, the stream this sink shows",
        |c, v| c.source_id = Some(v.uint()?)
    ),
    honour!(
        "rtsp-port",
        "the RTSP server's port (rtsp://<host>:<port>/ds-test)",
        |c, v| c.rtsp_port = v.int_in(1, 65535)? as u32
    ),
    honour!(
        "udp-port",
        "the loopback UDP port between the encoder and the RTSP server",
        |c, v| c.udp_port = v.int_in(1, 65535)? as u32
    ),
    honour!("udp-buffer-size", "udpsink buffer-size", |c, v| c
        .udp_buffer_size =
        Some(v.uint()?)),
    notice!("color-range", "colour range follows caps negotiation"),
    notice!("conn-id", DRM),
    notice!("plane-id", DRM),
    notice!("set-mode", DRM),
    notice!("compute-hw", COMPUTE_HW),
    honour!(
        "gpu-id",
        "the hardware encoder's GPU (nvh264device<N>enc for GPU N)",
        |c, v| c.gpu_id = gpu(v)?
    ),
    honour!(
        "msg-broker-proto-lib",
        "rsmsgbroker protocol, by library name: libnvds_mqtt_proto mqtt, libnvds_amqp_proto \
         amqp, libnvds_redis_proto redis, libnvds_kafka_proto kafka",
        |c, v| c.msg.proto_lib = Some(v.string()?)
    ),
    honour!(
        "msg-broker-conn-str",
        "rsmsgbroker server (`host;port` or `host;port;topic`)",
        |c, v| c.msg.conn_str = Some(v.string()?)
    ),
    honour!("topic", "rsmsgbroker topic", |c, v| c.msg.topic =
        Some(v.string()?)),
    honour!(
        "msg-broker-config",
        "read for the broker's user name and password ([message-broker] username/password)",
        |c, v| c.msg.broker_config = Some(v.path()?)
    ),
    notice!("msg-broker-comp-id", MSGCONV),
    notice!(
        "disable-msgconv",
        "rsmsgbroker converts and sends in one element"
    ),
    notice!("new-api", MSGCONV),
    notice!(
        "sleep-time",
        "rsmsgbroker sends from its own thread as messages come"
    ),
];

/// `[message-converter]`: its own key; the converter keys are [`MSG_CONV`]'s.
pub static MESSAGE_CONVERTER: &[Key<()>] = &[honour!(
    "enable",
    "its converter keys apply to every type=6 sink that does not set them itself",
    |_c, _v| ()
)];

/// nvmsgconv's keys, read the same in `[sink<N>]` (type 6) and `[message-converter]`.
pub static MSG_CONV: &[Key<MsgBroker>] = &[
    honour!(
        "msg-conv-config",
        "its [sensor<N>] ids name source N in the messages (rsmsgbroker sensor-ids)",
        |c, v| c.conv_config = Some(v.path()?)
    ),
    honour!(
        "msg-conv-payload-type",
        "0 and 1: rsmsgbroker schema=deepstream-minimal; 256 and 257 (custom libraries) refused",
        |c, v| c.payload_type = Some(match v.int()? {
            n @ (0 | 1) => n as u32,
            n => {
                return Err(format!(
                    "payload type {n} needs a custom nvmsgconv library, which is not loaded \
                     (0 or 1 are DeepStream's schemas)"
                ));
            }
        })
    ),
    notice!(
        "msg-conv-msg2p-lib",
        "custom payload libraries are not loaded; rsmsgbroker makes the payloads"
    ),
    notice!("msg-conv-comp-id", MSGCONV),
    notice!(
        "debug-payload-dir",
        "rsmetaexport writes the same metadata as JSON lines to a file"
    ),
    notice!("multiple-payloads", MSGCONV),
    notice!("msg-conv-msg2p-new-api", MSGCONV),
    notice!(
        "msg-conv-frame-interval",
        "rsmsgbroker sends a message for every frame"
    ),
    notice!("msg-conv-embedding-filter", MSGCONV),
    notice!(
        "msg-conv-dummy-payload",
        "messages carry the real metadata; no dummy payloads"
    ),
];

/// `[message-consumer<N>]`: DeepStream's cloud-to-device messages, received over MQTT
/// ([`crate::consumer`]). Values are stored as written and checked when the group is enabled
/// ([`check_consumer`]): deepstream-app's samples ship disabled groups holding another protocol
/// and placeholders.
pub static MESSAGE_CONSUMER: &[Key<Consumer>] = &[
    honour!(
        "enable",
        "1: an MQTT subscriber runs with the pipeline; start-recording / stop-recording \
         messages trigger the named source's smart record (start-record / stop-record)",
        |c, v| c.enable = v.boolean()?
    ),
    honour!(
        "config-file",
        "read for the MQTT adapter's [message-broker] username, password, client-id and \
         keep-alive (USER_MQTT and PASSWORD_MQTT override them); enable-tls=1 is refused",
        |c, v| c.config_file = Some(v.path()?)
    ),
    honour!(
        "proto-lib",
        "MQTT only: a library whose file name contains `mqtt` (libnvds_mqtt_proto.so); other \
         protocols are refused when the group is enabled",
        |c, v| c.proto_lib = Some(v.string()?)
    ),
    honour!(
        "conn-str",
        "the broker: `host;port` (or `host;port;topic`, the topic subscribed too)",
        |c, v| c.conn_str = Some(v.string()?)
    ),
    honour!(
        "sensor-list-file",
        "a key file whose `[sensor<N>]` groups (enable=1, id) make sensor `id` source N; \
         without it a message's sensor id is the source id (or an rsmultiurisrcbin camera id)",
        |c, v| c.sensor_list_file = Some(v.path()?)
    ),
    honour!(
        "subscribe-topic-list",
        "the topics subscribed, `;`-separated",
        |c, v| c.topics = v.strings()
    ),
];

/// Checks an enabled `[message-consumer<N>]`: MQTT, a broker and at least one topic. An error
/// names the file, the line, the group, the key and its value.
fn check_consumer(doc: &Document, group: &Section, c: &Consumer) -> Result<(), ConfigError> {
    let error = |key: &str, why: String| {
        let entry = group.entries.iter().rev().find(|e| e.key == key);
        ConfigError {
            path: doc.path.clone(),
            line: entry.map_or(group.line, |e| e.line),
            message: match entry {
                Some(e) => format!("[{}] {key}={}: {why}", group.name, e.value),
                None => format!("[{}] enable=1 needs {key}: {why}", group.name),
            },
        }
    };
    let mqtt = "Ferrostream's message consumers speak MQTT only (a protocol library whose file \
                name contains `mqtt`, as libnvds_mqtt_proto.so)";
    let Some(lib) = &c.proto_lib else {
        return Err(error("proto-lib", mqtt.into()));
    };
    let file = Path::new(lib)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if !file.contains("mqtt") {
        return Err(error("proto-lib", format!("not supported: {mqtt}")));
    }
    let Some(conn) = &c.conn_str else {
        return Err(error("conn-str", "the MQTT broker as host;port".into()));
    };
    let end = crate::consumer::endpoint(conn).map_err(|e| error("conn-str", e))?;
    if c.topics.is_empty() && end.topic.is_none() {
        return Err(error(
            "subscribe-topic-list",
            "at least one topic (topic1;topic2)".into(),
        ));
    }
    Ok(())
}

pub static TESTS: &[Key<Tests>] = &[
    honour!(
        "file-loop",
        "rsurisrcbin file-loop on every file source",
        |c, v| c.file_loop = v.boolean()?
    ),
    notice!(
        "pipeline-recreate-sec",
        "deepstream-app's pipeline re-creation test is not run"
    ),
];

/// Groups deepstream-app reads for elements Ferrostream has no counterpart of: accepted while
/// disabled, refused when `enable` is set. (group, what it is, its keys.)
pub static UNSUPPORTED_GROUPS: &[(&str, &str, &[&str])] = &[
    (
        "pre-process",
        "nvdspreprocess (ROI tensors); rstrtinfer pre-processes frames itself",
        &["enable", "operate-on-gie-id", "config-file"],
    ),
    (
        "secondary-pre-process%d",
        "nvdspreprocess for secondary GIEs; rstrtinfer pre-processes objects itself",
        &["enable", "operate-on-gie-id", "config-file"],
    ),
    (
        "segvisual",
        "nvsegvisual; rsosd draws instance masks (display-mask)",
        &[
            "enable",
            "width",
            "height",
            "batch-size",
            "nvbuf-memory-type",
            "gpu-id",
        ],
    ),
    (
        "dewarper%d",
        "nvdewarper (fisheye projection)",
        &[
            "enable",
            "gpu-id",
            "config-file",
            "nvbuf-memory-type",
            "num-surfaces-per-frame",
            "source-id",
            "num-output-buffers",
        ],
    ),
    (
        "ds-example",
        "dsexample (NVIDIA's template plugin); rsosd blurs classes with blur-class-ids",
        &[
            "enable",
            "full-frame",
            "processing-width",
            "processing-height",
            "blur-objects",
            "unique-id",
            "gpu-id",
            "nvbuf-memory-type",
            "batch-size",
        ],
    ),
    (
        "img-save",
        "saving object crops as images",
        &[
            "enable",
            "gpu-id",
            "output-folder-path",
            "frame-to-skip-rules-path",
            "save-img-full-frame",
            "save-img-cropped-obj",
            "second-to-skip-interval",
            "min-confidence",
            "max-confidence",
            "min-box-width",
            "min-box-height",
        ],
    ),
    (
        "replay",
        "replaying labels from files",
        &[
            "enable",
            "label-dir",
            "file-names",
            "max-frame-nums",
            "label-width",
            "label-height",
            "interval",
        ],
    ),
    (
        "text-embedder",
        "text embedding models",
        &["enable", "model-name", "onnx-model-path", "tokenizer-dir"],
    ),
    (
        "visionencoder",
        "vision encoder embeddings; run the encoder as a secondary GIE with output-tensor-meta",
        &[
            "enable",
            "model-variant",
            "batch-size",
            "device",
            "min-crop-size",
            "verbose",
            "gpu-id",
            "backend",
            "triton-url",
            "triton-model",
            "skip-interval",
            "embedding-classes",
            "onnx-model",
            "tensorrt-engine",
            "smart-infer",
            "cache-refresh-interval",
            "cache-max-size",
            "ofa-predict",
            "ofa-motion-threshold",
            "ofa-high-motion-threshold",
            "query-only",
        ],
    ),
    ("audio-transform", "audio pipelines", &["enable"]),
    ("audio-classifier", "audio pipelines", &["enable"]),
];

/// What reading a file said besides its values.
#[derive(Debug, Default, Clone)]
pub struct Report {
    /// One line per key with no effect here (once per group kind and key).
    pub notices: Vec<String>,
    /// Unknown groups and keys, disabled groups that are not run.
    pub warnings: Vec<String>,
    seen: BTreeSet<(String, String)>,
}

impl Report {
    fn notice(&mut self, kind: &str, key: &str, why: &str) {
        if self.seen.insert((kind.to_owned(), key.to_owned())) {
            self.notices
                .push(format!("[{kind}] {key}: no effect here: {why}"));
        }
    }
}

/// `name` without its trailing number, and the number (`sink2` -> `sink`, 2).
fn numbered(name: &str) -> Option<(&str, u32)> {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits == name.len() {
        return None;
    }
    let (stem, number) = name.split_at(name.len() - digits);
    Some((stem, number.parse().ok()?))
}

/// The row of `table` for `key`, and the number it ends with for `%d` rows.
fn row<'t, T>(table: &'t [Key<T>], key: &str) -> Option<(&'t Key<T>, u32)> {
    table.iter().find_map(|k| match k.name.strip_suffix("%d") {
        Some(stem) => key
            .strip_prefix(stem)
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse().ok())
            .map(|n| (k, n)),
        None => (k.name == key).then_some((k, 0)),
    })
}

/// Reads `group` into `target` through `table`: honoured keys are stored, keys with no effect
/// give a notice, unknown keys a warning; a refused value is an error naming file, line, group,
/// key and value.
pub fn read_group<T>(
    doc: &Document,
    kind: &str,
    group: &Section,
    table: &[Key<T>],
    target: &mut T,
    report: &mut Report,
) -> Result<(), ConfigError> {
    for entry in &group.entries {
        let Some((key, index)) = row(table, &entry.key) else {
            report.warnings.push(format!(
                "{}:{}: unknown key `{}` in [{}] ignored",
                doc.path.display(),
                entry.line,
                entry.key,
                group.name
            ));
            continue;
        };
        match &key.handling {
            Handling::Honoured(set, _) => {
                let mut value = Value::new(&entry.value, doc.base_dir());
                value.index = index;
                set(target, &value).map_err(|why| ConfigError {
                    path: doc.path.clone(),
                    line: entry.line,
                    message: format!("[{}] {}={}: {why}", group.name, entry.key, entry.value),
                })?;
            }
            Handling::NoEffect(why) => report.notice(kind, key.name, why),
        }
    }
    Ok(())
}

/// `group` as two groups: the entries `table` has rows for, and the others.
fn split<T>(group: &Section, table: &[Key<T>]) -> (Section, Section) {
    let (ours, rest) = group
        .entries
        .iter()
        .cloned()
        .partition(|e| row(table, &e.key).is_some());
    let part = |entries| Section {
        name: group.name.clone(),
        line: group.line,
        entries,
    };
    (part(ours), part(rest))
}

/// Reads an unsupported group: refused when enabled, else accepted with a warning.
fn read_unsupported(
    doc: &Document,
    group: &Section,
    what: &str,
    keys: &[&str],
    report: &mut Report,
) -> Result<(), ConfigError> {
    for entry in &group.entries {
        if !keys.contains(&entry.key.as_str()) {
            report.warnings.push(format!(
                "{}:{}: unknown key `{}` in [{}] ignored",
                doc.path.display(),
                entry.line,
                entry.key,
                group.name
            ));
        } else if entry.key == "enable"
            && Value::new(&entry.value, doc.base_dir())
                .boolean()
                .unwrap_or(true)
        {
            return Err(ConfigError {
                path: doc.path.clone(),
                line: entry.line,
                message: format!(
                    "[{}] enable={}: {what} has no Ferrostream counterpart; set enable=0 or \
                     remove the group",
                    group.name, entry.value
                ),
            });
        }
    }
    report.warnings.push(format!(
        "[{}] is disabled and not run here ({what})",
        group.name
    ));
    Ok(())
}

/// Reads a whole document into an [`AppConfig`].
pub fn read(doc: &Document) -> Result<(AppConfig, Report), ConfigError> {
    let mut config = AppConfig {
        path: doc.path.clone(),
        ..AppConfig::default()
    };
    config.application.perf_interval = 5;
    let mut report = Report::default();
    let mut seen = BTreeSet::new();
    for group in &doc.groups {
        let name = group.name.as_str();
        if !seen.insert(name) {
            return Err(ConfigError {
                path: doc.path.clone(),
                line: group.line,
                message: format!("group [{name}] appears twice"),
            });
        }
        let stem = numbered(name).map(|(s, _)| s);
        let r = &mut report;
        match (name, stem) {
            ("application", _) => {
                read_group(doc, name, group, APPLICATION, &mut config.application, r)?
            }
            ("tiled-display", _) => read_group(doc, name, group, TILER, &mut config.tiler, r)?,
            ("source-list", _) => {
                let mut list = SourceList::default();
                read_group(doc, name, group, SOURCE_LIST, &mut list, r)?;
                config.source_list = Some(list);
            }
            ("source-attr-all", _) => {
                let mut s = Source {
                    group: name.to_owned(),
                    enable: true,
                    ..Source::default()
                };
                read_group(doc, name, group, SOURCE, &mut s, r)?;
                config.source_attr_all = Some(s);
            }
            (_, Some("source")) => {
                let mut s = Source {
                    group: name.to_owned(),
                    ..Source::default()
                };
                read_group(doc, "source", group, SOURCE, &mut s, r)?;
                config.sources.push(s);
            }
            ("streammux", _) => read_group(doc, name, group, STREAMMUX, &mut config.streammux, r)?,
            ("primary-gie", _) => {
                let mut g = Gie {
                    group: name.to_owned(),
                    ..Gie::default()
                };
                read_group(doc, "gie", group, GIE, &mut g, r)?;
                config.primary = Some(g);
            }
            (_, Some("secondary-gie")) => {
                let mut g = Gie {
                    group: name.to_owned(),
                    ..Gie::default()
                };
                read_group(doc, "gie", group, GIE, &mut g, r)?;
                config.secondaries.push(g);
            }
            ("tracker", _) => read_group(doc, name, group, TRACKER, &mut config.tracker, r)?,
            ("nvds-analytics", _) => {
                read_group(doc, name, group, ANALYTICS, &mut config.analytics, r)?
            }
            ("osd", _) => read_group(doc, name, group, OSD, &mut config.osd, r)?,
            (_, Some("sink")) => {
                let mut s = Sink {
                    group: name.to_owned(),
                    ..Sink::default()
                };
                let (conv, rest) = split(group, MSG_CONV);
                read_group(doc, "sink", &rest, SINK, &mut s, r)?;
                read_group(doc, "sink", &conv, MSG_CONV, &mut s.msg, r)?;
                config.sinks.push(s);
            }
            ("message-converter", _) => {
                let mut m = MsgBroker::default();
                let (conv, rest) = split(group, MSG_CONV);
                read_group(doc, name, &rest, MESSAGE_CONVERTER, &mut (), r)?;
                read_group(doc, name, &conv, MSG_CONV, &mut m, r)?;
                config.message_converter = Some(m);
            }
            (_, Some("message-consumer")) => {
                let mut c = Consumer {
                    group: name.to_owned(),
                    ..Consumer::default()
                };
                read_group(doc, "message-consumer", group, MESSAGE_CONSUMER, &mut c, r)?;
                if c.enable {
                    check_consumer(doc, group, &c)?;
                    config.consumers.push(c);
                }
            }
            ("tests", _) => read_group(doc, name, group, TESTS, &mut config.tests, r)?,
            _ => {
                let unsupported =
                    UNSUPPORTED_GROUPS
                        .iter()
                        .find(|(g, _, _)| match g.strip_suffix("%d") {
                            Some(s) => stem == Some(s),
                            None => *g == name,
                        });
                match unsupported {
                    Some((_, what, keys)) => read_unsupported(doc, group, what, keys, r)?,
                    None => report.warnings.push(format!(
                        "{}:{}: unknown group [{name}] ignored",
                        doc.path.display(),
                        group.line
                    )),
                }
            }
        }
    }
    Ok((config, report))
}

/// The documentation table: every group and key deepstream-app reads, and what Ferrostream
/// does with it.
pub fn markdown() -> String {
    fn rows<T>(out: &mut String, group: &str, table: &[Key<T>]) {
        for key in table {
            let (how, what) = match &key.handling {
                Handling::Honoured(_, what) => ("honoured", *what),
                Handling::NoEffect(why) => ("no effect (notice)", *why),
            };
            let name = key.name.replace("%d", "<N>");
            out.push_str(&format!("| `[{group}]` | `{name}` | {how} | {what} |\n"));
        }
    }
    let mut out = String::from(
        "| group | key | handling | what Ferrostream does |\n| --- | --- | --- | --- |\n",
    );
    rows(&mut out, "application", APPLICATION);
    rows(&mut out, "tiled-display", TILER);
    rows(&mut out, "source<N>`, `[source-attr-all]", SOURCE);
    rows(&mut out, "source-list", SOURCE_LIST);
    rows(&mut out, "streammux", STREAMMUX);
    rows(&mut out, "primary-gie`, `[secondary-gie<N>]", GIE);
    rows(&mut out, "tracker", TRACKER);
    rows(&mut out, "nvds-analytics", ANALYTICS);
    rows(&mut out, "osd", OSD);
    rows(&mut out, "sink<N>", SINK);
    rows(&mut out, "message-converter", MESSAGE_CONVERTER);
    rows(&mut out, "sink<N>`, `[message-converter]", MSG_CONV);
    rows(&mut out, "message-consumer<N>", MESSAGE_CONSUMER);
    rows(&mut out, "tests", TESTS);
    for (group, what, keys) in UNSUPPORTED_GROUPS {
        let group = group.replace("%d", "<N>");
        for key in *keys {
            let how = if *key == "enable" {
                "refused when 1"
            } else {
                "accepted while disabled"
            };
            out.push_str(&format!(
                "| `[{group}]` | `{key}` | {how} | not run: {what} |\n"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Form;

    fn read_text(text: &str) -> Result<(AppConfig, Report), ConfigError> {
        let doc = Document::parse(Path::new("/cfg/app.txt"), text, Form::KeyFile)?;
        read(&doc)
    }

    #[test]
    fn numbered_names() {
        assert_eq!(numbered("sink12"), Some(("sink", 12)));
        assert_eq!(numbered("secondary-gie0"), Some(("secondary-gie", 0)));
        assert_eq!(numbered("osd"), None);
        assert_eq!(numbered("7"), None);
    }

    #[test]
    fn honoured_keys_notices_and_unknown_keys() {
        let (c, r) = read_text(
            "[application]\nenable-perf-measurement=1\nperf-measurement-interval-sec=2\n\
             gie-kitti-output-dir=kitti\n[source0]\nenable=1\ntype=3\nuri=file:///a.mp4\n\
             num-sources=2\ncudadec-memtype=0\nfrobnicate=1\n[primary-gie]\nenable=1\n\
             config-file=pgie.txt\nbbox-border-color2=1;0;0;1\n[sink0]\nenable=1\ntype=3\n\
             output-file=out.mp4\n[weird-group]\na=1\n",
        )
        .unwrap();
        assert!(c.application.perf);
        assert_eq!(c.application.perf_interval, 2);
        assert_eq!(
            c.application.kitti_dir.as_deref(),
            Some(Path::new("/cfg/kitti"))
        );
        assert_eq!(c.sources[0].kind, SourceType::MultiUri);
        assert_eq!(c.sources[0].num_sources, 2);
        let pgie = c.primary.unwrap();
        assert_eq!(
            pgie.config_file.as_deref(),
            Some(Path::new("/cfg/pgie.txt"))
        );
        assert_eq!(pgie.border_colors, vec![(2, [1.0, 0.0, 0.0, 1.0])]);
        assert_eq!(c.sinks[0].kind, SinkType::File);
        assert_eq!(r.notices.len(), 1, "{:?}", r.notices);
        assert!(r.notices[0].starts_with("[source] cudadec-memtype: no effect here"));
        assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
        assert!(r.warnings[0].contains("/cfg/app.txt:11: unknown key `frobnicate` in [source0]"));
        assert!(r.warnings[1].contains("unknown group [weird-group]"));
    }

    #[test]
    fn refusals_name_file_line_group_key_and_value() {
        let e = read_text("[source0]\nenable=1\ntype=6\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(
            e.to_string().contains("[source0] type=6: audio sources"),
            "{e}"
        );
        let e = read_text("[sink1]\ntype=9\n").unwrap_err();
        assert!(e.message.contains("unknown sink type 9"), "{e}");
        let e = read_text("[tracker]\nll-lib-file=/x/libmytracker.so\n").unwrap_err();
        assert!(e.message.contains("libmytracker.so"), "{e}");
        let e = read_text("[dewarper0]\nenable=1\n").unwrap_err();
        assert!(e.message.contains("nvdewarper"), "{e}");
        let e = read_text("[message-consumer0]\nenable=1\n").unwrap_err();
        assert!(
            e.message
                .contains("[message-consumer0] enable=1 needs proto-lib"),
            "{e}"
        );
        let e = read_text("[osd]\ntext-color=1;2;3\n").unwrap_err();
        assert!(e.message.contains("[osd] text-color=1;2;3"), "{e}");
        let e = read_text("[osd]\n[osd]\n").unwrap_err();
        assert!(e.message.contains("appears twice"), "{e}");
        let (_, r) = read_text("[dewarper0]\nenable=0\n").unwrap();
        assert!(r.warnings[0].contains("disabled and not run"));
    }

    #[test]
    fn message_consumers_are_mqtt_subscribers() {
        // test5's sample: disabled, another protocol and placeholders; accepted, not run.
        let (c, _) = read_text(
            "[message-consumer0]\nenable=0\n\
             proto-lib=/opt/nvidia/deepstream/deepstream/lib/libnvds_kafka_proto.so\n\
             conn-str=<host>;<port>\nconfig-file=<broker config file e.g. cfg_kafka.txt>\n\
             subscribe-topic-list=<topic1>;<topic2>;<topicN>\n",
        )
        .unwrap();
        assert!(c.consumers.is_empty());
        let (c, r) = read_text(
            "[message-consumer1]\nenable=1\nproto-lib=/opt/libnvds_mqtt_proto.so\n\
             conn-str=broker;1883\nconfig-file=cfg_mqtt.txt\nsubscribe-topic-list=c2d; other\n\
             sensor-list-file=sensors.txt\n",
        )
        .unwrap();
        assert!(r.notices.is_empty(), "{:?}", r.notices);
        assert_eq!(
            c.consumers,
            vec![Consumer {
                group: "message-consumer1".into(),
                enable: true,
                proto_lib: Some("/opt/libnvds_mqtt_proto.so".into()),
                conn_str: Some("broker;1883".into()),
                config_file: Some("/cfg/cfg_mqtt.txt".into()),
                sensor_list_file: Some("/cfg/sensors.txt".into()),
                topics: vec!["c2d".into(), "other".into()],
            }]
        );
        let e = read_text(
            "[message-consumer0]\nenable=1\nproto-lib=/opt/libnvds_kafka_proto.so\n\
             conn-str=h;9092\nsubscribe-topic-list=t\n",
        )
        .unwrap_err();
        assert_eq!(e.line, 3);
        assert!(
            e.message.contains(
                "[message-consumer0] proto-lib=/opt/libnvds_kafka_proto.so: not supported"
            ) && e.message.contains("MQTT only"),
            "{e}"
        );
        let e = read_text(
            "[message-consumer0]\nenable=1\nproto-lib=libnvds_mqtt_proto.so\nconn-str=h\n\
             subscribe-topic-list=t\n",
        )
        .unwrap_err();
        assert!(
            e.message
                .contains("[message-consumer0] conn-str=h: expected host;port"),
            "{e}"
        );
        let e = read_text(
            "[message-consumer0]\nenable=1\nproto-lib=libnvds_mqtt_proto.so\nconn-str=h;1\n",
        )
        .unwrap_err();
        assert!(
            e.message.contains("enable=1 needs subscribe-topic-list"),
            "{e}"
        );
        // A topic in conn-str is enough.
        assert!(
            read_text(
                "[message-consumer0]\nenable=1\nproto-lib=libnvds_mqtt_proto.so\nconn-str=h;1;t\n"
            )
            .is_ok()
        );
    }

    /// Every key of NVIDIA's parser (deepstream_config_file_parser.c and
    /// deepstream_app_config_parser.c) has a row: the list below is the parser's, group by group.
    #[test]
    fn every_key_of_deepstream_app_has_a_row() {
        let parser: &[(&str, &str)] = &[
            (
                "application",
                "enable-perf-measurement perf-measurement-interval-sec gie-kitti-output-dir kitti-track-output-dir reid-track-output-dir global-gpu-id terminated-track-output-dir shadow-track-output-dir",
            ),
            (
                "tiled-display",
                "enable rows columns width height gpu-id nvbuf-memory-type compute-hw buffer-pool-size square-seq-grid",
            ),
            (
                "source",
                "type enable camera-width camera-height camera-fps-n camera-fps-d camera-csi-sensor-id camera-v4l2-dev-node alsa-device udp-buffer-size sensorID-padID-mapping video-format uri latency num-sources gpu-id num-decode-surfaces num-extra-surfaces drop-frame-interval drop-on-latency camera-id rtsp-reconnect-interval-sec init-rtsp-reconnect-interval-sec rtsp-reconnect-attempts simulate-fps-interval-ms intra-decode-enable low-latency-decode cudadec-memtype nvbuf-memory-type select-rtp-protocol set-rtp-protocol leaky max-size-buffers buffer-mode source-id smart-record smart-rec-dir-path smart-rec-file-prefix smart-rec-video-cache smart-rec-cache smart-rec-container smart-rec-start-time smart-rec-default-duration smart-rec-duration smart-rec-interval extract-sei-type5-data copy-hw",
            ),
            (
                "source-list",
                "num-source-bins dummy-payload custom-ts-to-rfc batched-sensor-name list sensor-id-list sensor-name-list use-nvmultiurisrcbin stream-name-display http-ip http-port max-batch-size sgie-batch-size extract-sei-type5-data low-latency-mode sei-uuid enable-error-propagation proto-lib conn-str topic",
            ),
            (
                "streammux",
                "compute-hw sort-batch cache-buffer cache-buffer-timeout sync-inputs-ntp width height gpu-id enable-padding frame-duration buffer-pool-size batch-size live-source attach-sys-ts-as-ntp frame-num-reset-on-stream-reset batched-push-timeout nvbuf-memory-type config-file-path sync-inputs max-latency frame-num-reset-on-eos async-process drop-pipeline-eos num-surfaces-per-frame extract-sei-type5-data extract-sei-sim-time align-first-buffer failsafe-flush-count drop-backward-sei",
            ),
            (
                "gie",
                "enable input-tensor-meta operate-on-class-ids batch-size model-engine-file plugin-type audio-transform audio-framesize audio-hopsize audio-input-rate model-variant device min-crop-size verbose backend triton-url triton-model labelfile-path config-file interval gie-unique-id operate-on-gie-id infer-raw-output-dir gpu-id nvbuf-memory-type bbox-border-color0 bbox-bg-color3",
            ),
            (
                "tracker",
                "enable tracker-width tracker-height gpu-id tracker-surface-type ll-config-file ll-lib-file tracking-surface-type display-tracking-id tracking-id-reset-mode input-tensor-meta tensor-meta-gie-id compute-hw user-meta-pool-size sub-batches sub-batch-err-recovery-trial-cnt operate-on-class-ids",
            ),
            ("nvds-analytics", "enable config-file"),
            (
                "osd",
                "enable process-mode border-width text-size text-color text-bg-color font show-clock clock-x-offset clock-y-offset clock-text-size hw-blend-color-attr nvbuf-memory-type clock-color gpu-id display-text display-bbox display-mask",
            ),
            (
                "sink",
                "enable type link-to-demux nvdslogger show-fps show-latency width height qos sync nvbuf-memory-type container codec enc-type copy-meta output-io-mode sw-preset bitrate profile iframeinterval output-file source-id rtsp-port udp-port udp-buffer-size color-range conn-id plane-id set-mode compute-hw gpu-id msg-conv-config msg-conv-payload-type msg-conv-msg2p-lib msg-conv-comp-id debug-payload-dir multiple-payloads msg-conv-msg2p-new-api msg-conv-frame-interval msg-conv-embedding-filter msg-conv-dummy-payload msg-broker-proto-lib msg-broker-conn-str topic msg-broker-config msg-broker-comp-id disable-msgconv new-api sleep-time",
            ),
            (
                "message-converter",
                "enable msg-conv-config msg-conv-payload-type msg-conv-msg2p-lib msg-conv-comp-id debug-payload-dir multiple-payloads msg-conv-msg2p-new-api msg-conv-frame-interval msg-conv-dummy-payload msg-conv-embedding-filter",
            ),
            (
                "message-consumer",
                "enable config-file proto-lib conn-str sensor-list-file subscribe-topic-list",
            ),
            ("tests", "file-loop pipeline-recreate-sec"),
        ];
        fn has<T>(table: &[Key<T>], key: &str) -> bool {
            row(table, key).is_some()
        }
        for (group, keys) in parser {
            for key in keys.split_whitespace() {
                let found = match *group {
                    "application" => has(APPLICATION, key),
                    "tiled-display" => has(TILER, key),
                    "source" => has(SOURCE, key),
                    "source-list" => has(SOURCE_LIST, key),
                    "streammux" => has(STREAMMUX, key),
                    "gie" => has(GIE, key),
                    "tracker" => has(TRACKER, key),
                    "nvds-analytics" => has(ANALYTICS, key),
                    "osd" => has(OSD, key),
                    "sink" => has(SINK, key) || has(MSG_CONV, key),
                    "message-converter" => has(MESSAGE_CONVERTER, key) || has(MSG_CONV, key),
                    "message-consumer" => has(MESSAGE_CONSUMER, key),
                    "tests" => has(TESTS, key),
                    _ => unreachable!(),
                };
                assert!(found, "[{group}] {key} has no row");
            }
        }
    }

    #[test]
    fn the_docs_table_is_generated_from_the_rows() {
        let docs = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/DEEPSTREAM_APP.md"),
        )
        .expect("docs/DEEPSTREAM_APP.md");
        assert!(
            docs.contains(&markdown()),
            "docs/DEEPSTREAM_APP.md is out of step with the key table: run \
             `ferrostream-app --keys-table` and paste its output"
        );
    }
}
