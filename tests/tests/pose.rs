// SPDX-License-Identifier: MIT OR Apache-2.0
//! A trained pose model (YOLO11n-pose, COCO's 17 keypoints, scripts/fetch-models.sh) through
//! rstrtinfer with pipelines/yolo11_pose.txt, which names no parser: the walkers of vtest.avi are
//! found with their keypoints where ONNX Runtime's Python API puts them on the same frames
//! (scripts/models/pose_reference.py, the same pre-processing), and the keypoints follow their
//! objects through rstracker (targets predicted between inferences) and rstiler (scaled onto the
//! tile).

use std::time::Duration;

use ferrostream_core::Object;
use ferrostream_core::keypoints::Keypoints;
use ferrostream_tests::{iou_ltrb, media, quoted, repo_root, run_pipeline_frames};

const TIMEOUT: Duration = Duration::from_secs(300);

/// A person of the reference run: score, box (left, top, right, bottom) and 17 keypoints (x, y,
/// confidence), in vtest.avi's pixels.
struct Person {
    frame: u64,
    box_ltrb: [f32; 4],
    points: [(f32, f32, f32); 17],
}

/// `pose_reference.py yolo11n_pose_960.onnx vtest.avi 0 10`: every person of score >= 0.5.
const REFERENCE: [Person; 7] = [
    Person {
        frame: 0,
        box_ltrb: [640.6, 241.1, 684.8, 321.9],
        points: [
            (652.1, 252.9, 0.36),
            (652.5, 250.9, 0.48),
            (652.4, 250.6, 0.06),
            (656.2, 249.8, 0.85),
            (657.8, 249.2, 0.05),
            (662.3, 256.9, 0.98),
            (663.7, 255.6, 0.9),
            (664.1, 271.5, 0.96),
            (665.7, 270.2, 0.46),
            (659.9, 283.3, 0.91),
            (661.1, 282.2, 0.47),
            (667.4, 280.5, 0.99),
            (669.5, 279.6, 0.99),
            (659.2, 298.3, 1.0),
            (669.6, 297.5, 0.98),
            (657.1, 315.2, 0.99),
            (672.9, 313.1, 0.98),
        ],
    },
    Person {
        frame: 0,
        box_ltrb: [253.7, 220.0, 283.9, 307.9],
        points: [
            (273.8, 230.1, 0.36),
            (272.6, 227.8, 0.07),
            (272.7, 228.0, 0.44),
            (264.8, 228.3, 0.15),
            (269.1, 228.6, 0.91),
            (259.6, 238.1, 0.94),
            (269.3, 238.7, 0.99),
            (257.3, 253.1, 0.48),
            (272.3, 253.6, 0.96),
            (262.1, 267.2, 0.35),
            (276.6, 267.0, 0.86),
            (262.4, 263.5, 0.97),
            (269.7, 264.2, 0.99),
            (263.8, 283.2, 0.93),
            (275.3, 283.5, 0.98),
            (260.5, 301.3, 0.89),
            (275.5, 302.7, 0.95),
        ],
    },
    Person {
        frame: 0,
        box_ltrb: [498.5, 156.8, 529.0, 231.5],
        points: [
            (512.5, 165.2, 0.95),
            (513.9, 163.5, 0.93),
            (511.1, 163.7, 0.87),
            (516.9, 164.1, 0.82),
            (509.5, 164.7, 0.57),
            (520.7, 172.0, 1.0),
            (508.4, 172.5, 0.99),
            (525.5, 182.1, 0.97),
            (503.9, 182.0, 0.91),
            (526.1, 192.7, 0.93),
            (502.0, 190.9, 0.85),
            (519.1, 192.2, 0.99),
            (511.5, 192.3, 0.99),
            (518.2, 208.7, 0.98),
            (512.7, 208.8, 0.97),
            (518.4, 222.8, 0.95),
            (514.7, 222.8, 0.94),
        ],
    },
    Person {
        frame: 10,
        box_ltrb: [748.1, 302.0, 768.1, 411.4],
        points: [
            (764.9, 314.3, 0.24),
            (765.6, 311.9, 0.16),
            (764.3, 311.9, 0.16),
            (766.1, 313.3, 0.17),
            (765.1, 313.5, 0.18),
            (766.6, 326.9, 0.46),
            (765.1, 326.5, 0.57),
            (764.3, 344.3, 0.19),
            (762.6, 343.1, 0.32),
            (762.6, 359.9, 0.18),
            (759.1, 359.5, 0.27),
            (763.8, 361.0, 0.58),
            (763.1, 360.4, 0.64),
            (760.0, 381.1, 0.58),
            (760.6, 380.6, 0.64),
            (757.4, 403.6, 0.56),
            (757.5, 402.9, 0.6),
        ],
    },
    Person {
        frame: 10,
        box_ltrb: [316.7, 207.8, 354.8, 294.2],
        points: [
            (336.5, 216.8, 0.38),
            (335.6, 214.8, 0.1),
            (335.6, 215.0, 0.42),
            (329.0, 215.7, 0.24),
            (331.8, 216.2, 0.89),
            (324.1, 225.7, 0.97),
            (331.1, 226.6, 0.99),
            (321.5, 239.3, 0.69),
            (334.3, 240.2, 0.96),
            (323.6, 251.3, 0.54),
            (337.2, 252.1, 0.86),
            (326.0, 249.8, 0.99),
            (332.2, 250.6, 1.0),
            (323.6, 267.9, 0.98),
            (339.9, 268.4, 0.99),
            (321.4, 283.9, 0.98),
            (345.4, 285.1, 0.99),
        ],
    },
    Person {
        frame: 10,
        box_ltrb: [549.3, 238.3, 583.0, 324.3],
        points: [
            (553.9, 248.0, 0.27),
            (554.9, 246.1, 0.35),
            (555.1, 246.0, 0.05),
            (557.7, 246.7, 0.87),
            (562.3, 246.6, 0.09),
            (559.6, 256.1, 0.98),
            (566.7, 256.1, 0.92),
            (558.9, 270.5, 0.93),
            (569.8, 270.0, 0.4),
            (554.7, 282.7, 0.8),
            (565.9, 281.7, 0.3),
            (560.6, 281.1, 0.99),
            (566.2, 280.6, 0.98),
            (557.3, 298.9, 0.99),
            (566.5, 298.5, 0.97),
            (561.4, 315.0, 0.98),
            (573.5, 313.8, 0.96),
        ],
    },
    Person {
        frame: 10,
        box_ltrb: [463.5, 167.8, 502.7, 247.1],
        points: [
            (475.9, 176.5, 0.9),
            (477.4, 174.8, 0.9),
            (475.0, 175.0, 0.71),
            (481.5, 175.4, 0.83),
            (474.9, 176.0, 0.3),
            (487.1, 183.9, 0.99),
            (475.0, 184.6, 0.98),
            (495.6, 194.0, 0.97),
            (471.6, 194.6, 0.83),
            (498.5, 203.6, 0.94),
            (467.7, 202.9, 0.79),
            (485.9, 204.7, 1.0),
            (478.7, 204.8, 0.99),
            (483.8, 221.7, 0.99),
            (480.0, 221.9, 0.98),
            (484.5, 237.4, 0.97),
            (482.8, 237.3, 0.96),
        ],
    },
];

fn pose_pipeline(middle: &str) -> String {
    format!(
        "filesrc location={} ! decodebin ! videoconvert \
         ! rstrtinfer config-file-path={} {middle} ! appsink name=sink",
        quoted(&media("vtest.avi")),
        quoted(&repo_root().join("pipelines/yolo11_pose.txt")),
    )
}

fn ltrb(o: &Object) -> [f32; 4] {
    let b = o.detector_bbox;
    [b.left, b.top, b.right(), b.bottom()]
}

fn keypoints(o: &Object) -> &Keypoints {
    o.keypoints
        .as_ref()
        .unwrap_or_else(|| panic!("no keypoints: {o:#?}"))
}

#[test]
fn keypoints_land_where_the_reference_puts_them() {
    let out = run_pipeline_frames(&pose_pipeline(""), 11, TIMEOUT).unwrap();
    assert_eq!(out.frames.len(), 11);
    assert_eq!(out.parser(), "YoloV8Pose (17 keypoints)");
    let mut compared = 0;
    let mut total = 0.0;
    for person in &REFERENCE {
        let frame = &out.frames[person.frame as usize];
        let found = frame
            .objects
            .iter()
            .max_by(|a, b| {
                iou_ltrb(ltrb(a), person.box_ltrb).total_cmp(&iou_ltrb(ltrb(b), person.box_ltrb))
            })
            .unwrap_or_else(|| panic!("nobody in frame {}", person.frame));
        let iou = iou_ltrb(ltrb(found), person.box_ltrb);
        assert!(
            iou >= 0.8,
            "frame {}: no person at {:?} (best IoU {iou}): {:#?}",
            person.frame,
            person.box_ltrb,
            frame.objects
        );
        assert_eq!(&*found.label, "person");
        let k = keypoints(found);
        assert_eq!(k.points.len(), 17);
        assert_eq!(&*k.points[0].name, "nose");
        assert_eq!(&*k.points[16].name, "right_ankle");
        assert_eq!(k.skeleton.len(), 19);
        for (i, (p, want)) in k.points.iter().zip(&person.points).enumerate() {
            // Visible points within 5 pixels; every confidence within 0.1.
            assert!(
                (p.confidence - want.2).abs() <= 0.1,
                "frame {} point {i}: confidence {} vs {}",
                person.frame,
                p.confidence,
                want.2
            );
            if want.2 >= 0.5 {
                let d = (p.x - want.0).hypot(p.y - want.1);
                assert!(
                    d <= 5.0,
                    "frame {} {}: ({}, {}) is {d:.1} px from ({}, {})",
                    person.frame,
                    p.name,
                    p.x,
                    p.y,
                    want.0,
                    want.1
                );
                compared += 1;
                total += d;
            }
        }
    }
    assert!(compared >= 80, "{compared} keypoints compared");
    // The decoders and resizers differ a little; on average the points agree within 1 px.
    let mean = total / compared as f32;
    assert!(
        mean <= 1.0,
        "mean distance {mean:.2} px over {compared} keypoints"
    );
    eprintln!("{compared} keypoints, mean distance {mean:.2} px");
}

#[test]
fn keypoints_follow_tracked_objects_and_tiles() {
    // Inference on every other frame: between them rstracker predicts each target, and its
    // last keypoints move with the predicted box.
    let tracked =
        run_pipeline_frames(&pose_pipeline("interval=1 ! rstracker"), 12, TIMEOUT).unwrap();
    let mut predicted = 0;
    for frame in &tracked.frames {
        for o in &frame.objects {
            let k = keypoints(o);
            if o.confidence == 0.0 {
                // A predicted target: its keypoints lie in (or at the edge of) its box.
                predicted += 1;
                let b = o.bbox();
                for p in k.points.iter().filter(|p| p.confidence >= 0.5) {
                    assert!(
                        p.x >= b.left - 8.0
                            && p.x <= b.right() + 8.0
                            && p.y >= b.top - 8.0
                            && p.y <= b.bottom() + 8.0,
                        "frame {}: {} at ({}, {}) outside {b:?}",
                        frame.frame_num,
                        p.name,
                        p.x,
                        p.y
                    );
                }
            }
        }
    }
    assert!(
        predicted >= 5,
        "{predicted} predicted targets with keypoints"
    );

    // The tiler halves the frame: every keypoint is the untiled one halved.
    let plain = run_pipeline_frames(&pose_pipeline(""), 2, TIMEOUT).unwrap();
    let tiled = run_pipeline_frames(
        &pose_pipeline("! rstiler rows=1 columns=1 width=384 height=288"),
        2,
        TIMEOUT,
    )
    .unwrap();
    for (a, b) in plain.frames.iter().zip(&tiled.frames) {
        assert_eq!(a.objects.len(), b.objects.len());
        assert!(!a.objects.is_empty());
        for (oa, ob) in a.objects.iter().zip(&b.objects) {
            for (pa, pb) in keypoints(oa).points.iter().zip(&keypoints(ob).points) {
                assert!(
                    (pa.x / 2.0 - pb.x).abs() < 0.01 && (pa.y / 2.0 - pb.y).abs() < 0.01,
                    "{pa:?} tiled to {pb:?}"
                );
            }
        }
    }
}
