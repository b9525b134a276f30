// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rsnvmmtestsrc`: on a machine without the CUDA driver it refuses to start, naming the driver;
//! on the GPU lane it produces NVMM buffers that the NVMM reader reads back in both layouts, with
//! the pixels the pattern says (checked against a CPU rendition of the kernel).
//!
//! Run with `G_DEBUG=fatal-warnings` (scripts/test.sh does). The GPU tests are ignored on
//! machines without a GPU; `scripts/gpu-check.sh` runs them with `--include-ignored` and
//! `FERROSTREAM_REQUIRE_GPU=1` (fail instead of skipping where a GPU test cannot run).
use std::sync::Once;

use ferrostream_core::batch::MemoryKind;
use ferrostream_core::cuda::{self, Context, HostBuffer, Stream};
use ferrostream_core::nvmm::{self, NvmmAbi, abi};
use ferrostream_nvmmtestsrc::{NvmmTestSrc, NvmmTestSrcAbi};
use gst::prelude::*;
use gst_video::VideoFormat;

fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        gst::init().unwrap();
        gst::Element::register(
            None,
            "rsnvmmtestsrc",
            gst::Rank::NONE,
            NvmmTestSrc::static_type(),
        )
        .unwrap();
    });
}

fn gpu_required() -> bool {
    std::env::var_os("FERROSTREAM_REQUIRE_GPU").is_some_and(|v| v == "1")
}

/// Whether a GPU test can run here; says why not otherwise (or fails when a GPU is required).
fn gpu_available(test: &str) -> bool {
    let missing = if !cuda::driver_present() {
        "no CUDA driver"
    } else if !cuda::nvrtc_present() {
        "no NVRTC"
    } else if cuda::device_count().unwrap_or(0) == 0 {
        "no CUDA device"
    } else {
        return true;
    };
    assert!(
        !gpu_required(),
        "{test}: {missing}, but FERROSTREAM_REQUIRE_GPU=1"
    );
    eprintln!("skipping {test}: {missing}");
    false
}

#[test]
fn start_without_cuda_driver_fails_naming_it() {
    init();
    if cuda::driver_present() {
        eprintln!("skipping start_without_cuda_driver_fails_naming_it: this machine has libcuda");
        return;
    }
    let pipeline = gst::parse::launch("rsnvmmtestsrc num-buffers=3 ! fakesink").unwrap();
    assert!(pipeline.set_state(gst::State::Playing).is_err());
    let bus = pipeline.bus().unwrap();
    let msg = bus
        .timed_pop_filtered(gst::ClockTime::from_seconds(5), &[gst::MessageType::Error])
        .expect("an error message");
    let gst::MessageView::Error(err) = msg.view() else {
        unreachable!()
    };
    let text = err.error().to_string();
    assert!(text.contains("no CUDA driver"), "{text}");
    assert!(text.contains("libcuda.so.1"), "{text}");
    assert!(err.error().matches(gst::LibraryError::Init), "{text}");
    assert_eq!(
        msg.src().map(|s| s.name().to_string()).as_deref(),
        Some("rsnvmmtestsrc0")
    );
    pipeline.set_state(gst::State::Null).unwrap();
}

/// The kernel's colour at (x, y) of `frame`: CPU rendition of `pattern()` in the element.
fn rgb(w: u32, h: u32, frame: u64, seed: u32, x: u32, y: u32) -> [i32; 3] {
    let (rw, rh) = ((w / 8).max(1), (h / 8).max(1));
    let rx = ((frame * 8 + seed as u64 * 97) % (w - rw + 1) as u64) as u32;
    let ry = ((frame * 4 + seed as u64 * 31) % (h - rh + 1) as u64) as u32;
    if x >= rx && x < rx + rw && y >= ry && y < ry + rh {
        return [255; 3];
    }
    let wd = (w.max(2) - 1) as u64;
    let hd = (h.max(2) - 1) as u64;
    [
        (x as u64 * 255 / wd) as i32,
        (y as u64 * 255 / hd) as i32,
        (seed
            .wrapping_mul(37)
            .wrapping_add((frame as u32).wrapping_mul(2))
            & 255) as i32,
    ]
}

fn download(stream: &Stream, ctx: &std::sync::Arc<Context>, ptr: u64, len: usize) -> Vec<u8> {
    let mut host = HostBuffer::new(ctx, len).unwrap();
    host.download_from(stream, ptr, len).unwrap();
    host.as_slice().to_vec()
}

/// Pulls `frames` buffers of `format` `w`x`h` in layout `abi` and checks the surface and pixels.
fn check_frames(abi_prop: NvmmTestSrcAbi, format: &str, w: u32, h: u32, seed: u32) {
    let mut harness = gst_check::Harness::new("rsnvmmtestsrc");
    let src = harness.element().unwrap();
    src.set_property("abi", abi_prop);
    src.set_property("pattern-seed", seed);
    src.set_property("num-buffers", 3i32);
    harness.set_sink_caps(
        gst::Caps::builder("video/x-raw")
            .features([nvmm::NVMM_FEATURE])
            .field("format", format)
            .field("width", w as i32)
            .field("height", h as i32)
            .field("framerate", gst::Fraction::new(25, 1))
            .build(),
    );
    harness.play();
    let ctx = Context::primary(0).unwrap();
    let stream = Stream::new(&ctx, 0).unwrap();
    let expected_abi = NvmmAbi::from(abi_prop);
    for frame in 0..3u64 {
        let buffer = harness.pull().unwrap();
        assert_eq!(
            buffer.pts(),
            Some(gst::ClockTime::from_mseconds(40 * frame))
        );
        assert_eq!(buffer.duration(), Some(gst::ClockTime::from_mseconds(40)));
        assert_eq!(buffer.n_memory(), 1);
        assert_eq!(buffer.size(), expected_abi.surface_size());
        // SAFETY: rsnvmmtestsrc produces NVMM memory.
        let batch = unsafe { nvmm::surface_images(&buffer) }.unwrap();
        assert_eq!(batch.abi(), expected_abi);
        assert_eq!(batch.mem_type(), abi::NVBUF_MEM_CUDA_DEVICE);
        assert_eq!((batch.batch_size(), batch.len(), batch.gpu_id()), (1, 1, 0));
        let surface = batch.surfaces()[0];
        let img = surface.image;
        assert_eq!((img.width, img.height), (w, h));
        for p in 0..img.plane_count().unwrap() {
            assert_eq!(img.planes[p].pitch % 512, 0);
            assert!(img.planes[p].pitch >= img.row_bytes(p));
        }
        let pitch = img.planes[0].pitch as usize;
        let luma = download(&stream, &ctx, img.planes[0].ptr, pitch * h as usize);
        match img.format {
            VideoFormat::Rgba => {
                assert_eq!(surface.color_format, abi::NVBUF_COLOR_FORMAT_RGBA);
                for y in 0..h {
                    for x in 0..w {
                        let [r, g, b] = rgb(w, h, frame, seed, x, y);
                        let at = y as usize * pitch + 4 * x as usize;
                        assert_eq!(
                            &luma[at..at + 4],
                            &[r as u8, g as u8, b as u8, 255],
                            "RGBA pixel ({x}, {y}) of frame {frame}"
                        );
                    }
                }
            }
            VideoFormat::Nv12 => {
                assert_eq!(surface.color_format, abi::NVBUF_COLOR_FORMAT_NV12);
                let cpitch = img.planes[1].pitch as usize;
                let chroma = download(
                    &stream,
                    &ctx,
                    img.planes[1].ptr,
                    cpitch * h.div_ceil(2) as usize,
                );
                for y in 0..h {
                    for x in 0..w {
                        let [r, g, b] = rgb(w, h, frame, seed, x, y);
                        let yv = (((66 * r + 129 * g + 25 * b + 128) >> 8) + 16) as u8;
                        assert_eq!(
                            luma[y as usize * pitch + x as usize],
                            yv,
                            "luma ({x}, {y}) of frame {frame}"
                        );
                        if x % 2 == 0 && y % 2 == 0 {
                            let u = (((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128) as u8;
                            let v = (((112 * r - 94 * g - 18 * b + 128) >> 8) + 128) as u8;
                            let at = (y / 2) as usize * cpitch + x as usize;
                            assert_eq!(
                                &chroma[at..at + 2],
                                &[u, v],
                                "chroma ({x}, {y}) of frame {frame}"
                            );
                        }
                    }
                }
            }
            other => panic!("unexpected format {other:?}"),
        }
    }
    // num-buffers=3: then EOS (after the stream-start, caps and segment events).
    loop {
        let event = harness.pull_event().expect("EOS after num-buffers frames");
        if event.type_() == gst::EventType::Eos {
            break;
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn gpu_frames_read_back_in_both_layouts_with_the_drawn_pixels() {
    init();
    if !gpu_available("gpu_frames_read_back_in_both_layouts_with_the_drawn_pixels") {
        return;
    }
    check_frames(NvmmTestSrcAbi::Ds7, "NV12", 1921, 1081, 7);
    check_frames(NvmmTestSrcAbi::Ds8, "NV12", 64, 35, 0);
    check_frames(NvmmTestSrcAbi::Ds8, "RGBA", 641, 97, 3);
    check_frames(NvmmTestSrcAbi::Ds7, "RGBA", 16, 16, 1);
}

#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn gpu_caps_fixate_to_1080p_nv12_at_30() {
    init();
    if !gpu_available("gpu_caps_fixate_to_1080p_nv12_at_30") {
        return;
    }
    let pipeline = gst::parse::launch(
        "rsnvmmtestsrc num-buffers=2 ! video/x-raw(memory:NVMM) ! fakesink name=sink",
    )
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let bus = pipeline.bus().unwrap();
    let msg = bus
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(60),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .expect("EOS");
    assert!(matches!(msg.view(), gst::MessageView::Eos(_)), "{msg:?}");
    let sink = pipeline.by_name("sink").unwrap();
    let caps = sink.static_pad("sink").unwrap().current_caps().unwrap();
    let s = caps.structure(0).unwrap();
    assert_eq!(s.get::<&str>("format").unwrap(), "NV12");
    assert_eq!(s.get::<i32>("width").unwrap(), 1920);
    assert_eq!(s.get::<i32>("height").unwrap(), 1080);
    assert_eq!(
        s.get::<gst::Fraction>("framerate").unwrap(),
        gst::Fraction::new(30, 1)
    );
    assert_eq!(MemoryKind::from_caps(&caps), MemoryKind::Nvmm);
    pipeline.set_state(gst::State::Null).unwrap();
}
