// SPDX-License-Identifier: MIT OR Apache-2.0
use std::sync::{LazyLock, Mutex};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::base_src::CreateSuccess;
use gst_base::subclass::prelude::*;
use gst_video::VideoFormat;

use super::NvmmTestSrcAbi;
use ferrostream_core::cuda::{
    self, BufferPool, Context, CudaError, Function, KernelParams, KernelSource, Module, Stream,
};
use ferrostream_core::nvmm::{self, NvmmAbi, PitchLayout, abi as nvabi};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "rsnvmmtestsrc",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream NVMM test source"),
    )
});

const DEFAULT_GPU_ID: u32 = 0;
const DEFAULT_IS_LIVE: bool = false;
const DEFAULT_PATTERN_SEED: u32 = 0;
const DEFAULT_WIDTH: i32 = 1920;
const DEFAULT_HEIGHT: i32 = 1080;
const DEFAULT_FPS: (i32, i32) = (30, 1);
/// DeepStream's pitch alignment on dGPU.
const PITCH_ALIGN: u32 = 512;
/// Device buffers kept for reuse once downstream lets go of a frame.
const POOL_MAX_FREE: usize = 8;
const BLOCK: (u32, u32, u32) = (16, 16, 1);

const KERNEL_NAME: &str = "nvmm_test_pattern";
static KERNELS: KernelSource = KernelSource {
    name: "nvmmtestsrc.cu",
    code: r#"
struct Params {
    unsigned long long plane0;
    unsigned long long plane1;
    unsigned int pitch0;
    unsigned int pitch1;
    unsigned int width;
    unsigned int height;
    unsigned int frame;
    unsigned int seed;
    unsigned int rect_x;
    unsigned int rect_y;
    unsigned int rect_w;
    unsigned int rect_h;
    unsigned int format; /* 0 NV12, 1 RGBA */
    unsigned int pad;
};

/* Red grows left to right, green top to bottom, blue with the frame; the rectangle is white. */
__device__ void pattern(const Params& p, unsigned int x, unsigned int y, int& r, int& g, int& b) {
    if (x >= p.rect_x && x < p.rect_x + p.rect_w && y >= p.rect_y && y < p.rect_y + p.rect_h) {
        r = 255; g = 255; b = 255;
        return;
    }
    unsigned long long wd = p.width > 1 ? p.width - 1 : 1;
    unsigned long long hd = p.height > 1 ? p.height - 1 : 1;
    r = (int)((x * 255ull) / wd);
    g = (int)((y * 255ull) / hd);
    b = (int)((p.seed * 37u + p.frame * 2u) & 255u);
}

extern "C" __global__ void nvmm_test_pattern(Params p) {
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= p.width || y >= p.height) return;
    int r, g, b;
    pattern(p, x, y, r, g, b);
    if (p.format == 1) {
        unsigned char* px = (unsigned char*)(p.plane0 + (unsigned long long)y * p.pitch0) + 4ull * x;
        px[0] = (unsigned char)r;
        px[1] = (unsigned char)g;
        px[2] = (unsigned char)b;
        px[3] = 255;
        return;
    }
    /* BT.601 limited range, as NVBUF_COLOR_FORMAT_NV12 says; chroma sampled at even pixels. */
    unsigned char* luma = (unsigned char*)(p.plane0 + (unsigned long long)y * p.pitch0);
    luma[x] = (unsigned char)(((66 * r + 129 * g + 25 * b + 128) >> 8) + 16);
    if ((x & 1u) == 0 && (y & 1u) == 0) {
        unsigned char* uv = (unsigned char*)(p.plane1 + (unsigned long long)(y >> 1) * p.pitch1) + x;
        uv[0] = (unsigned char)(((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128);
        uv[1] = (unsigned char)(((112 * r - 94 * g - 18 * b + 128) >> 8) + 128);
    }
}
"#,
};

/// The kernel's `Params`, field for field.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct PatternParams {
    plane0: u64,
    plane1: u64,
    pitch0: u32,
    pitch1: u32,
    width: u32,
    height: u32,
    frame: u32,
    seed: u32,
    rect_x: u32,
    rect_y: u32,
    rect_w: u32,
    rect_h: u32,
    format: u32,
    _pad: u32,
}

// SAFETY: repr(C), integers only, no padding (64 bytes, tested), the same fields in the same
// order as the kernel's `struct Params`.
unsafe impl KernelParams for PatternParams {}

/// The moving rectangle of frame `frame`: an eighth of the frame in each direction, stepping 8
/// pixels right and 4 down per frame (wrapping), shifted by the seed.
fn rectangle(width: u32, height: u32, frame: u64, seed: u32) -> (u32, u32, u32, u32) {
    let w = (width / 8).max(1);
    let h = (height / 8).max(1);
    let x = (frame * 8 + seed as u64 * 97) % (width - w + 1) as u64;
    let y = (frame * 4 + seed as u64 * 31) % (height - h + 1) as u64;
    (x as u32, y as u32, w, h)
}

#[derive(Debug, Clone)]
struct Settings {
    gpu_id: u32,
    abi: NvmmTestSrcAbi,
    is_live: bool,
    pattern_seed: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            gpu_id: DEFAULT_GPU_ID,
            abi: NvmmTestSrcAbi::default(),
            is_live: DEFAULT_IS_LIVE,
            pattern_seed: DEFAULT_PATTERN_SEED,
        }
    }
}

/// What the negotiated caps decide.
struct Negotiated {
    layout: PitchLayout,
    /// The kernel's `format`: 0 NV12, 1 RGBA.
    kernel_format: u32,
    fps: gst::Fraction,
}

impl Negotiated {
    /// Running time of frame `n` from the first.
    fn time_of(&self, n: u64) -> Option<gst::ClockTime> {
        let (num, den) = (self.fps.numer() as u64, self.fps.denom() as u64);
        (num > 0).then(|| gst::ClockTime::SECOND.mul_div_floor(n * den, num))?
    }

    fn duration(&self) -> Option<gst::ClockTime> {
        self.time_of(1)
    }
}

struct State {
    stream: Stream,
    kernel: Function,
    pool: BufferPool,
    gpu_id: u32,
    abi: NvmmAbi,
    negotiated: Option<Negotiated>,
    /// Frames produced since start.
    frame: u64,
    /// Live only: the running time of the first frame.
    live_base: Option<gst::ClockTime>,
}

#[derive(Default)]
pub struct NvmmTestSrc {
    settings: Mutex<Settings>,
    state: Mutex<Option<State>>,
}

impl NvmmTestSrc {
    /// Sets up the GPU side: primary context, stream, compiled kernel, buffer pool.
    fn open_gpu(gpu_id: u32) -> Result<(Stream, Function, BufferPool, String), CudaError> {
        let ctx = Context::primary(gpu_id)?;
        let name = ctx
            .device_name()
            .unwrap_or_else(|_| "unknown device".into());
        let stream = Stream::new(&ctx, 0)?;
        let kernel = Module::load(&ctx, &KERNELS)?.function(KERNEL_NAME)?;
        // Shareable, so that the frames reach other processes (rsipcsink) without a copy.
        let pool = BufferPool::shareable(&ctx, POOL_MAX_FREE);
        Ok((stream, kernel, pool, name))
    }

    /// Draws frame `frame` into a pooled device buffer and wraps it as NVMM memory.
    fn draw(
        state: &State,
        negotiated: &Negotiated,
        frame: u64,
        seed: u32,
    ) -> Result<gst::Memory, CudaError> {
        let layout = &negotiated.layout;
        let pixels = state.pool.get(layout.data_size as usize)?;
        let (rect_x, rect_y, rect_w, rect_h) = rectangle(layout.width, layout.height, frame, seed);
        let plane = |i: usize| layout.planes.get(i).copied().unwrap_or_default();
        let params = PatternParams {
            plane0: pixels.ptr() + plane(0).offset as u64,
            plane1: pixels.ptr() + plane(1).offset as u64,
            pitch0: plane(0).pitch,
            pitch1: plane(1).pitch,
            width: layout.width,
            height: layout.height,
            frame: frame as u32,
            seed,
            rect_x,
            rect_y,
            rect_w,
            rect_h,
            format: negotiated.kernel_format,
            _pad: 0,
        };
        let grid = (
            layout.width.div_ceil(BLOCK.0),
            layout.height.div_ceil(BLOCK.1),
            1,
        );
        // SAFETY: the kernel writes rows 0..height of each plane at `offset + y * pitch`, inside
        // `pixels` (`data_size` bytes, which PitchLayout made the sum of `pitch * rows` over the
        // planes); `pixels` stays alive past the synchronisation below.
        unsafe { state.kernel.launch(&state.stream, grid, BLOCK, &params)? };
        // Downstream gets finished pixels, as from a DeepStream decoder.
        state.stream.synchronize()?;
        Ok(nvmm::surface_memory(
            state.abi,
            state.gpu_id,
            nvabi::NVBUF_MEM_CUDA_DEVICE,
            layout,
            pixels.ptr(),
            pixels,
        ))
    }
}

#[glib::object_subclass]
impl ObjectSubclass for NvmmTestSrc {
    const NAME: &'static str = "GstRsNvmmTestSrc";
    type Type = super::NvmmTestSrc;
    type ParentType = gst_base::PushSrc;
}

impl ObjectImpl for NvmmTestSrc {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            vec![
                glib::ParamSpecUInt::builder("gpu-id")
                    .nick("GPU ID")
                    .blurb("CUDA device the frames are allocated and drawn on")
                    .default_value(DEFAULT_GPU_ID)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("abi", NvmmTestSrcAbi::default())
                    .nick("NvBufSurface ABI")
                    .blurb("NvBufSurface layout to produce: ds7 (JetPack 6 / DeepStream <= 7.1) or ds8 (DeepStream 8 / JetPack 7)")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecBoolean::builder("is-live")
                    .nick("Is live")
                    .blurb("Produce frames in real time, timestamped with the running time")
                    .default_value(DEFAULT_IS_LIVE)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("pattern-seed")
                    .nick("Pattern seed")
                    .blurb("Shifts the moving rectangle and the blue level, to tell sources apart")
                    .default_value(DEFAULT_PATTERN_SEED)
                    .mutable_playing()
                    .build(),
            ]
        });
        PROPERTIES.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        ferrostream_core::element::warn_if_set_late(self.obj().upcast_ref(), pspec);
        let mut settings = self.settings.lock().unwrap();
        match pspec.name() {
            "gpu-id" => settings.gpu_id = value.get().expect("type checked upstream"),
            "abi" => settings.abi = value.get().expect("type checked upstream"),
            "is-live" => {
                settings.is_live = value.get().expect("type checked upstream");
                let live = settings.is_live;
                drop(settings);
                self.obj().set_live(live);
            }
            "pattern-seed" => settings.pattern_seed = value.get().expect("type checked upstream"),
            _ => unreachable!(),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let settings = self.settings.lock().unwrap();
        match pspec.name() {
            "gpu-id" => settings.gpu_id.to_value(),
            "abi" => settings.abi.to_value(),
            "is-live" => settings.is_live.to_value(),
            "pattern-seed" => settings.pattern_seed.to_value(),
            _ => unreachable!(),
        }
    }

    fn constructed(&self) {
        self.parent_constructed();
        let obj = self.obj();
        obj.set_format(gst::Format::Time);
        obj.set_live(DEFAULT_IS_LIVE);
    }
}

impl GstObjectImpl for NvmmTestSrc {}

impl ElementImpl for NvmmTestSrc {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static METADATA: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "NVMM test source",
                "Source/Video",
                "Produces NVMM (NvBufSurface, CUDA device memory) test frames drawn on the GPU, laid out as a dGPU DeepStream decoder lays them out",
                "Ferrostream developers",
            )
        });
        Some(&*METADATA)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static PAD_TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            let caps = gst::Caps::builder("video/x-raw")
                .features([nvmm::NVMM_FEATURE])
                .field("format", gst::List::new(["NV12", "RGBA"]))
                .field("width", gst::IntRange::new(1, i32::MAX))
                .field("height", gst::IntRange::new(1, i32::MAX))
                .field(
                    "framerate",
                    gst::FractionRange::new(
                        gst::Fraction::new(1, i32::MAX),
                        gst::Fraction::new(i32::MAX, 1),
                    ),
                )
                .build();
            vec![
                gst::PadTemplate::new(
                    "src",
                    gst::PadDirection::Src,
                    gst::PadPresence::Always,
                    &caps,
                )
                .expect("valid pad template"),
            ]
        });
        PAD_TEMPLATES.as_ref()
    }
}

impl BaseSrcImpl for NvmmTestSrc {
    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let settings = self.settings.lock().unwrap().clone();
        if !cuda::driver_present() {
            return Err(gst::error_msg!(
                gst::LibraryError::Init,
                ("Cannot produce NVMM frames: {}", CudaError::NoDriver)
            ));
        }
        let (stream, kernel, pool, device) = Self::open_gpu(settings.gpu_id).map_err(|e| {
            gst::error_msg!(
                gst::LibraryError::Init,
                (
                    "Cannot set up GPU {} to produce NVMM frames: {e}",
                    settings.gpu_id
                )
            )
        })?;
        let abi = NvmmAbi::from(settings.abi);
        gst::info!(
            CAT,
            imp = self,
            "drawing on GPU {} ({device}), {abi}",
            settings.gpu_id
        );
        *self.state.lock().unwrap() = Some(State {
            stream,
            kernel,
            pool,
            gpu_id: settings.gpu_id,
            abi,
            negotiated: None,
            frame: 0,
            live_base: None,
        });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        if let Some(state) = self.state.lock().unwrap().take() {
            gst::info!(CAT, imp = self, "stopped after {} frames", state.frame);
        }
        Ok(())
    }

    fn is_seekable(&self) -> bool {
        false
    }

    fn fixate(&self, mut caps: gst::Caps) -> gst::Caps {
        caps.truncate();
        if let Some(s) = caps.make_mut().structure_mut(0) {
            s.fixate_field_nearest_int("width", DEFAULT_WIDTH);
            s.fixate_field_nearest_int("height", DEFAULT_HEIGHT);
            s.fixate_field_nearest_fraction(
                "framerate",
                gst::Fraction::new(DEFAULT_FPS.0, DEFAULT_FPS.1),
            );
            s.fixate_field_str("format", "NV12");
        }
        self.parent_fixate(caps)
    }

    fn set_caps(&self, caps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let info = gst_video::VideoInfo::from_caps(caps)
            .map_err(|_| gst::loggable_error!(CAT, "Cannot parse caps {caps}"))?;
        let (color_format, kernel_format) = match info.format() {
            VideoFormat::Nv12 => (nvabi::NVBUF_COLOR_FORMAT_NV12, 0),
            VideoFormat::Rgba => (nvabi::NVBUF_COLOR_FORMAT_RGBA, 1),
            other => {
                return Err(gst::loggable_error!(
                    CAT,
                    "Format {other:?} is not produced (NV12, RGBA)"
                ));
            }
        };
        let layout = PitchLayout::new(color_format, info.width(), info.height(), PITCH_ALIGN)
            .map_err(|e| gst::loggable_error!(CAT, "{e}"))?;
        let mut guard = self.state.lock().unwrap();
        let Some(state) = guard.as_mut() else {
            return Err(gst::loggable_error!(CAT, "Caps set before start"));
        };
        gst::info!(
            CAT,
            imp = self,
            "producing {}x{} {:?} at {} fps, pitch {}, {} bytes per frame",
            info.width(),
            info.height(),
            info.format(),
            info.fps(),
            layout.pitch(),
            layout.data_size
        );
        state.negotiated = Some(Negotiated {
            layout,
            kernel_format,
            fps: info.fps(),
        });
        Ok(())
    }

    fn query(&self, query: &mut gst::QueryRef) -> bool {
        if let gst::QueryViewMut::Latency(q) = query.view_mut() {
            let duration = self
                .state
                .lock()
                .unwrap()
                .as_ref()
                .and_then(|s| s.negotiated.as_ref())
                .and_then(Negotiated::duration);
            if let Some(duration) = duration {
                let live = self.obj().is_live();
                let min = if live { duration } else { gst::ClockTime::ZERO };
                q.set(live, min, gst::ClockTime::NONE);
                return true;
            }
        }
        BaseSrcImplExt::parent_query(self, query)
    }

    fn times(&self, buffer: &gst::BufferRef) -> (Option<gst::ClockTime>, Option<gst::ClockTime>) {
        // Live sources wait on the clock for each frame's start; others push as fast as they can.
        if !self.obj().is_live() {
            return (None, None);
        }
        let start = buffer.pts();
        let end = start.zip(buffer.duration()).map(|(s, d)| s + d);
        (start, end)
    }
}

impl PushSrcImpl for NvmmTestSrc {
    fn create(
        &self,
        _buffer: Option<&mut gst::BufferRef>,
    ) -> Result<CreateSuccess, gst::FlowError> {
        let seed = self.settings.lock().unwrap().pattern_seed;
        let live = self.obj().is_live();
        let mut guard = self.state.lock().unwrap();
        let Some(state) = guard.as_mut() else {
            return Err(gst::FlowError::Flushing);
        };
        let Some(negotiated) = state.negotiated.as_ref() else {
            drop(guard);
            gst::element_imp_error!(
                self,
                gst::CoreError::Negotiation,
                ("No caps were negotiated before the first frame")
            );
            return Err(gst::FlowError::NotNegotiated);
        };
        let frame = state.frame;
        let memory = match Self::draw(state, negotiated, frame, seed) {
            Ok(memory) => memory,
            Err(e) => {
                let gpu_id = state.gpu_id;
                drop(guard);
                gst::element_imp_error!(
                    self,
                    gst::ResourceError::Failed,
                    ("Drawing frame {frame} on GPU {gpu_id} failed: {e}")
                );
                return Err(gst::FlowError::Error);
            }
        };
        // Live frames are stamped from the running time of the first one (asking the clock,
        // not another element, under the lock).
        let base = match (live, state.live_base) {
            (false, _) => gst::ClockTime::ZERO,
            (true, Some(base)) => base,
            (true, None) => *state
                .live_base
                .insert(self.obj().current_running_time().unwrap_or_default()),
        };
        let pts = negotiated.time_of(frame).map(|t| base + t);
        let duration = negotiated.duration();
        state.frame += 1;
        drop(guard);

        let mut buffer = gst::Buffer::new();
        {
            let buffer = buffer.make_mut();
            buffer.append_memory(memory);
            buffer.set_pts(pts);
            buffer.set_duration(duration);
            buffer.set_offset(frame);
            buffer.set_offset_end(frame + 1);
        }
        gst::log!(CAT, imp = self, "frame {frame} at {}", pts.display());
        Ok(CreateSuccess::NewBuffer(buffer))
    }
}

#[cfg(test)]
mod tests {
    use std::mem::offset_of;

    use super::*;

    #[test]
    fn kernel_params_match_the_c_struct() {
        assert_eq!(size_of::<PatternParams>(), 64);
        assert_eq!(offset_of!(PatternParams, plane1), 8);
        assert_eq!(offset_of!(PatternParams, pitch0), 16);
        assert_eq!(offset_of!(PatternParams, width), 24);
        assert_eq!(offset_of!(PatternParams, frame), 32);
        assert_eq!(offset_of!(PatternParams, rect_x), 40);
        assert_eq!(offset_of!(PatternParams, rect_h), 52);
        assert_eq!(offset_of!(PatternParams, format), 56);
    }

    #[test]
    fn kernel_compiles_with_nvrtc() {
        if !cuda::nvrtc_present() {
            println!("skipped: NVRTC is not installed (scripts/install-nvrtc.sh)");
            return;
        }
        // Jetson Orin and Hopper.
        for cc in [(8, 7), (9, 0)] {
            let ptx =
                cuda::compile_ptx(&KERNELS, cc).unwrap_or_else(|e| panic!("compute {cc:?}: {e}"));
            assert!(
                ptx.to_bytes()
                    .windows(KERNEL_NAME.len())
                    .any(|w| w == KERNEL_NAME.as_bytes())
            );
        }
    }

    #[test]
    fn the_rectangle_stays_inside_the_frame() {
        for (w, h) in [(1920, 1080), (7, 3), (1, 1), (1921, 1081)] {
            for frame in [0, 1, 59, 1000, u32::MAX as u64 + 5] {
                for seed in [0, 1, 12345] {
                    let (x, y, rw, rh) = rectangle(w, h, frame, seed);
                    assert!(rw >= 1 && rh >= 1);
                    assert!(x + rw <= w && y + rh <= h, "{w}x{h} frame {frame}");
                }
            }
        }
        assert_eq!(rectangle(1920, 1080, 1, 0), (8, 4, 240, 135));
    }

    #[test]
    fn timestamps_follow_the_framerate() {
        let n = Negotiated {
            layout: PitchLayout::new(nvabi::NVBUF_COLOR_FORMAT_NV12, 16, 16, 512).unwrap(),
            kernel_format: 0,
            fps: gst::Fraction::new(30000, 1001),
        };
        assert_eq!(n.time_of(0), Some(gst::ClockTime::ZERO));
        assert_eq!(
            n.duration(),
            Some(gst::ClockTime::from_nseconds(33_366_666))
        );
        assert_eq!(n.time_of(30000), Some(gst::ClockTime::from_seconds(1001)));
    }
}
