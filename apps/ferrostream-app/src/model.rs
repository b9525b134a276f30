// SPDX-License-Identifier: MIT OR Apache-2.0
//! What a deepstream-app configuration asks for, group by group, after reading: the values
//! of the keys Ferrostream honours (the key table in [`crate::keys`] fills them). Defaults are
//! deepstream-app's.

use std::path::PathBuf;

use crate::value::Rgba;

/// `[application]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Application {
    pub perf: bool,
    /// Seconds between `**PERF:` lines.
    pub perf_interval: u32,
    pub kitti_dir: Option<PathBuf>,
    pub kitti_track_dir: Option<PathBuf>,
    pub terminated_track_dir: Option<PathBuf>,
    pub global_gpu_id: Option<u32>,
}

/// `[tiled-display]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Tiler {
    pub enable: bool,
    pub rows: u32,
    pub columns: u32,
    pub width: u32,
    pub height: u32,
}

impl Default for Tiler {
    fn default() -> Self {
        Self {
            enable: false,
            rows: 1,
            columns: 1,
            width: 1280,
            height: 720,
        }
    }
}

/// `[source<N>]` types (deepstream_sources.h numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SourceType {
    /// 1: a V4L2 camera.
    CameraV4l2,
    /// 2: one URI.
    #[default]
    Uri,
    /// 3: one URI opened `num-sources` times.
    MultiUri,
    /// 4: an RTSP camera.
    Rtsp,
    /// 5: a Jetson CSI camera (nvarguscamerasrc).
    CameraCsi,
}

/// Smart record as deepstream-app defines it (`smart-record`): 0 off, 1 on cloud messages, 2
/// on cloud messages and periodic local events.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SmartRecord {
    pub mode: u32,
    pub dir: Option<PathBuf>,
    pub prefix: Option<String>,
    /// Seconds of video kept before an event (the ring).
    pub cache: Option<u32>,
    /// 0 MP4, 1 MKV.
    pub container: u32,
    /// Seconds before the event the file starts (at most `cache`).
    pub start_time: Option<u32>,
    pub default_duration: Option<u32>,
    /// Seconds each periodic recording lasts (mode 2).
    pub duration: Option<u32>,
    /// Seconds between periodic recordings (mode 2).
    pub interval: Option<u32>,
}

/// `[source<N>]` and `[source-attr-all]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// The group it came from, for messages.
    pub group: String,
    pub enable: bool,
    pub kind: SourceType,
    pub uri: Option<String>,
    pub num_sources: u32,
    pub camera_width: Option<u32>,
    pub camera_height: Option<u32>,
    pub camera_fps: (Option<u32>, Option<u32>),
    pub v4l2_dev_node: Option<u32>,
    pub csi_sensor_id: Option<u32>,
    pub latency_ms: Option<u32>,
    pub drop_frame_interval: Option<u32>,
    pub camera_id: Option<u32>,
    pub source_id: Option<u32>,
    pub reconnect_interval: Option<u32>,
    pub init_reconnect_interval: Option<u32>,
    pub reconnect_attempts: Option<i64>,
    /// `select-rtp-protocol=4`: RTP over TCP only.
    pub rtp_tcp: bool,
    pub leaky: Option<u32>,
    pub max_size_buffers: Option<u32>,
    pub file_loop: Option<bool>,
    pub smart_record: SmartRecord,
}

impl Default for Source {
    fn default() -> Self {
        Self {
            group: String::new(),
            enable: false,
            kind: SourceType::Uri,
            uri: None,
            num_sources: 1,
            camera_width: None,
            camera_height: None,
            camera_fps: (None, None),
            v4l2_dev_node: None,
            csi_sensor_id: None,
            latency_ms: None,
            drop_frame_interval: None,
            camera_id: None,
            source_id: None,
            reconnect_interval: None,
            init_reconnect_interval: None,
            reconnect_attempts: None,
            rtp_tcp: false,
            leaky: None,
            max_size_buffers: None,
            file_loop: None,
            smart_record: SmartRecord::default(),
        }
    }
}

/// `[source-list]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SourceList {
    pub num_source_bins: Option<u32>,
    pub uris: Vec<String>,
    pub sensor_ids: Vec<String>,
    pub sensor_names: Vec<String>,
    pub use_multiurisrcbin: bool,
    pub http_ip: Option<String>,
    pub http_port: Option<u32>,
    pub max_batch_size: Option<u32>,
    pub sgie_batch_size: Option<u32>,
}

/// `[streammux]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamMux {
    pub batch_size: Option<u32>,
    /// Microseconds.
    pub batched_push_timeout: Option<i64>,
    pub sync_inputs: Option<bool>,
    /// Milliseconds.
    pub max_latency: Option<u32>,
}

/// `[primary-gie]` and `[secondary-gie<N>]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Gie {
    pub group: String,
    pub enable: bool,
    pub config_file: Option<PathBuf>,
    pub batch_size: Option<u32>,
    pub interval: Option<u32>,
    pub unique_id: Option<u32>,
    pub operate_on_gie_id: Option<i64>,
    pub operate_on_class_ids: Vec<i64>,
    pub labelfile: Option<PathBuf>,
    pub model_engine_file: Option<PathBuf>,
    pub gpu_id: Option<u32>,
    /// `bbox-border-color<class>`.
    pub border_colors: Vec<(u32, Rgba)>,
    /// `bbox-bg-color<class>`.
    pub bg_colors: Vec<(u32, Rgba)>,
}

/// `[tracker]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tracker {
    pub enable: bool,
    pub ll_config_file: Option<PathBuf>,
    pub display_tracking_id: Option<bool>,
    pub operate_on_class_ids: Vec<i64>,
}

/// `[nvds-analytics]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Analytics {
    pub enable: bool,
    pub config_file: Option<PathBuf>,
}

/// `[osd]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Osd {
    pub enable: bool,
    pub border_width: Option<u32>,
    pub text_size: Option<u32>,
    pub text_color: Option<Rgba>,
    pub text_bg_color: Option<Rgba>,
    pub font: Option<String>,
    pub show_clock: bool,
    pub clock_x: Option<u32>,
    pub clock_y: Option<u32>,
    pub clock_color: Option<Rgba>,
    pub clock_size: Option<u32>,
    pub display_text: Option<bool>,
    pub display_bbox: Option<bool>,
    pub display_mask: Option<bool>,
}

/// `[sink<N>]` types (deepstream_sinks.h numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SinkType {
    /// 1.
    #[default]
    Fake,
    /// 2 (EGL on dGPU, 3D on Jetson) and 5 (DRM): a window.
    Display,
    /// 3: an encoded file.
    File,
    /// 4: RTSP streaming out.
    Rtsp,
    /// 6: message converter and broker.
    MsgBroker,
}

/// `[sink<N>]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sink {
    pub group: String,
    pub enable: bool,
    pub kind: SinkType,
    pub sync: Option<bool>,
    pub qos: Option<bool>,
    pub source_id: Option<u32>,
    pub link_to_demux: bool,
    /// 1 MP4, 2 MKV.
    pub container: u32,
    /// 1 H.264, 2 H.265, 3 MPEG-4.
    pub codec: u32,
    /// 0 hardware, 1 software.
    pub enc_type: u32,
    pub bitrate: Option<u32>,
    pub profile: Option<u32>,
    pub iframe_interval: Option<u32>,
    pub sw_preset: Option<u32>,
    pub output_file: Option<PathBuf>,
    pub rtsp_port: u32,
    pub udp_port: u32,
    pub udp_buffer_size: Option<u32>,
    pub gpu_id: Option<u32>,
    pub msg: MsgBroker,
}

impl Default for Sink {
    fn default() -> Self {
        Self {
            group: String::new(),
            enable: false,
            kind: SinkType::Fake,
            sync: None,
            qos: None,
            source_id: None,
            link_to_demux: false,
            container: 1,
            codec: 1,
            enc_type: 0,
            bitrate: None,
            profile: None,
            iframe_interval: None,
            sw_preset: None,
            output_file: None,
            rtsp_port: 8554,
            udp_port: 5400,
            udp_buffer_size: None,
            gpu_id: None,
            msg: MsgBroker::default(),
        }
    }
}

/// The message converter and broker keys of a `type=6` sink (and `[message-converter]`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MsgBroker {
    pub conv_config: Option<PathBuf>,
    /// 0 DeepStream full schema, 1 minimal, 256/257 custom.
    pub payload_type: Option<u32>,
    pub proto_lib: Option<String>,
    pub conn_str: Option<String>,
    pub topic: Option<String>,
    pub broker_config: Option<PathBuf>,
}

/// `[message-consumer<N>]`: a subscriber of cloud-to-device messages (smart record start and
/// stop). Values are kept as written; an enabled group is checked after reading (a disabled one
/// may hold placeholders such as `<host>;<port>`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Consumer {
    pub group: String,
    pub enable: bool,
    pub proto_lib: Option<String>,
    /// `host;port` or `host;port;topic`.
    pub conn_str: Option<String>,
    /// The protocol adapter's configuration (`[message-broker]` user name, password, client id).
    pub config_file: Option<PathBuf>,
    /// A key file of `[sensor<N>]` groups (`enable`, `id`): sensor id `id` is source N.
    pub sensor_list_file: Option<PathBuf>,
    pub topics: Vec<String>,
}

/// `[tests]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tests {
    pub file_loop: bool,
}

/// What the command line adds to a configuration (deepstream-app has no keys for these).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOptions {
    /// `--frames N`: every source ends after N frames.
    pub frames: Option<u32>,
    /// `--metadata FILE`: every frame's metadata as JSON lines (rsmetaexport), before tiling.
    pub metadata: Option<PathBuf>,
}

/// A whole configuration.
#[derive(Debug, Clone, Default)]
pub struct AppConfig {
    pub options: RunOptions,
    pub path: PathBuf,
    pub application: Application,
    pub tiler: Tiler,
    pub sources: Vec<Source>,
    pub source_list: Option<SourceList>,
    /// `[source-attr-all]`, applied to every source of `[source-list]`.
    pub source_attr_all: Option<Source>,
    pub streammux: StreamMux,
    pub primary: Option<Gie>,
    pub secondaries: Vec<Gie>,
    pub tracker: Tracker,
    pub analytics: Analytics,
    pub osd: Osd,
    pub sinks: Vec<Sink>,
    pub message_converter: Option<MsgBroker>,
    /// The enabled `[message-consumer<N>]` groups.
    pub consumers: Vec<Consumer>,
    pub tests: Tests,
}
