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
use gst_trtinfer::preprocess::NetworkInput;
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

    // Device-to-device copy bandwidth.
    let copy_bytes = 1usize << 30;
    let (a, b) = (
        DeviceBuffer::new(&ctx, copy_bytes).unwrap(),
        DeviceBuffer::new(&ctx, copy_bytes).unwrap(),
    );
    a.fill(&stream, 0x5a).unwrap();
    let ms = time(&ctx, &stream, || {
        // SAFETY: both buffers hold `copy_bytes` bytes.
        unsafe { stream.copy_dtod(b.ptr(), a.ptr(), copy_bytes) }.unwrap()
    });
    let copy_gbs = 2.0 * copy_bytes as f64 / (ms as f64 * 1e-3) / 1e9;
    println!(
        "GPU-RESULT d2d_copy_bandwidth {copy_gbs:.0} GB/s (read+write, 1 GiB copy, {ms:.3} ms)"
    );
    drop((a, b));

    // 64 distinct 1080p NV12 frames, pitch 2048.
    let (w, h, pitch) = (1920u32, 1080u32, 2048u32);
    let frame_len = pitch as usize * (h as usize + h as usize / 2);
    let frames = DeviceBuffer::new(&ctx, frame_len * 64).unwrap();
    let mut host = vec![0u8; frame_len * 64];
    Rng::new(7).fill(&mut host);
    frames.upload(&stream, &host).unwrap();
    let image = |i: usize| {
        let base = frames.ptr() + (i * frame_len) as u64;
        DeviceImage::new(
            VideoFormat::Nv12,
            w,
            h,
            [
                DevicePlane { ptr: base, pitch },
                DevicePlane {
                    ptr: base + pitch as u64 * h as u64,
                    pitch,
                },
                DevicePlane::default(),
            ],
        )
        .unwrap()
    };
    let matrix = gst_trtinfer::rstrtinfer::frames::yuv_to_rgb(
        VideoColorMatrix::Bt709,
        VideoColorRange::Range16_235,
    );
    let frame_pixels = image(0).pixel_bytes() as f64;
    let mut pre = GpuPreprocessor::new(&ctx).unwrap();
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
        let tensor = DeviceBuffer::new(&ctx, tensor_bytes * 64).unwrap();
        for batch in [1usize, 4, 16, 64] {
            let jobs: Vec<GpuJob> = (0..batch)
                .map(|i| GpuJob {
                    image: image(i),
                    roi: BBox::new(0.0, 0.0, w as f32, h as f32),
                    matrix,
                })
                .collect();
            for variant in [PixelsPerThread::One, PixelsPerThread::Four] {
                pre.set_variant(Some(variant));
                let ms = time(&ctx, &stream, || {
                    pre.run(
                        &stream,
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

    // Secondary inference: object crops (pedestrian-sized boxes scattered over the 64 frames)
    // to MobileNetV2's 224x224 f32 NCHW input, in engine calls of 1, 8 and 32 crops.
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
    let tensor = DeviceBuffer::new(&ctx, net.frame_len() * 4 * 32).unwrap();
    let mut rng = Rng::new(11);
    let crops: Vec<GpuJob> = (0..32)
        .map(|i| {
            let (cw, ch) = (rng.range(24, 400) as f32, rng.range(48, 600) as f32);
            let left = rng.range(0, w - cw as u32) as f32;
            let top = rng.range(0, h - ch as u32) as f32;
            GpuJob {
                image: image(i * 2),
                roi: BBox::new(left, top, cw, ch),
                matrix,
            }
        })
        .collect();
    for batch in [1usize, 8, 32] {
        let jobs = &crops[..batch];
        let ms = time(&ctx, &stream, || {
            pre.set_variant(None);
            pre.run(
                &stream,
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
