// SPDX-License-Identifier: MIT OR Apache-2.0
//! The vocabulary that configuration, output parsers and custom parser libraries share: how a
//! box's values are ordered and scaled, the columns of end-to-end rows, which custom parser a
//! library provides, and a detection. It depends on nothing else of the crate, so the modules
//! that use it do not depend on each other through it.

use std::fmt;

use ferrostream_core::BBox;

ferrostream_core::choice_enum! {
    /// How the four values of a box are ordered (`box-format`).
    #[derive(Default, PartialOrd, Ord, Hash)]
    pub enum BoxFormat: "GstRsTrtInferBoxFormat" {
        /// TensorFlow order: ymin, xmin, ymax, xmax.
        Yxyx = 0 => ("yxyx", "ymin,xmin,ymax,xmax (TensorFlow)"),
        Xyxy = 1 => ("xyxy", "xmin,ymin,xmax,ymax"),
        Cxcywh = 2 => ("cxcywh", "centre x, centre y, width, height"),
        Xywh = 3 => ("xywh", "left, top, width, height"),
        /// The parser's usual order: yxyx for SSD and the TensorFlow Object Detection API; for
        /// end-to-end rows and boxes/scores/labels, xyxy or cxcywh as the first real boxes show.
        #[default]
        Auto = 4 => ("auto", "Auto: the parser's usual order"),
    }
}

ferrostream_core::choice_enum! {
    /// Whether box coordinates are in network-input pixels or normalised to [0, 1]
    /// (`box-coordinates`).
    #[derive(Default, PartialOrd, Ord, Hash)]
    pub enum BoxCoords: "GstRsTrtInferBoxCoordinates" {
        /// The parser's convention; where parsers differ (end-to-end rows, boxes/scores/labels),
        /// decided once from the first confident boxes.
        #[default]
        Auto = 0 => ("auto", "Auto: as the parser's family, or from the first boxes"),
        Normalized = 1 => ("normalized", "Normalised to the network input"),
        Pixels = 2 => ("pixels", "Network-input pixels"),
    }
}

/// One column (or, for `Box`, four) of an end-to-end row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// Four values in `box-format` order.
    Box,
    Score,
    /// A 0-based class id (a float holding an integer; -1 marks padding).
    Class,
    /// The batch item the row belongs to (rows of a `[K,7]` output).
    Batch,
    /// A value the parser ignores.
    Skip,
}

impl Column {
    fn name(self) -> &'static str {
        match self {
            Column::Box => "box",
            Column::Score => "score",
            Column::Class => "class",
            Column::Batch => "batch",
            Column::Skip => "skip",
        }
    }
}

/// The column order of end-to-end rows (`end-to-end-columns`, e.g. `box,score,class`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Columns(Vec<Column>);

impl Columns {
    /// Reads a list of `box`, `score`, `class`, `batch` and `skip`, separated by commas,
    /// semicolons or spaces; `box`, `score` and `class` exactly once, `batch` at most once.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut columns = Vec::new();
        for word in text
            .split([',', ';', ' '])
            .map(str::trim)
            .filter(|w| !w.is_empty())
        {
            columns.push(match word.to_ascii_lowercase().as_str() {
                "box" => Column::Box,
                "score" => Column::Score,
                "class" | "label" => Column::Class,
                "batch" => Column::Batch,
                "skip" | "_" => Column::Skip,
                other => {
                    return Err(format!(
                        "unknown column {other:?}: use box, score, class, batch and skip"
                    ));
                }
            });
        }
        let count = |c: Column| columns.iter().filter(|&&x| x == c).count();
        if count(Column::Box) != 1 || count(Column::Score) != 1 || count(Column::Class) != 1 {
            return Err(format!(
                "{text:?}: the columns need box, score and class exactly once each"
            ));
        }
        if count(Column::Batch) > 1 {
            return Err(format!("{text:?}: batch appears more than once"));
        }
        Ok(Self(columns))
    }

    /// The orders in use for rows of `width` values, most common first: `box,score,class`
    /// (YOLOv10, YOLO11 and RT-DETR end-to-end exports) for 6; for 7, `batch,box,class,score`
    /// (YOLOv7's end-to-end export) and `batch,class,score,box` (SSD's DetectionOutput and
    /// TensorRT's NMS plugins).
    pub fn guesses(width: usize) -> Vec<Self> {
        use Column::*;
        match width {
            6 => vec![Self(vec![Box, Score, Class])],
            7 => vec![
                Self(vec![Batch, Box, Class, Score]),
                Self(vec![Batch, Class, Score, Box]),
            ],
            _ => Vec::new(),
        }
    }

    /// Values per row.
    pub fn width(&self) -> usize {
        self.0
            .iter()
            .map(|&c| if c == Column::Box { 4 } else { 1 })
            .sum()
    }

    pub fn has_batch(&self) -> bool {
        self.0.contains(&Column::Batch)
    }

    fn offset(&self, column: Column) -> Option<usize> {
        let mut at = 0;
        for &c in &self.0 {
            if c == column {
                return Some(at);
            }
            at += if c == Column::Box { 4 } else { 1 };
        }
        None
    }

    /// The values of one row of [`Columns::width`] values.
    pub fn read(&self, row: &[f32]) -> Row {
        let at = |c| {
            self.offset(c)
                .expect("box, score and class are always present")
        };
        let b = at(Column::Box);
        Row {
            bbox: [row[b], row[b + 1], row[b + 2], row[b + 3]],
            score: row[at(Column::Score)],
            class: row[at(Column::Class)],
            batch: self.offset(Column::Batch).map(|i| row[i]),
        }
    }
}

impl std::str::FromStr for Columns {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Self::parse(text)
    }
}

impl fmt::Display for Columns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|c| c.name()).collect();
        f.write_str(&names.join(","))
    }
}

/// One finished detection as the outputs hold it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    pub bbox: [f32; 4],
    pub score: f32,
    /// The class id as stored (before any offset).
    pub class: f32,
    pub batch: Option<f32>,
}

/// Which kind of parser function a library provides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CustomKind {
    /// `parse-bbox-func-name`: an `NvDsInferParseCustomFunc`.
    Detector,
    /// `parse-bbox-instance-mask-func-name`: an `NvDsInferInstanceMaskParseCustomFunc`.
    InstanceMask,
    /// `parse-classifier-func-name`: an `NvDsInferClassiferParseCustomFunc`.
    Classifier,
    /// `parse-segmentation-func-name`: an `NvDsInferSemSegmentationParseCustomFunc` (a class
    /// per pixel of the network input).
    Segmentation,
}

impl CustomKind {
    /// The kind a configuration key names.
    pub fn from_key(key: &str) -> Option<Self> {
        [
            CustomKind::Detector,
            CustomKind::InstanceMask,
            CustomKind::Classifier,
            CustomKind::Segmentation,
        ]
        .into_iter()
        .find(|k| k.key() == key)
    }

    /// The configuration key naming the function.
    pub fn key(self) -> &'static str {
        match self {
            CustomKind::Detector => "parse-bbox-func-name",
            CustomKind::InstanceMask => "parse-bbox-instance-mask-func-name",
            CustomKind::Classifier => "parse-classifier-func-name",
            CustomKind::Segmentation => "parse-segmentation-func-name",
        }
    }
}

/// A detection in network-input pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct Detection {
    pub class_id: u32,
    pub confidence: f32,
    pub bbox: BBox,
    /// Landmark points as x,y pairs in network pixels (CenterFace: eyes, nose, mouth corners).
    pub landmarks: Vec<f32>,
    /// Keypoints as x, y, confidence triples, x and y in network pixels (pose models).
    pub keypoints: Vec<f32>,
    /// Mask coefficients (YOLOv8-seg), turned into `mask` once the detection survives
    /// clustering.
    pub coefficients: Vec<f32>,
    /// The instance mask over `bbox`.
    pub mask: Option<ferrostream_core::mask::InstanceMask>,
    /// An oriented box's angle (radians about the box's centre, clockwise on the screen; see
    /// `ferrostream_core::oriented`); `None` for an axis-aligned box.
    pub angle: Option<f32>,
}

impl Detection {
    /// An axis-aligned detection with nothing but its class, confidence and box.
    pub fn new(class_id: u32, confidence: f32, bbox: BBox) -> Self {
        Self {
            class_id,
            confidence,
            bbox,
            landmarks: Vec::new(),
            keypoints: Vec::new(),
            coefficients: Vec::new(),
            mask: None,
            angle: None,
        }
    }

    /// Intersection over union with `other`, turned boxes as turned (clustering).
    pub fn iou(&self, other: &Detection) -> f32 {
        match (self.angle, other.angle) {
            (None, None) => self.bbox.iou(&other.bbox),
            (a, b) => ferrostream_core::oriented::iou(
                &self.bbox,
                a.unwrap_or(0.0),
                &other.bbox,
                b.unwrap_or(0.0),
            ),
        }
    }
}
