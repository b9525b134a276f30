// SPDX-License-Identifier: MIT OR Apache-2.0
use ferrostream_core::BBox;

use super::*;
use crate::engine::ElementType;

fn info(name: &str, dims: &[Option<usize>]) -> TensorInfo {
    TensorInfo {
        name: name.into(),
        element_type: ElementType::F32,
        dims: dims.to_vec(),
    }
}

fn tensor(name: &str, shape: &[usize], data: Vec<f32>) -> OutputTensor {
    assert_eq!(shape.iter().product::<usize>(), data.len());
    OutputTensor {
        name: name.into(),
        shape: shape.to_vec(),
        data,
    }
}

fn any(_: u32) -> ClassAttrs {
    ClassAttrs {
        pre_cluster_threshold: 0.3,
        ..Default::default()
    }
}

fn settings(kind: ParserKind, network_type: NetworkType) -> ParserSettings {
    let config = InferConfig {
        output_parser: kind,
        network_type,
        ..Default::default()
    };
    ParserSettings::new(&config, (640, 640))
}

fn select(outputs: &[TensorInfo]) -> Result<OutputParser, String> {
    OutputParser::select(&settings(ParserKind::Auto, NetworkType::Detector), outputs)
}

#[test]
fn guesses_each_layout_from_shapes() {
    let ssd = [
        info("scores", &[None, Some(1917), Some(90)]),
        info("boxes", &[None, Some(1917), Some(1), Some(4)]),
    ];
    assert_eq!(
        select(&ssd).unwrap().family::<Ssd>(),
        Some(&Ssd {
            scores: 0,
            boxes: 1,
            format: BoxFormat::Yxyx
        })
    );
    let cf = [
        info("537", &[None, Some(1), None, None]),
        info("538", &[None, Some(2), None, None]),
        info("539", &[None, Some(2), None, None]),
        info("540", &[None, Some(10), None, None]),
    ];
    assert_eq!(select(&cf).unwrap().kind(), ParserKind::CenterFace);
    let tf = [
        info("detection_boxes", &[None, Some(100), Some(4)]),
        info("detection_scores", &[None, Some(100)]),
        info("detection_classes", &[None, Some(100)]),
        info("num_detections", &[None]),
    ];
    assert_eq!(
        select(&tf).unwrap().family::<TfOdApi>(),
        Some(&TfOdApi {
            boxes: 0,
            scores: 1,
            classes: 2,
            num: Some(3)
        })
    );
    assert_eq!(
        select(&[info("out", &[Some(1), Some(25200), Some(85)])])
            .unwrap()
            .kind(),
        ParserKind::YoloV5
    );
    assert_eq!(
        select(&[info("out", &[Some(1), Some(84), Some(8400)])])
            .unwrap()
            .kind(),
        ParserKind::YoloV8
    );
    // At 640x640: the cells of YOLOX's grids, DETR's queries, finished rows.
    let kind = |dims: &[Option<usize>]| select(&[info("out", dims)]).map(|p| p.kind());
    assert_eq!(
        kind(&[Some(1), Some(8400), Some(85)]),
        Ok(ParserKind::Yolox)
    );
    assert_eq!(kind(&[Some(1), Some(300), Some(84)]), Ok(ParserKind::Detr));
    assert_eq!(
        kind(&[Some(1), Some(100), Some(6)]),
        Ok(ParserKind::EndToEnd)
    );
    assert_eq!(kind(&[None, Some(7)]), Ok(ParserKind::EndToEnd));
    let seg = [
        info("output0", &[Some(1), Some(116), Some(8400)]),
        info("output1", &[Some(1), Some(32), Some(160), Some(160)]),
    ];
    assert_eq!(select(&seg).unwrap().kind(), ParserKind::YoloV8Seg);
    let err = select(&[info("a", &[None, Some(3), Some(4), Some(5), Some(6)])]).unwrap_err();
    assert!(err.contains("set output-parser"), "{err}");
}

#[test]
fn classifier_shape_on_a_detector_is_an_error() {
    let logits = [info("logits", &[None, Some(1000)])];
    let err = select(&logits).unwrap_err();
    assert!(err.contains("network-type"), "{err}");
    let ok = OutputParser::select(
        &settings(ParserKind::Auto, NetworkType::Classifier),
        &logits,
    );
    assert_eq!(ok.unwrap().kind(), ParserKind::Classifier);
    let detector_as_classifier = OutputParser::select(
        &settings(ParserKind::Auto, NetworkType::Classifier),
        &[info("out", &[Some(1), Some(84), Some(8400)])],
    );
    assert!(detector_as_classifier.unwrap_err().contains("[N,C]"));
}

#[test]
fn network_type_other_parses_nothing() {
    let outputs = [info("embedding", &[None, Some(128)])];
    let select = |kind, network_type| OutputParser::select(&settings(kind, network_type), &outputs);
    let parser = select(ParserKind::Auto, NetworkType::Other).unwrap();
    assert_eq!(parser.kind(), ParserKind::None);
    assert!(select(ParserKind::Ssd, NetworkType::Other).is_err());
    let err = select(ParserKind::None, NetworkType::Detector).unwrap_err();
    assert!(err.contains("network-type other"), "{err}");
}

#[test]
fn ssd_decodes_normalised_yxyx_boxes_per_class() {
    let parser = Ssd {
        scores: 0,
        boxes: 1,
        format: BoxFormat::Yxyx,
    };
    // Two anchors, three classes.
    let scores = tensor("s", &[1, 2, 3], vec![0.9, 0.1, 0.4, 0.0, 0.2, 0.0]);
    let boxes = tensor(
        "b",
        &[1, 2, 1, 4],
        vec![0.1, 0.2, 0.5, 0.6, 0.0, 0.0, 1.0, 1.0],
    );
    let mut out = Vec::new();
    parser
        .detections(&[scores, boxes], 0, (300, 200), &any, &mut out)
        .unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!((out[0].class_id, out[0].confidence), (0, 0.9));
    let b = out[0].bbox;
    // x from 0.2*300 to 0.6*300, y from 0.1*200 to 0.5*200.
    assert!((b.left - 60.0).abs() < 1e-4 && (b.top - 20.0).abs() < 1e-4);
    assert!((b.right() - 180.0).abs() < 1e-4 && (b.bottom() - 100.0).abs() < 1e-4);
    assert_eq!(out[1].class_id, 2);
}

#[test]
fn tf_od_api_respects_num_detections_and_shifts_classes() {
    let parser = TfOdApi {
        boxes: 0,
        scores: 1,
        classes: 2,
        num: Some(3),
    };
    let outputs = [
        tensor(
            "detection_boxes",
            &[1, 3, 4],
            vec![0.0, 0.0, 0.5, 0.5, 0.5, 0.5, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0],
        ),
        tensor("detection_scores", &[1, 3], vec![0.8, 0.7, 0.99]),
        tensor("detection_classes", &[1, 3], vec![1.0, 3.0, 1.0]),
        tensor("num_detections", &[1], vec![2.0]),
    ];
    let mut out = Vec::new();
    parser
        .detections(&outputs, 0, (100, 100), &any, &mut out)
        .unwrap();
    assert_eq!(out.len(), 2, "the third row is beyond num_detections");
    assert_eq!(out[0].class_id, 0);
    assert_eq!(out[1].class_id, 2);
    assert_eq!(out[1].bbox, BBox::new(50.0, 50.0, 50.0, 50.0));
}

#[test]
fn yolo_layouts_decode_centre_boxes() {
    // YOLOv5: [cx, cy, w, h, obj, c0, c1]
    let v5 = tensor(
        "o",
        &[1, 2, 7],
        vec![
            50.0, 40.0, 20.0, 10.0, 0.9, 0.2, 0.8, 0.0, 0.0, 1.0, 1.0, 0.1, 0.9, 0.9,
        ],
    );
    let mut out = Vec::new();
    YoloV5 { output: 0 }
        .detections(&[v5], 0, (100, 100), &any, &mut out)
        .unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].class_id, 1);
    assert!((out[0].confidence - 0.72).abs() < 1e-6);
    assert_eq!(out[0].bbox, BBox::new(40.0, 35.0, 20.0, 10.0));
    // YOLOv8: rows cx, cy, w, h, c0, c1 over 2 boxes.
    let v8 = tensor(
        "o",
        &[1, 6, 2],
        vec![
            50.0, 10.0, 40.0, 10.0, 20.0, 4.0, 10.0, 4.0, 0.1, 0.05, 0.6, 0.1,
        ],
    );
    let mut out = Vec::new();
    YoloV8 { output: 0 }
        .detections(&[v8], 0, (100, 100), &any, &mut out)
        .unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].class_id, out[0].confidence), (1, 0.6));
    assert_eq!(out[0].bbox, BBox::new(40.0, 35.0, 20.0, 10.0));
}

#[test]
fn detr_rows_decode_normalised_centre_boxes() {
    // Two rows: cx, cy, w, h (normalised), then three class scores.
    let rows = tensor(
        "o",
        &[1, 2, 7],
        vec![
            0.5, 0.25, 0.2, 0.1, 0.1, 0.9, 0.2, //
            0.1, 0.1, 0.1, 0.1, 0.2, 0.1, 0.1,
        ],
    );
    let parser = Detr { output: 0 };
    assert_eq!(
        parser.num_classes(&[info("o", &[None, Some(300), Some(84)])]),
        Some(80)
    );
    let mut out = Vec::new();
    parser
        .detections(&[rows], 0, (200, 100), &any, &mut out)
        .unwrap();
    assert_eq!(out.len(), 1, "the second row's best score is under 0.3");
    assert_eq!((out[0].class_id, out[0].confidence), (1, 0.9));
    // Centre (100, 25), 40 x 10 network pixels.
    assert_eq!(out[0].bbox, BBox::new(80.0, 20.0, 40.0, 10.0));
    let err = Detr { output: 0 }
        .detections(
            &[tensor("o", &[1, 2, 4], vec![0.0; 8])],
            0,
            (1, 1),
            &any,
            &mut out,
        )
        .unwrap_err();
    assert!(err.contains("4+C"), "{err}");
}

#[test]
fn selected_rows_decode_like_the_whole_outputs() {
    // What the GPU path does: select anchors by the layout's test, gather their rows, and
    // decode each row; it must give exactly what parsing the whole outputs gives.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut random = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    let (anchors, classes) = (50, 5);
    let v8 = tensor(
        "o",
        &[2, 4 + classes, anchors],
        (0..2 * (4 + classes) * anchors)
            .map(|_| random() * 100.0 / 99.0)
            .collect(),
    );
    let parser = YoloV8 { output: 0 };
    let shapes = [v8.shape.as_slice()];
    let layout = parser.anchor_layout(&shapes).unwrap().unwrap();
    let attrs = |c: u32| ClassAttrs {
        pre_cluster_threshold: 0.5 + c as f32 * 0.1,
        ..Default::default()
    };
    let min = layout.min_threshold(&attrs);
    assert_eq!(min, 0.5);
    for item in 0..2 {
        let mut whole = Vec::new();
        parser
            .detections(
                std::slice::from_ref(&v8),
                item,
                (640, 640),
                &attrs,
                &mut whole,
            )
            .unwrap();
        let mut selected = Vec::new();
        let mut row = Vec::new();
        let mut kept = 0;
        for anchor in 0..anchors {
            layout.gather(&[v8.item(item)], anchor, &mut row).unwrap();
            if layout.select.passes(&row, min) {
                kept += 1;
                parser.decode_anchor(&row, anchor, 1, (640, 640), &attrs, min, &mut selected);
            }
        }
        assert!(kept < anchors && !whole.is_empty());
        assert_eq!(selected, whole);
    }
}

#[test]
fn centerface_decodes_a_peak() {
    // 2x2 heat map (network 8x8), one peak at row 1, col 0.
    let plane = 4;
    let hm = tensor("hm", &[1, 1, 2, 2], vec![0.0, 0.0, 0.95, 0.0]);
    let mut scale = vec![0.0; 2 * plane];
    scale[2] = (4.0f32 / 4.0).ln(); // height 4
    scale[plane + 2] = (2.0f32 / 4.0).ln(); // width 2
    let sc = tensor("sc", &[1, 2, 2, 2], scale);
    let of = tensor("of", &[1, 2, 2, 2], vec![0.0; 2 * plane]);
    let mut out = Vec::new();
    let parser = CenterFace {
        heatmap: 0,
        scale: 1,
        offset: 2,
        landmarks: None,
    };
    parser
        .detections(&[hm, sc, of], 0, (8, 8), &any, &mut out)
        .unwrap();
    assert_eq!(out.len(), 1);
    // Centre at ((0 + 0.5) * 4, (1 + 0.5) * 4) = (2, 6); 2 wide, 4 high.
    assert_eq!(out[0].bbox, BBox::new(1.0, 4.0, 2.0, 4.0));
    assert_eq!(out[0].confidence, 0.95);
}

#[test]
fn classifier_softmax_auto_detects_probabilities() {
    let logits = tensor("l", &[2, 3], vec![1.0, 3.0, 0.0, 0.1, 0.7, 0.2]);
    let p = Classifier {
        output: 0,
        softmax: Softmax::Auto,
    };
    let (class, prob) = p.top_class(std::slice::from_ref(&logits), 0).unwrap();
    let expected = 3f32.exp() / (1f32.exp() + 3f32.exp() + 1.0);
    assert_eq!(class, 1);
    assert!((prob - expected).abs() < 1e-6);
    assert_eq!(
        p.top_class(std::slice::from_ref(&logits), 1).unwrap(),
        (1, 0.7)
    );
}

#[test]
fn every_parser_kind_but_auto_is_one_family() {
    for value in <ParserKind as ferrostream_core::settings::Choice>::VALUES {
        let listed = FAMILIES.iter().filter(|f| f.kind == value.value).count();
        let expected = usize::from(value.value != ParserKind::Auto);
        assert_eq!(listed, expected, "{:?}", value.value);
    }
}

#[test]
fn yolov8_pose_decodes_boxes_and_keypoints_and_tells_a_detector_apart() {
    // Two anchors, one class, two keypoints: rows cx, cy, w, h, score, then x, y, conf twice.
    let rows = [
        [50.0, 10.0],
        [40.0, 10.0],
        [20.0, 4.0],
        [10.0, 4.0],
        [0.8, 0.1],
        [45.0, 1.0],
        [36.0, 1.0],
        [0.9, 0.5],
        [55.0, 2.0],
        [44.0, 2.0],
        [0.2, 0.5],
    ];
    let data: Vec<f32> = rows.iter().flatten().copied().collect();
    let pose = tensor("o", &[1, 11, 2], data);
    let config = InferConfig {
        output_parser: ParserKind::YoloV8Pose,
        num_keypoints: 2,
        ..Default::default()
    };
    let settings = ParserSettings::new(&config, (100, 100));
    let outputs = [info("o", &[None, Some(11), Some(2)])];
    let parser = OutputParser::select(&settings, &outputs).unwrap();
    assert_eq!(parser.kind(), ParserKind::YoloV8Pose);
    assert_eq!(parser.num_classes(&outputs), Some(1));
    let mut out = Vec::new();
    parser
        .detections(std::slice::from_ref(&pose), 0, (100, 100), &any, &mut out)
        .unwrap();
    let [d] = &out[..] else { panic!("{out:?}") };
    assert_eq!((d.class_id, d.confidence), (0, 0.8));
    assert_eq!(d.bbox, BBox::new(40.0, 35.0, 20.0, 10.0));
    assert_eq!(d.keypoints, vec![45.0, 36.0, 0.9, 55.0, 44.0, 0.2]);
    assert_eq!(parser.implausible(d, (100, 100)), None);
    // What the device path does: the selected anchors' gathered rows decode the same.
    let shapes = [pose.shape.as_slice()];
    let layout = parser.anchor_layout(&shapes).unwrap().unwrap();
    let min = layout.min_threshold(&any);
    let (mut selected, mut row) = (Vec::new(), Vec::new());
    for anchor in 0..layout.anchors {
        layout.gather(&[pose.item(0)], anchor, &mut row).unwrap();
        if layout.select.passes(&row, min) {
            parser.decode_anchor(&row, anchor, 1, (100, 100), &any, min, &mut selected);
        }
    }
    assert_eq!(selected, out);
    // The same shape from a detector with 7 classes: the "keypoints" are class scores, all
    // within a pixel of the corner.
    let mut scores = d.clone();
    scores.keypoints = vec![0.1, 0.3, 0.2, 0.05, 0.0, 0.4];
    assert!(
        parser
            .implausible(&scores, (100, 100))
            .is_some_and(|m| m.contains("output-parser")),
    );
    // The COCO shape is guessed; too few rows for the keypoints is an error naming the key.
    let coco = [info("o", &[None, Some(56), Some(8400)])];
    assert_eq!(select(&coco).unwrap().kind(), ParserKind::YoloV8Pose);
    let err =
        OutputParser::select(&settings, &[info("o", &[None, Some(10), Some(8)])]).unwrap_err();
    assert!(err.contains("num-keypoints"), "{err}");
    assert_eq!(parse_limb(" 3-4"), Ok([3, 4]));
    assert!(parse_limb("3").is_err());
}

#[test]
fn yolov8_obb_decodes_regularised_oriented_boxes_named_not_guessed() {
    use std::f32::consts::FRAC_PI_2;
    // Three anchors, two classes: rows cx, cy, w, h, two scores, angle.
    let rows = [
        [50.0, 20.0, 70.0],
        [40.0, 30.0, 60.0],
        [20.0, 8.0, 10.0],
        [10.0, 4.0, 6.0],
        [0.9, 0.1, 0.2],
        [0.2, 0.6, 0.1],
        [0.3, 2.0, -0.5],
    ];
    let data: Vec<f32> = rows.iter().flatten().copied().collect();
    let obb = tensor("o", &[1, 7, 3], data);
    let settings = settings(ParserKind::YoloV8Obb, NetworkType::Detector);
    let outputs = [info("o", &[None, Some(7), Some(3)])];
    let parser = OutputParser::select(&settings, &outputs).unwrap();
    assert_eq!(parser.kind(), ParserKind::YoloV8Obb);
    assert_eq!(parser.num_classes(&outputs), Some(2));
    let mut out = Vec::new();
    parser
        .detections(std::slice::from_ref(&obb), 0, (100, 100), &any, &mut out)
        .unwrap();
    let [a, b] = &out[..] else { panic!("{out:?}") };
    assert_eq!((a.class_id, a.confidence, a.angle), (0, 0.9, Some(0.3)));
    assert_eq!(a.bbox, BBox::new(40.0, 35.0, 20.0, 10.0));
    // 2 rad is past a quarter turn: the same box with its sides swapped, turned 2 - pi/2.
    assert_eq!((b.class_id, b.confidence), (1, 0.6));
    assert_eq!(b.bbox, BBox::new(18.0, 26.0, 4.0, 8.0));
    assert!((b.angle.unwrap() - (2.0 - FRAC_PI_2)).abs() < 1e-6);
    // The regularised box is the same turned rectangle.
    let raw = ferrostream_core::oriented::corners(&BBox::new(16.0, 28.0, 8.0, 4.0), 2.0);
    let mut reg = ferrostream_core::oriented::corners(&b.bbox, b.angle.unwrap()).to_vec();
    for p in raw {
        let i = (0..reg.len())
            .min_by(|&i, &j| {
                let d = |q: [f32; 2]| (q[0] - p[0]).hypot(q[1] - p[1]);
                d(reg[i]).total_cmp(&d(reg[j]))
            })
            .unwrap();
        assert!((reg[i][0] - p[0]).hypot(reg[i][1] - p[1]) < 1e-4, "{p:?}");
        reg.remove(i);
    }
    // What the device path does: the selected anchors' gathered rows decode the same.
    let shapes = [obb.shape.as_slice()];
    let layout = parser.anchor_layout(&shapes).unwrap().unwrap();
    let min = layout.min_threshold(&any);
    let (mut selected, mut row) = (Vec::new(), Vec::new());
    for anchor in 0..layout.anchors {
        layout.gather(&[obb.item(0)], anchor, &mut row).unwrap();
        if layout.select.passes(&row, min) {
            parser.decode_anchor(&row, anchor, 1, (100, 100), &any, min, &mut selected);
        }
    }
    assert_eq!(selected, out);
    // The angle row is no class score (the third anchor's 0.2 is its best, below threshold).
    assert!(out.iter().all(|d| d.class_id < 2));
    // Auto reads the DOTA model's shape as a YOLOv8 detector's; too few rows is an error.
    let dota = [info("o", &[None, Some(20), Some(21504)])];
    assert_eq!(select(&dota).unwrap().kind(), ParserKind::YoloV8);
    let err = OutputParser::select(&settings, &[info("o", &[None, Some(5), Some(8)])]).unwrap_err();
    assert!(err.contains("angle"), "{err}");
}

/// Decodes `rows` (one column per anchor) with the named `kind` on a 100x100 input.
fn decode_columns(config: InferConfig, rows: &[&[f32]]) -> Vec<Detection> {
    let (n, anchors) = (rows.len(), rows[0].len());
    let data: Vec<f32> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    let output = tensor("o", &[1, n, anchors], data);
    let settings = ParserSettings::new(&config, (100, 100));
    let parser =
        OutputParser::select(&settings, &[info("o", &[None, Some(n), Some(anchors)])]).unwrap();
    let mut out = Vec::new();
    parser
        .detections(std::slice::from_ref(&output), 0, (100, 100), &any, &mut out)
        .unwrap();
    out
}

#[test]
fn yolov8_obb_angles_that_are_no_angles_give_no_box() {
    use std::f32::consts::FRAC_PI_4;
    // Five anchors, one class: a plain angle, 1e30, NaN, infinity, and three turns (in range
    // after the form nearest upright is taken).
    let turns = 3.0 * std::f32::consts::TAU / 2.0 + 0.2;
    let config = InferConfig {
        output_parser: ParserKind::YoloV8Obb,
        ..Default::default()
    };
    let out = decode_columns(
        config,
        &[
            &[10.0, 30.0, 50.0, 70.0, 90.0],
            &[10.0, 30.0, 50.0, 70.0, 90.0],
            &[8.0; 5],
            &[4.0; 5],
            &[0.9; 5],
            &[0.3, 1e30, f32::NAN, f32::INFINITY, turns],
        ],
    );
    let angles: Vec<f32> = out.iter().map(|d| d.angle.unwrap()).collect();
    assert_eq!(angles.len(), 2, "{out:?}");
    assert_eq!(angles[0], 0.3);
    assert!((angles[1] - 0.2).abs() < 1e-4, "{angles:?}");
    assert!(angles.iter().all(|a| (-FRAC_PI_4..FRAC_PI_4).contains(a)));
}

#[test]
fn yolov8_pose_keypoints_without_a_finite_value_are_kept_unseen() {
    // One anchor, one class, three keypoints: a real one, one with a NaN position, one with an
    // infinite confidence, and one far off the input.
    let config = InferConfig {
        output_parser: ParserKind::YoloV8Pose,
        num_keypoints: 4,
        ..Default::default()
    };
    let column = [
        50.0,
        40.0,
        20.0,
        10.0,
        0.8,
        45.0,
        36.0,
        0.9,
        f32::NAN,
        44.0,
        0.7,
        46.0,
        37.0,
        f32::INFINITY,
        3e38,
        30.0,
        0.6,
    ];
    let rows: Vec<[f32; 1]> = column.iter().map(|v| [*v]).collect();
    let rows: Vec<&[f32]> = rows.iter().map(|r| &r[..]).collect();
    let out = decode_columns(config, &rows);
    let [d] = &out[..] else { panic!("{out:?}") };
    assert_eq!(
        d.keypoints,
        vec![
            45.0, 36.0, 0.9, 50.0, 40.0, 0.0, 50.0, 40.0, 0.0, 50.0, 40.0, 0.0
        ]
    );
}
