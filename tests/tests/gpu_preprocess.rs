// SPDX-License-Identifier: MIT OR Apache-2.0
//! GPU lane: the batched pre-processing kernel against the CPU pre-processor, on random frames of
//! every GPU format (odd sizes, pitches wider than a row) and on real decoded frames, for every
//! output type and layout. u8 and f16 outputs must be identical; f32 within 1e-3 relative (the
//! kernel uses the CPU's exact arithmetic, so the expected error is 0 everywhere).
//!
//! Ignored on machines without a GPU; `scripts/gpu-check.sh` runs them with `--include-ignored`
//! (and `FERROSTREAM_REQUIRE_GPU=1`, so that a missing GPU fails instead of skipping).

use std::sync::Arc;

use ferrostream_core::BBox;
use ferrostream_core::cuda::{Context, DeviceBuffer, Stream};
use ferrostream_core::device::{DeviceImage, DevicePlane};
use ferrostream_tests::{Rng, decode_frames, gpu, media};
use gst_trtinfer::config::ColorFormat;
use gst_trtinfer::engine::ElementType;
use gst_trtinfer::gpu::{GpuJob, GpuPreprocessor, PixelsPerThread};
use gst_trtinfer::preprocess::{
    NetworkInput, PackedImage, Preprocessor, SourceImage, TensorElement, Yuv420Image, YuvToRgb,
};
use gst_video::{VideoColorMatrix, VideoColorRange, VideoFormat};

/// A frame in host memory laid out plane after plane with the given pitches, and its copy on the
/// device.
struct TestFrame {
    format: VideoFormat,
    width: u32,
    height: u32,
    pitches: [u32; 3],
    offsets: [usize; 3],
    host: Vec<u8>,
    device: DeviceBuffer,
}

fn shape(format: VideoFormat, width: u32, height: u32) -> DeviceImage {
    DeviceImage {
        format,
        width,
        height,
        planes: [DevicePlane::default(); 3],
    }
}

impl TestFrame {
    /// A frame whose rows are `extra` bytes wider than needed; `fill` writes the pixels.
    fn new(
        ctx: &Arc<Context>,
        stream: &Stream,
        format: VideoFormat,
        width: u32,
        height: u32,
        extra: u32,
        fill: impl FnOnce(&mut [u8]),
    ) -> Self {
        let s = shape(format, width, height);
        let planes = s.plane_count().unwrap();
        let mut pitches = [0u32; 3];
        let mut offsets = [0usize; 3];
        let mut len = 0usize;
        for p in 0..planes {
            pitches[p] = s.row_bytes(p) + extra;
            offsets[p] = len;
            len += pitches[p] as usize * s.rows(p) as usize;
        }
        let mut host = vec![0u8; len];
        fill(&mut host);
        let device = DeviceBuffer::new(ctx, len).unwrap();
        device.upload(stream, &host).unwrap();
        Self {
            format,
            width,
            height,
            pitches,
            offsets,
            host,
            device,
        }
    }

    fn device_image(&self) -> DeviceImage {
        let mut planes = [DevicePlane::default(); 3];
        for (p, plane) in planes.iter_mut().enumerate() {
            if self.pitches[p] > 0 {
                *plane = DevicePlane {
                    ptr: self.device.ptr() + self.offsets[p] as u64,
                    pitch: self.pitches[p],
                };
            }
        }
        DeviceImage::new(self.format, self.width, self.height, planes).unwrap()
    }

    fn plane(&self, p: usize) -> &[u8] {
        let end = if p + 1 < 3 && self.pitches[p + 1] > 0 {
            self.offsets[p + 1]
        } else {
            self.host.len()
        };
        &self.host[self.offsets[p]..end]
    }

    fn source_image(&self, matrix: YuvToRgb) -> SourceImage<'_> {
        let (width, height) = (self.width, self.height);
        let packed = |rgb| {
            SourceImage::packed(PackedImage {
                data: self.plane(0),
                stride: self.pitches[0] as usize,
                pixel_stride: 4,
                rgb,
                width,
                height,
            })
        };
        match self.format {
            VideoFormat::Nv12 => SourceImage::yuv420(Yuv420Image {
                y: self.plane(0),
                y_stride: self.pitches[0] as usize,
                u: self.plane(1),
                v: &self.plane(1)[1..],
                chroma_stride: self.pitches[1] as usize,
                chroma_step: 2,
                width,
                height,
                matrix,
            }),
            VideoFormat::I420 => SourceImage::yuv420(Yuv420Image {
                y: self.plane(0),
                y_stride: self.pitches[0] as usize,
                u: self.plane(1),
                v: self.plane(2),
                chroma_stride: self.pitches[1] as usize,
                chroma_step: 1,
                width,
                height,
                matrix,
            }),
            VideoFormat::Rgba | VideoFormat::Rgbx => packed([0, 1, 2]),
            VideoFormat::Bgra | VideoFormat::Bgrx => packed([2, 1, 0]),
            other => panic!("{other:?}"),
        }
        .unwrap()
    }
}

/// Worst differences between GPU and CPU outputs.
#[derive(Debug, Default, Clone, Copy)]
struct Errors {
    abs: f64,
    rel: f64,
    values: usize,
}

impl Errors {
    fn add(&mut self, gpu: f64, cpu: f64) {
        let d = (gpu - cpu).abs();
        self.abs = self.abs.max(d);
        if d > 0.0 {
            self.rel = self.rel.max(d / cpu.abs().max(1e-6));
        }
        if gpu.is_nan() != cpu.is_nan() {
            self.abs = f64::INFINITY;
        }
        self.values += 1;
    }

    fn merge(&mut self, o: Errors) {
        self.abs = self.abs.max(o.abs);
        self.rel = self.rel.max(o.rel);
        self.values += o.values;
    }
}

trait Element: TensorElement + Copy {
    const TYPE: ElementType;
    fn value(self) -> f64;
    fn from_le(bytes: &[u8]) -> Self;
}

impl Element for f32 {
    const TYPE: ElementType = ElementType::F32;
    fn value(self) -> f64 {
        self as f64
    }
    fn from_le(b: &[u8]) -> Self {
        f32::from_le_bytes(b.try_into().unwrap())
    }
}

impl Element for half::f16 {
    const TYPE: ElementType = ElementType::F16;
    fn value(self) -> f64 {
        self.to_f64()
    }
    fn from_le(b: &[u8]) -> Self {
        half::f16::from_le_bytes(b.try_into().unwrap())
    }
}

impl Element for u8 {
    const TYPE: ElementType = ElementType::U8;
    fn value(self) -> f64 {
        self as f64
    }
    fn from_le(b: &[u8]) -> Self {
        b[0]
    }
}

/// Runs one batch on the GPU and on the CPU and compares every output value. The device tensor is
/// poisoned first, so an unwritten value shows as an error.
fn compare<T: Element>(
    ctx: &Arc<Context>,
    stream: &Stream,
    pre: &mut GpuPreprocessor,
    frames: &[(&TestFrame, BBox)],
    net: &NetworkInput,
    matrix: YuvToRgb,
) -> Errors {
    let size = std::mem::size_of::<T>();
    let len = net.frame_len() * frames.len() * size;
    let tensor = DeviceBuffer::new(ctx, len).unwrap();
    tensor.fill(stream, 0x7f).unwrap();
    let jobs: Vec<GpuJob> = frames
        .iter()
        .map(|(f, roi)| GpuJob {
            image: f.device_image(),
            roi: *roi,
            matrix,
        })
        .collect();
    let mut lbs = Vec::new();
    pre.run(
        stream,
        &jobs,
        net,
        T::TYPE,
        tensor.ptr(),
        tensor.len(),
        &mut lbs,
    )
    .unwrap();
    stream.synchronize().unwrap();
    let mut bytes = vec![0u8; len];
    tensor.download(stream, &mut bytes).unwrap();

    let mut errors = Errors::default();
    let mut cpu = Preprocessor::default();
    let mut reference = vec![T::default(); net.frame_len()];
    for (slot, (frame, roi)) in frames.iter().enumerate() {
        let lb = cpu.run(&frame.source_image(matrix), *roi, net, &mut reference);
        assert_eq!(lb, lbs[slot], "letterbox of slot {slot}");
        let base = slot * net.frame_len() * size;
        for (i, r) in reference.iter().enumerate() {
            let g = T::from_le(&bytes[base + i * size..base + (i + 1) * size]);
            errors.add(g.value(), r.value());
        }
    }
    errors
}

fn net(w: u32, h: u32, color: ColorFormat, planar: bool, letterbox: bool) -> NetworkInput {
    NetworkInput {
        width: w,
        height: h,
        channels: if color == ColorFormat::Gray { 1 } else { 3 },
        planar,
        color,
        scale: 1.0 / 57.5,
        offsets: [123.675, 116.28, 103.53],
        maintain_aspect_ratio: letterbox,
        symmetric_padding: letterbox,
    }
}

const FORMATS: [VideoFormat; 6] = [
    VideoFormat::Nv12,
    VideoFormat::I420,
    VideoFormat::Rgba,
    VideoFormat::Bgra,
    VideoFormat::Rgbx,
    VideoFormat::Bgrx,
];

fn check_all_outputs(
    ctx: &Arc<Context>,
    stream: &Stream,
    pre: &mut GpuPreprocessor,
    frames: &[(&TestFrame, BBox)],
    matrix: YuvToRgb,
    totals: &mut [Errors; 3],
    what: &str,
) {
    let nets = [
        net(300, 300, ColorFormat::Rgb, true, false),
        net(320, 192, ColorFormat::Bgr, false, true),
        net(97, 61, ColorFormat::Gray, true, true),
    ];
    for (n, variant) in nets
        .iter()
        .flat_map(|n| [PixelsPerThread::One, PixelsPerThread::Four].map(|v| (n, v)))
    {
        pre.set_variant(Some(variant));
        let e32 = compare::<f32>(ctx, stream, pre, frames, n, matrix);
        let e16 = compare::<half::f16>(ctx, stream, pre, frames, n, matrix);
        let mut n8 = n.clone();
        n8.scale = 1.0;
        n8.offsets = [0.0; 3];
        let e8 = compare::<u8>(ctx, stream, pre, frames, &n8, matrix);
        assert!(
            e8.abs == 0.0,
            "{what} {n:?} {variant:?}: u8 differs by {}",
            e8.abs
        );
        assert!(
            e16.abs == 0.0,
            "{what} {n:?} {variant:?}: f16 differs by {}",
            e16.abs
        );
        assert!(
            e32.rel <= 1e-3,
            "{what} {n:?}: f32 relative error {}",
            e32.rel
        );
        totals[0].merge(e32);
        totals[1].merge(e16);
        totals[2].merge(e8);
    }
}

fn report(totals: &[Errors; 3], what: &str) {
    for (name, e) in ["f32", "f16", "u8"].iter().zip(totals) {
        println!(
            "GPU-RESULT preprocess_{what}_max_abs_err_{name} {} abs ({} rel, {} values)",
            e.abs, e.rel, e.values
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn random_frames_match_the_cpu_preprocessor() {
    let Some(ctx) = gpu("random_frames_match_the_cpu_preprocessor") else {
        return;
    };
    let stream = Stream::new(&ctx, 0).unwrap();
    let mut pre = GpuPreprocessor::new(&ctx).unwrap();
    let mut rng = Rng::new(0x5eed);
    let mut totals = [Errors::default(); 3];
    let matrices = [
        gst_trtinfer::rstrtinfer::frames::yuv_to_rgb(
            VideoColorMatrix::Bt601,
            VideoColorRange::Range16_235,
        ),
        gst_trtinfer::rstrtinfer::frames::yuv_to_rgb(
            VideoColorMatrix::Bt709,
            VideoColorRange::Range0_255,
        ),
    ];
    for (i, format) in FORMATS.into_iter().enumerate() {
        // Odd sizes, pitches wider than a row, and a batch of frames of different sizes.
        let sizes = [(641, 359, 64), (33, 17, 3), (1920, 1080, 0)];
        let frames: Vec<TestFrame> = sizes
            .iter()
            .map(|&(w, h, extra)| {
                TestFrame::new(&ctx, &stream, format, w, h, extra, |b| rng.fill(b))
            })
            .collect();
        let full = |f: &TestFrame| BBox::new(0.0, 0.0, f.width as f32, f.height as f32);
        let mut batch: Vec<(&TestFrame, BBox)> = frames.iter().map(|f| (f, full(f))).collect();
        // A region of interest (as secondary inference crops objects).
        batch.push((&frames[0], BBox::new(100.5, 40.25, 211.0, 97.0)));
        check_all_outputs(
            &ctx,
            &stream,
            &mut pre,
            &batch,
            matrices[i % 2],
            &mut totals,
            &format!("{format:?}"),
        );
    }
    report(&totals, "random");
}

#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn real_frames_match_the_cpu_preprocessor() {
    let Some(ctx) = gpu("real_frames_match_the_cpu_preprocessor") else {
        return;
    };
    let stream = Stream::new(&ctx, 0).unwrap();
    let mut pre = GpuPreprocessor::new(&ctx).unwrap();
    let mut totals = [Errors::default(); 3];
    for format in ["NV12", "I420", "RGBA", "BGRx"] {
        let decoded = decode_frames(&media("carphone_pristine.mp4"), format, 4);
        let frames: Vec<TestFrame> = decoded
            .iter()
            .map(|(info, buffer)| {
                let map = buffer.map_readable().unwrap();
                let f = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer.as_ref(), info)
                    .unwrap();
                let s = shape(info.format(), info.width(), info.height());
                // Copy plane by plane into the test layout (pitch 16 bytes wider than GStreamer's).
                let mut planes: Vec<(Vec<u8>, usize)> = Vec::new();
                for p in 0..s.plane_count().unwrap() {
                    planes.push((
                        f.plane_data(p as u32).unwrap().to_vec(),
                        info.stride()[p] as usize,
                    ));
                }
                drop(map);
                TestFrame::new(
                    &ctx,
                    &stream,
                    info.format(),
                    info.width(),
                    info.height(),
                    16,
                    |dst| {
                        let mut at = 0;
                        for (p, (data, stride)) in planes.iter().enumerate() {
                            let pitch = s.row_bytes(p) as usize + 16;
                            for row in 0..s.rows(p) as usize {
                                let n = s.row_bytes(p) as usize;
                                dst[at + row * pitch..at + row * pitch + n]
                                    .copy_from_slice(&data[row * stride..row * stride + n]);
                            }
                            at += pitch * s.rows(p) as usize;
                        }
                    },
                )
            })
            .collect();
        let batch: Vec<(&TestFrame, BBox)> = frames
            .iter()
            .map(|f| (f, BBox::new(0.0, 0.0, f.width as f32, f.height as f32)))
            .collect();
        let info = &decoded[0].0;
        let matrix = gst_trtinfer::rstrtinfer::frames::yuv_to_rgb(
            info.colorimetry().matrix(),
            info.colorimetry().range(),
        );
        check_all_outputs(&ctx, &stream, &mut pre, &batch, matrix, &mut totals, format);
    }
    report(&totals, "carphone");
}

/// An engine that reads its input from a tensor of its own (a DLA's registered or NvSciBuf
/// tensor, `DeviceEngine::input_tensor`) gets the batch pre-processed straight into it: the
/// runner's input is the engine's tensor, zero-filled first (for the slots a partial batch leaves),
/// and it then holds exactly what pre-processing into a tensor of the runner's own holds. A
/// tensor too small for the batch is not used.
#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn preprocessing_writes_into_the_engines_own_input_tensor() {
    use gst_trtinfer::gpu::run::DeviceRunner;
    let Some(ctx) = gpu("preprocessing_writes_into_the_engines_own_input_tensor") else {
        return;
    };
    let stream = Arc::new(Stream::new(&ctx, 0).unwrap());
    let mut rng = Rng::new(0xd1a);
    let frame = TestFrame::new(&ctx, &stream, VideoFormat::Nv12, 641, 359, 64, |b| {
        rng.fill(b)
    });
    let jobs = [GpuJob {
        image: frame.device_image(),
        roi: BBox::new(0.0, 0.0, 641.0, 359.0),
        matrix: gst_trtinfer::rstrtinfer::frames::yuv_to_rgb(
            VideoColorMatrix::Bt709,
            VideoColorRange::Range16_235,
        ),
    }];
    let net = net(300, 300, ColorFormat::Rgb, true, true);
    // Two slots, as a batch of two with one frame in it.
    let bytes = 2 * net.frame_len() * 2;
    let engines = DeviceBuffer::new(&ctx, bytes).unwrap();
    engines.fill(&stream, 0xff).unwrap();
    let runner = |engine_input| {
        // SAFETY: `engines` outlives every runner made here.
        unsafe { DeviceRunner::new(ctx.clone(), stream.clone(), bytes, engine_input) }.unwrap()
    };
    let mut own = runner(None);
    let mut direct = runner(Some((engines.ptr(), engines.len())));
    assert_eq!(
        direct.input(),
        engines.ptr(),
        "pre-processing targets the engine's tensor"
    );
    assert_ne!(own.input(), engines.ptr());
    let small = runner(Some((engines.ptr(), bytes - 1)));
    assert_ne!(
        small.input(),
        engines.ptr(),
        "a tensor too small is not used"
    );
    for r in [&mut own, &mut direct] {
        r.preprocess(&jobs, &ctx, &net, ElementType::F16, 0)
            .unwrap();
    }
    stream.synchronize().unwrap();
    let read = |ptr: u64| {
        let mut out = vec![0u8; bytes];
        // SAFETY: both tensors hold `bytes` bytes of this context, written on `stream`.
        unsafe { ferrostream_core::cuda::download(&stream, ptr, &mut out) }.unwrap();
        out
    };
    let (expected, written) = (read(own.input()), read(engines.ptr()));
    assert!(
        expected[..bytes / 2].iter().any(|&b| b != 0),
        "the first slot holds the frame"
    );
    assert!(
        written == expected,
        "the engine's tensor holds what the runner's own holds"
    );
    assert!(
        written[bytes / 2..].iter().all(|&b| b == 0),
        "the unwritten slot is zeros, not the 0xff that was there"
    );
}
