// SPDX-License-Identifier: MIT OR Apache-2.0
//! A trained oriented-box model (YOLOv8n-OBB on DOTA, scripts/fetch-models.sh) through
//! rstrtinfer with pipelines/yolov8_obb.txt on a drone photo of a marina (PyPI sahi's OBB demo
//! image): the yachts are found as turned boxes where ONNX Runtime's Python API puts them
//! (scripts/models/obb_reference.py, the same pre-processing, regularisation and rotated NMS),
//! with the same angles; the angles survive rstracker's predictions and rstiler's scaling, and
//! the JSON carries the angle and the turned corners.

use std::time::Duration;

use ferrostream_core::Object;
use ferrostream_core::json::FrameRecord;
use ferrostream_core::oriented;
use ferrostream_tests::{media, quoted, repo_root, run_pipeline_frames};

const TIMEOUT: Duration = Duration::from_secs(300);

/// `obb_reference.py yolov8n_obb_1024.onnx marina_obb.jpg`: the 40 most confident boxes and the
/// harbor, as (class, score, [cx, cy, w, h], angle), in the image's pixels, each in the form
/// nearest upright. The whole reference
/// has 160 boxes of score >= 0.5.
// Measured angles, one of which happens to be close to log10(e).
#[allow(clippy::approx_constant)]
const REFERENCE: [(i32, f32, [f32; 4], f32); 41] = [
    (1, 0.864, [1765.7, 657.6, 108.2, 32.7], 0.3958),
    (1, 0.857, [676.8, 412.7, 103.5, 35.5], 0.3648),
    (1, 0.855, [1780.9, 620.9, 117.9, 35.1], 0.4372),
    (1, 0.854, [1617.0, 1001.1, 120.5, 36.9], 0.4164),
    (1, 0.852, [1387.6, 564.0, 104.1, 32.3], 0.3427),
    (1, 0.850, [1791.7, 575.7, 119.8, 35.8], 0.4406),
    (1, 0.850, [1735.2, 726.5, 118.5, 33.0], 0.4297),
    (1, 0.850, [1699.3, 834.9, 101.7, 31.8], 0.4399),
    (1, 0.848, [1597.2, 1037.1, 139.0, 36.8], 0.4316),
    (1, 0.846, [1486.1, 692.7, 98.4, 32.6], 0.4229),
    (1, 0.846, [1443.3, 424.7, 104.5, 34.1], 0.3344),
    (1, 0.846, [1120.5, 535.9, 121.4, 35.1], 0.3811),
    (1, 0.845, [1135.5, 495.8, 118.9, 35.7], 0.3633),
    (1, 0.844, [1748.5, 693.9, 110.6, 33.5], 0.4191),
    (1, 0.842, [1663.8, 900.2, 117.3, 36.4], 0.3878),
    (1, 0.842, [1719.0, 760.1, 110.1, 31.3], 0.4264),
    (1, 0.842, [693.4, 372.3, 109.4, 33.7], 0.3719),
    (1, 0.841, [1468.7, 724.1, 96.9, 32.5], 0.4065),
    (1, 0.840, [1649.7, 937.2, 115.7, 36.3], 0.3419),
    (1, 0.838, [1558.3, 536.3, 111.6, 35.5], 0.3810),
    (1, 0.838, [367.8, 327.2, 82.8, 24.4], 0.3143),
    (1, 0.838, [690.1, 813.6, 40.5, 139.9], -0.2638),
    (1, 0.837, [1409.1, 532.9, 104.7, 30.8], 0.3189),
    (1, 0.836, [1307.3, 46.1, 101.9, 33.8], 0.4195),
    (1, 0.836, [1707.1, 793.4, 108.3, 33.0], 0.4368),
    (1, 0.834, [1677.2, 863.8, 116.3, 35.0], 0.4343),
    (1, 0.834, [294.3, 539.9, 70.8, 24.0], 0.3814),
    (1, 0.834, [1499.7, 659.9, 99.2, 31.6], 0.4073),
    (1, 0.833, [779.6, 786.2, 43.6, 152.3], -0.2552),
    (1, 0.833, [1245.6, 184.7, 95.3, 30.6], 0.4022),
    (1, 0.833, [1426.1, 463.0, 111.6, 36.6], 0.3322),
    (1, 0.832, [825.4, 941.4, 36.6, 104.6], -0.2851),
    (1, 0.831, [859.8, 321.5, 107.1, 34.1], 0.4652),
    (1, 0.831, [893.9, 219.4, 94.3, 30.9], 0.3879),
    (1, 0.831, [1140.7, 99.7, 99.8, 30.0], 0.4069),
    (1, 0.830, [1567.2, 499.3, 97.6, 32.0], 0.4042),
    (1, 0.830, [1053.3, 323.1, 97.6, 30.7], 0.4199),
    (1, 0.830, [551.4, 864.7, 34.8, 118.1], -0.3328),
    (1, 0.830, [968.0, 37.2, 98.7, 30.9], 0.3792),
    (1, 0.830, [1045.1, 354.8, 89.9, 30.3], 0.4313),
    (7, 0.612, [1749.0, 713.6, 135.6, 964.7], 0.4240),
];
const REFERENCE_COUNT: usize = 160;

fn obb_pipeline(tail: &str) -> String {
    format!(
        "filesrc location={} ! jpegdec ! videoconvert ! imagefreeze num-buffers=4 \
         ! rstrtinfer config-file-path={} {tail} ! appsink name=sink",
        quoted(&media("marina_obb.jpg")),
        quoted(&repo_root().join("pipelines/yolov8_obb.txt"))
    )
}

/// How far apart two angles of turned boxes are, as boxes: a quarter turn apart is the same
/// rectangle in its other form.
fn angle_apart(a: f32, b: f32) -> f32 {
    let d = (a - b).rem_euclid(std::f32::consts::FRAC_PI_2);
    d.min(std::f32::consts::FRAC_PI_2 - d)
}

fn centre(o: &Object) -> [f32; 2] {
    let b = o.bbox();
    [b.left + b.width / 2.0, b.top + b.height / 2.0]
}

#[test]
fn oriented_boxes_and_angles_match_the_reference() {
    let out = run_pipeline_frames(&obb_pipeline(""), 1, TIMEOUT).unwrap();
    assert_eq!(out.parser(), "YoloV8Obb");
    let objects = &out.frames[0].objects;
    // Every box in the form nearest upright.
    for o in objects {
        let angle = o.angle.unwrap_or_else(|| panic!("no angle: {o:#?}"));
        let quarter = std::f32::consts::FRAC_PI_4;
        assert!((-quarter..=quarter).contains(&angle), "{o:#?}");
    }
    let confident = objects.iter().filter(|o| o.confidence >= 0.5).count();
    assert!(
        confident.abs_diff(REFERENCE_COUNT) <= 4,
        "{confident} boxes of score >= 0.5, the reference {REFERENCE_COUNT}"
    );
    let mut worst_angle = 0.0f32;
    for &(class, score, [cx, cy, w, h], angle) in &REFERENCE {
        let want = ferrostream_core::BBox::new(cx - w / 2.0, cy - h / 2.0, w, h);
        let found = objects
            .iter()
            .filter(|o| o.class_id == class)
            .min_by(|a, b| {
                let d = |o: &Object| (centre(o)[0] - cx).hypot(centre(o)[1] - cy);
                d(a).total_cmp(&d(b))
            })
            .unwrap_or_else(|| panic!("no object of class {class}"));
        let [fx, fy] = centre(found);
        let iou = oriented::iou(&found.bbox(), found.angle.unwrap(), &want, angle);
        assert!(
            (fx - cx).hypot(fy - cy) <= 3.0 && iou >= 0.85,
            "class {class} at ({cx}, {cy}) {w}x{h} turned {angle}: nearest {found:#?} \
             (rotated IoU {iou})"
        );
        assert!(
            (found.confidence - score).abs() <= 0.03,
            "{found:#?} vs {score}"
        );
        let d = angle_apart(found.angle.unwrap(), angle);
        assert!(
            d <= 0.03,
            "angle {} vs {angle}: {found:#?}",
            found.angle.unwrap()
        );
        worst_angle = worst_angle.max(d);
    }
    eprintln!(
        "{} reference boxes matched, largest angle difference {worst_angle:.4} rad",
        REFERENCE.len()
    );
    // The labels come from the DOTA label file; the JSON record carries angle and corners.
    let ship = objects.iter().find(|o| &*o.label == "ship").expect("ships");
    let record = serde_json::to_value(FrameRecord::from(&out.frames[0])).unwrap();
    let first = &record["objects"][0];
    assert_eq!(
        first["angle"].as_f64().unwrap() as f32,
        objects[0].angle.unwrap()
    );
    let corners: Vec<[f32; 2]> = serde_json::from_value(first["corners"].clone()).unwrap();
    assert_eq!(corners, objects[0].corners().to_vec());
    assert!(
        ship.corners()
            .iter()
            .all(|c| c[0].is_finite() && c[1].is_finite())
    );
}

#[test]
fn angles_follow_tracked_objects_and_tiles() {
    // Inference on every other frame of the still image: between them rstracker predicts each
    // target with its last angle.
    let plain = run_pipeline_frames(&obb_pipeline(""), 1, TIMEOUT).unwrap();
    let tracked = run_pipeline_frames(&obb_pipeline("interval=1 ! rstracker"), 4, TIMEOUT).unwrap();
    let detected = &plain.frames[0].objects;
    let mut predicted = 0;
    for frame in &tracked.frames[1..] {
        for o in frame.objects.iter().filter(|o| o.confidence == 0.0) {
            predicted += 1;
            // The target's detection is the box at the same place in the still image.
            let [x, y] = centre(o);
            let seen = detected
                .iter()
                .min_by(|a, b| {
                    let d = |d: &Object| (centre(d)[0] - x).hypot(centre(d)[1] - y);
                    d(a).total_cmp(&d(b))
                })
                .unwrap();
            assert_eq!(o.angle, seen.angle, "{o:#?} predicted from {seen:#?}");
        }
    }
    assert!(predicted >= 50, "{predicted} predicted targets");

    // The tiler halves the frame: every turned box is the untiled one halved, angle kept.
    let tiled = run_pipeline_frames(
        &obb_pipeline("! rstiler rows=1 columns=1 width=960 height=540"),
        1,
        TIMEOUT,
    )
    .unwrap();
    let (a, b) = (&plain.frames[0].objects, &tiled.frames[0].objects);
    assert_eq!(a.len(), b.len());
    for (oa, ob) in a.iter().zip(b) {
        assert_eq!(oa.angle, ob.angle);
        for (ca, cb) in oa.corners().iter().zip(ob.corners()) {
            assert!(
                (ca[0] / 2.0 - cb[0]).abs() < 0.01 && (ca[1] / 2.0 - cb[1]).abs() < 0.01,
                "{ca:?} tiled to {cb:?}"
            );
        }
    }
}
