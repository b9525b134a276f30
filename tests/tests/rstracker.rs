// SPDX-License-Identifier: MIT OR Apache-2.0
//! rstracker after the COCO detector on vtest.avi: stable ids for the people walking by.

use std::collections::HashSet;
use std::time::Duration;

use ferrostream_core::Object;
use ferrostream_tests::{media, model, quoted, repo_root, run_pipeline};

fn is_person_detection(o: &Object) -> bool {
    // Shadow objects (no detection this frame) carry confidence 0.
    &*o.label == "person" && o.confidence > 0.0
}

#[test]
fn person_ids_are_stable_over_vtest() {
    let desc = format!(
        "filesrc location={} ! decodebin ! videoconvert \
         ! rstrtinfer config-file-path={} onnx-file={} labelfile-path={} ! rstracker ! appsink name=sink",
        quoted(&media("vtest.avi")),
        quoted(&repo_root().join("pipelines/coco_ssd.txt")),
        quoted(&model("coco_ssdlite_mobilenet_v2.onnx")),
        quoted(&model("object_detection_classes_coco.txt"))
    );
    let out = run_pipeline(&desc, Duration::from_secs(1200)).unwrap();
    assert_eq!(out.frames.len(), 795);
    let (mut continuing, mut kept) = (0usize, 0usize);
    let mut terminated = 0;
    for pair in out.frames.windows(2) {
        let (prev, cur) = (&pair[0], &pair[1]);
        terminated += cur.terminated_ids.len();
        let ids: Vec<u64> = cur.objects.iter().filter_map(|o| o.object_id).collect();
        assert_eq!(
            ids.len(),
            ids.iter().collect::<HashSet<_>>().len(),
            "duplicate ids in frame {}",
            cur.frame_num
        );
        for o in cur.objects.iter().filter(|o| is_person_detection(o)) {
            let best = prev
                .objects
                .iter()
                .filter(|p| is_person_detection(p))
                .max_by(|a, b| {
                    a.detector_bbox
                        .iou(&o.detector_bbox)
                        .total_cmp(&b.detector_bbox.iou(&o.detector_bbox))
                });
            let Some(p) = best.filter(|p| p.detector_bbox.iou(&o.detector_bbox) >= 0.5) else {
                continue;
            };
            continuing += 1;
            if o.object_id.is_some() && o.object_id == p.object_id {
                kept += 1;
                assert!(o.tracker_bbox.is_some() && o.tracker_age.is_some());
            }
        }
    }
    let share = kept as f64 / continuing as f64;
    println!(
        "{kept} of {continuing} continuing person detections kept their id ({:.1} %), {terminated} targets terminated",
        share * 100.0
    );
    assert!(continuing > 2000, "{continuing}");
    assert!(share >= 0.90, "{kept} of {continuing} ({:.3})", share);
    assert!(
        terminated > 0,
        "people leave the scene; their targets must end"
    );
}

#[test]
fn frames_without_inference_carry_predicted_targets() {
    let desc = format!(
        "filesrc location={} ! decodebin ! videoconvert \
         ! rstrtinfer config-file-path={} onnx-file={} labelfile-path={} interval=1 \
         ! rstracker ! appsink name=sink",
        quoted(&media("vtest.avi")),
        quoted(&repo_root().join("pipelines/coco_ssd.txt")),
        quoted(&model("coco_ssdlite_mobilenet_v2.onnx")),
        quoted(&model("object_detection_classes_coco.txt"))
    );
    let out = ferrostream_tests::run_pipeline_frames(&desc, 40, Duration::from_secs(600)).unwrap();
    let ids = |f: &ferrostream_core::Frame| -> HashSet<u64> {
        f.objects.iter().filter_map(|o| o.object_id).collect()
    };
    let mut skipped_with_targets = 0;
    for (i, frame) in out.frames.iter().enumerate().skip(6) {
        if !frame.components_run.is_empty() {
            continue;
        }
        // A skipped frame: its targets are the previous frame's, moved by their motion model.
        let here = ids(frame);
        assert!(
            here.is_subset(&ids(&out.frames[i - 1])),
            "frame {i}: {here:?}"
        );
        for o in frame.objects.iter().filter(|o| o.object_id.is_some()) {
            assert!(o.tracker_bbox.is_some(), "frame {i}");
        }
        if here.len() >= 2 {
            skipped_with_targets += 1;
        }
    }
    assert!(
        skipped_with_targets >= 15,
        "{skipped_with_targets} skipped frames with targets"
    );
}

#[test]
fn config_file_applies_and_properties_override_it() {
    let dir = std::env::temp_dir().join(format!("ferrostream-tracker-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("tracker.toml");
    std::fs::write(&config, "algorithm = \"sort\"\nprobation-age = 5\n").unwrap();
    let run = |tracker: &str| {
        let desc = format!(
            "filesrc location={} ! decodebin ! videoconvert \
             ! rstrtinfer config-file-path={} onnx-file={} labelfile-path={} ! {tracker} ! appsink name=sink",
            quoted(&media("vtest.avi")),
            quoted(&repo_root().join("pipelines/coco_ssd.txt")),
            quoted(&model("coco_ssdlite_mobilenet_v2.onnx")),
            quoted(&model("object_detection_classes_coco.txt"))
        );
        ferrostream_tests::run_pipeline_frames(&desc, 8, Duration::from_secs(300))
    };
    let first_tracked = |frames: &[ferrostream_core::Frame]| {
        frames
            .iter()
            .position(|f| f.objects.iter().any(|o| o.object_id.is_some()))
    };
    // Probation 5 from the file: the first ids appear on the fifth frame.
    let out = run(&format!("rstracker config-file-path={}", quoted(&config))).unwrap();
    assert_eq!(first_tracked(&out.frames), Some(4));
    // The property wins over the file.
    let out = run(&format!(
        "rstracker config-file-path={} probation-age=1",
        quoted(&config)
    ))
    .unwrap();
    assert_eq!(first_tracked(&out.frames), Some(0));
    // A bad value stops the pipeline with a message naming the key.
    std::fs::write(&config, "iou-threshold = 3.0\n").unwrap();
    let err = run(&format!("rstracker config-file-path={}", quoted(&config))).unwrap_err();
    assert!(
        err.contains("`iou-threshold`") && err.contains("tracker.toml"),
        "{err}"
    );
}

/// rstracker reporting targets from their first match, in a harness. Settings are taken at
/// start, so the element is configured before the harness starts it.
fn tracker_harness() -> gst_check::Harness {
    ferrostream_tests::init();
    let tracker = gst::ElementFactory::make("rstracker")
        .property("probation-age", 1u32)
        .build()
        .unwrap();
    let mut h = gst_check::Harness::with_element(&tracker, Some("sink"), Some("src"));
    h.set_src_caps_str("video/x-raw,format=RGBA,width=640,height=480,framerate=10/1");
    h
}

/// A buffer carrying one detected person at `x`, as a detector leaves it.
fn detected_buffer(x: f32, pts_ms: u64) -> gst::Buffer {
    use ferrostream_core::{BBox, Batch, BatchMeta, Frame};
    let mut buffer = gst::Buffer::new();
    {
        let b = buffer.get_mut().unwrap();
        b.set_pts(gst::ClockTime::from_mseconds(pts_ms));
        let mut frame = Frame::new(0, pts_ms / 100, 640, 480);
        frame.components_run = vec![1];
        frame.objects.push(Object::new(
            0,
            "person".into(),
            0.9,
            BBox::new(x, 100.0, 40.0, 100.0),
            1,
        ));
        BatchMeta::add(b, Batch::single(frame));
    }
    buffer
}

#[test]
fn targets_reset_on_flush_and_ids_stay_unique() {
    let mut h = tracker_harness();
    let id_of = |b: &gst::Buffer| {
        b.meta::<ferrostream_core::BatchMeta>()
            .unwrap()
            .batch()
            .frames[0]
            .objects[0]
            .object_id
    };
    let first = h.push_and_pull(detected_buffer(100.0, 0)).unwrap();
    let second = h.push_and_pull(detected_buffer(104.0, 100)).unwrap();
    assert_eq!(
        id_of(&first),
        id_of(&second),
        "the same person, the same target"
    );
    assert!(h.push_event(gst::event::FlushStart::new()));
    assert!(h.push_event(gst::event::FlushStop::new(true)));
    h.push_event(gst::event::Segment::new(&gst::FormattedSegment::<
        gst::ClockTime,
    >::new()));
    let after = h.push_and_pull(detected_buffer(108.0, 200)).unwrap();
    let (before, after) = (id_of(&second).unwrap(), id_of(&after).unwrap());
    assert_ne!(before, after, "a flush starts the targets afresh");
    assert!(after > before, "ids are never reused");
}

/// A batch of two cameras at frame `n`, each with a person at the same place, moving right.
fn two_camera_batch(n: u64) -> gst::Buffer {
    use ferrostream_core::{BBox, Batch, BatchMeta, Frame};
    let mut buffer = gst::Buffer::new();
    let frames = (0..2)
        .map(|source| {
            let mut f = Frame::new(source, n, 640, 480);
            f.components_run = vec![1];
            let b = BBox::new(100.0 + 4.0 * n as f32, 100.0, 40.0, 100.0);
            f.objects.push(Object::new(0, "person".into(), 0.9, b, 1));
            f
        })
        .collect();
    BatchMeta::add(buffer.get_mut().unwrap(), Batch { frames });
    buffer
}

/// The target id of each camera's person in a batch.
fn camera_ids(b: &gst::Buffer) -> Vec<Option<u64>> {
    let meta = b.meta::<ferrostream_core::BatchMeta>().unwrap();
    meta.batch()
        .frames
        .iter()
        .map(|f| f.objects[0].object_id)
        .collect()
}

#[test]
fn batches_keep_state_per_source() {
    let mut h = tracker_harness();
    let first = camera_ids(&h.push_and_pull(two_camera_batch(0)).unwrap());
    let second = camera_ids(&h.push_and_pull(two_camera_batch(1)).unwrap());
    assert!(first[0].is_some() && first[1].is_some());
    assert_ne!(
        first[0], first[1],
        "the same place on two cameras is two targets"
    );
    assert_eq!(first, second, "each camera keeps its own target");
}

#[test]
fn a_restarted_source_starts_its_targets_afresh() {
    let mut h = tracker_harness();
    let before = camera_ids(&h.push_and_pull(two_camera_batch(0)).unwrap());
    // Camera 0 reconnected: the muxer says so before its first new frame.
    assert!(h.push_event(ferrostream_core::batch::events::stream_restart(0)));
    let after = camera_ids(&h.push_and_pull(two_camera_batch(1)).unwrap());
    assert_ne!(before[0], after[0], "source 0's target starts afresh");
    assert_eq!(before[1], after[1], "source 1 keeps its target");
}
