//! Output parsers: raw output tensors to detections (in network-input pixels) or class scores.
//!
//! The parser is chosen by `output-parser`, or guessed from the number and shapes of the model's
//! outputs. Class ids are 0-based indices into the label file: for SSD column `i` of the scores,
//! for the TensorFlow Object Detection API its 1-based `detection_classes` minus one.

use ferrostream_core::BBox;

use crate::config::{BoxFormat, ClassAttrs, NetworkType, ParserKind, Softmax};
use crate::engine::{OutputTensor, TensorInfo};

/// A detection in network-input pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct Detection {
    pub class_id: u32,
    pub confidence: f32,
    pub bbox: BBox,
    /// Landmark points as x,y pairs in network pixels (CenterFace: eyes, nose, mouth corners).
    pub landmarks: Vec<f32>,
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
    pub fn select(
        kind: ParserKind,
        network_type: NetworkType,
        box_format: BoxFormat,
        softmax: Softmax,
        outputs: &[TensorInfo],
    ) -> Result<Self, String> {
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
            (ParserKind::Auto, NetworkType::Classifier) => ParserKind::Classifier,
            (ParserKind::Auto, NetworkType::Detector) => guess(outputs)?,
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
            ParserKind::YoloV5 | ParserKind::YoloV8 => {
                let [output] = outputs else {
                    return Err(format!(
                        "{kind:?} expects one output, found {}",
                        describe(outputs)
                    ));
                };
                if item_dims(output).len() != 2 {
                    return Err(format!("{kind:?} expects a [N,*,*] output, found {output}"));
                }
                if kind == ParserKind::YoloV5 {
                    OutputParser::YoloV5 { output: 0 }
                } else {
                    OutputParser::YoloV8 { output: 0 }
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
            OutputParser::Tensors => OutputParser::Tensors,
        }
    }

    pub fn kind(&self) -> ParserKind {
        match self {
            OutputParser::Ssd { .. } => ParserKind::Ssd,
            OutputParser::TfOdApi { .. } => ParserKind::TfOdApi,
            OutputParser::YoloV5 { .. } => ParserKind::YoloV5,
            OutputParser::YoloV8 { .. } => ParserKind::YoloV8,
            OutputParser::CenterFace { .. } => ParserKind::CenterFace,
            OutputParser::Classifier { .. } => ParserKind::Classifier,
            OutputParser::Tensors => ParserKind::None,
        }
    }

    /// Number of classes the outputs encode, where their shapes say.
    pub fn num_classes(&self, outputs: &[TensorInfo]) -> Option<usize> {
        let dim =
            |index: usize, axis: usize| item_dims(&outputs[index]).get(axis).copied().flatten();
        match *self {
            OutputParser::Ssd { scores, .. } => dim(scores, 1),
            OutputParser::TfOdApi { .. } => None,
            OutputParser::YoloV5 { output } => dim(output, 1).map(|d| d.saturating_sub(5)),
            OutputParser::YoloV8 { output } => dim(output, 0).map(|d| d.saturating_sub(4)),
            OutputParser::CenterFace { .. } => Some(1),
            OutputParser::Classifier { output, .. } => dim(output, 0),
            OutputParser::Tensors => None,
        }
    }

    /// Classes in the actual output tensors (SSD: the scores' last dimension).
    fn num_classes_hint(&self, outputs: &[OutputTensor]) -> usize {
        match *self {
            OutputParser::Ssd { scores, .. } => outputs[scores].shape.get(2).copied().unwrap_or(1),
            _ => 1,
        }
    }

    /// Default class names when no label file is given.
    pub fn default_labels(&self) -> &'static [&'static str] {
        match self {
            OutputParser::CenterFace { .. } => &["face"],
            _ => &[],
        }
    }

    /// Decodes the detections of batch item `item`, keeping those above their class's
    /// `pre-cluster-threshold` and inside its size limits.
    pub fn detections(
        &self,
        outputs: &[OutputTensor],
        item: usize,
        net_size: (u32, u32),
        attrs: &dyn Fn(u32) -> ClassAttrs,
        out: &mut Vec<Detection>,
    ) -> Result<(), String> {
        let (net_w, net_h) = (net_size.0 as f32, net_size.1 as f32);
        let min_threshold = min_threshold(attrs, self.num_classes_hint(outputs));
        let mut push = |class_id: u32, confidence: f32, bbox: BBox, landmarks: Vec<f32>| {
            let a = attrs(class_id);
            if confidence >= a.pre_cluster_threshold && a.size_ok(bbox.width, bbox.height) {
                out.push(Detection {
                    class_id,
                    confidence,
                    bbox,
                    landmarks,
                });
            }
        };
        match *self {
            OutputParser::Ssd {
                scores,
                boxes,
                format,
            } => {
                let scores_t = &outputs[scores];
                let boxes_t = &outputs[boxes];
                let (Some(&anchors), Some(&classes)) =
                    (scores_t.shape.get(1), scores_t.shape.get(2))
                else {
                    return Err(format!("SSD scores have shape {:?}", scores_t.shape));
                };
                if boxes_t.item_len() != anchors * 4 {
                    return Err(format!(
                        "SSD boxes {:?} do not match {anchors} anchors of the scores",
                        boxes_t.shape
                    ));
                }
                let (s, b) = (scores_t.item(item), boxes_t.item(item));
                for a in 0..anchors {
                    let row = &s[a * classes..(a + 1) * classes];
                    let coords = &b[a * 4..a * 4 + 4];
                    let (x0, y0, x1, y1) = match format {
                        BoxFormat::Yxyx => (coords[1], coords[0], coords[3], coords[2]),
                        BoxFormat::Xyxy => (coords[0], coords[1], coords[2], coords[3]),
                    };
                    let bbox = BBox::from_corners(x0 * net_w, y0 * net_h, x1 * net_w, y1 * net_h);
                    for (class, &score) in row.iter().enumerate() {
                        // Cheap reject before looking up per-class attributes.
                        if score >= min_threshold {
                            push(class as u32, score, bbox, Vec::new());
                        }
                    }
                }
            }
            OutputParser::TfOdApi {
                boxes,
                scores,
                classes,
                num,
            } => {
                let (b, s, c) = (
                    outputs[boxes].item(item),
                    outputs[scores].item(item),
                    outputs[classes].item(item),
                );
                let max = s.len().min(c.len()).min(b.len() / 4);
                let count = num
                    .map(|n| outputs[n].item(item).first().copied().unwrap_or(0.0) as usize)
                    .unwrap_or(max)
                    .min(max);
                for i in 0..count {
                    let class = c[i].round() as i64 - 1;
                    if class < 0 {
                        continue; // background
                    }
                    let bbox = BBox::from_corners(
                        b[i * 4 + 1] * net_w,
                        b[i * 4] * net_h,
                        b[i * 4 + 3] * net_w,
                        b[i * 4 + 2] * net_h,
                    );
                    push(class as u32, s[i], bbox, Vec::new());
                }
            }
            OutputParser::YoloV5 { output } => {
                let t = &outputs[output];
                let (boxes, stride) = (t.shape[1], t.shape[2]);
                if stride < 6 {
                    return Err(format!("YOLOv5 output {:?} has no class scores", t.shape));
                }
                let data = t.item(item);
                for i in 0..boxes {
                    let row = &data[i * stride..(i + 1) * stride];
                    let (class, score) = argmax(&row[5..]);
                    push(
                        class as u32,
                        row[4] * score,
                        centre_box(row[0], row[1], row[2], row[3]),
                        Vec::new(),
                    );
                }
            }
            OutputParser::YoloV8 { output } => {
                let t = &outputs[output];
                let (rows, boxes) = (t.shape[1], t.shape[2]);
                if rows < 5 {
                    return Err(format!("YOLOv8 output {:?} has no class scores", t.shape));
                }
                let data = t.item(item);
                let at = |r: usize, i: usize| data[r * boxes + i];
                for i in 0..boxes {
                    let (mut class, mut score) = (0, f32::MIN);
                    for r in 4..rows {
                        if at(r, i) > score {
                            (class, score) = (r - 4, at(r, i));
                        }
                    }
                    push(
                        class as u32,
                        score,
                        centre_box(at(0, i), at(1, i), at(2, i), at(3, i)),
                        Vec::new(),
                    );
                }
            }
            OutputParser::CenterFace {
                heatmap,
                scale,
                offset,
                landmarks,
            } => {
                let hm = &outputs[heatmap];
                let (h, w) = (hm.shape[2], hm.shape[3]);
                let plane = h * w;
                let (hm, sc, of) = (
                    hm.item(item),
                    outputs[scale].item(item),
                    outputs[offset].item(item),
                );
                let lm = landmarks.map(|l| outputs[l].item(item));
                if sc.len() < 2 * plane || of.len() < 2 * plane {
                    return Err("CenterFace scale/offset maps do not match the heatmap".into());
                }
                let threshold = attrs(0).pre_cluster_threshold;
                for (idx, &score) in hm.iter().enumerate() {
                    if score < threshold {
                        continue;
                    }
                    let (r, c) = ((idx / w) as f32, (idx % w) as f32);
                    let s0 = sc[idx].exp() * 4.0;
                    let s1 = sc[plane + idx].exp() * 4.0;
                    let (o0, o1) = (of[idx], of[plane + idx]);
                    let x1 = ((c + o1 + 0.5) * 4.0 - s1 / 2.0).clamp(0.0, net_w);
                    let y1 = ((r + o0 + 0.5) * 4.0 - s0 / 2.0).clamp(0.0, net_h);
                    let bbox =
                        BBox::from_corners(x1, y1, (x1 + s1).min(net_w), (y1 + s0).min(net_h));
                    let points = lm
                        .filter(|lm| lm.len() >= 10 * plane)
                        .map(|lm| {
                            (0..5)
                                .flat_map(|j| {
                                    [
                                        lm[(2 * j + 1) * plane + idx] * s1 + x1,
                                        lm[2 * j * plane + idx] * s0 + y1,
                                    ]
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    push(0, score, bbox, points);
                }
            }
            OutputParser::Classifier { .. } => {
                return Err("a classifier produces classes, not detections".into());
            }
            OutputParser::Tensors => {
                return Err("network-type other produces raw tensors, not detections".into());
            }
        }
        Ok(())
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

fn centre_box(cx: f32, cy: f32, w: f32, h: f32) -> BBox {
    BBox::new(cx - w / 2.0, cy - h / 2.0, w, h)
}

fn argmax(values: &[f32]) -> (usize, f32) {
    values.iter().copied().enumerate().fold(
        (0, f32::MIN),
        |best, (i, v)| if v > best.1 { (i, v) } else { best },
    )
}

fn guess(outputs: &[TensorInfo]) -> Result<ParserKind, String> {
    let names_have = |words: &[&str]| {
        words.iter().all(|w| {
            outputs
                .iter()
                .any(|o| o.name.to_ascii_lowercase().contains(w))
        })
    };
    if outputs.len() >= 3 && names_have(&["box", "score", "class"]) {
        return Ok(ParserKind::TfOdApi);
    }
    if select_centerface(outputs).is_ok() {
        return Ok(ParserKind::CenterFace);
    }
    if select_ssd(outputs, BoxFormat::Yxyx).is_ok() {
        return Ok(ParserKind::Ssd);
    }
    if let [single] = outputs {
        if is_classifier_shape(single) {
            return Ok(ParserKind::Classifier);
        }
        if let [Some(a), Some(b)] = item_dims(single) {
            // YOLOv8 puts the (few) box attributes first, YOLOv5 last.
            return Ok(if a < b {
                ParserKind::YoloV8
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

fn select_ssd(outputs: &[TensorInfo], format: BoxFormat) -> Result<OutputParser, String> {
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

    fn select(outputs: &[TensorInfo]) -> Result<OutputParser, String> {
        OutputParser::select(
            ParserKind::Auto,
            NetworkType::Detector,
            BoxFormat::Yxyx,
            Softmax::Auto,
            outputs,
        )
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
        let err = select(&[info("a", &[None, Some(3), Some(4), Some(5), Some(6)])]).unwrap_err();
        assert!(err.contains("set output-parser"), "{err}");
    }

    #[test]
    fn classifier_shape_on_a_detector_is_an_error() {
        let logits = [info("logits", &[None, Some(1000)])];
        let err = select(&logits).unwrap_err();
        assert!(err.contains("network-type"), "{err}");
        let ok = OutputParser::select(
            ParserKind::Auto,
            NetworkType::Classifier,
            BoxFormat::Yxyx,
            Softmax::Auto,
            &logits,
        );
        assert_eq!(ok.unwrap().kind(), ParserKind::Classifier);
        let detector_as_classifier = OutputParser::select(
            ParserKind::Auto,
            NetworkType::Classifier,
            BoxFormat::Yxyx,
            Softmax::Auto,
            &[info("out", &[Some(1), Some(84), Some(8400)])],
        );
        assert!(detector_as_classifier.unwrap_err().contains("[N,C]"));
    }

    #[test]
    fn network_type_other_parses_nothing() {
        let outputs = [info("embedding", &[None, Some(128)])];
        let select = |kind, network_type| {
            OutputParser::select(kind, network_type, BoxFormat::Yxyx, Softmax::Auto, &outputs)
        };
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
