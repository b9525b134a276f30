// SPDX-License-Identifier: MIT OR Apache-2.0
//! The GPU painter against the CPU painter: for every format, odd frame sizes and padded pitches,
//! the bytes must be identical (padding untouched), on noise and on real footage; and the time to
//! draw 100 labelled boxes on a 1080p frame.
//!
//! The GPU tests are ignored on machines without a GPU; `scripts/gpu-check.sh` runs them with
//! `--include-ignored`. Run without a CUDA GPU (or NVRTC) they print `skipped: ...` and pass,
//! unless `FERROSTREAM_REQUIRE_GPU=1`, which turns the skip into a failure (the GPU check sets
//! it). Results are printed as `GPU-RESULT <name> <value> <unit>` lines.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use ferrostream_core::cuda::{self, Context, DeviceBuffer, Event, Stream};
use ferrostream_core::device::{DeviceImage, DevicePlane};
use ferrostream_core::{BBox, Batch, BatchMeta, Frame, Object, ShapeKind};
use ferrostream_osd::color::{Rgba, YuvMatrix};
use ferrostream_osd::font::{FontRequest, Typeface};
use ferrostream_osd::gpu::GpuPainter;
use ferrostream_osd::paint::{FORMATS, Painter};
use ferrostream_osd::plan::{BlurOp, DrawList, FillOp, PixelRect, Planner};
use ferrostream_osd::style::{BlurMode, Style};
use gst::prelude::*;
use gst_video::{VideoColorMatrix, VideoFormat};

/// Padding bytes hold this; painting must leave it.
const SENTINEL: u8 = 0xA5;

/// GPU work of the tests runs one test at a time (timings stay clean).
static GPU: Mutex<()> = Mutex::new(());

/// The first GPU's primary context, or `None` (after saying why) when the tests cannot run.
fn gpu() -> Option<Arc<Context>> {
    let required = std::env::var("FERROSTREAM_REQUIRE_GPU").is_ok_and(|v| v == "1");
    let skip = |why: String| {
        assert!(!required, "FERROSTREAM_REQUIRE_GPU=1 but {why}");
        println!("skipped: {why}");
        None
    };
    if !cuda::driver_present() {
        return skip("no CUDA GPU (libcuda.so.1 cannot be loaded)".into());
    }
    match cuda::device_count() {
        Ok(0) => return skip("no CUDA GPU (the driver reports none)".into()),
        Err(e) => return skip(format!("no CUDA GPU ({e})")),
        Ok(_) => {}
    }
    if !cuda::nvrtc_present() {
        return skip("NVRTC (libnvrtc.so from the CUDA toolkit) is not on the library path".into());
    }
    Some(Context::primary(0).expect("the primary context of GPU 0"))
}

/// xorshift32: reproducible noise without a dependency.
struct Rng(u32);

impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        self.0
    }

    fn below(&mut self, n: u32) -> i32 {
        (self.next() % n.max(1)) as i32
    }
}

/// Where each plane of a frame lies in one block of memory: offset, pitch, row bytes, rows.
#[derive(Debug, Clone, Copy)]
struct PlaneAt {
    offset: usize,
    pitch: usize,
    row: usize,
    rows: usize,
}

fn planes_of(format: VideoFormat, width: u32, height: u32, pad: usize) -> Vec<PlaneAt> {
    let (w, h) = (width as usize, height as usize);
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let shapes: &[(usize, usize)] = match format {
        VideoFormat::Nv12 => &[(w, h), (2 * cw, ch)],
        VideoFormat::I420 => &[(w, h), (cw, ch), (cw, ch)],
        _ => &[(4 * w, h)],
    };
    let mut offset = 0;
    shapes
        .iter()
        .map(|&(row, rows)| {
            let p = PlaneAt {
                offset,
                pitch: row + pad,
                row,
                rows,
            };
            offset += p.pitch * rows;
            p
        })
        .collect()
}

/// A frame in host memory laid out as it is on the GPU.
#[derive(Clone)]
struct HostFrame {
    format: VideoFormat,
    width: u32,
    height: u32,
    planes: Vec<PlaneAt>,
    bytes: Vec<u8>,
}

impl HostFrame {
    /// Noise in the pixels, the sentinel in the padding (and in a tail after the last plane).
    fn noise(format: VideoFormat, width: u32, height: u32, pad: usize, rng: &mut Rng) -> Self {
        let planes = planes_of(format, width, height, pad);
        let last = planes.last().expect("a plane");
        let mut bytes = vec![SENTINEL; last.offset + last.pitch * last.rows + 64];
        for p in &planes {
            for r in 0..p.rows {
                let start = p.offset + r * p.pitch;
                bytes[start..start + p.row]
                    .iter_mut()
                    .for_each(|b| *b = rng.next() as u8);
            }
        }
        Self {
            format,
            width,
            height,
            planes,
            bytes,
        }
    }

    /// A picture (tightly packed planes) with padding added.
    fn from_picture(
        format: VideoFormat,
        width: u32,
        height: u32,
        picture: &[u8],
        pad: usize,
    ) -> Self {
        let mut frame = Self::noise(format, width, height, pad, &mut Rng(1));
        let mut at = 0;
        for p in &frame.planes {
            for r in 0..p.rows {
                let start = p.offset + r * p.pitch;
                frame.bytes[start..start + p.row].copy_from_slice(&picture[at..at + p.row]);
                at += p.row;
            }
        }
        frame
    }

    fn paint_cpu(&mut self, list: &DrawList, matrix: YuvMatrix) {
        let mut rest: &mut [u8] = &mut self.bytes;
        let mut views = Vec::new();
        let mut consumed = 0;
        for p in &self.planes {
            let (_, tail) = rest.split_at_mut(p.offset - consumed);
            let (plane, tail) = tail.split_at_mut(p.pitch * p.rows);
            views.push((plane, p.pitch));
            consumed = p.offset + p.pitch * p.rows;
            rest = tail;
        }
        Painter::default()
            .paint_planes(list, self.format, matrix, &mut views)
            .expect("the CPU painter draws the list");
    }

    /// Bytes outside every plane's rows (padding and tail) that lost the sentinel.
    fn padding_damage(&self) -> usize {
        let mut inside = vec![false; self.bytes.len()];
        for p in &self.planes {
            for r in 0..p.rows {
                let start = p.offset + r * p.pitch;
                inside[start..start + p.row].fill(true);
            }
        }
        self.bytes
            .iter()
            .zip(&inside)
            .filter(|(b, inside)| !**inside && **b != SENTINEL)
            .count()
    }
}

/// The same frame in device memory.
struct DeviceFrame {
    buffer: DeviceBuffer,
    image: DeviceImage,
}

impl DeviceFrame {
    fn upload(ctx: &Arc<Context>, stream: &Stream, host: &HostFrame) -> Self {
        let buffer = DeviceBuffer::new(ctx, host.bytes.len()).expect("device memory");
        buffer.upload(stream, &host.bytes).expect("upload");
        let mut planes = [DevicePlane::default(); 3];
        for (slot, p) in planes.iter_mut().zip(&host.planes) {
            *slot = DevicePlane {
                ptr: buffer.ptr() + p.offset as u64,
                pitch: p.pitch as u32,
            };
        }
        let image = DeviceImage::new(host.format, host.width, host.height, planes)
            .expect("a valid device image");
        Self { buffer, image }
    }

    fn download(&self, stream: &Stream) -> Vec<u8> {
        let mut bytes = vec![0u8; self.buffer.len()];
        self.buffer.download(stream, &mut bytes).expect("download");
        bytes
    }
}

/// The largest difference between two frames' bytes, and how many bytes differ.
fn compare(cpu: &[u8], gpu: &[u8]) -> (u8, usize) {
    cpu.iter()
        .zip(gpu)
        .map(|(a, b)| a.abs_diff(*b))
        .fold((0, 0), |(max, n), d| (max.max(d), n + (d > 0) as usize))
}

/// A typeface with anti-aliased glyphs when the machine has one (fractional coverage exercises
/// the chroma means and translucent text), else the built-in one.
fn planner() -> Planner {
    Planner::new(Typeface::load(&FontRequest::Auto).expect("a font").typeface)
}

/// `count` tracked objects of a few classes spread over (and partly off) the frame, every
/// `blur_every`-th of the blurred class 9.
fn objects(width: u32, height: u32, count: usize, blur_every: usize, rng: &mut Rng) -> Frame {
    let mut frame = Frame::new(0, 0, width, height);
    let (w, h) = (width as i32, height as i32);
    for i in 0..count {
        let bw = 1 + rng.below((w as u32 / 3).max(8));
        let bh = 1 + rng.below((h as u32 / 3).max(8));
        let x = rng.below(w as u32 + 20) - 10;
        let y = rng.below(h as u32 + 20) - 10;
        let class = if blur_every > 0 && i % blur_every == 0 {
            9
        } else {
            (i % 3) as i32
        };
        let mut o = Object::new(
            class,
            ["person", "car", "bicycle"][i % 3].into(),
            0.5 + (i % 50) as f32 / 100.0,
            BBox::new(x as f32, y as f32, bw as f32, bh as f32),
            1,
        );
        o.object_id = Some(1000 + i as u64);
        if i % 4 == 1 {
            // Instance masks: translucent cells over the box.
            let (cols, rows) = (1 + rng.below(12) as u32, 1 + rng.below(12) as u32);
            let cells: Vec<bool> = (0..cols * rows).map(|_| rng.below(2) == 1).collect();
            o.mask = Some(ferrostream_core::mask::InstanceMask::from_cells(
                cols,
                rows,
                cells.into_iter(),
            ));
        }
        if i % 4 == 2 {
            // A pose's keypoints around the box (some off the frame, some unconfident) and
            // COCO's skeleton: limbs at every angle, dots.
            let points = ferrostream_core::keypoints::default_names(17)
                .into_iter()
                .map(|name| ferrostream_core::keypoints::Keypoint {
                    name,
                    x: (x + rng.below((bw + 20) as u32) - 10) as f32 + 0.37,
                    y: (y + rng.below((bh + 20) as u32) - 10) as f32 + 0.61,
                    confidence: rng.below(100) as f32 / 100.0,
                })
                .collect();
            o.keypoints = Some(ferrostream_core::keypoints::Keypoints {
                points,
                skeleton: ferrostream_core::keypoints::default_skeleton(17),
            });
        }
        if i % 4 == 3 {
            // An oriented box: its sides turned by any angle (some off the frame).
            o.angle = Some(rng.below(600) as f32 / 100.0 - 3.0);
        }
        frame.objects.push(o);
    }
    // A class map over the frame, some cells without a class.
    let cells: Vec<i32> = (0..8 * 6).map(|_| rng.below(4) - 1).collect();
    frame.segmentation = Some(ferrostream_core::mask::ClassMap::from_cells(
        8, 6, 3, 2, &cells,
    ));
    // rsanalytics' shapes with their counts: a region, a crowded region, a line and a direction,
    // partly off the frame.
    let (fw, fh) = (width as f32, height as f32);
    let mut analytics = ferrostream_core::FrameAnalytics {
        osd_mode: 2,
        shapes: vec![
            shape(
                ShapeKind::Roi,
                "zone",
                &[[0.1, 0.2], [0.6, 0.25], [0.5, 0.9], [0.05, 0.7]],
            ),
            shape(
                ShapeKind::Overcrowding,
                "crowd",
                &[[0.7, 0.1], [1.2, 0.3], [0.8, 0.6]],
            ),
            shape(
                ShapeKind::Line,
                "gate",
                &[[0.3, -0.1], [0.45, 1.1], [0.3, 0.5], [0.45, 0.45]],
            ),
            shape(ShapeKind::Direction, "east", &[[0.2, 0.95], [0.4, 0.95]]),
        ],
        ..Default::default()
    };
    for s in &mut analytics.shapes {
        for p in &mut s.points {
            *p = [p[0] * fw, p[1] * fh];
        }
    }
    analytics.roi_counts.insert("zone".into(), 3);
    analytics.overcrowding.insert(
        "crowd".into(),
        ferrostream_core::Crowding {
            count: 4,
            threshold: 2,
            crowded: true,
        },
    );
    frame.analytics = Some(analytics);
    frame
}

fn shape(kind: ShapeKind, label: &str, points: &[[f32; 2]]) -> ferrostream_core::Shape {
    ferrostream_core::Shape {
        kind,
        label: label.into(),
        points: points.to_vec(),
    }
}

/// A list with everything: many boxes (clipped, overlapping), labels, box fills, clock and
/// source text from the planner, plus translucent fills and overlapping pixelate and blur boxes.
fn busy_list(planner: &mut Planner, width: u32, height: u32, rng: &mut Rng) -> DrawList {
    let mut style = Style {
        blur_class_ids: vec![9],
        bbox_bg_color: Rgba::new(20, 120, 240, 50),
        text_size: [10, 14, 20][rng.below(3) as usize],
        blur_strength: 2 + rng.below(14) as u32,
        blur_mode: if rng.below(2) == 0 {
            BlurMode::Pixelate
        } else {
            BlurMode::Blur
        },
        text_color: [None, Some(Rgba::new(255, 240, 0, 160))][rng.below(2) as usize],
        ..Style::default()
    };
    style.source_text.insert(0, "Gate 7 - north".into());
    let frame = objects(width, height, 40, 7, rng);
    let mut list = DrawList::default();
    list.reset(width, height);
    planner.plan(&style, &[frame], 0, Some("2025-01-31 12:34:56"), &mut list);
    let bounds = PixelRect::new(0, 0, width as i32, height as i32);
    let (w, h) = (width, height);
    for _ in 0..30 {
        let (x0, y0) = (rng.below(w), rng.below(h));
        let rect = PixelRect::new(
            x0,
            y0,
            x0 + 1 + rng.below(w / 4 + 2),
            y0 + 1 + rng.below(h / 4 + 2),
        )
        .intersect(&bounds);
        let alpha = [255, 1, 128, 200, 254][rng.below(5) as usize];
        let color = Rgba::new(rng.next() as u8, rng.next() as u8, rng.next() as u8, alpha);
        if !rect.is_empty() {
            list.fills.push(FillOp { rect, color });
        }
    }
    for i in 0..8 {
        let (x0, y0) = (rng.below(w), rng.below(h));
        let rect = PixelRect::new(
            x0,
            y0,
            x0 + 1 + rng.below(w / 3 + 2),
            y0 + 1 + rng.below(h / 3 + 2),
        )
        .intersect(&bounds);
        if !rect.is_empty() {
            list.blurs.push(BlurOp {
                rect,
                mode: if i % 2 == 0 {
                    BlurMode::Pixelate
                } else {
                    BlurMode::Blur
                },
                strength: 1 + rng.below(24),
            });
        }
    }
    list
}

fn matrix_for(rng: &mut Rng) -> YuvMatrix {
    match rng.below(3) {
        0 => YuvMatrix::new(VideoColorMatrix::Bt601, false),
        1 => YuvMatrix::new(VideoColorMatrix::Bt709, false),
        _ => YuvMatrix::new(VideoColorMatrix::Bt2020, true),
    }
}

/// A GPU painter with its context and stream.
struct Rig {
    ctx: Arc<Context>,
    stream: Stream,
    painter: GpuPainter,
}

impl Rig {
    /// On the first GPU, or `None` (after saying why) when the tests cannot run.
    fn new(priority: i32) -> Option<Self> {
        let ctx = gpu()?;
        Some(Self {
            stream: Stream::new(&ctx, priority).expect("a stream"),
            painter: GpuPainter::new(&ctx).expect("the kernels load"),
            ctx,
        })
    }
}

/// Paints `list` on `host` with both painters; returns (max abs error, bytes differing).
fn paint_both(
    rig: &mut Rig,
    planner: &Planner,
    list: &DrawList,
    matrix: YuvMatrix,
    host: &HostFrame,
    what: &str,
) -> (u8, usize) {
    let Rig {
        ctx,
        stream,
        painter: gpu,
    } = rig;
    let stream = &*stream;
    let device = DeviceFrame::upload(ctx, stream, host);
    let mut cpu = host.clone();
    cpu.paint_cpu(list, matrix);
    // SAFETY: the image is this test's device buffer, alive until after the synchronisation.
    unsafe { gpu.paint(list, planner.atlas(), &device.image, matrix, stream) }
        .unwrap_or_else(|e| panic!("{what}: the GPU painter failed: {e}"));
    stream.synchronize().expect("the GPU work completes");
    let gpu_frame = HostFrame {
        bytes: device.download(stream),
        planes: host.planes.clone(),
        ..*host
    };
    assert_eq!(
        cpu.padding_damage(),
        0,
        "{what}: the CPU painter wrote padding"
    );
    assert_eq!(
        gpu_frame.padding_damage(),
        0,
        "{what}: the GPU painter wrote padding"
    );
    let result = compare(&cpu.bytes, &gpu_frame.bytes);
    if result.1 > 0 {
        // Say where, to make a failure easy to read.
        let first = cpu
            .bytes
            .iter()
            .zip(&gpu_frame.bytes)
            .position(|(a, b)| a != b)
            .expect("a difference");
        let plane = host
            .planes
            .iter()
            .rposition(|p| p.offset <= first)
            .expect("a plane");
        let p = host.planes[plane];
        println!(
            "{what}: {} bytes differ, first at plane {plane} row {} byte {}: CPU {} GPU {}",
            result.1,
            (first - p.offset) / p.pitch,
            (first - p.offset) % p.pitch,
            cpu.bytes[first],
            gpu_frame.bytes[first]
        );
    }
    assert_ne!(cpu.bytes, host.bytes, "{what}: the list drew nothing");
    result
}

fn format_name(format: VideoFormat) -> String {
    format.to_str().to_lowercase()
}

#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn gpu_matches_the_cpu_painter_byte_for_byte() {
    let _one = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut rig) = Rig::new(0) else { return };
    let mut planner = planner();
    let mut rng = Rng(0x2545_f491);
    let mut failures = Vec::new();
    for format in FORMATS {
        let mut worst = (0u8, 0usize);
        for (width, height) in [
            (1921, 1081),
            (33, 17),
            (1, 1),
            (2, 2),
            (641, 359),
            (1920, 1080),
        ] {
            for round in 0..3 {
                let pad = [0, 1, 3, 64, 129][rng.below(5) as usize];
                let list = busy_list(&mut planner, width, height, &mut rng);
                let host = HostFrame::noise(format, width, height, pad, &mut rng);
                let matrix = matrix_for(&mut rng);
                let what = format!("{format:?} {width}x{height} pitch +{pad} round {round}");
                let r = paint_both(&mut rig, &planner, &list, matrix, &host, &what);
                worst = (worst.0.max(r.0), worst.1 + r.1);
                if r.1 > 0 {
                    failures.push(what);
                }
            }
        }
        println!(
            "GPU-RESULT osd_max_abs_err_{} {} levels",
            format_name(format),
            worst.0
        );
    }
    assert!(failures.is_empty(), "GPU and CPU differ: {failures:?}");
}

/// The planner's lists reuse the painter's buffers and atlas across frames: glyphs added later
/// (new text, new sizes) must reach the GPU, and smaller lists must not see stale ops.
#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn atlas_growth_and_buffer_reuse_stay_exact() {
    let _one = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut rig) = Rig::new(-1) else { return };
    let mut planner = planner();
    let mut rng = Rng(77);
    for (i, text) in ["a", "ab", "Zebra 42", "xyz", "a"].iter().enumerate() {
        let mut style = Style {
            text_size: 12 + 4 * i as u32,
            label_format: "{label}".parse().expect("a label format"),
            ..Style::default()
        };
        style.source_text.insert(0, (*text).into());
        let mut frame = Frame::new(0, 0, 320, 240);
        for k in 0..(5 - i) {
            frame.objects.push(Object::new(
                0,
                format!("{text}{k}").into(),
                0.9,
                BBox::new(20.0 + 50.0 * k as f32, 60.0, 40.0, 40.0),
                1,
            ));
        }
        let mut list = DrawList::default();
        list.reset(320, 240);
        planner.plan(&style, &[frame], 0, None, &mut list);
        for format in [VideoFormat::Nv12, VideoFormat::Bgrx] {
            let host = HostFrame::noise(format, 320, 240, 16, &mut rng);
            let matrix = matrix_for(&mut rng);
            let what = format!("{format:?} text {text:?}");
            let (_, differ) = paint_both(&mut rig, &planner, &list, matrix, &host, &what);
            assert_eq!(differ, 0, "{what}");
        }
    }
}

/// Media are looked up in `FERROSTREAM_MEDIA_DIR`, `../shared/media` beside the repository, and
/// the cache `scripts/fetch-models.sh` fills.
fn media(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("FERROSTREAM_MEDIA_DIR")
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    dirs.push(repo.join("../shared/media"));
    dirs.push(ferrostream_core::paths::cache_dir().join("media"));
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.exists())
}

/// A decoded frame: width, height and its planes tightly packed.
type Picture = (u32, u32, Vec<u8>);

/// Up to `count` frames of `description` (ending in an appsink named `sink`), tightly packed.
fn decode(description: &str, count: usize) -> Result<Vec<Picture>, String> {
    gst::init().map_err(|e| e.to_string())?;
    let pipeline = gst::parse::launch(description)
        .map_err(|e| format!("`{description}`: {e}"))?
        .downcast::<gst::Pipeline>()
        .map_err(|_| "not a pipeline".to_string())?;
    pull_frames(&pipeline, description, count)
}

/// The frame of an appsink's sample, its planes tightly packed.
fn pack(sample: &gst::Sample) -> Result<Picture, String> {
    let (Some(buffer), Some(caps)) = (sample.buffer(), sample.caps()) else {
        return Err("a sample without buffer or caps".into());
    };
    let info = gst_video::VideoInfo::from_caps(caps).map_err(|e| e.to_string())?;
    let frame = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer, &info)
        .map_err(|e| e.to_string())?;
    let mut packed = Vec::new();
    for plane in 0..info.n_planes() {
        let stride = info.stride()[plane as usize] as usize;
        let data = frame.plane_data(plane).map_err(|e| e.to_string())?;
        let (row, rows) = match (info.format(), plane) {
            (VideoFormat::Nv12, 1) => (2 * info.width().div_ceil(2), info.height().div_ceil(2)),
            (VideoFormat::I420, 1 | 2) => (info.width().div_ceil(2), info.height().div_ceil(2)),
            (VideoFormat::Nv12 | VideoFormat::I420, _) => (info.width(), info.height()),
            _ => (4 * info.width(), info.height()),
        };
        for r in 0..rows as usize {
            packed.extend_from_slice(&data[r * stride..r * stride + row as usize]);
        }
    }
    Ok((info.width(), info.height(), packed))
}

/// Plays `pipeline` and takes up to `count` frames from its appsink `sink`, tightly packed; stops
/// it again.
fn pull_frames(
    pipeline: &gst::Pipeline,
    description: &str,
    count: usize,
) -> Result<Vec<Picture>, String> {
    let sink = pipeline.by_name("sink").ok_or("no sink")?;
    pipeline
        .set_state(gst::State::Playing)
        .map_err(|e| format!("cannot play `{description}`: {e}"))?;
    let mut frames = Vec::new();
    while frames.len() < count {
        let Some(sample) = sink.emit_by_name::<Option<gst::Sample>>("pull-sample", &[]) else {
            break;
        };
        frames.push(pack(&sample)?);
    }
    let bus_error = pipeline.bus().and_then(|bus| {
        bus.pop_filtered(&[gst::MessageType::Error])
            .map(|m| match m.view() {
                gst::MessageView::Error(e) => e.error().to_string(),
                _ => String::new(),
            })
    });
    let _ = pipeline.set_state(gst::State::Null);
    if frames.is_empty() {
        return Err(bus_error.unwrap_or_else(|| format!("`{description}` gave no frame")));
    }
    Ok(frames)
}

/// Real footage: carphone_pristine.mp4 decoded to NV12 and RGBA (a still image when there is no
/// H.264 decoder), drawn by both painters.
#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn real_frames_match() {
    let _one = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut rig) = Rig::new(0) else { return };
    let mut planner = planner();
    let mut rng = Rng(4242);
    let mut sources = Vec::new();
    if let Some(video) = media("carphone_pristine.mp4") {
        // The software decoder, else NVDEC (the GPU check's GStreamer has only that one).
        for decoder in ["avdec_h264", "nvh264dec"] {
            sources.push(format!(
                "filesrc location=\"{}\" ! qtdemux ! h264parse ! {decoder} ! videoconvert",
                video.display()
            ));
        }
    }
    for still in ["astronaut.png", "messi5.jpg"] {
        if let Some(path) = media(still) {
            sources.push(format!(
                "filesrc location=\"{}\" ! decodebin ! videoconvert ! videoscale ! video/x-raw,width=333,height=221 ! videoconvert",
                path.display()
            ));
        }
    }
    let mut drawn = 0;
    for source in &sources {
        for format in [VideoFormat::Nv12, VideoFormat::Rgba] {
            let description = format!(
                "{source} ! video/x-raw,format={} ! appsink name=sink sync=false",
                format.to_str()
            );
            let frames = match decode(&description, 5) {
                Ok(frames) => frames,
                Err(e) => {
                    println!("real frames: cannot decode with `{description}`: {e}");
                    continue;
                }
            };
            for (i, (width, height, picture)) in frames.iter().enumerate() {
                let list = busy_list(&mut planner, *width, *height, &mut rng);
                let host = HostFrame::from_picture(format, *width, *height, picture, 7);
                let matrix = YuvMatrix::new(VideoColorMatrix::Bt601, false);
                let what = format!("{format:?} frame {i} of `{source}`");
                let (max, differ) = paint_both(&mut rig, &planner, &list, matrix, &host, &what);
                assert_eq!(differ, 0, "{what}: max error {max}");
                drawn += 1;
            }
        }
        if drawn > 0 {
            break;
        }
    }
    if drawn == 0 {
        println!(
            "real frames: skipped, no media or decoder (set FERROSTREAM_MEDIA_DIR, install gstreamer1.0-libav)"
        );
    } else {
        println!("GPU-RESULT osd_real_frames_exact {drawn} frames");
    }
}

/// Median time of drawing 100 labelled boxes on a 1080p frame: the draw list's upload and the
/// kernels, timed with CUDA events, over 200 frames after warm-up; also with ten of the boxes
/// blurred or pixelated.
#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn hundred_labelled_boxes_at_1080p() {
    let _one = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut rig) = Rig::new(0) else { return };
    let mut planner = planner();
    let (width, height) = (1920, 1080);
    let mut rng = Rng(0x1234_5678);
    let frame = {
        let mut f = Frame::new(0, 0, width, height);
        for i in 0..100 {
            let (w, h) = (60 + rng.below(300), 60 + rng.below(300));
            let (x, y) = (rng.below(width - w as u32), rng.below(height - h as u32));
            let class = if i % 10 == 0 { 9 } else { (i % 3) as i32 };
            let mut o = Object::new(
                class,
                ["person", "car", "bicycle"][i % 3].into(),
                0.5 + (i % 50) as f32 / 100.0,
                BBox::new(x as f32, y as f32, w as f32, h as f32),
                1,
            );
            o.object_id = Some(1000 + i as u64);
            f.objects.push(o);
        }
        f
    };
    let (start, end) = (
        Event::new(&rig.ctx).expect("an event"),
        Event::new(&rig.ctx).expect("an event"),
    );
    let cases = [
        (VideoFormat::Nv12, None),
        (VideoFormat::Rgba, None),
        (VideoFormat::Nv12, Some(BlurMode::Blur)),
        (VideoFormat::Nv12, Some(BlurMode::Pixelate)),
        (VideoFormat::Rgba, Some(BlurMode::Blur)),
    ];
    for (format, blur) in cases {
        let style = Style {
            blur_class_ids: if blur.is_some() { vec![9] } else { vec![] },
            blur_mode: blur.unwrap_or_default(),
            ..Style::default()
        };
        let name = match blur {
            None => format!("osd_100_boxes_{}_1080p", format_name(format)),
            Some(mode) => format!(
                "osd_100_boxes_10_{}_{}_1080p",
                match mode {
                    BlurMode::Blur => "blurred",
                    BlurMode::Pixelate => "pixelated",
                },
                format_name(format)
            ),
        };
        let host = HostFrame::noise(format, width, height, 0, &mut rng);
        let device = DeviceFrame::upload(&rig.ctx, &rig.stream, &host);
        let matrix = YuvMatrix::new(VideoColorMatrix::Bt709, false);
        let mut list = DrawList::default();
        let (mut times, mut calls) = (Vec::new(), Vec::new());
        // The element composes no coverage for the GPU.
        planner.set_compose_coverage(false);
        for i in 0..220 {
            list.reset(width, height);
            planner.plan(&style, std::slice::from_ref(&frame), 0, None, &mut list);
            start.record(&rig.stream).expect("record");
            let call = std::time::Instant::now();
            // SAFETY: the image is this test's device buffer, alive until the end of the test.
            unsafe {
                rig.painter
                    .paint(&list, planner.atlas(), &device.image, matrix, &rig.stream)
            }
            .expect("the GPU painter draws");
            let call = call.elapsed().as_secs_f64() * 1e3;
            end.record(&rig.stream).expect("record");
            let ms = start.elapsed_ms(&end).expect("elapsed time");
            if i >= 20 {
                times.push(ms as f64);
                calls.push(call);
            }
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let p90 = {
            times.sort_by(f64::total_cmp);
            times[times.len() * 9 / 10]
        };
        let gpu_ms = median(&mut times);
        println!(
            "GPU-RESULT {name} {gpu_ms:.3} ms (upload and kernels, CUDA events; p90 {p90:.3} ms; \
             host time in paint {:.3} ms; {} fills, {} text runs, {} glyphs, {} blurs)",
            median(&mut calls),
            list.fills.len(),
            list.texts.len(),
            list.glyphs.len(),
            list.blurs.len(),
        );
        // The requirement is well under 1 ms on an H100; a loaded or smaller GPU gets slack.
        assert!(gpu_ms < 5.0, "{name}: {gpu_ms} ms");

        // And the frame is the CPU painter's.
        planner.set_compose_coverage(true);
        list.reset(width, height);
        planner.plan(&style, std::slice::from_ref(&frame), 0, None, &mut list);
        let (max, differ) = paint_both(&mut rig, &planner, &list, matrix, &host, &name);
        assert_eq!(differ, 0, "{name}: max error {max}");
    }
}

/// Registers `rsosd` (once) so that pipelines can name it.
fn register_rsosd() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        gst::init().expect("GStreamer");
        ferrostream_core::meta::register();
        gst::Element::register(
            None,
            "rsosd",
            gst::Rank::NONE,
            <ferrostream_osd::osd::RsOsd as gst::glib::prelude::StaticType>::static_type(),
        )
        .expect("registering rsosd");
    });
}

/// Attaches the same boxes to every frame entering `osd`.
fn attach_boxes(osd: &gst::Element) {
    osd.static_pad("sink")
        .expect("a sink pad")
        .add_probe(gst::PadProbeType::BUFFER, |_, info| {
            if let Some(buffer) = info.buffer_mut() {
                let mut frame = Frame::new(0, 0, 320, 180);
                for (i, (x, y, w, h)) in [
                    (-10.0, 20.0, 90.0, 60.0),
                    (60.0, 40.0, 120.0, 100.0),
                    (250.0, 130.0, 90.0, 70.0),
                    (100.0, 10.0, 41.0, 33.0),
                ]
                .into_iter()
                .enumerate()
                {
                    let mut o = Object::new(
                        i as i32 % 3,
                        ["person", "car", "face"][i % 3].into(),
                        0.75,
                        BBox::new(x, y, w, h),
                        1,
                    );
                    o.object_id = Some(i as u64);
                    frame.objects.push(o);
                }
                BatchMeta::add(buffer.make_mut(), Batch::single(frame));
            }
            gst::PadProbeReturn::Ok
        });
}

/// The frames out of `description` (rsosd named `osd`, appsink named `sink`), with boxes
/// attached to every frame before rsosd, and rsosd's `gpu-frames` and `pixel-copies`.
fn run_osd(description: &str, count: usize) -> (Vec<Picture>, u64, u64) {
    register_rsosd();
    let pipeline = gst::parse::launch(description)
        .unwrap_or_else(|e| panic!("`{description}`: {e}"))
        .downcast::<gst::Pipeline>()
        .expect("a pipeline");
    let osd = pipeline.by_name("osd").expect("rsosd named osd");
    attach_boxes(&osd);
    let frames = pull_frames(&pipeline, description, count).unwrap_or_else(|e| panic!("{e}"));
    let counters = (
        osd.property::<u64>("gpu-frames"),
        osd.property::<u64>("pixel-copies"),
    );
    (frames, counters.0, counters.1)
}

/// rsosd on frames in CUDA memory (`cudaupload`) draws the pixels it draws on the same frames in
/// system memory, on the GPU and without copying them.
#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn element_draws_cuda_memory_like_system_memory() {
    let _one = GPU.lock().unwrap_or_else(|e| e.into_inner());
    if gpu().is_none() {
        return;
    }
    register_rsosd();
    let required = std::env::var("FERROSTREAM_REQUIRE_GPU").is_ok_and(|v| v == "1");
    let missing: Vec<&str> = ["cudaupload", "cudadownload"]
        .into_iter()
        .filter(|e| gst::ElementFactory::find(e).is_none())
        .collect();
    if !missing.is_empty() {
        assert!(
            !required,
            "FERROSTREAM_REQUIRE_GPU=1 but {missing:?} (gst-plugins-bad nvcodec) are missing"
        );
        println!("skipped: {missing:?} (gst-plugins-bad nvcodec) are missing");
        return;
    }
    let frames = 6;
    for format in ["NV12", "I420", "RGBA", "BGRx"] {
        let source = format!(
            "videotestsrc num-buffers={frames} pattern=smpte ! video/x-raw,format={format},width=641,height=361,framerate=30/1"
        );
        let osd = "rsosd name=osd source-text=\"0=Door 3\" text-size=18 blur-class-ids=2 \
                   bbox-bg-color=0x20c04050 text-bg-color=0x00000080";
        let sink = format!("video/x-raw,format={format} ! appsink name=sink sync=false");
        let (cpu, cpu_gpu_frames, cpu_copies) =
            run_osd(&format!("{source} ! {osd} ! {sink}"), frames);
        let (gpu, gpu_frames, gpu_copies) = run_osd(
            &format!(
                "{source} ! cudaupload ! video/x-raw(memory:CUDAMemory) ! {osd} ! cudadownload ! {sink}"
            ),
            frames,
        );
        assert_eq!(
            cpu.len(),
            frames,
            "{format}: frames out of the CPU pipeline"
        );
        assert_eq!(
            gpu.len(),
            frames,
            "{format}: frames out of the GPU pipeline"
        );
        assert_eq!(
            (cpu_gpu_frames, cpu_copies),
            (0, 0),
            "{format}: CPU counters"
        );
        assert_eq!(
            (gpu_frames, gpu_copies),
            (frames as u64, 0),
            "{format}: GPU counters"
        );
        let mut worst = 0;
        for (i, (c, g)) in cpu.iter().zip(&gpu).enumerate() {
            assert_eq!((c.0, c.1), (g.0, g.1), "{format}: frame {i} size");
            let (max, differ) = compare(&c.2, &g.2);
            worst = worst.max(max);
            assert_eq!(
                differ, 0,
                "{format}: frame {i}: {differ} bytes differ, max {max}"
            );
        }
        println!(
            "GPU-RESULT osd_element_cuda_{}_max_abs_err {worst} levels ({frames} frames, pixel copies 0)",
            format.to_lowercase()
        );
    }
}

/// Runs `appsrc name=src caps=CAPS ! rsosd name=osd PROPS ! SINK` on `buffer` (boxes attached
/// as in [`run_osd`]); returns the frame an appsink named `sink` got, if any, and rsosd's
/// `gpu-frames` and `pixel-copies`.
fn run_appsrc(
    caps: &str,
    props: &str,
    sink: &str,
    buffer: gst::Buffer,
) -> (Option<Picture>, u64, u64) {
    register_rsosd();
    let description =
        format!("appsrc name=src format=time caps=\"{caps}\" ! rsosd name=osd {props} ! {sink}");
    let pipeline = gst::parse::launch(&description)
        .unwrap_or_else(|e| panic!("`{description}`: {e}"))
        .downcast::<gst::Pipeline>()
        .expect("a pipeline");
    let osd = pipeline.by_name("osd").expect("rsosd named osd");
    attach_boxes(&osd);
    let src = pipeline.by_name("src").expect("appsrc named src");
    pipeline.set_state(gst::State::Playing).expect("playing");
    let mut buffer = buffer;
    {
        let b = buffer.make_mut();
        b.set_pts(gst::ClockTime::ZERO);
        b.set_duration(gst::ClockTime::from_mseconds(33));
    }
    let pushed = src.emit_by_name::<gst::FlowReturn>("push-buffer", &[&buffer]);
    assert_eq!(pushed, gst::FlowReturn::Ok, "`{description}`: push-buffer");
    let _ = src.emit_by_name::<gst::FlowReturn>("end-of-stream", &[]);
    let frame = pipeline.by_name("sink").map(|sink| {
        let sample = sink
            .emit_by_name::<Option<gst::Sample>>("pull-sample", &[])
            .unwrap_or_else(|| panic!("`{description}` gave no frame"));
        pack(&sample).unwrap_or_else(|e| panic!("`{description}`: {e}"))
    });
    let bus = pipeline.bus().expect("a bus");
    let message = bus
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(20),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .expect("EOS within 20 s");
    if let gst::MessageView::Error(e) = message.view() {
        panic!("`{description}`: {} ({:?})", e.error(), e.debug());
    }
    let counters = (
        osd.property::<u64>("gpu-frames"),
        osd.property::<u64>("pixel-copies"),
    );
    pipeline.set_state(gst::State::Null).expect("stopped");
    (frame, counters.0, counters.1)
}

/// rsosd on NVMM surfaces (made as a dGPU DeepStream decoder makes them, in CUDA device memory
/// with 512-byte pitches) draws the pixels it draws on the same frame in system memory.
#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn element_draws_nvmm_like_system_memory() {
    use ferrostream_core::nvmm::{NvmmAbi, PitchLayout, abi, surface_memory};
    let _one = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let Some(ctx) = gpu() else { return };
    register_rsosd();
    let stream = Stream::new(&ctx, 0).expect("a stream");
    let mut rng = Rng(0x5eed);
    let (width, height) = (643u32, 361u32);
    let props = "source-text=\"0=Dock 9\" text-size=20 blur-class-ids=1 blur-mode=blur \
                 bbox-bg-color=0x3080c060";
    for (format, color_format, nvmm_abi) in [
        (
            VideoFormat::Nv12,
            abi::NVBUF_COLOR_FORMAT_NV12,
            NvmmAbi::Ds7,
        ),
        (
            VideoFormat::I420,
            abi::NVBUF_COLOR_FORMAT_YUV420,
            NvmmAbi::Ds8,
        ),
        (
            VideoFormat::Rgba,
            abi::NVBUF_COLOR_FORMAT_RGBA,
            NvmmAbi::Ds8,
        ),
    ] {
        // One picture, as rows of each plane.
        let layout = PitchLayout::new(color_format, width, height, 512).expect("a layout");
        let rows: Vec<Vec<Vec<u8>>> = planes_of(format, width, height, 0)
            .iter()
            .map(|p| {
                (0..p.rows)
                    .map(|_| (0..p.row).map(|_| rng.next() as u8).collect())
                    .collect()
            })
            .collect();

        // In system memory, laid out as GStreamer lays it out (BT.601 limited, as NV12 and
        // YUV420 surfaces are).
        let info = gst_video::VideoInfo::builder(format, width, height)
            .colorimetry(&"bt601".parse().expect("bt601"))
            .fps(gst::Fraction::new(30, 1))
            .build()
            .expect("video info");
        let mut system = gst::Buffer::with_size(info.size()).expect("a buffer");
        {
            let mut map = system
                .get_mut()
                .expect("writable")
                .map_writable()
                .expect("mapped");
            for (plane, plane_rows) in rows.iter().enumerate() {
                let (offset, stride) = (info.offset()[plane], info.stride()[plane] as usize);
                for (r, row) in plane_rows.iter().enumerate() {
                    let start = offset + r * stride;
                    map[start..start + row.len()].copy_from_slice(row);
                }
            }
        }
        let caps = info.to_caps().expect("caps").to_string();
        let (cpu, cpu_gpu_frames, _) =
            run_appsrc(&caps, props, "appsink name=sink sync=false", system);
        let cpu = cpu.expect("a frame from the system-memory pipeline");
        assert_eq!(cpu_gpu_frames, 0);

        // The same picture on an NVMM surface in device memory.
        let mut staging = vec![SENTINEL; layout.data_size as usize];
        for (plane, plane_rows) in layout.planes.iter().zip(&rows) {
            for (r, row) in plane_rows.iter().enumerate() {
                let start = (plane.offset + r as u32 * plane.pitch) as usize;
                staging[start..start + row.len()].copy_from_slice(row);
            }
        }
        let device = Arc::new(DeviceBuffer::new(&ctx, staging.len()).expect("device memory"));
        device.upload(&stream, &staging).expect("upload");
        let memory = surface_memory(
            nvmm_abi,
            0,
            abi::NVBUF_MEM_CUDA_DEVICE,
            &layout,
            device.ptr(),
            device.clone(),
        );
        let mut nvmm = gst::Buffer::new();
        nvmm.get_mut().expect("writable").append_memory(memory);
        let caps = format!(
            "video/x-raw(memory:NVMM),format={},width={width},height={height},framerate=30/1",
            format.to_str()
        );
        let (_, gpu_frames, copies) = run_appsrc(&caps, props, "fakesink", nvmm);
        assert_eq!((gpu_frames, copies), (1, 0), "{format:?}: NVMM counters");
        let mut drawn = vec![0u8; staging.len()];
        device.download(&stream, &mut drawn).expect("download");

        // Row by row, and the padding of the pitches untouched.
        let mut packed = Vec::new();
        for plane in &layout.planes {
            let row = plane.width as usize * plane.bytes_per_pix as usize;
            for r in 0..plane.height as usize {
                let start = plane.offset as usize + r * plane.pitch as usize;
                packed.extend_from_slice(&drawn[start..start + row]);
                assert!(
                    drawn[start + row..start + plane.pitch as usize]
                        .iter()
                        .all(|&b| b == SENTINEL),
                    "{format:?}: padding of plane row {r} changed"
                );
            }
        }
        let (max, differ) = compare(&cpu.2, &packed);
        assert_eq!(
            differ, 0,
            "{format:?} on NVMM: {differ} bytes differ, max {max}"
        );
        assert_ne!(
            packed,
            rows.concat().concat(),
            "{format:?}: nothing was drawn"
        );
        println!(
            "GPU-RESULT osd_element_nvmm_{}_max_abs_err {max} levels (pixel copies 0)",
            format_name(format)
        );
    }
}

/// Without a GPU: the element offers CUDA memory and NVMM in every GPU format beside system
/// memory, has the stream priority and counters, and counts nothing when drawing in system
/// memory.
#[test]
fn element_offers_cuda_memory_and_counts_frames() {
    register_rsosd();
    let element = gst::glib::Object::new::<ferrostream_osd::osd::RsOsd>();
    let template = element
        .pad_template("sink")
        .expect("a sink template")
        .caps()
        .clone();
    for features in [
        &["memory:CUDAMemory"][..],
        &["ferrostream:batch", "memory:CUDAMemory"],
        &["memory:NVMM"],
        &["ferrostream:batch", "memory:NVMM"],
        &["memory:SystemMemory"],
        &["ferrostream:batch"],
    ] {
        for format in ["NV12", "I420", "RGBA", "BGRA", "RGBx", "BGRx"] {
            let caps = gst::Caps::builder("video/x-raw")
                .features(features.iter().copied())
                .field("format", format)
                .field("width", 64)
                .field("height", 48)
                .field("framerate", gst::Fraction::new(30, 1))
                .build();
            assert!(
                caps.can_intersect(&template),
                "{features:?} {format} is not offered: {template}"
            );
        }
    }
    assert_eq!(element.property::<i32>("stream-priority"), 0);
    element.set_property("stream-priority", -2i32);
    assert_eq!(element.property::<i32>("stream-priority"), -2);

    // Frames in system memory: drawn by the CPU, no GPU frame, no copy.
    let pipeline = gst::parse::launch(
        "videotestsrc num-buffers=3 ! video/x-raw,format=NV12,width=64,height=48 \
         ! rsosd name=osd display-clock=true ! fakesink",
    )
    .expect("a pipeline")
    .downcast::<gst::Pipeline>()
    .expect("a pipeline");
    let osd = pipeline.by_name("osd").expect("rsosd");
    pipeline.set_state(gst::State::Playing).expect("playing");
    let bus = pipeline.bus().expect("a bus");
    let message = bus
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(10),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .expect("EOS within 10 s");
    assert!(
        matches!(message.view(), gst::MessageView::Eos(_)),
        "{message:?}"
    );
    assert_eq!(osd.property::<u64>("gpu-frames"), 0);
    assert_eq!(osd.property::<u64>("pixel-copies"), 0);
    pipeline.set_state(gst::State::Null).expect("stopped");
}
