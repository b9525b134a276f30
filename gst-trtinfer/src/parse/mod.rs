// SPDX-License-Identifier: MIT OR Apache-2.0
//! Output parsers: raw output tensors to detections (in network-input pixels) or class scores.
//!
//! The parser is chosen by `output-parser`, or guessed from the number, names and shapes of the
//! model's outputs; where the model leaves output dimensions symbolic, from the first
//! inference's real shapes. Class ids are 0-based indices into the label file: for SSD column
//! `i` of the scores, for the TensorFlow Object Detection API its 1-based `detection_classes`
//! minus one.

mod rows;

use ferrostream_core::BBox;

use crate::config::{ClassAttrs, InferConfig, NetworkType, ParserKind, Softmax};
pub use crate::layout::{BoxCoords, BoxFormat, Columns, Detection, Row};
use crate::engine::{OutputTensor, TensorInfo};

/// What the configuration says about parsing, and the network input size.
#[derive(Debug, Clone, PartialEq)]
pub struct ParserSettings {
    pub kind: ParserKind,
    pub network_type: NetworkType,
    pub box_format: BoxFormat,
    pub box_coordinates: BoxCoords,
    pub columns: Option<Columns>,
    pub softmax: Softmax,
    pub yolox_strides: Vec<u32>,
    /// Network input width and height.
    pub net: (u32, u32),
}

impl ParserSettings {
    pub fn new(config: &InferConfig, net: (u32, u32)) -> Self {
        Self {
            kind: config.output_parser,
            network_type: config.network_type,
            box_format: config.box_format,
            box_coordinates: config.box_coordinates,
            columns: config.end_to_end_columns.clone(),
            softmax: config.classifier_softmax,
            yolox_strides: config.yolox_strides.clone(),
            net,
        }
    }
}

/// The parser for one model, with the index of each output it reads.
#[derive(Debug, Clone, PartialEq)]
pub enum OutputParser {
    Ssd {
        scores: usize,
        boxes: usize,
        format: BoxFormat,
    },
    TfOdApi {
        boxes: usize,
        scores: usize,
        classes: usize,
        num: Option<usize>,
    },
    YoloV5 {
        output: usize,
    },
    YoloV8 {
        output: usize,
    },
    /// End-to-end rows `[N,K,4+C]`: normalised cx,cy,w,h then C class scores (RT-DETR, DETR).
    Detr {
        output: usize,
    },
    /// Finished detections, one row each (see [`rows`]). `columns`, `format` and `coords` may
    /// be open (`None`, `Auto`) until [`OutputParser::refine`] reads the first confident rows.
    EndToEnd {
        output: usize,
        columns: Option<Columns>,
        format: BoxFormat,
        coords: BoxCoords,
    },
    /// Boxes `[N,K,4]`, scores `[N,K]` (or boxes `[N,K,5]` whose fifth value is the score),
    /// 0-based labels `[N,K]`, optionally a count `[N]`.
    BoxesScoresLabels {
        boxes: usize,
        scores: Option<usize>,
        labels: usize,
        num: Option<usize>,
        format: BoxFormat,
        coords: BoxCoords,
    },
    /// YOLOX `[N,A,5+C]`: per grid cell x,y offsets, log w,h, objectness and class scores, the
    /// cells of each stride's grid in turn.
    Yolox {
        output: usize,
        strides: Vec<u32>,
    },
    CenterFace {
        heatmap: usize,
        scale: usize,
        offset: usize,
        landmarks: Option<usize>,
    },
    Classifier {
        output: usize,
        softmax: Softmax,
    },
    /// An nvinfer custom parser library, called by [`crate::inference::Inference`].
    Custom(crate::layout::CustomKind),
    /// YOLOv8-seg: `[N,4+C+M,B]` rows (cx,cy,w,h in network pixels, C class scores, M mask
    /// coefficients) and `[N,M,h,w]` prototype masks over the network input.
    YoloV8Seg {
        output: usize,
        protos: usize,
    },
    /// Semantic segmentation: `[N,C,H,W]` class scores (`[N,1,H,W]`: one class against the
    /// background) over the network input.
    Segmentation {
        output: usize,
    },
    /// No parsing (network-type other): the outputs themselves are the result.
    Tensors,
}

/// Item dims (without the batch dimension); `None` where dynamic.
fn item_dims(info: &TensorInfo) -> &[Option<usize>] {
    info.dims.get(1..).unwrap_or(&[])
}

fn is_classifier_shape(info: &TensorInfo) -> bool {
    matches!(item_dims(info), [Some(_)] | [Some(_), Some(1), Some(1)])
}

fn describe(outputs: &[TensorInfo]) -> String {
    outputs
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl OutputParser {
    /// Chooses the parser for `outputs` (the outputs to consider, in order).
    pub fn select(settings: &ParserSettings, outputs: &[TensorInfo]) -> Result<Self, String> {
        let (kind, network_type) = (settings.kind, settings.network_type);
        let (box_format, softmax) = (settings.box_format, settings.softmax);
        match (kind, network_type) {
            (ParserKind::Auto | ParserKind::None, NetworkType::Other) => {
                return Ok(OutputParser::Tensors);
            }
            (kind, NetworkType::Other) => {
                return Err(format!(
                    "network-type other attaches raw tensors and parses nothing, but \
                     output-parser is {kind:?}; leave output-parser at auto"
                ));
            }
            (ParserKind::None, network_type) => {
                return Err(format!(
                    "output-parser none needs network-type other (raw tensors), not \
                     {network_type:?}"
                ));
            }
            _ => {}
        }
        let kind = match (kind, network_type) {
            (ParserKind::Auto | ParserKind::Segmentation, NetworkType::Segmentation) => {
                return select_segmentation(outputs);
            }
            (kind, NetworkType::Segmentation) => {
                return Err(format!(
                    "network-type segmentation takes output-parser auto or segmentation, not \
                     {kind:?}"
                ));
            }
            (ParserKind::Segmentation, network_type) => {
                return Err(format!(
                    "output-parser segmentation needs network-type segmentation, not \
                     {network_type:?}"
                ));
            }
            (ParserKind::Auto, NetworkType::InstanceSegmentation) => ParserKind::YoloV8Seg,
            (ParserKind::Auto, NetworkType::Classifier) => ParserKind::Classifier,
            (ParserKind::Auto, NetworkType::Detector) => guess(outputs, settings)?,
            (kind, _) => kind,
        };
        if kind == ParserKind::Classifier && network_type == NetworkType::Detector {
            return Err(format!(
                "the model's outputs ({}) are shaped like a classifier's, but network-type is \
                 detector; set network-type=1 (classifier) or choose another output-parser",
                describe(outputs)
            ));
        }
        if kind != ParserKind::Classifier && network_type == NetworkType::Classifier {
            return Err(format!(
                "network-type is classifier but output-parser is {kind:?}; a classifier needs \
                 output-parser=classifier"
            ));
        }
        let parser = match kind {
            ParserKind::Auto | ParserKind::None => unreachable!("resolved above"),
            ParserKind::Ssd => select_ssd(outputs, box_format)?,
            ParserKind::TfOdApi => select_tf_od_api(outputs)?,
            ParserKind::EndToEnd => select_end_to_end(outputs, settings)?,
            ParserKind::BoxesScoresLabels => select_boxes_scores_labels(outputs, settings)?,
            ParserKind::Yolox => select_yolox(outputs, settings)?,
            ParserKind::YoloV8Seg => select_yolov8_seg(outputs)?,
            ParserKind::Segmentation => unreachable!("handled with network-type segmentation"),
            ParserKind::Custom => {
                return Err("output-parser custom is chosen by custom-lib-path and a \
                            parse-*-func-name key, not set by itself"
                    .into());
            }
            ParserKind::YoloV5 | ParserKind::YoloV8 | ParserKind::Detr => {
                let [output] = outputs else {
                    return Err(format!(
                        "{kind:?} expects one output, found {}",
                        describe(outputs)
                    ));
                };
                if item_dims(output).len() != 2 {
                    return Err(format!("{kind:?} expects a [N,*,*] output, found {output}"));
                }
                match kind {
                    ParserKind::YoloV5 => OutputParser::YoloV5 { output: 0 },
                    ParserKind::YoloV8 => OutputParser::YoloV8 { output: 0 },
                    _ => OutputParser::Detr { output: 0 },
                }
            }
            ParserKind::CenterFace => select_centerface(outputs)?,
            ParserKind::Classifier => {
                let Some(output) = outputs.iter().position(is_classifier_shape) else {
                    return Err(format!(
                        "a classifier needs an output shaped [N,C] or [N,C,1,1]; the model has {}",
                        describe(outputs)
                    ));
                };
                OutputParser::Classifier { output, softmax }
            }
        };
        Ok(parser)
    }

    /// Re-indexes the outputs: index `i` of the outputs given to [`OutputParser::select`]
    /// becomes `map[i]` (their position among all the engine's outputs).
    pub fn remap(self, map: &[usize]) -> Self {
        let m = |i: usize| map[i];
        match self {
            OutputParser::Ssd {
                scores,
                boxes,
                format,
            } => OutputParser::Ssd {
                scores: m(scores),
                boxes: m(boxes),
                format,
            },
            OutputParser::TfOdApi {
                boxes,
                scores,
                classes,
                num,
            } => OutputParser::TfOdApi {
                boxes: m(boxes),
                scores: m(scores),
                classes: m(classes),
                num: num.map(m),
            },
            OutputParser::YoloV5 { output } => OutputParser::YoloV5 { output: m(output) },
            OutputParser::YoloV8 { output } => OutputParser::YoloV8 { output: m(output) },
            OutputParser::Detr { output } => OutputParser::Detr { output: m(output) },
            OutputParser::EndToEnd {
                output,
                columns,
                format,
                coords,
            } => OutputParser::EndToEnd {
                output: m(output),
                columns,
                format,
                coords,
            },
            OutputParser::BoxesScoresLabels {
                boxes,
                scores,
                labels,
                num,
                format,
                coords,
            } => OutputParser::BoxesScoresLabels {
                boxes: m(boxes),
                scores: scores.map(m),
                labels: m(labels),
                num: num.map(m),
                format,
                coords,
            },
            OutputParser::Yolox { output, strides } => OutputParser::Yolox {
                output: m(output),
                strides,
            },
            OutputParser::CenterFace {
                heatmap,
                scale,
                offset,
                landmarks,
            } => OutputParser::CenterFace {
                heatmap: m(heatmap),
                scale: m(scale),
                offset: m(offset),
                landmarks: landmarks.map(m),
            },
            OutputParser::Classifier { output, softmax } => OutputParser::Classifier {
                output: m(output),
                softmax,
            },
            OutputParser::Custom(kind) => OutputParser::Custom(kind),
            OutputParser::YoloV8Seg { output, protos } => OutputParser::YoloV8Seg {
                output: m(output),
                protos: m(protos),
            },
            OutputParser::Segmentation { output } => {
                OutputParser::Segmentation { output: m(output) }
            }
            OutputParser::Tensors => OutputParser::Tensors,
        }
    }

    pub fn kind(&self) -> ParserKind {
        match self {
            OutputParser::Ssd { .. } => ParserKind::Ssd,
            OutputParser::TfOdApi { .. } => ParserKind::TfOdApi,
            OutputParser::YoloV5 { .. } => ParserKind::YoloV5,
            OutputParser::YoloV8 { .. } => ParserKind::YoloV8,
            OutputParser::Detr { .. } => ParserKind::Detr,
            OutputParser::EndToEnd { .. } => ParserKind::EndToEnd,
            OutputParser::BoxesScoresLabels { .. } => ParserKind::BoxesScoresLabels,
            OutputParser::Yolox { .. } => ParserKind::Yolox,
            OutputParser::CenterFace { .. } => ParserKind::CenterFace,
            OutputParser::Classifier { .. } => ParserKind::Classifier,
            OutputParser::Custom(_) => ParserKind::Custom,
            OutputParser::YoloV8Seg { .. } => ParserKind::YoloV8Seg,
            OutputParser::Segmentation { .. } => ParserKind::Segmentation,
            OutputParser::Tensors => ParserKind::None,
        }
    }

    /// Number of classes the outputs encode, where their shapes say.
    pub fn num_classes(&self, outputs: &[TensorInfo]) -> Option<usize> {
        let dim =
            |index: usize, axis: usize| item_dims(&outputs[index]).get(axis).copied().flatten();
        match *self {
            OutputParser::Ssd { scores, .. } => dim(scores, 1),
            OutputParser::TfOdApi { .. }
            | OutputParser::EndToEnd { .. }
            | OutputParser::BoxesScoresLabels { .. } => None,
            OutputParser::YoloV5 { output } | OutputParser::Yolox { output, .. } => {
                dim(output, 1).map(|d| d.saturating_sub(5))
            }
            OutputParser::YoloV8 { output } => dim(output, 0).map(|d| d.saturating_sub(4)),
            OutputParser::Detr { output } => dim(output, 1).map(|d| d.saturating_sub(4)),
            OutputParser::CenterFace { .. } => Some(1),
            OutputParser::Classifier { output, .. } => dim(output, 0),
            OutputParser::YoloV8Seg { output, protos } => {
                let rows = dim(output, 0)?;
                let masks = dim(protos, 0)?;
                rows.checked_sub(4 + masks)
            }
            OutputParser::Segmentation { output } => dim(output, 0),
            OutputParser::Custom(_) | OutputParser::Tensors => None,
        }
    }

    /// Default class names when no label file is given.
    pub fn default_labels(&self) -> &'static [&'static str] {
        match self {
            OutputParser::CenterFace { .. } => &["face"],
            _ => &[],
        }
    }

    /// How one anchor's values lie in the outputs of shapes `shapes` (every output's shape,
    /// batch first), for the parsers that decode anchor by anchor (SSD, YOLO, DETR,
    /// CenterFace); `None` for the others. A GPU decoder selects the anchors that may hold a
    /// detection and gathers their rows; [`OutputParser::decode_anchor`] turns a row into
    /// detections on the host, the same code whether the row came from the GPU or the CPU.
    pub fn anchor_layout(&self, shapes: &[&[usize]]) -> Option<Result<AnchorLayout, String>> {
        let shape = |i: usize| shapes.get(i).copied().unwrap_or(&[]);
        let group = |output, offset, anchor_stride, elem_stride, count| Group {
            output,
            offset,
            anchor_stride,
            elem_stride,
            count,
        };
        Some(match *self {
            OutputParser::Ssd { scores, boxes, .. } => match (shape(scores), shape(boxes)) {
                ([_, anchors, classes], b)
                    if b.iter().skip(1).product::<usize>() == anchors * 4 =>
                {
                    Ok(AnchorLayout {
                        anchors: *anchors,
                        groups: vec![
                            group(scores, 0, *classes, 1, *classes),
                            group(boxes, 0, 4, 1, 4),
                        ],
                        select: Select::BestClass {
                            start: 0,
                            count: *classes,
                            objectness: None,
                        },
                    })
                }
                (s, b) => Err(format!(
                    "SSD scores {s:?} and boxes {b:?} do not describe the same anchors"
                )),
            },
            OutputParser::YoloV5 { output } | OutputParser::Yolox { output, .. } => {
                match shape(output) {
                    [_, boxes, stride] if *stride >= 6 => Ok(AnchorLayout {
                        anchors: *boxes,
                        groups: vec![group(output, 0, *stride, 1, *stride)],
                        select: Select::BestClass {
                            start: 5,
                            count: stride - 5,
                            objectness: Some(4),
                        },
                    }),
                    other => Err(format!("YOLOv5/YOLOX output {other:?} has no class scores")),
                }
            }
            OutputParser::YoloV8 { output } => match shape(output) {
                [_, rows, boxes] if *rows >= 5 => Ok(AnchorLayout {
                    anchors: *boxes,
                    groups: vec![group(output, 0, 1, *boxes, *rows)],
                    select: Select::BestClass {
                        start: 4,
                        count: rows - 4,
                        objectness: None,
                    },
                }),
                other => Err(format!("YOLOv8 output {other:?} has no class scores")),
            },
            OutputParser::Detr { output } => match shape(output) {
                [_, rows, width] if *width >= 5 => Ok(AnchorLayout {
                    anchors: *rows,
                    groups: vec![group(output, 0, *width, 1, *width)],
                    select: Select::BestClass {
                        start: 4,
                        count: width - 4,
                        objectness: None,
                    },
                }),
                other => Err(format!(
                    "DETR rows should be [N,K,4+C] with at least one class; found {other:?}"
                )),
            },
            OutputParser::CenterFace {
                heatmap,
                scale,
                offset,
                landmarks,
            } => {
                let [_, _, h, w] = shape(heatmap) else {
                    return Some(Err(format!(
                        "CenterFace heatmap {:?} is not [N,1,h,w]",
                        shape(heatmap)
                    )));
                };
                let plane = h * w;
                let planes = |i: usize, count: usize| {
                    shape(i).iter().skip(1).product::<usize>() >= count * plane
                };
                if !planes(scale, 2) || !planes(offset, 2) {
                    return Some(Err(
                        "CenterFace scale/offset maps do not match the heatmap".into()
                    ));
                }
                let mut groups = vec![
                    group(heatmap, 0, 1, plane, 1),
                    group(scale, 0, 1, plane, 2),
                    group(offset, 0, 1, plane, 2),
                ];
                if let Some(l) = landmarks.filter(|&l| planes(l, 10)) {
                    groups.push(group(l, 0, 1, plane, 10));
                }
                Ok(AnchorLayout {
                    anchors: plane,
                    groups,
                    select: Select::Value { index: 0 },
                })
            }
            OutputParser::TfOdApi { .. }
            | OutputParser::EndToEnd { .. }
            | OutputParser::BoxesScoresLabels { .. }
            | OutputParser::Classifier { .. }
            | OutputParser::Custom(_)
            // Prototype masks are needed whole, with the rows.
            | OutputParser::YoloV8Seg { .. }
            | OutputParser::Segmentation { .. }
            | OutputParser::Tensors => return None,
        })
    }

    /// Decodes the detections of anchor `anchor` from its `row` (the values of
    /// [`AnchorLayout::groups`], in order), keeping those at or above their class's
    /// `pre-cluster-threshold` (size limits apply later, to the clustered objects in frame
    /// pixels, as in nvinfer). `heatmap_width` is CenterFace's
    /// heatmap width (ignored by the others).
    #[allow(clippy::too_many_arguments)]
    pub fn decode_anchor(
        &self,
        row: &[f32],
        anchor: usize,
        heatmap_width: usize,
        net_size: (u32, u32),
        attrs: &dyn Fn(u32) -> ClassAttrs,
        min_threshold: f32,
        out: &mut Vec<Detection>,
    ) {
        let (net_w, net_h) = (net_size.0 as f32, net_size.1 as f32);
        let mut push = |class_id: u32, confidence: f32, bbox: BBox, landmarks: Vec<f32>| {
            let a = attrs(class_id);
            if confidence >= a.pre_cluster_threshold {
                out.push(Detection {
                    class_id,
                    confidence,
                    bbox,
                    landmarks,
                    coefficients: Vec::new(),
                    mask: None,
                });
                true
            } else {
                false
            }
        };
        match *self {
            OutputParser::Ssd { format, .. } => {
                let (scores, coords) = row.split_at(row.len() - 4);
                let v = [coords[0], coords[1], coords[2], coords[3]];
                let bbox = rows::to_bbox(format, true, v, (net_w, net_h));
                for (class, &score) in scores.iter().enumerate() {
                    // Cheap reject before looking up per-class attributes.
                    if score >= min_threshold {
                        push(class as u32, score, bbox, Vec::new());
                    }
                }
            }
            OutputParser::YoloV5 { .. } => {
                let (class, score) = argmax(&row[5..]);
                push(
                    class as u32,
                    row[4] * score,
                    centre_box(row[0], row[1], row[2], row[3]),
                    Vec::new(),
                );
            }
            OutputParser::Yolox { ref strides, .. } => {
                let Some((gx, gy, stride)) = yolox_cell(anchor, net_size, strides) else {
                    return;
                };
                let (class, score) = argmax(&row[5..]);
                push(
                    class as u32,
                    row[4] * score,
                    centre_box(
                        (row[0] + gx) * stride,
                        (row[1] + gy) * stride,
                        row[2].exp() * stride,
                        row[3].exp() * stride,
                    ),
                    Vec::new(),
                );
            }
            OutputParser::YoloV8 { .. } | OutputParser::Detr { .. } => {
                // YOLOv8 boxes are in network pixels, DETR's normalised to the network input.
                let (sx, sy) = match self {
                    OutputParser::Detr { .. } => (net_w, net_h),
                    _ => (1.0, 1.0),
                };
                let (class, score) = argmax(&row[4..]);
                push(
                    class as u32,
                    score,
                    centre_box(row[0] * sx, row[1] * sy, row[2] * sx, row[3] * sy),
                    Vec::new(),
                );
            }
            OutputParser::CenterFace { .. } => {
                let score = row[0];
                let (r, c) = (
                    (anchor / heatmap_width) as f32,
                    (anchor % heatmap_width) as f32,
                );
                let s0 = row[1].exp() * 4.0;
                let s1 = row[2].exp() * 4.0;
                let (o0, o1) = (row[3], row[4]);
                let x1 = ((c + o1 + 0.5) * 4.0 - s1 / 2.0).clamp(0.0, net_w);
                let y1 = ((r + o0 + 0.5) * 4.0 - s0 / 2.0).clamp(0.0, net_h);
                let bbox = BBox::from_corners(x1, y1, (x1 + s1).min(net_w), (y1 + s0).min(net_h));
                let points = row
                    .get(5..15)
                    .map(|lm| {
                        (0..5)
                            .flat_map(|j| [lm[2 * j + 1] * s1 + x1, lm[2 * j] * s0 + y1])
                            .collect()
                    })
                    .unwrap_or_default();
                push(0, score, bbox, points);
            }
            OutputParser::TfOdApi { .. }
            | OutputParser::EndToEnd { .. }
            | OutputParser::BoxesScoresLabels { .. }
            | OutputParser::Classifier { .. }
            | OutputParser::Custom(_)
            | OutputParser::YoloV8Seg { .. }
            | OutputParser::Segmentation { .. }
            | OutputParser::Tensors => {}
        }
    }

    /// The lowest `pre-cluster-threshold` over the classes `layout` scores: anchors whose best
    /// score is below it hold no detection.
    pub fn min_threshold(&self, layout: &AnchorLayout, attrs: &dyn Fn(u32) -> ClassAttrs) -> f32 {
        let classes = match layout.select {
            Select::BestClass { count, .. } => count,
            Select::Value { .. } => 1,
        };
        min_threshold(attrs, classes)
    }

    /// Decodes the detections of batch item `item`, keeping those at or above their class's
    /// `pre-cluster-threshold`.
    pub fn detections(
        &self,
        outputs: &[OutputTensor],
        item: usize,
        net_size: (u32, u32),
        attrs: &dyn Fn(u32) -> ClassAttrs,
        out: &mut Vec<Detection>,
    ) -> Result<(), String> {
        let (net_w, net_h) = (net_size.0 as f32, net_size.1 as f32);
        let mut push = |class_id: u32, confidence: f32, bbox: BBox| {
            let a = attrs(class_id);
            if confidence >= a.pre_cluster_threshold {
                out.push(Detection {
                    class_id,
                    confidence,
                    bbox,
                    landmarks: Vec::new(),
                    coefficients: Vec::new(),
                    mask: None,
                });
            }
        };
        let net = (net_w, net_h);
        match self {
            OutputParser::TfOdApi {
                boxes,
                scores,
                classes,
                num,
            } => {
                for r in triple_rows(outputs, *boxes, Some(*scores), *classes, *num, item)? {
                    let class = r.class.round() as i64 - 1;
                    if class >= 0 {
                        push(
                            class as u32,
                            r.score,
                            rows::to_bbox(BoxFormat::Yxyx, true, r.bbox, net),
                        );
                    }
                }
                Ok(())
            }
            OutputParser::BoxesScoresLabels {
                boxes,
                scores,
                labels,
                num,
                format,
                coords,
            } => {
                let (Some(normalized), false) =
                    (rows::normalized(*coords), *format == BoxFormat::Auto)
                else {
                    return Ok(()); // open until confident rows arrive (OutputParser::refine)
                };
                for r in triple_rows(outputs, *boxes, *scores, *labels, *num, item)? {
                    if let Some(class) = class_id(&r)? {
                        push(
                            class,
                            r.score,
                            rows::to_bbox(*format, normalized, r.bbox, net),
                        );
                    }
                }
                Ok(())
            }
            OutputParser::EndToEnd {
                output,
                columns,
                format,
                coords,
            } => {
                let (Some(columns), Some(normalized), false) = (
                    columns,
                    rows::normalized(*coords),
                    *format == BoxFormat::Auto,
                ) else {
                    return Ok(()); // open until confident rows arrive (OutputParser::refine)
                };
                for r in end_to_end_rows(&outputs[*output], columns, item)? {
                    if let Some(class) = class_id(&r)? {
                        push(
                            class,
                            r.score,
                            rows::to_bbox(*format, normalized, r.bbox, net),
                        );
                    }
                }
                Ok(())
            }
            OutputParser::Classifier { .. } => {
                Err("a classifier produces classes, not detections".into())
            }
            OutputParser::Tensors => {
                Err("network-type other produces raw tensors, not detections".into())
            }
            OutputParser::Custom(_) => Err("a custom parser runs in its library".into()),
            OutputParser::Segmentation { .. } => {
                Err("semantic segmentation gives a class map, not detections".into())
            }
            OutputParser::YoloV8Seg { output, protos } => {
                let (o, p) = (&outputs[*output], &outputs[*protos]);
                let (rows, anchors) = match o.shape[..] {
                    [_, rows, anchors] => (rows, anchors),
                    _ => return Err(format!("YOLOv8-seg rows {:?} are not [N,R,B]", o.shape)),
                };
                let masks = p.shape.get(1).copied().unwrap_or(0);
                let classes = rows
                    .checked_sub(4 + masks)
                    .filter(|&c| c > 0)
                    .ok_or_else(|| {
                        format!(
                            "YOLOv8-seg rows {:?} leave no class scores beside {masks} mask \
                         coefficients",
                            o.shape
                        )
                    })?;
                let data = item_of(o, item)?;
                let at = |r: usize, a: usize| data[r * anchors + a];
                for a in 0..anchors {
                    let (mut best, mut score) = (0, f32::MIN);
                    for c in 0..classes {
                        let v = at(4 + c, a);
                        if v > score {
                            (best, score) = (c, v);
                        }
                    }
                    let bbox = centre_box(at(0, a), at(1, a), at(2, a), at(3, a));
                    if score >= attrs(best as u32).pre_cluster_threshold {
                        out.push(Detection {
                            class_id: best as u32,
                            confidence: score,
                            bbox,
                            landmarks: Vec::new(),
                            coefficients: (0..masks).map(|k| at(4 + classes + k, a)).collect(),
                            mask: None,
                        });
                    }
                }
                Ok(())
            }
            _ => {
                let shapes: Vec<&[usize]> = outputs.iter().map(|o| o.shape.as_slice()).collect();
                let layout = self
                    .anchor_layout(&shapes)
                    .expect("anchor parsers have a layout")?;
                let items: Vec<&[f32]> = outputs
                    .iter()
                    .map(|o| {
                        if o.shape.first().is_some_and(|&n| item < n) {
                            o.item(item)
                        } else {
                            &[]
                        }
                    })
                    .collect();
                let min = self.min_threshold(&layout, attrs);
                let width = layout.heatmap_width(&shapes);
                let mut row = Vec::with_capacity(layout.row_len());
                for anchor in 0..layout.anchors {
                    layout.gather(&items, anchor, &mut row)?;
                    if layout.select.passes(&row, min) {
                        self.decode_anchor(&row, anchor, width, net_size, attrs, min, out);
                    }
                }
                Ok(())
            }
        }
    }

    /// Whether some of the layout is still open ([`OutputParser::refine`] settles it).
    pub fn is_open(&self) -> bool {
        match self {
            OutputParser::EndToEnd {
                columns,
                format,
                coords,
                ..
            } => columns.is_none() || *format == BoxFormat::Auto || *coords == BoxCoords::Auto,
            OutputParser::BoxesScoresLabels { format, coords, .. } => {
                *format == BoxFormat::Auto || *coords == BoxCoords::Auto
            }
            _ => false,
        }
    }

    /// Settles what the shapes left open (the column order of end-to-end rows, the box format,
    /// normalisation) from the confident rows (score at least `min`) of batch item `item` of a
    /// batch of `batch` items. Returns the settled parser and what was decided; `None` while no
    /// row is confident. Rows that fit no reading are an error naming the outputs and the key
    /// that says how to read them.
    pub fn refine(
        &self,
        outputs: &[OutputTensor],
        item: usize,
        batch: usize,
        min: f32,
    ) -> Result<Option<(OutputParser, String)>, String> {
        if !self.is_open() {
            return Ok(None);
        }
        let confident = |rows: Vec<Row>| -> Vec<Row> {
            rows.into_iter()
                .filter(|r| r.score >= min && r.class >= 0.0)
                .collect()
        };
        let (rows, columns, seen) = match self {
            OutputParser::EndToEnd {
                output, columns, ..
            } => {
                let t = &outputs[*output];
                let seen = format!("{} {:?}", t.name, t.shape);
                let width = t.shape.last().copied().unwrap_or(0);
                let candidates = match columns {
                    Some(c) => vec![c.clone()],
                    None => Columns::guesses(width),
                };
                if candidates.is_empty() {
                    return Err(format!(
                        "end-to-end rows of {width} values ({seen}): set end-to-end-columns"
                    ));
                }
                let mut fits = Vec::new();
                let mut misfits = Vec::new();
                for c in candidates {
                    let rows = confident(end_to_end_rows(t, &c, item)?);
                    if rows.is_empty() {
                        continue;
                    }
                    match rows::misfit(&rows, batch) {
                        None => fits.push((c, rows)),
                        Some(why) => misfits.push(format!("read as {c}, {why}")),
                    }
                }
                match fits.len() {
                    0 if misfits.is_empty() => return Ok(None),
                    0 => {
                        return Err(format!(
                            "the outputs ({seen}) are not end-to-end rows: {}; set output-parser \
                             (e.g. yolov5 for [N,B,5+C] anchors) or end-to-end-columns",
                            misfits.join("; ")
                        ));
                    }
                    1 => {
                        let (c, rows) = fits.pop().expect("one fit");
                        (rows, Some(c), seen)
                    }
                    _ => {
                        let names: Vec<String> = fits.iter().map(|f| f.0.to_string()).collect();
                        return Err(format!(
                            "the rows of {seen} read equally well as {}; set end-to-end-columns",
                            names.join(" and ")
                        ));
                    }
                }
            }
            OutputParser::BoxesScoresLabels {
                boxes,
                scores,
                labels,
                num,
                ..
            } => {
                let seen = describe_tensors(outputs, &[Some(*boxes), *scores, Some(*labels), *num]);
                let rows = confident(triple_rows(outputs, *boxes, *scores, *labels, *num, item)?);
                if rows.is_empty() {
                    return Ok(None);
                }
                if let Some(why) = rows::misfit(&rows, batch) {
                    return Err(format!(
                        "the outputs ({seen}) are not boxes, scores and labels: {why}; set \
                         output-parser"
                    ));
                }
                (rows, None, seen)
            }
            _ => return Ok(None),
        };
        let boxes: Vec<[f32; 4]> = rows.iter().map(|r| r.bbox).collect();
        let (format, coords) = match self {
            OutputParser::EndToEnd { format, coords, .. }
            | OutputParser::BoxesScoresLabels { format, coords, .. } => (*format, *coords),
            _ => unreachable!("only row parsers are open"),
        };
        let format = match format {
            BoxFormat::Auto => rows::guess_box_format(&boxes)
                .expect("rows are not empty")
                .map_err(|m| format!("{seen}: {m}"))?,
            f => f,
        };
        let coords = match coords {
            BoxCoords::Auto => {
                if rows::guess_normalized(&boxes).expect("rows are not empty") {
                    BoxCoords::Normalized
                } else {
                    BoxCoords::Pixels
                }
            }
            c => c,
        };
        let mut settled = self.clone();
        match &mut settled {
            OutputParser::EndToEnd {
                columns: c,
                format: f,
                coords: n,
                ..
            } => {
                *c = columns;
                *f = format;
                *n = coords;
            }
            OutputParser::BoxesScoresLabels {
                format: f,
                coords: n,
                ..
            } => {
                *f = format;
                *n = coords;
            }
            _ => {}
        }
        let what = format!("{seen}: {}", settled.summary());
        Ok(Some((settled, what)))
    }

    /// The parser in words: its kind and how it reads rows.
    pub fn summary(&self) -> String {
        match self {
            OutputParser::EndToEnd {
                columns,
                format,
                coords,
                ..
            } => format!(
                "end-to-end rows of {}, boxes {format:?} {}",
                columns
                    .as_ref()
                    .map_or_else(|| "columns to be seen".to_string(), ToString::to_string),
                coords_words(*coords)
            ),
            OutputParser::BoxesScoresLabels { format, coords, .. } => {
                format!(
                    "boxes, scores and labels, boxes {format:?} {}",
                    coords_words(*coords)
                )
            }
            OutputParser::Yolox { strides, .. } => format!("YOLOX, strides {strides:?}"),
            OutputParser::Custom(kind) => format!("custom parser ({})", kind.key()),
            OutputParser::YoloV8Seg { .. } => "YOLOv8-seg".into(),
            OutputParser::Segmentation { .. } => "semantic segmentation".into(),
            other => format!("{:?}", other.kind()),
        }
    }

    /// The top class and its probability for batch item `item` (classifier parser only).
    pub fn top_class(&self, outputs: &[OutputTensor], item: usize) -> Option<(u32, f32)> {
        let OutputParser::Classifier { output, softmax } = *self else {
            return None;
        };
        let scores = outputs[output].item(item);
        if scores.is_empty() {
            return None;
        }
        let (class, best) = argmax(scores);
        let is_distribution = scores.iter().all(|&p| (0.0..=1.0).contains(&p))
            && (scores.iter().sum::<f32>() - 1.0).abs() < 1e-3;
        let prob = match softmax {
            Softmax::Never => best,
            Softmax::Auto if is_distribution => best,
            _ => {
                let max = best;
                let sum: f32 = scores.iter().map(|&v| (v - max).exp()).sum();
                1.0 / sum
            }
        };
        Some((class as u32, prob))
    }
}

/// The lowest `pre-cluster-threshold` over `classes` classes: scores below it can be skipped
/// without looking up their class.
fn min_threshold(attrs: &dyn Fn(u32) -> ClassAttrs, classes: usize) -> f32 {
    (0..classes.max(1) as u32)
        .map(|c| attrs(c).pre_cluster_threshold)
        .fold(f32::INFINITY, f32::min)
}

/// Where the values of one anchor lie in the outputs: a row gathered group by group.
#[derive(Debug, Clone, PartialEq)]
pub struct AnchorLayout {
    pub anchors: usize,
    pub groups: Vec<Group>,
    /// Which anchors may hold a detection.
    pub select: Select,
}

/// `count` values of output `output`: value `j` of anchor `a` of a batch item is element
/// `offset + a * anchor_stride + j * elem_stride` of that item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    pub output: usize,
    pub offset: usize,
    pub anchor_stride: usize,
    pub elem_stride: usize,
    pub count: usize,
}

/// The test an anchor's row passes when it may hold a detection: its best class score (times
/// the objectness at row index `objectness`, YOLOv5) or the value at `index` (CenterFace's
/// heatmap) is at least the lowest `pre-cluster-threshold`. Scores are compared as the host
/// parser compares them (NaN never passes, the first maximum wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Select {
    BestClass {
        start: usize,
        count: usize,
        objectness: Option<usize>,
    },
    Value {
        index: usize,
    },
}

impl Select {
    pub fn passes(&self, row: &[f32], min_threshold: f32) -> bool {
        match *self {
            Select::BestClass {
                start,
                count,
                objectness,
            } => {
                let (_, best) = argmax(&row[start..start + count]);
                let score = objectness.map_or(best, |o| row[o] * best);
                score >= min_threshold
            }
            Select::Value { index } => row[index] >= min_threshold,
        }
    }
}

impl AnchorLayout {
    /// Values per anchor.
    pub fn row_len(&self) -> usize {
        self.groups.iter().map(|g| g.count).sum()
    }

    /// Fills `row` with anchor `anchor`'s values from `items` (each output's values for one
    /// batch item).
    pub fn gather(
        &self,
        items: &[&[f32]],
        anchor: usize,
        row: &mut Vec<f32>,
    ) -> Result<(), String> {
        row.clear();
        for g in &self.groups {
            let data = items.get(g.output).copied().unwrap_or(&[]);
            let base = g.offset + anchor * g.anchor_stride;
            let last = base + g.count.saturating_sub(1) * g.elem_stride;
            if last >= data.len() {
                return Err(format!(
                    "output {} holds {} values per item; anchor {anchor} needs index {last}",
                    g.output,
                    data.len()
                ));
            }
            row.extend((0..g.count).map(|j| data[base + j * g.elem_stride]));
        }
        Ok(())
    }

    /// CenterFace's heatmap width (the last dimension of the first group's output).
    pub fn heatmap_width(&self, shapes: &[&[usize]]) -> usize {
        self.groups
            .first()
            .and_then(|g| shapes.get(g.output))
            .and_then(|s| s.last().copied())
            .unwrap_or(1)
            .max(1)
    }
}

fn centre_box(cx: f32, cy: f32, w: f32, h: f32) -> BBox {
    BBox::new(cx - w / 2.0, cy - h / 2.0, w, h)
}

fn argmax(values: &[f32]) -> (usize, f32) {
    values.iter().copied().enumerate().fold(
        (0, f32::MIN),
        |best, (i, v)| if v > best.1 { (i, v) } else { best },
    )
}

fn coords_words(coords: BoxCoords) -> &'static str {
    match coords {
        BoxCoords::Auto => "(normalisation to be seen)",
        BoxCoords::Normalized => "normalised",
        BoxCoords::Pixels => "in pixels",
    }
}

fn describe_tensors(outputs: &[OutputTensor], which: &[Option<usize>]) -> String {
    which
        .iter()
        .flatten()
        .filter_map(|&i| outputs.get(i))
        .map(|t| format!("{} {:?}", t.name, t.shape))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The values of batch item `item` of `t`, or an error naming what is missing.
fn item_of(t: &OutputTensor, item: usize) -> Result<&[f32], String> {
    if t.shape.first().is_some_and(|&n| item < n) {
        Ok(t.item(item))
    } else {
        Err(format!(
            "output {} {:?} has no batch item {item}",
            t.name, t.shape
        ))
    }
}

/// The rows of batch item `item` in an end-to-end output read as `columns`.
fn end_to_end_rows(t: &OutputTensor, columns: &Columns, item: usize) -> Result<Vec<Row>, String> {
    let width = columns.width();
    if t.shape.last() != Some(&width) {
        return Err(format!(
            "output {} {:?} holds rows of {} values; columns {columns} need {width}",
            t.name,
            t.shape,
            t.shape.last().copied().unwrap_or(0)
        ));
    }
    if columns.has_batch() {
        // Rows of every item, each naming its own.
        return Ok(t
            .data
            .chunks_exact(width)
            .map(|r| columns.read(r))
            .filter(|r| r.batch.is_some_and(|b| b.round() == item as f32))
            .collect());
    }
    if t.shape.len() < 3 {
        return Err(format!(
            "output {} {:?} has no batch dimension and its columns ({columns}) name no batch \
             item; set end-to-end-columns with a batch column",
            t.name, t.shape
        ));
    }
    Ok(item_of(t, item)?
        .chunks_exact(width)
        .map(|r| columns.read(r))
        .collect())
}

/// The rows of batch item `item` of separate boxes, scores (or the fifth value of each box
/// when `scores` is `None`), labels and count outputs.
fn triple_rows(
    outputs: &[OutputTensor],
    boxes: usize,
    scores: Option<usize>,
    labels: usize,
    num: Option<usize>,
    item: usize,
) -> Result<Vec<Row>, String> {
    let width = if scores.is_some() { 4 } else { 5 };
    let b_tensor = &outputs[boxes];
    if b_tensor.shape.last() != Some(&width) {
        return Err(format!(
            "boxes {} {:?} should hold {width} values per box{}",
            b_tensor.name,
            b_tensor.shape,
            if width == 5 {
                " (with the score last, as there is no scores output)"
            } else {
                ""
            }
        ));
    }
    let b = item_of(b_tensor, item)?;
    let l = item_of(&outputs[labels], item)?;
    let s = scores.map(|i| item_of(&outputs[i], item)).transpose()?;
    let mut count = (b.len() / width).min(l.len());
    if let Some(s) = s {
        count = count.min(s.len());
    }
    if let Some(n) = num {
        let n = item_of(&outputs[n], item)?.first().copied().unwrap_or(0.0);
        count = count.min(if n.is_finite() {
            n.max(0.0) as usize
        } else {
            0
        });
    }
    Ok((0..count)
        .map(|i| {
            let v = &b[i * width..];
            Row {
                bbox: [v[0], v[1], v[2], v[3]],
                score: s.map_or_else(|| v[4], |s| s[i]),
                class: l[i],
                batch: None,
            }
        })
        .collect())
}

/// The class id of a finished detection: `None` for padding (negative class or no score), an
/// error where the class is not an integer (the outputs are not laid out as the parser reads
/// them).
fn class_id(r: &Row) -> Result<Option<u32>, String> {
    if r.class < 0.0 || r.score.is_nan() || r.score <= 0.0 {
        return Ok(None);
    }
    if !rows::is_integral(r.class) {
        return Err(format!(
            "a detection's class is {} (not a class id): the outputs are not laid out as the \
             parser reads them; set output-parser or end-to-end-columns",
            r.class
        ));
    }
    Ok(Some(r.class.round() as u32))
}

/// Cells of the YOLOX grids of `strides` on a `net` input.
fn grid_cells(net: (u32, u32), strides: &[u32]) -> usize {
    strides
        .iter()
        .map(|&s| (net.0 / s.max(1)) as usize * (net.1 / s.max(1)) as usize)
        .sum()
}

/// The grid column, row and stride of YOLOX anchor `anchor`.
fn yolox_cell(anchor: usize, net: (u32, u32), strides: &[u32]) -> Option<(f32, f32, f32)> {
    let mut a = anchor;
    for &s in strides {
        let (w, h) = ((net.0 / s.max(1)) as usize, (net.1 / s.max(1)) as usize);
        if a < w * h {
            return Some(((a % w) as f32, (a / w) as f32, s as f32));
        }
        a -= w * h;
    }
    None
}

fn guess(outputs: &[TensorInfo], settings: &ParserSettings) -> Result<ParserKind, String> {
    let names: Vec<String> = outputs
        .iter()
        .map(|o| o.name.to_ascii_lowercase())
        .collect();
    let has = |word: &str| names.iter().any(|n| n.contains(word));
    if outputs.len() >= 3 && has("box") && has("score") && has("class") && has("detection") {
        return Ok(ParserKind::TfOdApi);
    }
    if (2..=4).contains(&outputs.len())
        && (has("box") || has("dets"))
        && (has("label") || has("class"))
    {
        return Ok(ParserKind::BoxesScoresLabels);
    }
    if select_centerface(outputs).is_ok() {
        return Ok(ParserKind::CenterFace);
    }
    if select_yolov8_seg(outputs).is_ok_and(|_| {
        // Rows and masks of known sizes only: a guess on unknown shapes waits for real ones.
        outputs
            .iter()
            .all(|o| o.dims.iter().skip(1).all(Option::is_some))
    }) {
        return Ok(ParserKind::YoloV8Seg);
    }
    if select_ssd(outputs, BoxFormat::Yxyx).is_ok() {
        return Ok(ParserKind::Ssd);
    }
    if let [single] = outputs {
        if single.dims.len() == 2 && single.dims[1] == Some(7) {
            return Ok(ParserKind::EndToEnd); // [K,7] rows that name their batch item
        }
        if is_classifier_shape(single) {
            return Ok(ParserKind::Classifier);
        }
        if let [Some(a), Some(b)] = item_dims(single) {
            // YOLOX has one row per cell of its grids; a few hundred rows of 6 or 7 values are
            // finished detections (box, score, class, perhaps batch), of more values DETR's
            // queries; else anchors: YOLOv8 puts the (few) box attributes first, YOLOv5 (three
            // anchors per cell: thousands of rows) last.
            return Ok(if *a == grid_cells(settings.net, &settings.yolox_strides) {
                ParserKind::Yolox
            } else if matches!(b, 6 | 7) && *a <= 1000 {
                ParserKind::EndToEnd
            } else if a < b {
                ParserKind::YoloV8
            } else if *a <= 1000 {
                ParserKind::Detr // a few hundred queries of box and class scores
            } else {
                ParserKind::YoloV5
            });
        }
    }
    Err(format!(
        "cannot tell how to parse the model's outputs ({}); set output-parser",
        describe(outputs)
    ))
}

fn select_end_to_end(
    outputs: &[TensorInfo],
    settings: &ParserSettings,
) -> Result<OutputParser, String> {
    let [o] = outputs else {
        return Err(format!(
            "end-to-end rows come in one output; found {}",
            describe(outputs)
        ));
    };
    let width = o.dims.last().copied().flatten();
    let columns = settings.columns.clone();
    let batch_column = columns.as_ref().is_none_or(Columns::has_batch);
    match (&columns, width) {
        _ if o.dims.len() < 2 => {
            return Err(format!(
                "end-to-end rows should be [N,K,W] or [K,W]; found {o}"
            ));
        }
        (Some(c), Some(w)) if c.width() != w => {
            return Err(format!(
                "end-to-end-columns {c} need rows of {} values; {o} has {w}",
                c.width()
            ));
        }
        (None, Some(w)) if Columns::guesses(w).is_empty() => {
            return Err(format!(
                "{o} holds rows of {w} values; set end-to-end-columns (e.g. box,score,class)"
            ));
        }
        _ if o.dims.len() == 2 && !batch_column => {
            return Err(format!(
                "{o} has no batch dimension, so its rows must name their batch item: add a \
                 batch column to end-to-end-columns"
            ));
        }
        _ => {}
    }
    Ok(OutputParser::EndToEnd {
        output: 0,
        columns,
        format: settings.box_format,
        coords: settings.box_coordinates,
    })
}

fn select_boxes_scores_labels(
    outputs: &[TensorInfo],
    settings: &ParserSettings,
) -> Result<OutputParser, String> {
    let by_name = |words: &[&str]| {
        outputs.iter().position(|o| {
            let n = o.name.to_ascii_lowercase();
            words.iter().any(|w| n.contains(w))
        })
    };
    let found = (
        by_name(&["box", "dets"]),
        by_name(&["score"]),
        by_name(&["label", "class"]),
        by_name(&["num"]),
    );
    let (boxes, scores, labels, num) = match found {
        (Some(b), s, Some(l), n) => (b, s, l, n),
        // Unnamed outputs: boxes, scores, labels; or boxes with scores, labels.
        _ if outputs.len() == 3 => (0, Some(1), 2, None),
        _ if outputs.len() == 2 => (0, None, 1, None),
        _ => {
            return Err(format!(
                "boxes/scores/labels need outputs named boxes (or dets), scores and labels (or \
                 classes); found {}",
                describe(outputs)
            ));
        }
    };
    let width = if scores.is_some() { 4 } else { 5 };
    let b = &outputs[boxes];
    if b.dims.len() < 2 || b.dims.last().copied().flatten().is_some_and(|w| w != width) {
        return Err(format!(
            "boxes should be [N,K,{width}]{}; found {b}",
            if width == 5 {
                " (the score last, as no output is named scores)"
            } else {
                ""
            }
        ));
    }
    Ok(OutputParser::BoxesScoresLabels {
        boxes,
        scores,
        labels,
        num,
        format: settings.box_format,
        coords: settings.box_coordinates,
    })
}

fn select_yolox(outputs: &[TensorInfo], settings: &ParserSettings) -> Result<OutputParser, String> {
    let [o] = outputs else {
        return Err(format!(
            "YOLOX expects one output, found {}",
            describe(outputs)
        ));
    };
    let cells = grid_cells(settings.net, &settings.yolox_strides);
    match item_dims(o) {
        [Some(a), _] if *a != cells => Err(format!(
            "YOLOX output {o} has {a} rows, but the grids of strides {:?} on a {}x{} input have \
             {cells} cells; set yolox-strides (or infer-dims)",
            settings.yolox_strides, settings.net.0, settings.net.1
        )),
        [_, width] if width.is_none_or(|w| w >= 6) => Ok(OutputParser::Yolox {
            output: 0,
            strides: settings.yolox_strides.clone(),
        }),
        _ => Err(format!("YOLOX expects [N,A,5+C], found {o}")),
    }
}

fn select_yolov8_seg(outputs: &[TensorInfo]) -> Result<OutputParser, String> {
    let seg = || -> Option<OutputParser> {
        let [a, b] = outputs else { return None };
        let (output, protos) = match (item_dims(a).len(), item_dims(b).len()) {
            (2, 3) => (0, 1),
            (3, 2) => (1, 0),
            _ => return None,
        };
        let rows = item_dims(&outputs[output])[0];
        let masks = item_dims(&outputs[protos])[0];
        match (rows, masks) {
            (Some(r), Some(m)) if r <= 4 + m => None,
            _ => Some(OutputParser::YoloV8Seg { output, protos }),
        }
    };
    seg().ok_or_else(|| {
        format!(
            "YOLOv8-seg expects rows [N,4+C+M,B] and prototype masks [N,M,h,w]; found {}",
            describe(outputs)
        )
    })
}

fn select_segmentation(outputs: &[TensorInfo]) -> Result<OutputParser, String> {
    match outputs {
        [o] if item_dims(o).len() == 3 => Ok(OutputParser::Segmentation { output: 0 }),
        _ => Err(format!(
            "semantic segmentation expects one output of class scores [N,C,H,W]; found {}",
            describe(outputs)
        )),
    }
}

fn select_ssd(outputs: &[TensorInfo], format: BoxFormat) -> Result<OutputParser, String> {
    // SSD boxes are normalised, in TensorFlow's order unless box-format says otherwise.
    let format = match format {
        BoxFormat::Auto => BoxFormat::Yxyx,
        f => f,
    };
    let may_be = |d: Option<usize>, v: usize| d.is_none_or(|d| d == v);
    // Boxes: [N,B,4] or [N,B,1,4]; dims may be dynamic (sizes are checked on every run).
    let is_boxes = |o: &TensorInfo| match item_dims(o) {
        [_, last] => *last == Some(4),
        [_, one, last] => may_be(*one, 1) && may_be(*last, 4),
        _ => false,
    };
    let boxes = match outputs {
        [a, b] if is_boxes(b) && item_dims(a).len() == 2 => Some((0, 1)),
        [a, b] if is_boxes(a) && item_dims(b).len() == 2 => Some((1, 0)),
        _ => None,
    };
    let Some((scores, boxes)) = boxes else {
        return Err(format!(
            "SSD expects two outputs, scores [N,B,C] and boxes [N,B,4] or [N,B,1,4]; found {}",
            describe(outputs)
        ));
    };
    let anchors = |o: &TensorInfo| item_dims(o)[0];
    match (anchors(&outputs[scores]), anchors(&outputs[boxes])) {
        (Some(a), Some(b)) if a != b => Err(format!(
            "SSD scores and boxes disagree on the number of anchors ({a} vs {b})"
        )),
        _ => Ok(OutputParser::Ssd {
            scores,
            boxes,
            format,
        }),
    }
}

fn select_tf_od_api(outputs: &[TensorInfo]) -> Result<OutputParser, String> {
    let by_name = |word: &str| {
        outputs
            .iter()
            .position(|o| o.name.to_ascii_lowercase().contains(word))
    };
    let found = (
        by_name("box"),
        by_name("score"),
        by_name("class"),
        by_name("num"),
    );
    let (boxes, scores, classes, num) = match found {
        (Some(b), Some(s), Some(c), n) => (b, s, c, n),
        // Unnamed outputs: the API's order.
        _ if outputs.len() >= 3 => (0, 1, 2, (outputs.len() >= 4).then_some(3)),
        _ => {
            return Err(format!(
                "the TensorFlow Object Detection API layout needs detection_boxes, \
                 detection_scores, detection_classes (and num_detections); found {}",
                describe(outputs)
            ));
        }
    };
    if !matches!(item_dims(&outputs[boxes]), [_, Some(4)]) {
        return Err(format!(
            "detection boxes should be [N,K,4], found {}",
            outputs[boxes]
        ));
    }
    Ok(OutputParser::TfOdApi {
        boxes,
        scores,
        classes,
        num,
    })
}

fn select_centerface(outputs: &[TensorInfo]) -> Result<OutputParser, String> {
    let channels: Vec<Option<usize>> = outputs
        .iter()
        .map(|o| match item_dims(o) {
            [c, _, _] => *c,
            _ => None,
        })
        .collect();
    match channels.as_slice() {
        [Some(1), Some(2), Some(2)] => Ok(OutputParser::CenterFace {
            heatmap: 0,
            scale: 1,
            offset: 2,
            landmarks: None,
        }),
        [Some(1), Some(2), Some(2), Some(10)] => Ok(OutputParser::CenterFace {
            heatmap: 0,
            scale: 1,
            offset: 2,
            landmarks: Some(3),
        }),
        _ => Err(format!(
            "CenterFace expects heatmap [N,1,h,w], scale [N,2,h,w], offset [N,2,h,w] and \
             optionally landmarks [N,10,h,w], in that order; found {}",
            describe(outputs)
        )),
    }
}

#[cfg(test)]
mod tests {
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
            select(&ssd).unwrap(),
            OutputParser::Ssd {
                scores: 0,
                boxes: 1,
                format: BoxFormat::Yxyx
            }
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
            select(&tf).unwrap(),
            OutputParser::TfOdApi {
                boxes: 0,
                scores: 1,
                classes: 2,
                num: Some(3)
            }
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
        let select =
            |kind, network_type| OutputParser::select(&settings(kind, network_type), &outputs);
        let parser = select(ParserKind::Auto, NetworkType::Other).unwrap();
        assert_eq!(parser.kind(), ParserKind::None);
        assert!(select(ParserKind::Ssd, NetworkType::Other).is_err());
        let err = select(ParserKind::None, NetworkType::Detector).unwrap_err();
        assert!(err.contains("network-type other"), "{err}");
    }

    #[test]
    fn ssd_decodes_normalised_yxyx_boxes_per_class() {
        let parser = OutputParser::Ssd {
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
        let parser = OutputParser::TfOdApi {
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
        OutputParser::YoloV5 { output: 0 }
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
        OutputParser::YoloV8 { output: 0 }
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
        let parser = OutputParser::Detr { output: 0 };
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
        let err = OutputParser::Detr { output: 0 }
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
        let parser = OutputParser::YoloV8 { output: 0 };
        let shapes = [v8.shape.as_slice()];
        let layout = parser.anchor_layout(&shapes).unwrap().unwrap();
        let attrs = |c: u32| ClassAttrs {
            pre_cluster_threshold: 0.5 + c as f32 * 0.1,
            ..Default::default()
        };
        let min = parser.min_threshold(&layout, &attrs);
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
        let parser = OutputParser::CenterFace {
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
        let p = OutputParser::Classifier {
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
}
