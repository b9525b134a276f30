// SPDX-License-Identifier: MIT OR Apache-2.0
//! rsosd: pixels drawn in every format (colours against GStreamer's own RGB to YUV conversion),
//! untouched pixels, labels, blur, clipping, batches, configuration, and an MP4 made after the
//! COCO detector on vtest.avi.

use std::path::PathBuf;

use ferrostream_core::{BBox, Batch, BatchMeta, Frame, Object};
use ferrostream_tests::{element, init, launch, media, model, quoted, repo_root};
use gst::glib;
use gst::prelude::*;
use gst_video::{
    VideoColorMatrix, VideoColorPrimaries, VideoColorRange, VideoColorimetry, VideoFormat,
    VideoFrameExt, VideoInfo, VideoTransferFunction,
};

const W: u32 = 320;
const H: u32 = 240;

/// A frame format and colorimetry to draw on.
#[derive(Debug, Clone, Copy)]
struct Target {
    format: VideoFormat,
    matrix: VideoColorMatrix,
    range: VideoColorRange,
}

impl Target {
    fn rgb(format: VideoFormat) -> Self {
        Self {
            format,
            matrix: VideoColorMatrix::Rgb,
            range: VideoColorRange::Range0_255,
        }
    }

    fn yuv(format: VideoFormat, matrix: VideoColorMatrix, range: VideoColorRange) -> Self {
        Self {
            format,
            matrix,
            range,
        }
    }

    /// Packed RGB with and without alpha, and both YUV layouts in both matrices.
    fn mixed() -> [Self; 4] {
        [
            Self::rgb(VideoFormat::Rgba),
            Self::rgb(VideoFormat::Bgrx),
            Self::yuv(
                VideoFormat::Nv12,
                VideoColorMatrix::Bt709,
                VideoColorRange::Range16_235,
            ),
            Self::yuv(
                VideoFormat::I420,
                VideoColorMatrix::Bt601,
                VideoColorRange::Range16_235,
            ),
        ]
    }

    fn is_yuv(&self) -> bool {
        matches!(self.format, VideoFormat::Nv12 | VideoFormat::I420)
    }

    fn info(&self, width: u32, height: u32) -> VideoInfo {
        init();
        let mut b = VideoInfo::builder(self.format, width, height).fps(gst::Fraction::new(25, 1));
        if self.is_yuv() {
            b = b.colorimetry(&VideoColorimetry::new(
                self.range,
                self.matrix,
                VideoTransferFunction::Bt709,
                VideoColorPrimaries::Bt709,
            ));
        }
        b.build().unwrap()
    }
}

/// Every format and, for YUV, BT.601 and BT.709 in limited range plus BT.601 in full range.
fn targets() -> Vec<Target> {
    use VideoColorMatrix::{Bt601, Bt709};
    use VideoColorRange::{Range0_255, Range16_235};
    let mut t: Vec<Target> = [
        VideoFormat::Rgba,
        VideoFormat::Bgra,
        VideoFormat::Rgbx,
        VideoFormat::Bgrx,
    ]
    .into_iter()
    .map(Target::rgb)
    .collect();
    for format in [VideoFormat::Nv12, VideoFormat::I420] {
        t.push(Target::yuv(format, Bt601, Range16_235));
        t.push(Target::yuv(format, Bt709, Range16_235));
        t.push(Target::yuv(format, Bt601, Range0_255));
    }
    t
}

/// A frame's pixels, copied out of a buffer, with per-pixel accessors.
#[derive(Clone, PartialEq)]
struct Picture {
    info: VideoInfo,
    planes: Vec<Vec<u8>>,
    strides: Vec<usize>,
}

impl Picture {
    fn from_buffer(buffer: &gst::BufferRef, info: &VideoInfo) -> Self {
        let frame = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer, info).unwrap();
        let planes = (0..frame.n_planes())
            .map(|i| frame.plane_data(i).unwrap().to_vec())
            .collect();
        let strides = frame.plane_stride()[..frame.n_planes() as usize]
            .iter()
            .map(|s| *s as usize)
            .collect();
        Self {
            info: info.clone(),
            planes,
            strides,
        }
    }

    /// Noise: every byte pseudo-random, so that untouched pixels are recognisable.
    fn noise(info: &VideoInfo, seed: u32) -> gst::Buffer {
        let mut buffer = gst::Buffer::with_size(info.size()).unwrap();
        let mut state = seed.wrapping_mul(2_654_435_761).max(1);
        buffer
            .get_mut()
            .unwrap()
            .map_writable()
            .unwrap()
            .iter_mut()
            .for_each(|b| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                *b = (state >> 24) as u8;
            });
        buffer
    }

    /// A one-pixel checkerboard of 30 and 220 in every byte: all detail is high-frequency.
    fn checkerboard(info: &VideoInfo) -> gst::Buffer {
        let mut buffer = gst::Buffer::with_size(info.size()).unwrap();
        {
            let b = buffer.get_mut().unwrap();
            let mut frame = gst_video::VideoFrameRef::from_buffer_ref_writable(b, info).unwrap();
            for p in 0..frame.n_planes() {
                let stride = frame.plane_stride()[p as usize] as usize;
                let data = frame.plane_data_mut(p).unwrap();
                for (i, v) in data.iter_mut().enumerate() {
                    let (row, col) = (i / stride, i % stride);
                    let step = if p == 0 && !is_yuv(info) { 4 } else { 1 };
                    let step = if p == 1 && info.format() == VideoFormat::Nv12 {
                        2
                    } else {
                        step
                    };
                    *v = if (row + col / step).is_multiple_of(2) {
                        30
                    } else {
                        220
                    };
                }
            }
        }
        buffer
    }

    /// The bytes of pixel (x, y) in plane 0 (RGB formats: 4 bytes; YUV: the luma byte).
    fn px(&self, x: u32, y: u32) -> &[u8] {
        let step = if is_yuv(&self.info) { 1 } else { 4 };
        let start = y as usize * self.strides[0] + x as usize * step;
        &self.planes[0][start..start + step]
    }

    /// (Cb, Cr) of chroma sample (cx, cy).
    fn chroma(&self, cx: u32, cy: u32) -> [u8; 2] {
        match self.info.format() {
            VideoFormat::Nv12 => {
                let i = cy as usize * self.strides[1] + cx as usize * 2;
                [self.planes[1][i], self.planes[1][i + 1]]
            }
            VideoFormat::I420 => [
                self.planes[1][cy as usize * self.strides[1] + cx as usize],
                self.planes[2][cy as usize * self.strides[2] + cx as usize],
            ],
            f => panic!("{f:?} has no chroma planes"),
        }
    }

    /// The colour of pixel (x, y) as [R, G, B] (RGB formats) or [Y, Cb, Cr].
    fn color(&self, x: u32, y: u32) -> [u8; 3] {
        let p = self.px(x, y);
        match self.info.format() {
            VideoFormat::Rgba | VideoFormat::Rgbx => [p[0], p[1], p[2]],
            VideoFormat::Bgra | VideoFormat::Bgrx => [p[2], p[1], p[0]],
            _ => {
                let [u, v] = self.chroma(x >> 1, y >> 1);
                [p[0], u, v]
            }
        }
    }

    /// Sum of absolute differences between horizontally and vertically adjacent luma (or
    /// first-channel) values inside a rectangle: a measure of fine detail.
    fn detail(&self, x0: u32, y0: u32, x1: u32, y1: u32) -> u64 {
        let mut sum = 0u64;
        for y in y0..y1 - 1 {
            for x in x0..x1 - 1 {
                let v = self.px(x, y)[0] as i32;
                sum += (v - self.px(x + 1, y)[0] as i32).unsigned_abs() as u64;
                sum += (v - self.px(x, y + 1)[0] as i32).unsigned_abs() as u64;
            }
        }
        sum
    }
}

fn is_yuv(info: &VideoInfo) -> bool {
    matches!(info.format(), VideoFormat::Nv12 | VideoFormat::I420)
}

/// What GStreamer's converter makes of an RGB colour in `target`'s format: [Y, Cb, Cr] for YUV,
/// [R, G, B] for RGB.
fn reference(target: Target, rgb: [u8; 3]) -> [u8; 3] {
    if !target.is_yuv() {
        return rgb;
    }
    let src_info = VideoInfo::builder(VideoFormat::Rgba, 16, 16)
        .fps(gst::Fraction::new(25, 1))
        .build()
        .unwrap();
    let dst_info = target.info(16, 16);
    let mut src = gst::Buffer::with_size(src_info.size()).unwrap();
    src.get_mut()
        .unwrap()
        .map_writable()
        .unwrap()
        .chunks_exact_mut(4)
        .for_each(|p| p.copy_from_slice(&[rgb[0], rgb[1], rgb[2], 255]));
    let mut dst = gst::Buffer::with_size(dst_info.size()).unwrap();
    let mut config = gst_video::VideoConverterConfig::new();
    config.set_dither_method(gst_video::VideoDitherMethod::None);
    let converter = gst_video::VideoConverter::new(&src_info, &dst_info, Some(config)).unwrap();
    {
        let src_frame =
            gst_video::VideoFrameRef::from_buffer_ref_readable(&src, &src_info).unwrap();
        let mut dst_frame =
            gst_video::VideoFrameRef::from_buffer_ref_writable(dst.get_mut().unwrap(), &dst_info)
                .unwrap();
        converter.frame_ref(&src_frame, &mut dst_frame);
    }
    Picture::from_buffer(&dst, &dst_info).color(8, 8)
}

fn assert_close(what: &str, got: [u8; 3], want: [u8; 3], tolerance: u8) {
    let ok = got
        .iter()
        .zip(want)
        .all(|(g, w)| g.abs_diff(w) <= tolerance);
    assert!(
        ok,
        "{what}: got {got:?}, want {want:?} (within {tolerance})"
    );
}

fn object(class_id: i32, label: &str, b: BBox) -> Object {
    Object::new(class_id, label.into(), 0.9, b, 1)
}

/// Sets properties; strings given for enum properties are read as their nicks.
fn set_properties(element: &gst::Element, props: &[(&str, &dyn ToValue)]) {
    for (name, value) in props {
        let value = value.to_value();
        let pspec = element.find_property(name).unwrap();
        match value.get::<&str>() {
            Ok(text) if pspec.value_type() != glib::Type::STRING => {
                element.set_property_from_str(name, text)
            }
            _ => element.set_property_from_value(name, &value),
        }
    }
}

/// Runs one buffer of `info` carrying `objects` through `rsosd` with `props`.
fn draw(
    info: &VideoInfo,
    input: &gst::Buffer,
    objects: &[Object],
    props: &[(&str, &dyn ToValue)],
) -> Picture {
    let mut frame = Frame::new(0, 0, info.width(), info.height());
    frame.objects = objects.to_vec();
    draw_frame(info, input, frame, props)
}

/// Runs one buffer of `info` carrying `frame`'s metadata through `rsosd` with `props`.
fn draw_frame(
    info: &VideoInfo,
    input: &gst::Buffer,
    frame: Frame,
    props: &[(&str, &dyn ToValue)],
) -> Picture {
    init();
    let osd = gst::ElementFactory::make("rsosd").build().unwrap();
    set_properties(&osd, props);
    let mut h = gst_check::Harness::with_element(&osd, Some("sink"), Some("src"));
    h.set_src_caps(info.to_caps().unwrap());
    let mut buffer = input.copy_deep().unwrap();
    {
        let b = buffer.get_mut().unwrap();
        b.set_pts(gst::ClockTime::ZERO);
        BatchMeta::add(b, Batch::single(frame));
    }
    h.push(buffer).unwrap();
    let out = h.pull().unwrap();
    Picture::from_buffer(&out, info)
}

/// The pixels of the border band of width `bw` inside the box `[x0, x1) x [y0, y1)`.
fn border_pixels(x0: u32, y0: u32, x1: u32, y1: u32, bw: u32) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    for y in y0..y1 {
        for x in x0..x1 {
            let on = x < x0 + bw || x >= x1 - bw || y < y0 + bw || y >= y1 - bw;
            if on {
                v.push((x, y));
            }
        }
    }
    v
}

/// Whether the chroma sample (cx, cy) covers only pixels for which `f` holds.
fn chroma_block_all(cx: u32, cy: u32, f: impl Fn(u32, u32) -> bool) -> bool {
    (0..2).all(|dy| (0..2).all(|dx| f(2 * cx + dx, 2 * cy + dy)))
}

fn inside(x: u32, y: u32, r: (u32, u32, u32, u32)) -> bool {
    x >= r.0 && x < r.2 && y >= r.1 && y < r.3
}

#[test]
fn borders_carry_the_class_colour_and_nothing_else_changes() {
    // Two classes with configured colours; box edges on even coordinates.
    let boxes = [(40u32, 60u32, 140u32, 160u32), (200, 20, 300, 120)];
    let colors = [[224u8, 48, 16], [16, 192, 240]];
    let bw = 4;
    for target in targets() {
        let info = target.info(W, H);
        let input = Picture::noise(&info, 7);
        let objects: Vec<Object> = boxes
            .iter()
            .enumerate()
            .map(|(i, b)| {
                object(
                    i as i32,
                    "thing",
                    BBox::from_corners(b.0 as f32, b.1 as f32, b.2 as f32, b.3 as f32),
                )
            })
            .collect();
        let before = Picture::from_buffer(&input, &info);
        let after = draw(
            &info,
            &input,
            &objects,
            &[
                ("display-text", &false),
                ("border-width", &bw),
                ("class-colors", &"0=#e03010,1=#10c0f0"),
            ],
        );
        for (b, rgb) in boxes.iter().zip(colors) {
            let want = reference(target, rgb);
            for (x, y) in border_pixels(b.0, b.1, b.2, b.3, bw) {
                let tolerance = if target.is_yuv() { 2 } else { 0 };
                assert_close(
                    &format!("{target:?} border pixel ({x}, {y})"),
                    after.color(x, y),
                    want,
                    tolerance,
                );
            }
        }
        // Outside the boxes (and inside, away from the border) nothing changed.
        let in_box = |x, y| boxes.iter().any(|b| inside(x, y, *b));
        let on_border = |x, y| {
            boxes.iter().any(|b| {
                inside(x, y, *b) && !inside(x, y, (b.0 + bw, b.1 + bw, b.2 - bw, b.3 - bw))
            })
        };
        let mut checked = 0;
        for y in 0..H {
            for x in 0..W {
                if !on_border(x, y) {
                    assert_eq!(
                        after.px(x, y),
                        before.px(x, y),
                        "{target:?} pixel ({x}, {y}) off the border changed"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > (W * H / 2) as usize);
        if target.is_yuv() {
            for cy in 0..H / 2 {
                for cx in 0..W / 2 {
                    let untouched = chroma_block_all(cx, cy, |x, y| !in_box(x, y))
                        || chroma_block_all(cx, cy, |x, y| in_box(x, y) && !on_border(x, y));
                    if untouched {
                        assert_eq!(
                            after.chroma(cx, cy),
                            before.chroma(cx, cy),
                            "{target:?} chroma ({cx}, {cy})"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn odd_edges_on_yuv_colour_the_shared_chroma_and_leave_the_rest() {
    // A box with odd edges and a one-pixel border: the chroma samples its border touches get the
    // colour; luma outside the box is untouched.
    for target in targets().into_iter().filter(Target::is_yuv) {
        let info = target.info(W, H);
        let input = Picture::noise(&info, 11);
        let b = (31u32, 41u32, 101u32, 91u32);
        let before = Picture::from_buffer(&input, &info);
        let after = draw(
            &info,
            &input,
            &[object(0, "x", BBox::from_corners(31.0, 41.0, 101.0, 91.0))],
            &[
                ("display-text", &false),
                ("border-width", &1u32),
                ("border-color", &0x00ff00ffu32),
            ],
        );
        let want = reference(target, [0, 255, 0]);
        for (x, y) in border_pixels(b.0, b.1, b.2, b.3, 1) {
            assert_close(
                &format!("{target:?} ({x}, {y})"),
                after.color(x, y),
                want,
                2,
            );
        }
        for y in 0..H {
            for x in 0..W {
                if !inside(x, y, b) {
                    assert_eq!(after.px(x, y), before.px(x, y), "{target:?} ({x}, {y})");
                }
            }
        }
        // Chroma samples two or more pixels away from the box are untouched.
        for cy in 0..H / 2 {
            for cx in 0..W / 2 {
                let far = chroma_block_all(cx, cy, |x, y| {
                    !inside(x, y, (b.0 - 1, b.1 - 1, b.2 + 1, b.3 + 1))
                });
                if far {
                    assert_eq!(after.chroma(cx, cy), before.chroma(cx, cy));
                }
            }
        }
    }
}

/// Pixels in `rect` whose colour is within `tolerance` of `want`.
fn count_color(
    p: &Picture,
    rect: (u32, u32, u32, u32),
    want: [u8; 3],
    tolerance: u8,
    luma_only: bool,
) -> usize {
    let mut n = 0;
    for y in rect.1..rect.3 {
        for x in rect.0..rect.2 {
            let c = p.color(x, y);
            let close = if luma_only {
                c[0].abs_diff(want[0]) <= tolerance
            } else {
                c.iter().zip(want).all(|(a, b)| a.abs_diff(b) <= tolerance)
            };
            n += close as usize;
        }
    }
    n
}

#[test]
fn labels_show_glyphs_in_the_text_colour_on_their_background() {
    let label_area = (60u32, 70u32, 300u32, 100u32);
    for font in ["", "builtin"] {
        for target in Target::mixed() {
            let info = target.info(W, H);
            let input = Picture::noise(&info, 3);
            let before = Picture::from_buffer(&input, &info);
            let mut o = object(0, "person", BBox::from_corners(60.0, 100.0, 200.0, 200.0));
            o.object_id = Some(42);
            let after = draw(
                &info,
                &input,
                &[o],
                &[
                    ("font", &font),
                    ("text-size", &16u32),
                    ("text-color", &0xffffffffu32),
                    ("text-bg-color", &0x202020ffu32),
                    ("display-bbox", &false),
                ],
            );
            let white = reference(target, [255, 255, 255]);
            let dark = reference(target, [32, 32, 32]);
            // Glyph strokes: fully covered pixels carry the text colour (luma for YUV, where a
            // stroke is often thinner than a chroma sample).
            let glyph_pixels = count_color(&after, label_area, white, 2, target.is_yuv());
            let background = count_color(&after, label_area, dark, 2, target.is_yuv());
            assert!(
                glyph_pixels >= 60,
                "{target:?} font {font:?}: {glyph_pixels} glyph pixels"
            );
            assert!(
                background >= 1000,
                "{target:?} font {font:?}: {background} background pixels"
            );
            // The label sits right above the box: the rows above it are untouched.
            for y in 0..60 {
                for x in 0..W {
                    assert_eq!(after.px(x, y), before.px(x, y), "({x}, {y})");
                }
            }
            // The text reads "person 42 0.90": wider than a single word, narrower than the
            // frame. Columns of the label are those whose bottom padding row has the background.
            let columns_with_text: Vec<u32> = (0..W)
                .filter(|&x| after.color(x, 99)[0].abs_diff(dark[0]) <= 2)
                .filter(|&x| (80..99).any(|y| after.color(x, y)[0].abs_diff(white[0]) <= 2))
                .collect();
            let span = columns_with_text.last().unwrap() - columns_with_text[0];
            assert!(
                (90..250).contains(&span),
                "{target:?} {font:?}: text span {span}"
            );
        }
    }
}

#[test]
fn glyphs_differ_between_texts() {
    // Different words produce different pixels (the text is rendered, not a fixed stamp).
    let target = Target::rgb(VideoFormat::Rgba);
    let info = target.info(W, H);
    let input = Picture::noise(&info, 5);
    let render = |label: &str| {
        draw(
            &info,
            &input,
            &[object(
                0,
                label,
                BBox::from_corners(20.0, 60.0, 200.0, 200.0),
            )],
            &[("display-bbox", &false), ("label-format", &"{label}")],
        )
    };
    let a = render("car");
    let b = render("bus");
    let differing = (0..60)
        .flat_map(|y| (0..W).map(move |x| (x, y)))
        .filter(|&(x, y)| a.px(x, y) != b.px(x, y))
        .count();
    assert!(differing > 20, "{differing} pixels differ");
}

#[test]
fn blur_removes_detail_inside_and_keeps_every_pixel_outside() {
    let rect = (81u32, 51u32, 201u32, 171u32);
    for mode in ["pixelate", "blur"] {
        for target in targets() {
            let info = target.info(W, H);
            let input = Picture::checkerboard(&info);
            let before = Picture::from_buffer(&input, &info);
            let osd = [
                ("display-bbox", &false as &dyn ToValue),
                ("display-text", &false),
                ("blur-class-ids", &"1"),
                ("blur-mode", &mode),
                ("blur-strength", &8u32),
            ];
            let after = draw(
                &info,
                &input,
                &[
                    object(
                        1,
                        "face",
                        BBox::from_corners(
                            rect.0 as f32,
                            rect.1 as f32,
                            rect.2 as f32,
                            rect.3 as f32,
                        ),
                    ),
                    // Another class is not blurred.
                    object(0, "person", BBox::from_corners(10.0, 10.0, 60.0, 60.0)),
                ],
                &osd,
            );
            let (d_before, d_after) = (
                before.detail(rect.0, rect.1, rect.2, rect.3),
                after.detail(rect.0, rect.1, rect.2, rect.3),
            );
            assert!(
                d_after * 10 < d_before,
                "{mode} {target:?}: detail {d_before} -> {d_after}"
            );
            assert_eq!(
                after.detail(10, 10, 60, 60),
                before.detail(10, 10, 60, 60),
                "{mode} {target:?}: class 0 was blurred"
            );
            for y in 0..H {
                for x in 0..W {
                    if !inside(x, y, rect) {
                        assert_eq!(
                            after.px(x, y),
                            before.px(x, y),
                            "{mode} {target:?} ({x}, {y})"
                        );
                    }
                }
            }
            if target.is_yuv() {
                for cy in 0..H / 2 {
                    for cx in 0..W / 2 {
                        if !chroma_block_all(cx, cy, |x, y| inside(x, y, rect)) {
                            assert_eq!(after.chroma(cx, cy), before.chroma(cx, cy));
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn boxes_partly_or_wholly_off_frame_are_clipped() {
    let boxes = [
        BBox::from_corners(-50.0, -40.0, 100.0, 80.0),
        BBox::from_corners(250.0, 200.0, 400.0, 300.0),
        BBox::from_corners(-1000.0, -1000.0, 5000.0, 5000.0),
        BBox::from_corners(500.0, 500.0, 600.0, 600.0),
        BBox::new(100.0, 100.0, 0.0, 0.0),
        BBox::new(f32::NAN, 10.0, f32::INFINITY, 5.0),
    ];
    for target in targets() {
        let info = target.info(W, H);
        let input = Picture::noise(&info, 9);
        let before = Picture::from_buffer(&input, &info);
        let objects: Vec<Object> = boxes.iter().map(|b| object(0, "edge", *b)).collect();
        let after = draw(
            &info,
            &input,
            &objects,
            &[("border-color", &0xff0000ffu32), ("border-width", &3u32)],
        );
        let red = reference(target, [255, 0, 0]);
        let tolerance = if target.is_yuv() { 2 } else { 0 };
        // Box 0: right and bottom edges visible, left and top off frame.
        assert_close("right edge of box 0", after.color(98, 40), red, tolerance);
        assert_close("bottom edge of box 0", after.color(40, 78), red, tolerance);
        // Box 1: its left and top edges.
        assert_close("left edge of box 1", after.color(251, 220), red, tolerance);
        assert_close("top edge of box 1", after.color(300, 201), red, tolerance);
        // The off-frame edges are not pulled onto the frame's edges: box 0's left and top
        // sides, box 1's right and bottom sides, and box 2's whole border leave those pixels as
        // they were.
        for (x, y) in [
            (0, 60),
            (2, 60),
            (88, 1),
            (W - 1, 220),
            (W - 3, 230),
            (280, H - 1),
            // Box 3 is wholly outside: no label of it is pulled into the corner.
            (300, 235),
        ] {
            assert_eq!(after.px(x, y), before.px(x, y), "{target:?} ({x}, {y})");
        }
        // Box 2 covers the frame: its border is off frame, nothing of it shows in the middle.
        assert_eq!(after.px(160, 150), before.px(160, 150));
    }
}

#[test]
fn clock_and_source_text_are_drawn() {
    let target = Target::yuv(
        VideoFormat::Nv12,
        VideoColorMatrix::Bt709,
        VideoColorRange::Range16_235,
    );
    let info = target.info(W, H);
    let input = Picture::noise(&info, 13);
    let before = Picture::from_buffer(&input, &info);
    let after = draw(
        &info,
        &input,
        &[],
        &[
            ("display-clock", &true),
            ("clock-color", &0x00ff00ffu32),
            ("clock-font-size", &20u32),
            ("x-clock-offset", &20u32),
            ("y-clock-offset", &30u32),
            ("source-text", &"0=Gate"),
            ("text-color", &0xffff00ffu32),
        ],
    );
    let green = reference(target, [0, 255, 0]);
    let yellow = reference(target, [255, 255, 0]);
    let clock = count_color(&after, (20, 30, 300, 60), green, 2, true);
    assert!(clock >= 80, "{clock} clock pixels");
    // The clock starts at its offset: nothing changes left of it or above it.
    for y in 0..30 {
        for x in 0..W {
            assert_eq!(after.px(x, y), before.px(x, y));
        }
    }
    let source = count_color(&after, (10, H - 50, 120, H - 10), yellow, 2, true);
    assert!(source >= 30, "{source} source text pixels");
}

#[test]
fn batches_are_drawn_on_every_frame() {
    // Two sources of different sizes batched; a probe adds one box per frame, proportional to
    // the frame; rsosd draws on each surface.
    let pipeline = launch(
        "rsstreammux name=mux batch-size=2 ! identity name=tag ! rsosd border-color=0x0000ffff \
           border-width=2 display-text=false ! appsink name=sink \
         videotestsrc pattern=black num-buffers=3 ! video/x-raw,format=NV12,width=320,height=240,framerate=25/1 ! mux.sink_0 \
         videotestsrc pattern=black num-buffers=3 ! video/x-raw,format=NV12,width=160,height=96,framerate=25/1 ! mux.sink_1",
    );
    let tag: gst::Element = element(&pipeline, "tag");
    tag.static_pad("src")
        .unwrap()
        .add_probe(gst::PadProbeType::BUFFER, |_, info| {
            if let Some(gst::PadProbeData::Buffer(buffer)) = &mut info.data {
                let b = buffer.make_mut();
                if let Some(mut meta) = b.meta_mut::<BatchMeta>() {
                    for f in &mut meta.batch_mut().frames {
                        let (w, h) = (f.width as f32, f.height as f32);
                        f.objects.push(object(
                            0,
                            "x",
                            BBox::from_corners(w * 0.25, h * 0.25, w * 0.75, h * 0.75),
                        ));
                    }
                }
            }
            gst::PadProbeReturn::Ok
        });
    let sink: gst_app::AppSink = element(&pipeline, "sink");
    sink.set_property("sync", false);
    pipeline.set_state(gst::State::Playing).unwrap();
    let blue = reference(
        Target::yuv(
            VideoFormat::Nv12,
            VideoColorMatrix::Bt601,
            VideoColorRange::Range16_235,
        ),
        [0, 0, 255],
    );
    let mut frames = 0;
    while let Some(sample) = sink.try_pull_sample(gst::ClockTime::from_seconds(30)) {
        let buffer = sample.buffer().unwrap();
        let meta = buffer.meta::<BatchMeta>().unwrap();
        for (frame, surface) in meta.batch().frames.iter().zip(meta.surfaces()) {
            let p = Picture::from_buffer(&surface.buffer, surface.info());
            let (w, h) = (frame.width, frame.height);
            // Left edge of the box, half-way down; black (16) just outside it.
            let (x, y) = (w / 4, h / 2);
            assert!(
                p.color(x, y)[0].abs_diff(blue[0]) <= 2,
                "source {}: {:?} at ({x}, {y})",
                frame.source_id,
                p.color(x, y)
            );
            assert_eq!(p.color(x - 1, y)[0], 16, "source {}", frame.source_id);
            assert_eq!(p.color(w / 2, h / 2)[0], 16, "inside the box");
            frames += 1;
        }
    }
    pipeline.set_state(gst::State::Null).unwrap();
    assert_eq!(frames, 6, "three frames of each source");
}

fn temp_file(name: &str, contents: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrostream-osd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

#[test]
fn config_file_sets_classes_and_properties_override_it() {
    let path = temp_file(
        "osd.ini",
        "[osd]\nborder-width=6\ntext-size=18\n\n[class-attrs-1]\nborder-color=0;1;0;1\n\
         bg-color=0;0;1;0.5\n",
    );
    let target = Target::rgb(VideoFormat::Rgba);
    let info = target.info(W, H);
    let input = Picture::noise(&info, 17);
    let before = Picture::from_buffer(&input, &info);
    let objects = [
        object(1, "a", BBox::from_corners(40.0, 40.0, 120.0, 120.0)),
        object(0, "b", BBox::from_corners(160.0, 40.0, 240.0, 120.0)),
    ];
    let after = draw(
        &info,
        &input,
        &objects,
        &[
            ("config-file-path", &path.to_str().unwrap()),
            ("display-text", &false),
        ],
    );
    // Class 1: green border 6 wide; a half-transparent blue fill inside.
    assert_eq!(after.color(45, 80), [0, 255, 0]);
    assert_ne!(after.color(46, 80), [0, 255, 0]);
    let (inside_before, inside_after) = (before.color(80, 80), after.color(80, 80));
    let blended = |d: u8, s: u8| ((s as u32 * 128 + d as u32 * 127 + 127) / 255) as u8;
    assert_close(
        "blue fill",
        inside_after,
        [
            blended(inside_before[0], 0),
            blended(inside_before[1], 0),
            blended(inside_before[2], 255),
        ],
        1,
    );
    // Class 0 keeps the palette colour, also 6 wide.
    assert_eq!(after.color(165, 80), after.color(160, 80));
    assert_ne!(after.color(166, 80), after.color(160, 80));
    // A property set on the element wins over the file.
    let after = draw(
        &info,
        &input,
        &objects,
        &[
            ("config-file-path", &path.to_str().unwrap()),
            ("display-text", &false),
            ("border-width", &2u32),
        ],
    );
    assert_eq!(after.color(41, 80), [0, 255, 0]);
    assert_eq!(after.color(42, 80), blended_pixel(&before, 42, 80));
}

fn blended_pixel(before: &Picture, x: u32, y: u32) -> [u8; 3] {
    let b = before.color(x, y);
    let blended = |d: u8, s: u8| ((s as u32 * 128 + d as u32 * 127 + 127) / 255) as u8;
    [blended(b[0], 0), blended(b[1], 0), blended(b[2], 255)]
}

/// Starts `rsosd` with `props` on RGBA caps and returns the error message, if any.
fn start_error(props: &[(&str, &dyn ToValue)]) -> Option<String> {
    let pipeline =
        launch("videotestsrc num-buffers=1 ! video/x-raw,format=RGBA ! rsosd name=osd ! fakesink");
    let osd: gst::Element = element(&pipeline, "osd");
    set_properties(&osd, props);
    let bus = pipeline.bus().unwrap();
    let _ = pipeline.set_state(gst::State::Playing);
    let msg = bus.timed_pop_filtered(
        gst::ClockTime::from_seconds(10),
        &[gst::MessageType::Error, gst::MessageType::Eos],
    );
    pipeline.set_state(gst::State::Null).unwrap();
    match msg?.view() {
        gst::MessageView::Error(e) => Some(format!("{} {:?}", e.error(), e.debug())),
        _ => None,
    }
}

#[test]
fn bad_settings_are_clear_errors() {
    let err = start_error(&[("font", &"/nonexistent/fonts/Missing.ttf")]).unwrap();
    assert!(err.contains("/nonexistent/fonts/Missing.ttf"), "{err}");
    let path = temp_file("bad.ini", "[osd]\nborder-width=6\ntext-color=purple\n");
    let err = start_error(&[("config-file-path", &path.to_str().unwrap())]).unwrap();
    assert!(
        err.contains("bad.ini:3") && err.contains("text-color"),
        "{err}"
    );
    let err = start_error(&[("config-file-path", &"/nonexistent/osd.ini")]).unwrap();
    assert!(err.contains("/nonexistent/osd.ini"), "{err}");
    let err = start_error(&[("clock-format", &"%Q")]).unwrap();
    assert!(err.contains("clock-format"), "{err}");
    // A good configuration starts.
    assert_eq!(start_error(&[]), None);
}

#[test]
fn unparsable_property_values_keep_the_previous_value() {
    init();
    let osd = gst::ElementFactory::make("rsosd").build().unwrap();
    osd.set_property("label-format", "{label}");
    osd.set_property("label-format", "{nope}");
    assert_eq!(osd.property::<String>("label-format"), "{label}");
    osd.set_property("class-colors", "1=#00ff00");
    osd.set_property("class-colors", "1=green");
    assert_eq!(osd.property::<String>("class-colors"), "1=0x00ff00ff");
    osd.set_property("source-text", "0=Gate;2=Yard");
    assert_eq!(osd.property::<String>("source-text"), "0=Gate;2=Yard");
}

/// The boxes of the first frame of `buffer`'s metadata.
fn boxes_of(buffer: &gst::BufferRef) -> Vec<BBox> {
    BatchMeta::of(buffer)
        .map(|m| {
            m.batch().frames[0]
                .objects
                .iter()
                .map(|o| o.bbox())
                .collect()
        })
        .unwrap_or_default()
}

/// Plays `pipeline` until EOS; an error message, or no EOS within `seconds`, fails the test.
fn play_to_eos(pipeline: &gst::Pipeline, seconds: u64) {
    let bus = pipeline.bus().unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let msg = bus
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(seconds),
            &[gst::MessageType::Error, gst::MessageType::Eos],
        )
        .expect("the pipeline ends");
    pipeline.set_state(gst::State::Null).unwrap();
    if let gst::MessageView::Error(e) = msg.view() {
        panic!("{} {:?}", e.error(), e.debug());
    }
}

/// Frames decoded from `location` (any container GStreamer reads) as RGBA.
fn decode_rgba(location: &str, frames: usize) -> Vec<Picture> {
    let pipeline = launch(&format!(
        "filesrc location={location} ! decodebin ! videoconvert ! video/x-raw,format=RGBA \
         ! appsink name=sink sync=false"
    ));
    let sink: gst_app::AppSink = element(&pipeline, "sink");
    pipeline.set_state(gst::State::Playing).unwrap();
    let mut out = Vec::new();
    while out.len() < frames {
        let Some(sample) = sink.try_pull_sample(gst::ClockTime::from_seconds(60)) else {
            break;
        };
        let info = VideoInfo::from_caps(sample.caps().unwrap()).unwrap();
        out.push(Picture::from_buffer(sample.buffer().unwrap(), &info));
    }
    pipeline.set_state(gst::State::Null).unwrap();
    out
}

#[test]
fn mp4_after_the_detector_shows_boxes_and_labels() {
    let dir = std::env::temp_dir().join(format!("ferrostream-osd-mp4-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mp4 = dir.join("vtest-osd.mp4");
    let pipeline = launch(&format!(
        "filesrc location={} ! decodebin ! videoconvert ! video/x-raw,format=I420 \
         ! identity eos-after=25 \
         ! rstrtinfer config-file-path={} onnx-file={} labelfile-path={} \
         ! rsosd name=osd border-width=4 border-color=0xff0000ff text-color=0xffffffff \
         ! videoconvert ! avenc_mpeg4 bitrate=8000000 ! mp4mux ! filesink location={}",
        quoted(&media("vtest.avi")),
        quoted(&repo_root().join("pipelines/coco_ssd.txt")),
        quoted(&model("coco_ssdlite_mobilenet_v2.onnx")),
        quoted(&model("object_detection_classes_coco.txt")),
        quoted(&mp4)
    ));
    // The boxes rsosd drew, per frame.
    let drawn = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Vec<BBox>>::new()));
    let osd: gst::Element = element(&pipeline, "osd");
    let record = drawn.clone();
    osd.static_pad("src")
        .unwrap()
        .add_probe(gst::PadProbeType::BUFFER, move |_, info| {
            if let Some(buffer) = info.buffer() {
                record.lock().unwrap().push(boxes_of(buffer));
            }
            gst::PadProbeReturn::Ok
        });
    play_to_eos(&pipeline, 600);
    let drawn = drawn.lock().unwrap().clone();
    let index = 20;
    let original = &decode_rgba(&quoted(&media("vtest.avi")), index + 1)[index];
    let pictures = decode_rgba(&quoted(&mp4), drawn.len());
    assert_eq!(
        pictures.len(),
        drawn.len(),
        "every drawn frame is in the MP4"
    );
    let picture = &pictures[index];
    let (w, h) = (picture.info.width() as f32, picture.info.height() as f32);
    // The largest detection fully inside the frame.
    let target = drawn[index]
        .iter()
        .filter(|b| b.left >= 4.0 && b.top >= 30.0 && b.right() <= w - 4.0 && b.bottom() <= h - 4.0)
        .max_by(|a, b| a.area().total_cmp(&b.area()))
        .copied()
        .expect("a detection in frame 20 of vtest.avi");
    let is_red = |c: [u8; 3]| c[0] > 150 && c[1] < 90 && c[2] < 90;
    // Sample the middle of the 4-pixel border band along all four edges.
    let (x0, y0, x1, y1) = (
        target.left.round() as u32,
        target.top.round() as u32,
        target.right().round() as u32,
        target.bottom().round() as u32,
    );
    let mut samples = Vec::new();
    for x in (x0 + 4..x1 - 4).step_by(2) {
        samples.push((x, y0 + 2));
        samples.push((x, y1 - 3));
    }
    for y in (y0 + 4..y1 - 4).step_by(2) {
        samples.push((x0 + 2, y));
        samples.push((x1 - 3, y));
    }
    let red_in_mp4 = samples
        .iter()
        .filter(|&&(x, y)| is_red(picture.color(x, y)))
        .count();
    let red_before = samples
        .iter()
        .filter(|&&(x, y)| is_red(original.color(x, y)))
        .count();
    assert!(
        red_in_mp4 * 10 >= samples.len() * 9,
        "{red_in_mp4} of {} border samples red in the MP4 (box {target:?})",
        samples.len()
    );
    assert!(
        red_before * 10 < samples.len(),
        "the source itself is red there"
    );
    // The label above the box: a red background with white glyphs.
    let label = (x0, y0.saturating_sub(24), (x0 + 80).min(w as u32), y0);
    // Glyph pixels: bright in every channel, unlike the red background.
    let white = (label.1..label.3)
        .flat_map(|y| (label.0..label.2).map(move |x| (x, y)))
        .filter(|&(x, y)| picture.color(x, y).iter().all(|&c| c > 150))
        .count();
    let red_label = (label.1..label.3)
        .flat_map(|y| (label.0..label.2).map(move |x| (x, y)))
        .filter(|&(x, y)| is_red(picture.color(x, y)))
        .count();
    assert!(white >= 20, "{white} white label pixels");
    assert!(red_label >= 200, "{red_label} red label pixels");
    if std::env::var_os("FERROSTREAM_KEEP_TEST_OUTPUT").is_none() {
        std::fs::remove_dir_all(&dir).ok();
    }
}

#[test]
fn centerface_faces_are_blurred_in_real_footage() {
    let pipeline = launch(&format!(
        "filesrc location={} ! qtdemux ! decodebin ! videoconvert ! video/x-raw,format=I420 \
         ! identity eos-after=5 \
         ! rstrtinfer config-file-path={} onnx-file={} infer-dims=3;192;224 \
         ! rsosd name=osd blur-class-ids=0 blur-mode=pixelate blur-strength=12 \
           display-bbox=false display-text=false ! fakesink",
        quoted(&media("carphone_pristine.mp4")),
        quoted(&repo_root().join("pipelines/centerface.txt")),
        quoted(&model("centerface.onnx"))
    ));
    type Seen = std::sync::Arc<std::sync::Mutex<Vec<(Picture, Vec<BBox>)>>>;
    let before: Seen = Default::default();
    let after: Seen = Default::default();
    let osd: gst::Element = element(&pipeline, "osd");
    for (pad, seen) in [("sink", before.clone()), ("src", after.clone())] {
        osd.static_pad(pad)
            .unwrap()
            .add_probe(gst::PadProbeType::BUFFER, move |pad, info| {
                let caps = pad.current_caps().unwrap();
                let video = VideoInfo::from_caps(&caps).unwrap();
                if let Some(buffer) = info.buffer() {
                    let faces = boxes_of(buffer);
                    seen.lock()
                        .unwrap()
                        .push((Picture::from_buffer(buffer, &video), faces));
                }
                gst::PadProbeReturn::Ok
            });
    }
    play_to_eos(&pipeline, 120);
    let (before, after) = (before.lock().unwrap(), after.lock().unwrap());
    assert!(before.len() >= 5 && before.len() == after.len());
    let mut faces = 0;
    for ((original, boxes), (drawn, _)) in before.iter().zip(after.iter()) {
        for b in boxes {
            let (w, h) = (original.info.width(), original.info.height());
            let r = b.clipped(w as f32, h as f32);
            let (x0, y0) = (r.left.ceil() as u32, r.top.ceil() as u32);
            let (x1, y1) = (r.right().floor() as u32, r.bottom().floor() as u32);
            let (d_before, d_after) = (
                original.detail(x0, y0, x1, y1),
                drawn.detail(x0, y0, x1, y1),
            );
            assert!(
                d_after * 3 < d_before,
                "face {b:?}: detail {d_before} -> {d_after}"
            );
            faces += 1;
        }
        // Away from the faces, the picture is untouched.
        let w = original.info.width();
        for y in 0..original.info.height() {
            for x in 0..w {
                let near_face = boxes.iter().any(|b| {
                    x as f32 >= b.left - 1.0
                        && (x as f32) < b.right() + 1.0
                        && y as f32 >= b.top - 1.0
                        && (y as f32) < b.bottom() + 1.0
                });
                if !near_face {
                    assert_eq!(drawn.px(x, y), original.px(x, y), "({x}, {y})");
                }
            }
        }
    }
    assert!(faces >= 5, "{faces} faces blurred");
}

#[test]
fn shipped_osd_config_loads_without_warnings() {
    let config = repo_root().join("pipelines/osd.ini");
    let desc = format!(
        "videotestsrc num-buffers=2 ! video/x-raw,format=NV12,width=320,height=240 \
         ! rsosd config-file-path={} ! appsink name=sink",
        quoted(&config)
    );
    let out = ferrostream_tests::run_pipeline(&desc, std::time::Duration::from_secs(30)).unwrap();
    assert_eq!(out.frames.len(), 2);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    let (style, warnings) = ferrostream_osd::config::load(&config).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(style.display_clock);
    assert_eq!(style.border_width, 2);
    assert_eq!(style.class(2).bg_color.a, 38);
}

#[test]
fn appearance_changes_while_playing() {
    init();
    let target = Target::rgb(VideoFormat::Rgba);
    let info = target.info(W, H);
    let osd = gst::ElementFactory::make("rsosd")
        .property("display-bbox", false)
        .property("display-text", false)
        .build()
        .unwrap();
    let mut h = gst_check::Harness::with_element(&osd, Some("sink"), Some("src"));
    h.set_src_caps(info.to_caps().unwrap());
    let push = |h: &mut gst_check::Harness, pts: u64| {
        let mut buffer = Picture::noise(&info, 21);
        let b = buffer.get_mut().unwrap();
        b.set_pts(gst::ClockTime::from_mseconds(pts));
        let mut frame = Frame::new(0, 0, W, H);
        frame
            .objects
            .push(object(0, "x", BBox::from_corners(40.0, 40.0, 120.0, 120.0)));
        BatchMeta::add(b, Batch::single(frame));
        h.push(buffer).unwrap();
        Picture::from_buffer(&h.pull().unwrap(), &info)
    };
    let before = Picture::from_buffer(&Picture::noise(&info, 21), &info);
    assert_eq!(push(&mut h, 0).color(41, 80), before.color(41, 80));
    osd.set_property("display-bbox", true);
    osd.set_property("border-color", 0x00ff00ffu32);
    assert_eq!(push(&mut h, 40).color(41, 80), [0, 255, 0]);
    osd.set_property("border-color", 0xff0000ffu32);
    assert_eq!(push(&mut h, 80).color(41, 80), [255, 0, 0]);
}

/// `d` with `s` blended over it at alpha `a`, as the painters round.
fn blend(d: [u8; 3], s: [u8; 3], a: u32) -> [u8; 3] {
    let mix = |d: u8, s: u8| ((s as u32 * a + d as u32 * (255 - a) + 127) / 255) as u8;
    [mix(d[0], s[0]), mix(d[1], s[1]), mix(d[2], s[2])]
}

#[test]
fn instance_masks_and_class_maps_are_tinted_cell_by_cell() {
    use ferrostream_core::mask::{ClassMap, InstanceMask};
    let target = Target::rgb(VideoFormat::Rgba);
    let info = target.info(W, H);
    let input = Picture::noise(&info, 11);
    let before = Picture::from_buffer(&input, &info);
    let props: &[(&str, &dyn ToValue)] = &[
        ("display-bbox", &false),
        ("display-text", &false),
        ("mask-alpha", &128u32),
        ("class-colors", &"0=#ff0000,2=#0000ff"),
    ];
    // A 4x2 mask over the box (40,40)-(200,120): cells of 40x40 pixels.
    let mut o = object(0, "person", BBox::new(40.0, 40.0, 160.0, 80.0));
    o.mask = Some(InstanceMask::from_cells(
        4,
        2,
        [true, false, false, true, false, true, true, false].into_iter(),
    ));
    let after = draw(&info, &input, &[o], props);
    let red = [255, 0, 0];
    for (x, y, inside) in [
        (45, 45, true),
        (79, 79, true),
        (80, 45, false),
        (185, 60, true),
        (100, 100, true),
        (60, 100, false),
        (20, 20, false),
        (210, 60, false),
    ] {
        let want = if inside {
            blend(before.color(x, y), red, 128)
        } else {
            before.color(x, y)
        };
        assert_eq!(after.color(x, y), want, "({x}, {y}) inside={inside}");
    }
    // A 2x1 class map over the whole frame: the left half class 2, the right half none.
    let mut frame = Frame::new(0, 0, W, H);
    frame.segmentation = Some(ClassMap::from_cells(2, 1, 3, 1, &[2, -1]));
    let after = draw_frame(&info, &input, frame.clone(), props);
    assert_eq!(
        after.color(10, 200),
        blend(before.color(10, 200), [0, 0, 255], 128)
    );
    assert_eq!(after.color(300, 10), before.color(300, 10));
    // display-mask=false draws neither.
    let off: &[(&str, &dyn ToValue)] = &[("display-mask", &false)];
    let after = draw_frame(&info, &input, frame, off);
    assert_eq!(after.color(10, 200), before.color(10, 200));
}

#[test]
fn display_elements_draw_the_applications_rectangles_and_text() {
    use ferrostream_core::{DisplayElement, DisplayRect, DisplayText};
    let rect = (40u32, 30u32, 120u32, 90u32);
    // Text without a background (only its glyphs) and text on black, each in its own area.
    let (bare, backed) = ((160u32, 140u32, W, 180u32), (160u32, 190u32, W, 230u32));
    // The elements of a frame described at `W / d` x `H / d`, drawn on `W` x `H`.
    let frame = |d: u32| {
        let at = |v: u32| (v / d) as f32;
        let text = |x, y, text: &str, background| {
            DisplayElement::Text(DisplayText {
                x: at(x),
                y: at(y),
                text: text.into(),
                size: 16,
                color: [255, 255, 255, 255],
                background,
            })
        };
        let mut frame = Frame::new(0, 0, W / d, H / d);
        frame.display = vec![
            DisplayElement::Rect(DisplayRect {
                left: at(rect.0),
                top: at(rect.1),
                width: at(rect.2 - rect.0),
                height: at(rect.3 - rect.1),
                border_width: 0,
                border_color: [0, 255, 0, 255],
                fill: Some([255, 0, 0, 255]),
            }),
            text(bare.0, bare.1, "Ferrostream", None),
            text(backed.0, backed.1, "Hi", Some([0, 0, 0, 255])),
        ];
        frame
    };
    for target in Target::mixed() {
        let info = target.info(W, H);
        let input = Picture::noise(&info, 17);
        let before = Picture::from_buffer(&input, &info);
        // Whatever the style draws of objects is off: the application's elements still are.
        let off: &[(&str, &dyn ToValue)] = &[("display-bbox", &false), ("display-text", &false)];
        let after = draw_frame(&info, &input, frame(1), off);
        let tolerance = if target.is_yuv() { 2 } else { 0 };
        let red = reference(target, [255, 0, 0]);
        for y in rect.1..rect.3 {
            for x in rect.0..rect.2 {
                assert_close(
                    &format!("{target:?} rectangle pixel ({x}, {y})"),
                    after.color(x, y),
                    red,
                    tolerance,
                );
            }
        }
        let white = reference(target, [255, 255, 255]);
        let black = reference(target, [0, 0, 0]);
        let glyphs = count_color(&after, bare, white, 2, target.is_yuv());
        assert!(glyphs >= 30, "{target:?}: {glyphs} glyph pixels");
        // No background: between the glyphs of the first word the picture shows through.
        let line = (bare.0, bare.1, bare.0 + 60, bare.1 + 16);
        let kept = (line.1..line.3)
            .flat_map(|y| (line.0..line.2).map(move |x| (x, y)))
            .filter(|&(x, y)| after.px(x, y) == before.px(x, y))
            .count();
        assert!(kept >= 60 * 16 / 3, "{target:?}: {kept} pixels kept");
        let glyphs = count_color(&after, backed, white, 2, target.is_yuv());
        let background = count_color(&after, backed, black, 2, target.is_yuv());
        assert!(glyphs >= 10, "{target:?}: {glyphs} glyph pixels on black");
        assert!(background >= 200, "{target:?}: {background} black pixels");
        // Nothing else changed.
        let drawn = |x, y| [rect, bare, backed].iter().any(|r| inside(x, y, *r));
        for y in 0..H {
            for x in 0..W {
                if !drawn(x, y) {
                    assert_eq!(after.px(x, y), before.px(x, y), "{target:?} ({x}, {y})");
                }
            }
        }
        if target.is_yuv() {
            for cy in 0..H / 2 {
                for cx in 0..W / 2 {
                    if chroma_block_all(cx, cy, |x, y| !drawn(x, y)) {
                        assert_eq!(
                            after.chroma(cx, cy),
                            before.chroma(cx, cy),
                            "{target:?} chroma ({cx}, {cy})"
                        );
                    }
                }
            }
        }
        // Described at half the size, the elements are scaled onto the frame like boxes are
        // (the text size stays in pixels): the same picture.
        let scaled = draw_frame(&info, &input, frame(2), off);
        assert!(
            scaled == after,
            "{target:?}: scaled elements drawn elsewhere"
        );
    }
}

#[test]
fn keypoints_draw_dots_and_limbs_of_confident_points_only() {
    use ferrostream_core::keypoints::{Keypoint, Keypoints};
    let point = |name: &str, x: f32, y: f32, confidence: f32| Keypoint {
        name: name.into(),
        x,
        y,
        confidence,
    };
    // A vertical limb from (100, 60) to (100, 140) and a horizontal one from (100, 60) to
    // (180, 60), and one limb to a point below the confidence threshold.
    let mut o = object(0, "person", BBox::from_corners(40.0, 40.0, 200.0, 200.0));
    o.keypoints = Some(Keypoints {
        points: vec![
            point("a", 100.0, 60.0, 0.9),
            point("b", 100.0, 140.0, 0.8),
            point("c", 180.0, 60.0, 0.7),
            point("d", 60.0, 180.0, 0.2),
        ],
        skeleton: std::sync::Arc::from(vec![[0, 1], [0, 2], [1, 3]]),
    });
    for target in targets() {
        let info = target.info(W, H);
        let input = Picture::noise(&info, 11);
        let before = Picture::from_buffer(&input, &info);
        let props: [(&str, &dyn ToValue); 5] = [
            ("display-text", &false),
            ("display-bbox", &false),
            ("class-colors", &"0=#e03010"),
            ("limb-width", &4u32),
            ("keypoint-radius", &2u32),
        ];
        let after = draw(&info, &input, std::slice::from_ref(&o), &props);
        let tolerance = if target.is_yuv() { 2 } else { 0 };
        let limb = reference(target, [224, 48, 16]);
        let dot = reference(target, [255, 255, 255]);
        // Limb pixels: 4 wide, centred on the line (whole chroma samples on YUV).
        for (x, y) in [(98, 100), (101, 100), (140, 58), (140, 61)] {
            assert_close(
                &format!("{target:?} limb ({x}, {y})"),
                after.color(x, y),
                limb,
                tolerance,
            );
        }
        // Dots of the confident points, 5x5 around each.
        for (x, y) in [(100, 60), (98, 58), (101, 61), (100, 140), (180, 60)] {
            assert_close(
                &format!("{target:?} dot ({x}, {y})"),
                after.color(x, y),
                dot,
                tolerance,
            );
        }
        // Nothing at the unconfident point, nor on its limb.
        for (x, y) in [(60, 180), (80, 160)] {
            assert_eq!(
                after.px(x, y),
                before.px(x, y),
                "{target:?} ({x}, {y}) changed"
            );
        }
        // display-keypoints=false draws none of it.
        let off = draw(
            &info,
            &input,
            std::slice::from_ref(&o),
            &[
                ("display-text", &false),
                ("display-bbox", &false),
                ("display-keypoints", &false),
            ],
        );
        assert_eq!(off.px(100, 100), before.px(100, 100), "{target:?}");
        assert_eq!(off.px(100, 60), before.px(100, 60), "{target:?}");
    }
}
