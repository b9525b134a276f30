// SPDX-License-Identifier: MIT OR Apache-2.0
//! GPU pre-processing throughput against the device's copy bandwidth, measured in the same run.
//!
//! For batches of 1, 4, 16 and 64 1080p NV12 frames (distinct frames, pitch 2048 as NVDEC
//! allocates them, 64 of them far larger than the L2 cache), the kernel makes a letterboxed
//! 640x640 f32 NCHW tensor (YOLO-style) and a stretched 300x300 one (SSD-style). Throughput
//! counts the bytes that must move at least: every frame read once plus the tensor written once,
//! over the kernel time (CUDA events, median of 50 runs after warm-up). The copy bandwidth is a
//! 1 GiB device-to-device copy counted the same way (bytes read plus bytes written).
//!
//! `cargo bench -p ferrostream-tests --bench gpu_preprocess`; prints `GPU-RESULT` rows.

use ferrostream_core::BBox;
use ferrostream_core::cuda::{Context, DeviceBuffer, Event, Stream};
use ferrostream_core::device::{DeviceImage, DevicePlane};
use ferrostream_tests::{Rng, gpu};
use gst_trtinfer::config::ColorFormat;
use gst_trtinfer::engine::ElementType;
use gst_trtinfer::gpu::{GpuJob, GpuPreprocessor, PixelsPerThread};
use gst_trtinfer::preprocess::{NetworkInput, YuvToRgb};
use gst_video::{VideoColorMatrix, VideoColorRange, VideoFormat};
use std::sync::Arc;

const RUNS: usize = 50;

fn median(mut v: Vec<f32>) -> f32 {
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

/// Median milliseconds of `f` on `stream`, timed with events.
fn time(ctx: &Arc<Context>, stream: &Stream, mut f: impl FnMut()) -> f32 {
    for _ in 0..5 {
        f();
    }
    stream.synchronize().unwrap();
    let (start, end) = (Event::new(ctx).unwrap(), Event::new(ctx).unwrap());
    let times = (0..RUNS)
        .map(|_| {
            start.record(stream).unwrap();
            f();
            end.record(stream).unwrap();
            start.elapsed_ms(&end).unwrap()
        })
        .collect();
    median(times)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let Some(ctx) = gpu("gpu_preprocess bench") else {
        return;
    };
    let stream = Stream::new(&ctx, 0).unwrap();
    println!(
        "device: {} (compute {:?})",
        ctx.device_name().unwrap(),
        ctx.compute_capability().unwrap()
    );
    let copy_gbs = copy_bandwidth(&ctx, &stream);
    let frames = Frames::upload(&ctx, &stream);
    let mut pre = GpuPreprocessor::new(&ctx).unwrap();
    whole_frames(&ctx, &stream, &frames, &mut pre, copy_gbs);
    crops(&ctx, &stream, &frames, &mut pre);
}

/// Device-to-device copy bandwidth in GB/s (bytes read plus bytes written), printed.
fn copy_bandwidth(ctx: &Arc<Context>, stream: &Stream) -> f64 {
    let copy_bytes = 1usize << 30;
    let (a, b) = (
        DeviceBuffer::new(ctx, copy_bytes).unwrap(),
        DeviceBuffer::new(ctx, copy_bytes).unwrap(),
    );
    a.fill(stream, 0x5a).unwrap();
    let ms = time(ctx, stream, || {
        // SAFETY: both buffers hold `copy_bytes` bytes.
        unsafe { stream.copy_dtod(b.ptr(), a.ptr(), copy_bytes) }.unwrap()
    });
    let copy_gbs = 2.0 * copy_bytes as f64 / (ms as f64 * 1e-3) / 1e9;
    println!(
        "GPU-RESULT d2d_copy_bandwidth {copy_gbs:.0} GB/s (read+write, 1 GiB copy, {ms:.3} ms)"
    );
    copy_gbs
}

/// 64 distinct random 1080p NV12 frames on the device, pitch 2048 as NVDEC allocates them.
struct Frames {
    buffer: DeviceBuffer,
    matrix: YuvToRgb,
}

impl Frames {
    const WIDTH: u32 = 1920;
    const HEIGHT: u32 = 1080;
    const PITCH: u32 = 2048;
    const COUNT: usize = 64;
    const LEN: usize = Self::PITCH as usize * (Self::HEIGHT as usize * 3 / 2);

    fn upload(ctx: &Arc<Context>, stream: &Stream) -> Self {
        let buffer = DeviceBuffer::new(ctx, Self::LEN * Self::COUNT).unwrap();
        let mut host = vec![0u8; Self::LEN * Self::COUNT];
        Rng::new(7).fill(&mut host);
        buffer.upload(stream, &host).unwrap();
        let matrix = gst_trtinfer::rstrtinfer::frames::yuv_to_rgb(
            VideoColorMatrix::Bt709,
            VideoColorRange::Range16_235,
        );
        Self { buffer, matrix }
    }

    /// Frame `i` as the kernel reads it.
    fn image(&self, i: usize) -> DeviceImage {
        let base = self.buffer.ptr() + (i * Self::LEN) as u64;
        let pitch = Self::PITCH;
        DeviceImage::new(
            VideoFormat::Nv12,
            Self::WIDTH,
            Self::HEIGHT,
            [
                DevicePlane { ptr: base, pitch },
                DevicePlane {
                    ptr: base + pitch as u64 * Self::HEIGHT as u64,
                    pitch,
                },
                DevicePlane::default(),
            ],
        )
        .unwrap()
    }

    /// A job for the whole of frame `i`, or for `roi` in it.
    fn job(&self, i: usize, roi: Option<BBox>) -> GpuJob {
        let whole = BBox::new(0.0, 0.0, Self::WIDTH as f32, Self::HEIGHT as f32);
        GpuJob {
            image: self.image(i),
            roi: roi.unwrap_or(whole),
            matrix: self.matrix,
        }
    }
}

/// Whole frames to a letterboxed 640x640 (YOLO-style) and a stretched 300x300 (SSD-style) f32
/// NCHW tensor, batches of 1 to 64, both kernel variants; printed against the copy bandwidth.
fn whole_frames(
    ctx: &Arc<Context>,
    stream: &Stream,
    frames: &Frames,
    pre: &mut GpuPreprocessor,
    copy_gbs: f64,
) {
    let frame_pixels = frames.image(0).pixel_bytes() as f64;
    let mut letterboxes = Vec::new();
    let nets = [
        ("yolo640_f32_nchw_letterbox", 640u32, 640u32, true),
        ("ssd300_f32_nchw_stretch", 300, 300, false),
    ];
    for (name, nw, nh, letterbox) in nets {
        let net = NetworkInput {
            width: nw,
            height: nh,
            channels: 3,
            planar: true,
            color: ColorFormat::Rgb,
            scale: 1.0 / 255.0,
            offsets: [0.0; 3],
            maintain_aspect_ratio: letterbox,
            symmetric_padding: letterbox,
        };
        let tensor_bytes = net.frame_len() * 4;
        let tensor = DeviceBuffer::new(ctx, tensor_bytes * Frames::COUNT).unwrap();
        for batch in [1usize, 4, 16, 64] {
            let jobs: Vec<GpuJob> = (0..batch).map(|i| frames.job(i, None)).collect();
            for variant in [PixelsPerThread::One, PixelsPerThread::Four] {
                pre.set_variant(Some(variant));
                let ms = time(ctx, stream, || {
                    pre.run(
                        stream,
                        &jobs,
                        &net,
                        ElementType::F32,
                        tensor.ptr(),
                        tensor.len(),
                        &mut letterboxes,
                    )
                    .unwrap();
                });
                let bytes = batch as f64 * (frame_pixels + tensor_bytes as f64);
                let gbs = bytes / (ms as f64 * 1e-3) / 1e9;
                let chosen = PixelsPerThread::for_network(&net, ElementType::F32) == variant;
                println!(
                    "GPU-RESULT preprocess_{name}_batch{batch}_{} {gbs:.0} GB/s ({:.0}% of copy; {ms:.3} ms per batch, {:.1} us per frame{})",
                    match variant {
                        PixelsPerThread::One => "x1",
                        PixelsPerThread::Four => "x4",
                    },
                    100.0 * gbs / copy_gbs,
                    ms as f64 * 1e3 / batch as f64,
                    if chosen { "; the element's choice" } else { "" }
                );
            }
        }
    }
}

/// Secondary inference: object crops (pedestrian-sized boxes scattered over the frames) to
/// MobileNetV2's 224x224 f32 NCHW input, in engine calls of 1, 8 and 32 crops.
fn crops(ctx: &Arc<Context>, stream: &Stream, frames: &Frames, pre: &mut GpuPreprocessor) {
    let net = NetworkInput {
        width: 224,
        height: 224,
        channels: 3,
        planar: true,
        color: ColorFormat::Rgb,
        scale: 0.017,
        offsets: [123.7, 116.3, 103.5],
        maintain_aspect_ratio: false,
        symmetric_padding: false,
    };
    let tensor = DeviceBuffer::new(ctx, net.frame_len() * 4 * 32).unwrap();
    let mut letterboxes = Vec::new();
    let mut rng = Rng::new(11);
    let (w, h) = (Frames::WIDTH, Frames::HEIGHT);
    let crops: Vec<GpuJob> = (0..32)
        .map(|i| {
            let (cw, ch) = (rng.range(24, 400) as f32, rng.range(48, 600) as f32);
            let left = rng.range(0, w - cw as u32) as f32;
            let top = rng.range(0, h - ch as u32) as f32;
            frames.job(i * 2, Some(BBox::new(left, top, cw, ch)))
        })
        .collect();
    for batch in [1usize, 8, 32] {
        let jobs = &crops[..batch];
        let ms = time(ctx, stream, || {
            pre.set_variant(None);
            pre.run(
                stream,
                jobs,
                &net,
                ElementType::F32,
                tensor.ptr(),
                tensor.len(),
                &mut letterboxes,
            )
            .unwrap();
        });
        println!(
            "GPU-RESULT crops_mobilenet224_batch{batch} {:.0} crops/s ({ms:.3} ms per call of \
             {batch} crops)",
            batch as f64 / (ms as f64 * 1e-3)
        );
    }
}
