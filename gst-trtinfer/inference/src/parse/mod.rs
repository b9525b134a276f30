// SPDX-License-Identifier: MIT OR Apache-2.0
//! Output parsers: raw output tensors to detections (in network-input pixels) or class scores.
//!
//! Each family of output layouts is a module implementing [`Family`]: it recognises its
//! layout from the outputs' shapes, checks them as it is chosen, decodes batch items, settles
//! what the shapes leave open from the first outputs, and describes itself for the parser
//! message. The parser is chosen by `output-parser`, by `network-type`, or guessed: the
//! families of [`FAMILIES`] are asked in that order; where the model leaves output dimensions
//! symbolic, the first inference's real shapes decide. Adding a family is a module and a line
//! in [`FAMILIES`].
//!
//! Class ids are 0-based indices into the label file: for SSD column `i` of the scores, for the
//! TensorFlow Object Detection API its 1-based `detection_classes` minus one.

mod anchor;
mod boxes_scores_labels;
mod centerface;
mod classifier;
mod custom;
mod detr;
mod end_to_end;
mod instance;
mod rows;
mod segmentation;
mod ssd;
mod tensors;
mod tf_od_api;
mod yolov5;
mod yolov8;
mod yolov8_obb;
mod yolov8_pose;
mod yolox;

use std::any::Any;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

pub use self::anchor::{AnchorLayout, Group, Select};
pub use self::boxes_scores_labels::BoxesScoresLabels;
pub use self::centerface::CenterFace;
pub use self::classifier::Classifier;
pub use self::custom::Custom;
pub use self::detr::Detr;
pub use self::end_to_end::EndToEnd;
pub use self::instance::YoloV8Seg;
pub use self::segmentation::Segmentation;
pub use self::ssd::Ssd;
pub use self::tensors::Tensors;
pub use self::tf_od_api::TfOdApi;
pub use self::yolov5::YoloV5;
pub use self::yolov8::YoloV8;
pub use self::yolov8_obb::YoloV8Obb;
pub use self::yolov8_pose::YoloV8Pose;
pub use self::yolox::Yolox;
use crate::config::{ClassAttrs, InferConfig, NetworkType, ParserKind, Softmax};
use crate::engine::{OutputTensor, TensorInfo};
pub use crate::layout::{BoxCoords, BoxFormat, Columns, CustomKind, Detection, Row};

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
    /// Keypoints per object of a pose model.
    pub keypoints: usize,
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
            keypoints: config.num_keypoints as usize,
            net,
        }
    }
}

/// What a parser makes of a batch item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Produces {
    /// Detections in network pixels, clustered afterwards.
    Detections,
    /// The top class of the whole input ([`Family::top_class`]).
    Classes,
    /// A class per pixel, from the scores of output `output` (semantic segmentation).
    ClassMap { output: usize },
    /// What the custom parser library returns: objects, or classes for a classifier.
    Custom(CustomKind),
    /// Nothing: the raw tensors are the result (network-type other).
    Tensors,
}

/// One family of output layouts. The indices a family holds are those of the outputs it was
/// selected from, until [`Family::remap`] makes them the engine's.
pub trait Family: FamilyClone + Any + fmt::Debug + Send + Sync {
    /// `output-parser=auto` on a detector: whether `outputs` look like this family. The
    /// families of [`FAMILIES`] are asked in order; the first that says yes is selected (and
    /// may still refuse the outputs).
    fn recognise(outputs: &[TensorInfo], settings: &ParserSettings) -> bool
    where
        Self: Sized,
    {
        let _ = (outputs, settings);
        false
    }

    /// This family for `outputs`, or why they do not fit it.
    fn select(outputs: &[TensorInfo], settings: &ParserSettings) -> Result<Self, String>
    where
        Self: Sized;

    fn kind(&self) -> ParserKind;

    /// The parser in words (start message, `<factory>-parser` message, errors).
    fn summary(&self) -> String {
        format!("{:?}", self.kind())
    }

    fn produces(&self) -> Produces {
        Produces::Detections
    }

    /// Index `i` of the outputs given to `select` becomes `map[i]`.
    fn remap(&mut self, map: &[usize]);

    /// Number of classes the outputs encode, where their shapes say.
    fn num_classes(&self, outputs: &[TensorInfo]) -> Option<usize> {
        let _ = outputs;
        None
    }

    /// Class names when no label file is given.
    fn default_labels(&self) -> &'static [&'static str] {
        &[]
    }

    /// How one anchor's values lie in the outputs of shapes `shapes` (every output's shape,
    /// batch first), for the families that decode anchor by anchor; `None` for the others. A
    /// GPU decoder selects the anchors that may hold a detection and gathers their rows;
    /// [`Family::decode_anchor`] turns a row into detections on the host, the same code
    /// whether the row came from the GPU or the CPU.
    fn anchor_layout(&self, shapes: &[&[usize]]) -> Option<Result<AnchorLayout, String>> {
        let _ = shapes;
        None
    }

    /// Decodes the detections of anchor `anchor` from its `row` (the values of
    /// [`AnchorLayout::groups`], in order), keeping those at or above their class's
    /// `pre-cluster-threshold` (size limits apply later, to the clustered objects in frame
    /// pixels, as in nvinfer). `heatmap_width` is CenterFace's heatmap width.
    #[allow(clippy::too_many_arguments)]
    fn decode_anchor(
        &self,
        row: &[f32],
        anchor: usize,
        heatmap_width: usize,
        net: (u32, u32),
        attrs: &dyn Fn(u32) -> ClassAttrs,
        min_threshold: f32,
        out: &mut Vec<Detection>,
    ) {
        let _ = (row, anchor, heatmap_width, net, attrs, min_threshold, out);
    }

    /// Decodes the detections of batch item `item`, keeping those at or above their class's
    /// `pre-cluster-threshold`. By default every anchor of [`Family::anchor_layout`].
    fn detections(
        &self,
        outputs: &[OutputTensor],
        item: usize,
        net: (u32, u32),
        attrs: &dyn Fn(u32) -> ClassAttrs,
        out: &mut Vec<Detection>,
    ) -> Result<(), String> {
        anchor::decode_item(self, outputs, item, net, attrs, out)
    }

    /// Whether some of the layout is still open ([`Family::refine`] settles it).
    fn is_open(&self) -> bool {
        false
    }

    /// Settles what the shapes left open (the column order of end-to-end rows, the box format,
    /// normalisation) from the confident rows (score at least `min`) of batch item `item` of a
    /// batch of `batch` items. Returns the settled parser and what was decided; `None` while no
    /// row is confident. Rows that fit no reading are an error naming the outputs and the key
    /// that says how to read them.
    fn refine(
        &self,
        outputs: &[OutputTensor],
        item: usize,
        batch: usize,
        min: f32,
    ) -> Result<Option<(OutputParser, String)>, String> {
        let _ = (outputs, item, batch, min);
        Ok(None)
    }

    /// Why a guessed parser's first detection `d` shows that the guess is wrong: a confidence
    /// that is no probability, a box far off the network input.
    fn implausible(&self, d: &Detection, net: (u32, u32)) -> Option<String> {
        implausible(d, net)
    }

    /// The top class and its probability for batch item `item` ([`Produces::Classes`]).
    fn top_class(&self, outputs: &[OutputTensor], item: usize) -> Option<(u32, f32)> {
        let _ = (outputs, item);
        None
    }

    /// The output of prototype masks the detections' mask coefficients combine (YOLOv8-seg).
    fn prototypes(&self) -> Option<usize> {
        None
    }
}

/// Copying a family behind `dyn Family`.
pub trait FamilyClone {
    fn boxed(&self) -> Box<dyn Family>;
}

impl<F: Family + Clone> FamilyClone for F {
    fn boxed(&self) -> Box<dyn Family> {
        Box::new(self.clone())
    }
}

/// A family as [`FAMILIES`] lists it.
pub struct Listed {
    pub kind: ParserKind,
    recognise: fn(&[TensorInfo], &ParserSettings) -> bool,
    select: SelectFn,
}

/// [`Family::select`] of a listed family, boxed.
type SelectFn = fn(&[TensorInfo], &ParserSettings) -> Result<Box<dyn Family>, String>;

const fn listed<F: Family + Clone>(kind: ParserKind) -> Listed {
    Listed {
        kind,
        recognise: F::recognise,
        select: select_boxed::<F>,
    }
}

fn select_boxed<F: Family + Clone>(
    outputs: &[TensorInfo],
    settings: &ParserSettings,
) -> Result<Box<dyn Family>, String> {
    F::select(outputs, settings).map(|f| Box::new(f) as Box<dyn Family>)
}

/// Every family, in the order `output-parser=auto` asks them about a detector's outputs. The
/// order matters where layouts look alike: YOLOX (one row per grid cell) before end-to-end rows
/// of 6 or 7 values, those before YOLOv8-pose (one class and `num-keypoints` keypoints of 3
/// values), that before YOLOv8, DETR and YOLOv5. YOLOv8-OBB (a YOLOv8 layout with one more row)
/// and the last three are chosen by `output-parser`, `network-type` or a custom library and
/// recognise nothing.
pub static FAMILIES: [Listed; 16] = [
    listed::<TfOdApi>(ParserKind::TfOdApi),
    listed::<BoxesScoresLabels>(ParserKind::BoxesScoresLabels),
    listed::<CenterFace>(ParserKind::CenterFace),
    listed::<YoloV8Seg>(ParserKind::YoloV8Seg),
    listed::<Ssd>(ParserKind::Ssd),
    listed::<Yolox>(ParserKind::Yolox),
    listed::<EndToEnd>(ParserKind::EndToEnd),
    listed::<Classifier>(ParserKind::Classifier),
    listed::<YoloV8Pose>(ParserKind::YoloV8Pose),
    listed::<YoloV8>(ParserKind::YoloV8),
    listed::<YoloV8Obb>(ParserKind::YoloV8Obb),
    listed::<Detr>(ParserKind::Detr),
    listed::<YoloV5>(ParserKind::YoloV5),
    listed::<Segmentation>(ParserKind::Segmentation),
    listed::<Custom>(ParserKind::Custom),
    listed::<Tensors>(ParserKind::None),
];

/// The parser of a model: one family, with the index of each output it reads. Cheap to clone.
#[derive(Debug, Clone)]
pub struct OutputParser(Arc<dyn Family>);

impl Deref for OutputParser {
    type Target = dyn Family;

    fn deref(&self) -> &(dyn Family + 'static) {
        &*self.0
    }
}

impl OutputParser {
    pub fn new(family: impl Family) -> Self {
        Self(Arc::new(family))
    }

    /// The parser of an nvinfer custom parser library.
    pub fn custom(kind: CustomKind) -> Self {
        Self::new(Custom(kind))
    }

    /// Chooses the parser for `outputs` (the outputs to consider, in order).
    pub fn select(settings: &ParserSettings, outputs: &[TensorInfo]) -> Result<Self, String> {
        let kind = family_kind(settings, outputs)?;
        let listed = FAMILIES
            .iter()
            .find(|f| f.kind == kind)
            .ok_or_else(|| format!("output-parser {kind:?} names no family of layouts"))?;
        (listed.select)(outputs, settings).map(|f| Self(Arc::from(f)))
    }

    /// Re-indexes the outputs: index `i` of the outputs given to [`OutputParser::select`]
    /// becomes `map[i]` (their position among all the engine's outputs).
    pub fn remap(self, map: &[usize]) -> Self {
        let mut family = self.0.boxed();
        family.remap(map);
        Self(Arc::from(family))
    }

    /// The family, as its own type (`parser.family::<Ssd>()`), where it is that family.
    pub fn family<F: Family>(&self) -> Option<&F> {
        let any: &dyn Any = &*self.0;
        any.downcast_ref()
    }
}

/// Which family `settings` ask for on `outputs`: by `network-type`, `output-parser`, or the
/// first family of [`FAMILIES`] that recognises them.
fn family_kind(settings: &ParserSettings, outputs: &[TensorInfo]) -> Result<ParserKind, String> {
    let kind = match (settings.kind, settings.network_type) {
        (ParserKind::Auto | ParserKind::None, NetworkType::Other) => return Ok(ParserKind::None),
        (kind, NetworkType::Other) => {
            return Err(format!(
                "network-type other attaches raw tensors and parses nothing, but output-parser \
                 is {kind:?}; leave output-parser at auto"
            ));
        }
        (ParserKind::None, network_type) => {
            return Err(format!(
                "output-parser none needs network-type other (raw tensors), not \
                 {network_type:?}"
            ));
        }
        (ParserKind::Auto | ParserKind::Segmentation, NetworkType::Segmentation) => {
            return Ok(ParserKind::Segmentation);
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
    let network_type = settings.network_type;
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
    Ok(kind)
}

/// The first family of [`FAMILIES`] that recognises `outputs`.
fn guess(outputs: &[TensorInfo], settings: &ParserSettings) -> Result<ParserKind, String> {
    FAMILIES
        .iter()
        .find(|f| (f.recognise)(outputs, settings))
        .map(|f| f.kind)
        .ok_or_else(|| {
            format!(
                "cannot tell how to parse the model's outputs ({}); set output-parser",
                describe(outputs)
            )
        })
}

/// A limb of `keypoint-skeleton`: `a-b`, two keypoint indices.
pub fn parse_limb(text: &str) -> Result<[u32; 2], String> {
    let parsed = text
        .split_once('-')
        .and_then(|(a, b)| Some([a.trim().parse().ok()?, b.trim().parse().ok()?]));
    parsed.ok_or_else(|| format!("expected a limb as two keypoint indices a-b, found `{text}`"))
}

/// The classes of an output whose items hold `leading` values (a box, an objectness) and then
/// one score per class along their axis `axis`.
pub(super) fn classes_after(output: &TensorInfo, axis: usize, leading: usize) -> Option<usize> {
    let len = item_dims(output).get(axis).copied().flatten()?;
    Some(len.saturating_sub(leading))
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

/// The one output `[N,*,*]` of a family of rows (YOLOv5, YOLOv8, DETR); `name` in errors.
fn single_rows_output(outputs: &[TensorInfo], name: &str) -> Result<usize, String> {
    let [output] = outputs else {
        return Err(format!(
            "{name} expects one output, found {}",
            describe(outputs)
        ));
    };
    if item_dims(output).len() != 2 {
        return Err(format!("{name} expects a [N,*,*] output, found {output}"));
    }
    Ok(0)
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

/// Why detection `d`'s confidence is no score: outside 0..1 (with a little rounding), or NaN.
/// Checked on the first detections of every built-in family, named or guessed: a family named
/// on another family's outputs reads coordinates as scores.
pub fn not_a_score(d: &Detection) -> Option<String> {
    (!(0.0..=1.001).contains(&d.confidence)).then(|| format!("a confidence of {}", d.confidence))
}

/// Why detection `d` on a `net` input cannot be a detection: a confidence outside 0..1, a box
/// that is not finite or lies far outside the input.
fn implausible(d: &Detection, net: (u32, u32)) -> Option<String> {
    let (w, h) = (net.0 as f32, net.1 as f32);
    let b = d.bbox;
    if let Some(why) = not_a_score(d) {
        Some(why)
    } else if ![b.left, b.top, b.width, b.height]
        .iter()
        .all(|v| v.is_finite())
        || b.right() < -0.5 * w
        || b.left > 1.5 * w
        || b.bottom() < -0.5 * h
        || b.top > 1.5 * h
        || b.width > 2.0 * w
        || b.height > 2.0 * h
    {
        Some(format!(
            "a box at ({:.1}, {:.1}) of {:.1}x{:.1}, far outside the {w}x{h} network input",
            b.left, b.top, b.width, b.height
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests;
