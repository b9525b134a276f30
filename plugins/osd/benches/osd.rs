// SPDX-License-Identifier: MIT OR Apache-2.0
//! Time to draw one 1080p frame with 10 and 100 labelled boxes (and with privacy blur), NV12 and
//! RGBA, on one CPU core: planning (labels laid out, geometry clipped) plus painting.
//!
//! `cargo bench -p ferrostream-osd` prints one line per case.

use std::time::{Duration, Instant};

use ferrostream_core::{BBox, Frame, Object};
use ferrostream_osd::color::YuvMatrix;
use ferrostream_osd::font::{FontRequest, Typeface};
use ferrostream_osd::paint::Painter;
use ferrostream_osd::plan::{DrawList, Planner};
use ferrostream_osd::style::Style;
use gst_video::{VideoColorMatrix, VideoFormat};

const WIDTH: u32 = 1920;
const HEIGHT: u32 = 1080;

/// `count` tracked objects of a few classes, 60 to 360 pixels wide, spread over the frame.
fn objects(count: usize, blur_every: usize) -> Frame {
    let mut frame = Frame::new(0, 0, WIDTH, HEIGHT);
    let mut state = 0x1234_5678u32;
    let mut next = |range: u32| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state % range
    };
    for i in 0..count {
        let (w, h) = (60 + next(300), 60 + next(300));
        let (x, y) = (next(WIDTH - w), next(HEIGHT - h));
        let class = if blur_every > 0 && i % blur_every == 0 {
            9
        } else {
            (i % 3) as i32
        };
        let mut o = Object::new(
            class,
            ["person", "car", "bicycle"][i % 3].into(),
            0.5 + (i % 50) as f32 / 100.0,
            BBox::new(x as f32, y as f32, w as f32, h as f32),
            1,
        );
        o.object_id = Some(1000 + i as u64);
        frame.objects.push(o);
    }
    frame
}

struct Case {
    format: VideoFormat,
    boxes: usize,
    blur_every: usize,
}

fn run(case: &Case, planner: &mut Planner, iterations: usize) -> (Duration, Duration, Duration) {
    let style = Style {
        blur_class_ids: vec![9],
        ..Style::default()
    };
    let frame = objects(case.boxes, case.blur_every);
    let (w, h) = (WIDTH as usize, HEIGHT as usize);
    let mut planes: Vec<(Vec<u8>, usize)> = match case.format {
        VideoFormat::Nv12 => vec![(vec![90; w * h], w), (vec![128; w * h / 2], w)],
        _ => vec![(vec![90; w * h * 4], w * 4)],
    };
    let matrix = YuvMatrix::new(VideoColorMatrix::Bt709, false);
    let mut painter = Painter::default();
    let mut list = DrawList::default();
    let mut plan_times = Vec::with_capacity(iterations);
    let mut paint_times = Vec::with_capacity(iterations);
    for i in 0..iterations + 10 {
        let t0 = Instant::now();
        list.reset(WIDTH, HEIGHT);
        planner.plan(&style, std::slice::from_ref(&frame), 0, None, &mut list);
        let t1 = Instant::now();
        let mut views: Vec<(&mut [u8], usize)> = planes
            .iter_mut()
            .map(|(data, stride)| (data.as_mut_slice(), *stride))
            .collect();
        painter
            .paint_planes(&list, case.format, matrix, &mut views)
            .unwrap();
        let t2 = Instant::now();
        // The first iterations fill the glyph atlas and warm the caches.
        if i >= 10 {
            plan_times.push(t1 - t0);
            paint_times.push(t2 - t1);
        }
    }
    let total: Vec<Duration> = plan_times
        .iter()
        .zip(&paint_times)
        .map(|(a, b)| *a + *b)
        .collect();
    (median(plan_times), median(paint_times), median(total))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let loaded = Typeface::load(&FontRequest::Auto).expect("a font");
    let mut planner = Planner::new(loaded.typeface);
    println!(
        "rsosd, {WIDTH}x{HEIGHT}, one core, font {}; median of 200 frames",
        planner.typeface().describe()
    );
    println!(
        "{:<6} {:>6} {:>8} {:>10} {:>10} {:>10}",
        "format", "boxes", "blurred", "plan ms", "paint ms", "total ms"
    );
    for format in [VideoFormat::Nv12, VideoFormat::Rgba] {
        for (boxes, blur_every) in [(10, 0), (100, 0), (100, 10)] {
            let case = Case {
                format,
                boxes,
                blur_every,
            };
            let (plan, paint, total) = run(&case, &mut planner, 200);
            let blurred = boxes.checked_div(blur_every).unwrap_or(0);
            println!(
                "{:<6} {:>6} {:>8} {:>10.3} {:>10.3} {:>10.3}",
                format!("{format:?}"),
                boxes,
                blurred,
                plan.as_secs_f64() * 1e3,
                paint.as_secs_f64() * 1e3,
                total.as_secs_f64() * 1e3
            );
        }
    }
}
