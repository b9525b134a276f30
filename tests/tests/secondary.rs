// SPDX-License-Identifier: MIT OR Apache-2.0
//! Secondary inference (`rstrtinfer process-mode=secondary`) end to end: the shared COCO detector
//! finds objects, MobileNetV2 classifies them; crops compared with a reference crop; tracked
//! objects classified once per `secondary-reinfer-interval`; embeddings feeding the tracker; bad
//! configurations.

use std::time::Duration;

use ferrostream_core::{AttributeValue, BBox, Batch, BatchMeta, Frame, Object};
use ferrostream_tests::{
    element, init, launch, media, quoted, repo_root, run_pipeline, run_pipeline_stats,
};
use gst::prelude::*;

const TIMEOUT: Duration = Duration::from_secs(300);

fn config(name: &str) -> String {
    quoted(&repo_root().join("pipelines").join(name))
}

fn fixture(name: &str) -> String {
    quoted(&repo_root().join("tests/fixtures").join(name))
}

/// messi5.jpg as RGB, through the COCO detector (component 1).
fn messi_detected() -> String {
    format!(
        "filesrc location={} ! jpegdec ! videoconvert ! video/x-raw,format=RGB \
         ! rstrtinfer config-file-path={}",
        quoted(&media("messi5.jpg")),
        config("coco_ssd.txt")
    )
}

fn classifier(extra: &str) -> String {
    format!(
        "rstrtinfer config-file-path={} {extra}",
        config("imagenet_secondary.txt")
    )
}

fn only_frame(frames: Vec<Frame>) -> Frame {
    let [frame] = <[Frame; 1]>::try_from(frames).expect("one frame");
    frame
}

fn find<'a>(frame: &'a Frame, label: &str) -> &'a Object {
    frame
        .objects
        .iter()
        .find(|o| &*o.label == label)
        .unwrap_or_else(|| panic!("no {label} in {:?}", frame.objects))
}

#[test]
fn messi5_sports_ball_is_classified_as_a_soccer_ball() {
    let mut results = Vec::new();
    for batch in [16, 1] {
        let out = run_pipeline(
            &format!(
                "{} ! {} ! appsink name=sink",
                messi_detected(),
                classifier(&format!("batch-size={batch}"))
            ),
            TIMEOUT,
        )
        .unwrap();
        let frame = only_frame(out.frames);
        assert_eq!(frame.components_run, vec![1, 2]);
        let ball = find(&frame, "sports ball");
        let [c] = &ball.classifications[..] else {
            panic!("{ball:?}")
        };
        assert_eq!((c.component_id, &*c.label), (2, "soccer ball"), "{c:?}");
        assert!(c.prob >= 0.5, "{c:?}");
        let persons: Vec<&Object> = frame
            .objects
            .iter()
            .filter(|o| &*o.label == "person")
            .collect();
        assert!(!persons.is_empty());
        for person in persons {
            let [c] = &person.classifications[..] else {
                panic!("{person:?}")
            };
            assert_eq!(c.component_id, 2);
            assert!(c.prob > 0.0 && c.prob <= 1.0, "{c:?}");
        }
        results.push(frame.objects);
    }
    // One engine call for every object, or one call per object: the same results.
    for (a, b) in results[0].iter().zip(&results[1]) {
        let (ca, cb) = (&a.classifications[0], &b.classifications[0]);
        assert_eq!(ca.class_id, cb.class_id);
        assert!((ca.prob - cb.prob).abs() < 1e-4, "{ca:?} {cb:?}");
    }
}

#[test]
fn crops_of_every_frame_of_a_batch_share_engine_calls() {
    // Two sources (messi5 and its mirror image), two frames each: every batch holds two frames
    // with two objects each, classified in one engine call.
    let source = |i: usize, flip: &str| {
        format!(
            "filesrc location={} ! jpegdec ! videoconvert ! videoflip method={flip} \
             ! imagefreeze num-buffers=2 ! mux.sink_{i} ",
            quoted(&media("messi5.jpg"))
        )
    };
    let (out, stats) = run_pipeline_stats(
        &format!(
            "rsstreammux name=mux batch-size=2 width=548 height=342 ! rstrtinfer \
             config-file-path={} ! {} ! appsink name=sink {} {}",
            config("coco_ssd.txt"),
            classifier("name=sgie"),
            source(0, "none"),
            source(1, "horizontal-flip")
        ),
        usize::MAX,
        TIMEOUT,
        "sgie",
    )
    .unwrap();
    assert_eq!(out.frames.len(), 4);
    let objects: usize = out.frames.iter().map(|f| f.objects.len()).sum();
    assert!(out.frames.iter().all(|f| f.objects.len() >= 2));
    for frame in &out.frames {
        for o in &frame.objects {
            assert_eq!(o.classifications.len(), 1, "{o:?}");
        }
        let ball = find(frame, "sports ball");
        assert_eq!(&*ball.classifications[0].label, "soccer ball");
    }
    assert_eq!(stats.get::<u64>("objects").unwrap(), objects as u64);
    assert_eq!(stats.get::<u64>("inferred").unwrap(), objects as u64);
    // Two batches, each with all its objects (at most 16) in one engine call.
    assert_eq!(stats.get::<u64>("engine-calls").unwrap(), 2, "{stats}");
}

/// Decodes messi5.jpg to RGB: (pixels, width, height, stride).
fn messi_rgb() -> (Vec<u8>, usize, usize, usize) {
    init();
    let pipeline = launch(&format!(
        "filesrc location={} ! jpegdec ! videoconvert ! video/x-raw,format=RGB \
         ! appsink name=sink sync=false",
        quoted(&media("messi5.jpg"))
    ));
    let sink: gst_app::AppSink = element(&pipeline, "sink");
    pipeline.set_state(gst::State::Playing).unwrap();
    let sample = sink
        .try_pull_sample(gst::ClockTime::from_seconds(60))
        .expect("a decoded frame within 60 s");
    pipeline.set_state(gst::State::Null).unwrap();
    let info = gst_video::VideoInfo::from_caps(sample.caps().unwrap()).unwrap();
    let frame = gst_video::VideoFrameRef::from_buffer_ref_readable(sample.buffer().unwrap(), &info)
        .unwrap();
    (
        frame.plane_data(0).unwrap().to_vec(),
        info.width() as usize,
        info.height() as usize,
        info.stride()[0] as usize,
    )
}

/// The reference crop: textbook bilinear interpolation in f64 with pixel centres at +0.5 and
/// clamped edges (OpenCV's INTER_LINEAR), of `roi` of an RGB image into the `content`
/// rectangle (left, top, width, height) of the network input. RGB value of network pixel
/// (x, y), or `None` in the padding.
fn reference_pixel(
    image: &(Vec<u8>, usize, usize, usize),
    roi: BBox,
    content: (usize, usize, usize, usize),
    x: usize,
    y: usize,
) -> Option<[f64; 3]> {
    let (pixels, width, height, stride) = image;
    let (cx, cy, cw, ch) = content;
    if x < cx || y < cy || x >= cx + cw || y >= cy + ch {
        return None;
    }
    let axis = |i: usize, start: f32, len: f32, out: usize, max: usize| {
        let pos = (start as f64 + (i as f64 + 0.5) * len as f64 / out as f64 - 0.5)
            .clamp(0.0, (max - 1) as f64);
        let p0 = pos.floor() as usize;
        (p0, (p0 + 1).min(max - 1), pos - p0 as f64)
    };
    let (x0, x1, fx) = axis(x - cx, roi.left, roi.width, cw, *width);
    let (y0, y1, fy) = axis(y - cy, roi.top, roi.height, ch, *height);
    let at = |px: usize, py: usize, c: usize| pixels[py * stride + px * 3 + c] as f64;
    Some(std::array::from_fn(|c| {
        let top = at(x0, y0, c) * (1.0 - fx) + at(x1, y0, c) * fx;
        let bottom = at(x0, y1, c) * (1.0 - fx) + at(x1, y1, c) * fx;
        top * (1.0 - fy) + bottom * fy
    }))
}

const NET_W: usize = 48;
const NET_H: usize = 32;

#[test]
fn crops_equal_a_reference_crop() {
    // The identity model hands back each object's pre-processed crop (output-tensor-meta).
    // BGR order, scale and per-channel offsets, stretched and letterboxed: each undone here and
    // compared with the reference crop of the same box.
    let image = messi_rgb();
    let (scale, offsets) = (0.5f64, [10.0f64, 20.0, 30.0]);
    for letterbox in [false, true] {
        let out = run_pipeline(
            &format!(
                "{} ! rstrtinfer onnx-file={} process-mode=secondary network-type=other \
                 output-tensor-meta=true gie-unique-id=5 operate-on-gie-id=1 batch-size=2 \
                 net-scale-factor={scale} offsets=\"{};{};{}\" model-color-format=bgr \
                 maintain-aspect-ratio={letterbox} symmetric-padding=true ! appsink name=sink",
                messi_detected(),
                fixture("identity_crop.onnx"),
                offsets[0],
                offsets[1],
                offsets[2]
            ),
            TIMEOUT,
        )
        .unwrap();
        let frame = only_frame(out.frames);
        assert!(frame.objects.len() >= 2, "{:?}", frame.objects);
        for object in &frame.objects {
            let Some(AttributeValue::Floats(tensor)) = object.attributes.get("tensor:5:pixels")
            else {
                panic!("no crop tensor on {object:?}")
            };
            assert_eq!(tensor.len(), 3 * NET_W * NET_H);
            let roi = object.bbox();
            let content = if letterbox {
                let ratio = (NET_W as f32 / roi.width).min(NET_H as f32 / roi.height);
                let cw = (roi.width * ratio).round() as usize;
                let ch = (roi.height * ratio).round() as usize;
                ((NET_W - cw) / 2, (NET_H - ch) / 2, cw, ch)
            } else {
                (0, 0, NET_W, NET_H)
            };
            let mut worst = 0.0f64;
            for y in 0..NET_H {
                for x in 0..NET_W {
                    let expected = reference_pixel(&image, roi, content, x, y);
                    for c in 0..3 {
                        // Network channel c is BGR: c = 0 is blue.
                        let value = tensor[c * NET_W * NET_H + y * NET_W + x] as f64;
                        let pixel = value / scale + offsets[c];
                        let want = expected.map_or(0.0, |rgb| rgb[2 - c]).round();
                        worst = worst.max((pixel - want).abs());
                    }
                }
            }
            // Pixels are whole numbers: the reference rounded, ours as pre-processed.
            assert!(
                worst <= 1.0 + 1e-3,
                "{} crop (letterbox {letterbox}) differs from the reference by {worst}",
                object.label
            );
            println!(
                "{} crop (letterbox {letterbox}): max difference {worst:.3} from the reference",
                object.label
            );
        }
    }
}

#[test]
fn tracked_objects_are_classified_once_per_interval() {
    const FRAMES: usize = 90;
    let (out, stats) = run_pipeline_stats(
        &format!(
            "filesrc location={} ! decodebin ! videoconvert ! rstrtinfer config-file-path={} \
             ! rstracker ! {} ! appsink name=sink",
            quoted(&media("vtest.avi")),
            config("coco_ssd.txt"),
            classifier("name=sgie secondary-reinfer-interval=30")
        ),
        FRAMES,
        TIMEOUT,
        "sgie",
    )
    .unwrap();
    assert_eq!(out.frames.len(), FRAMES);
    let mut tracked = 0;
    let mut ids = std::collections::BTreeSet::new();
    for frame in &out.frames {
        for o in frame.objects.iter().filter(|o| o.object_id.is_some()) {
            tracked += 1;
            ids.insert(o.object_id);
            // The configuration's input-object-min-width/height: smaller objects are skipped.
            let b = o.bbox().clipped(frame.width as f32, frame.height as f32);
            if b.width < 16.0 || b.height < 16.0 {
                assert!(o.classifications.is_empty(), "{o:?}");
                continue;
            }
            assert!(
                o.classifications.iter().any(|c| c.component_id == 2),
                "frame {}: tracked object without a result: {o:?}",
                frame.frame_num
            );
        }
    }
    let objects = stats.get::<u64>("objects").unwrap();
    let inferred = stats.get::<u64>("inferred").unwrap();
    let cached = stats.get::<u64>("cached-results").unwrap();
    println!(
        "{FRAMES} frames: {tracked} tracked objects ({} tracks); the classifier ran on {inferred} \
         of {objects} objects, {cached} results reused",
        ids.len()
    );
    assert!(tracked > 200, "{tracked} tracked objects");
    assert_eq!(inferred + cached, objects);
    assert!(
        inferred >= ids.len() as u64,
        "every track classified at least once"
    );
    assert!(
        inferred * 4 < objects,
        "{inferred} classifier runs for {objects} objects"
    );
}

#[test]
fn two_secondary_elements_each_add_their_result() {
    let out = run_pipeline(
        &format!(
            "{} ! {} ! {} ! appsink name=sink",
            messi_detected(),
            classifier(""),
            // Only sports balls (COCO class index 36), as BGR: another opinion.
            classifier("gie-unique-id=3 operate-on-class-ids=36 model-color-format=bgr")
        ),
        TIMEOUT,
    )
    .unwrap();
    let frame = only_frame(out.frames);
    assert_eq!(frame.components_run, vec![1, 2, 3]);
    let ball = find(&frame, "sports ball");
    let components: Vec<i32> = ball
        .classifications
        .iter()
        .map(|c| c.component_id)
        .collect();
    assert_eq!(components, vec![2, 3]);
    let person = find(&frame, "person");
    assert_eq!(person.classifications.len(), 1);
    assert_eq!(person.classifications[0].component_id, 2);
}

#[test]
fn a_secondary_detector_finds_faces_inside_persons() {
    // CenterFace on the person crops of astronaut.png: the face is a child of the person, in
    // frame coordinates.
    let out = run_pipeline(
        &format!(
            "filesrc location={} ! pngdec ! videoconvert ! rstrtinfer config-file-path={} \
             ! rstrtinfer config-file-path={} process-mode=secondary operate-on-gie-id=1 \
             operate-on-class-ids=0 infer-dims=\"3;320;320\" ! appsink name=sink",
            quoted(&media("astronaut.png")),
            config("coco_ssd.txt"),
            config("centerface.txt")
        ),
        TIMEOUT,
    )
    .unwrap();
    let frame = only_frame(out.frames);
    let faces: Vec<&Object> = frame
        .objects
        .iter()
        .filter(|o| o.component_id == 2)
        .collect();
    let [face] = &faces[..] else {
        panic!("{:?}", frame.objects)
    };
    let parent = &frame.objects[face.parent.expect("a parent") as usize];
    assert_eq!(&*parent.label, "person");
    // The face as CenterFace finds it on the whole image: about [181, 58, 269, 177].
    let b = face.bbox();
    let iou = ferrostream_tests::iou_ltrb(
        [b.left, b.top, b.right(), b.bottom()],
        [181.0, 58.0, 269.0, 177.0],
    );
    assert!(iou > 0.6, "{b:?}: IoU {iou}");
}

/// Pushes two RGB frames of 64x100 with two objects each (component 1) through `middle` and
/// returns the frames that come out. Frame 0: a red patch at x 0..8 and a blue one at 40..48,
/// boxes A = x 0..40 and B = x 8..48, so A's crop is reddish and B's bluish. Frame 1: the boxes
/// have swapped places by a few pixels (A at x 7, B at x 1) with the colours following them.
fn push_swapping_patches(middle: &str) -> Vec<Frame> {
    init();
    let pipeline = launch(&format!(
        "appsrc name=src format=time caps=video/x-raw,format=RGB,width=64,height=100,framerate=10/1 \
         ! {middle} ! appsink name=sink sync=false"
    ));
    let src: gst_app::AppSrc = element(&pipeline, "src");
    let sink: gst_app::AppSink = element(&pipeline, "sink");
    pipeline.set_state(gst::State::Playing).unwrap();
    let frames = [
        ([0usize, 8], [(255u8, 0u8, 0u8), (0, 0, 255)], [0.0f32, 8.0]),
        ([41, 1], [(255, 0, 0), (0, 0, 255)], [7.0, 1.0]),
    ];
    let stride = (64 * 3usize).next_multiple_of(4);
    for (n, (patches, colours, lefts)) in frames.into_iter().enumerate() {
        let mut pixels = vec![0u8; stride * 100];
        for (x0, (r, g, b)) in patches.into_iter().zip(colours) {
            for y in 0..100 {
                for x in x0..x0 + 6 {
                    pixels[y * stride + 3 * x..][..3].copy_from_slice(&[r, g, b]);
                }
            }
        }
        let mut buffer = gst::Buffer::from_mut_slice(pixels);
        {
            let b = buffer.get_mut().unwrap();
            b.set_pts(gst::ClockTime::from_mseconds(100 * n as u64));
            let mut frame = Frame::new(0, n as u64, 64, 100);
            frame.components_run = vec![1];
            for left in lefts {
                let bbox = BBox::new(left, 0.0, 40.0, 100.0);
                frame
                    .objects
                    .push(Object::new(0, "thing".into(), 0.9, bbox, 1));
            }
            BatchMeta::add(b, Batch::single(frame));
        }
        src.push_buffer(buffer).unwrap();
    }
    src.end_of_stream().unwrap();
    let mut out = Vec::new();
    // Until EOS: a pipeline that stopped with an error would leave the sink waiting forever.
    while let Some(sample) = sink.try_pull_sample(gst::ClockTime::from_seconds(60)) {
        let meta = sample.buffer().unwrap().meta::<BatchMeta>().unwrap();
        out.extend(meta.batch().frames.iter().cloned());
    }
    assert!(sink.is_eos(), "no frame or EOS within 60 s");
    pipeline.set_state(gst::State::Null).unwrap();
    out
}

#[test]
fn embeddings_from_secondary_inference_feed_the_tracker() {
    // A channel-mean "embedding" model (f16_channel_mean.onnx: [N,3] output `scores`) as raw
    // tensors; the tracker weighs them through embedding-attribute.
    let id_of_red = |weight: f32| {
        let frames = push_swapping_patches(&format!(
            "rstrtinfer onnx-file={} process-mode=secondary network-type=other \
             output-tensor-meta=true gie-unique-id=2 operate-on-gie-id=1 \
             net-scale-factor=0.00392156863 \
             ! rstracker probation-age=1 appearance-weight={weight} \
             embedding-attribute=tensor:2:scores",
            fixture("f16_channel_mean.onnx")
        ));
        assert_eq!(frames.len(), 2);
        for frame in &frames {
            for o in &frame.objects {
                let Some(AttributeValue::Floats(e)) = o.attributes.get("tensor:2:scores") else {
                    panic!("no embedding on {o:?}")
                };
                assert_eq!(e.len(), 3);
            }
        }
        // The red patch's box: A at x 0 in frame 0, at x 7 in frame 1.
        let id = |frame: &Frame, left: f32| {
            frame
                .objects
                .iter()
                .find(|o| o.detector_bbox.left == left)
                .and_then(|o| o.object_id)
                .expect("a tracked object")
        };
        (id(&frames[0], 0.0), id(&frames[1], 7.0))
    };
    let (before, after) = id_of_red(0.0);
    assert_ne!(before, after, "overlap alone follows the positions");
    let (before, after) = id_of_red(0.8);
    assert_eq!(before, after, "the embeddings keep the red patch's id");
}

#[test]
fn bad_configurations_are_reported() {
    let start_error = |element: &str| {
        run_pipeline(
            &format!("{} ! {element} ! appsink name=sink", messi_detected()),
            TIMEOUT,
        )
        .unwrap_err()
    };
    // A detector's model configured as a classifier.
    let err = start_error(
        "rstrtinfer onnx-file=coco_ssdlite_mobilenet_v2.onnx process-mode=secondary \
         network-type=classifier infer-dims=\"3;300;300\" gie-unique-id=2",
    );
    assert!(
        err.contains("a classifier needs an output shaped [N,C]"),
        "{err}"
    );
    // Raw tensors without output-tensor-meta.
    let err = start_error(&format!(
        "rstrtinfer onnx-file={} process-mode=secondary network-type=other gie-unique-id=2",
        fixture("identity_crop.onnx")
    ));
    assert!(err.contains("output-tensor-meta=true"), "{err}");
    // A malformed class list.
    let err = start_error(&classifier("operate-on-class-ids=person"));
    assert!(err.contains("operate-on-class-ids"), "{err}");

    // No component 7 upstream: a warning naming it, and nothing classified.
    let out = run_pipeline(
        &format!(
            "{} ! {} ! appsink name=sink",
            messi_detected(),
            classifier("operate-on-gie-id=7")
        ),
        TIMEOUT,
    )
    .unwrap();
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("operate-on-gie-id=7") && w.contains("component(s) 1")),
        "{:?}",
        out.warnings
    );
    let frame = only_frame(out.frames);
    assert!(frame.objects.iter().all(|o| o.classifications.is_empty()));
}
