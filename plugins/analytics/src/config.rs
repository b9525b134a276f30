// SPDX-License-Identifier: MIT OR Apache-2.0
//! rsanalytics' rules: read from an nvdsanalytics configuration file (DeepStream's INI format,
//! as it is) or from element properties, and checked.
//!
//! ```ini
//! [property]
//! enable=1
//! config-width=1920        # the coordinates below are in this frame size,
//! config-height=1080       # scaled to each stream's frame size
//! osd-mode=2               # 0 draw nothing, 1 shapes and labels, 2 also the counts
//!
//! [roi-filtering-stream-0]
//! enable=1
//! roi-RF=295;643;579;634;642;913;56;828     # roi-<label>=x1;y1;x2;y2;... (a polygon)
//! inverse-roi=0
//! class-id=-1
//!
//! [overcrowding-stream-0]
//! enable=1
//! roi-OC=295;643;579;634;642;913;56;828
//! object-threshold=3
//! class-id=-1
//!
//! [line-crossing-stream-0]
//! enable=1
//! line-crossing-Exit=789;672;1084;900;851;773;1203;732   # arrow x1;y1;x2;y2, then the line
//! class-id=0
//! extended=0
//! mode=loose
//!
//! [direction-detection-stream-0]
//! enable=1
//! direction-South=284;840;360;662          # x1;y1;x2;y2: the arrow of the named direction
//! class-id=0
//! mode=balanced
//! ```
//!
//! As in nvdsanalytics, a section without `enable=1` is off, `class-id=-1` (or no `class-id`)
//! means every class, and a `mode` is `strict`, `balanced` or `loose`. Unlike nvdsanalytics,
//! shapes that cannot work (self-intersecting or flat polygons, lines of zero length, arrows
//! along their line, odd or negative coordinate lists, stream suffixes that are not numbers)
//! are errors naming file, line and key; unknown keys and sections are warnings.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::LazyLock;

use ferrostream_core::field;
use ferrostream_core::ini::{ConfigError, Entry, IniFile, parse_list};
use ferrostream_core::settings::{
    Bool, Float, List, Mapped, Parsed, Source, Table, Text, UInt, setting,
};

use crate::geometry::{self, Point};

/// How closely a movement must follow a rule's arrow (nvdsanalytics' `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Within 30° of the arrow.
    Strict,
    /// Within 60° of the arrow.
    #[default]
    Balanced,
    /// Any movement to the arrow's side.
    Loose,
}

impl Mode {
    /// The least cosine between a movement and the arrow for the movement to count.
    pub fn min_cosine(self) -> f32 {
        match self {
            Mode::Strict => 0.866,
            Mode::Balanced => 0.5,
            Mode::Loose => -1.0,
        }
    }

    /// The name a file's `mode` and the `line-mode`/`direction-mode` properties take.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Strict => "strict",
            Mode::Balanced => "balanced",
            Mode::Loose => "loose",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim() {
            "strict" => Ok(Mode::Strict),
            "balanced" => Ok(Mode::Balanced),
            "loose" => Ok(Mode::Loose),
            other => Err(format!(
                "unknown mode `{other}` (strict, balanced or loose)"
            )),
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The classes a rule applies to; empty means all.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Classes(Vec<i32>);

impl Classes {
    /// From nvdsanalytics' `class-id` list: `-1` anywhere means all.
    pub fn new(ids: Vec<i32>) -> Self {
        if ids.contains(&-1) {
            Self(Vec::new())
        } else {
            Self(ids)
        }
    }

    pub fn contains(&self, class_id: i32) -> bool {
        self.0.is_empty() || self.0.contains(&class_id)
    }
}

/// A region of interest: objects inside it (outside, when `inverse`) are counted.
#[derive(Debug, Clone, PartialEq)]
pub struct RoiRule {
    pub label: String,
    pub polygon: Vec<Point>,
    pub inverse: bool,
    pub classes: Classes,
}

/// An overcrowding region: crowded while at least `threshold` objects are inside.
#[derive(Debug, Clone, PartialEq)]
pub struct CrowdingRule {
    pub label: String,
    pub polygon: Vec<Point>,
    pub threshold: u32,
    /// How long (stream time) the region must stay crowded, or clear, before the element posts
    /// the change as a message (`time-threshold`, milliseconds).
    pub hold_ms: u32,
    pub classes: Classes,
}

/// A counting line with the arrow that names its forward direction.
#[derive(Debug, Clone, PartialEq)]
pub struct LineRule {
    pub label: String,
    /// The direction arrow: from the first point to the second.
    pub arrow: [Point; 2],
    /// The line's two ends.
    pub line: [Point; 2],
    /// Count crossings of the whole infinite line, not only between its ends.
    pub extended: bool,
    pub mode: Mode,
    pub classes: Classes,
}

/// A named direction: objects moving along the arrow are said to move that way.
#[derive(Debug, Clone, PartialEq)]
pub struct DirectionRule {
    pub label: String,
    pub arrow: [Point; 2],
    pub mode: Mode,
    pub classes: Classes,
}

/// The rules of one stream (or of every stream).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamRules {
    pub rois: Vec<RoiRule>,
    pub crowding: Vec<CrowdingRule>,
    pub lines: Vec<LineRule>,
    pub directions: Vec<DirectionRule>,
}

impl StreamRules {
    pub fn is_empty(&self) -> bool {
        self.rois.is_empty()
            && self.crowding.is_empty()
            && self.lines.is_empty()
            && self.directions.is_empty()
    }

    /// These rules with their coordinates multiplied by `sx`, `sy`.
    pub fn scaled(&self, sx: f32, sy: f32) -> StreamRules {
        let p = |q: &Point| [q[0] * sx, q[1] * sy];
        let pair = |a: &[Point; 2]| [p(&a[0]), p(&a[1])];
        StreamRules {
            rois: self
                .rois
                .iter()
                .map(|r| RoiRule {
                    polygon: r.polygon.iter().map(p).collect(),
                    ..r.clone()
                })
                .collect(),
            crowding: self
                .crowding
                .iter()
                .map(|r| CrowdingRule {
                    polygon: r.polygon.iter().map(p).collect(),
                    ..r.clone()
                })
                .collect(),
            lines: self
                .lines
                .iter()
                .map(|r| LineRule {
                    arrow: pair(&r.arrow),
                    line: pair(&r.line),
                    ..r.clone()
                })
                .collect(),
            directions: self
                .directions
                .iter()
                .map(|r| DirectionRule {
                    arrow: pair(&r.arrow),
                    ..r.clone()
                })
                .collect(),
        }
    }

    pub fn extend(&mut self, other: StreamRules) {
        self.rois.extend(other.rois);
        self.crowding.extend(other.crowding);
        self.lines.extend(other.lines);
        self.directions.extend(other.directions);
    }
}

/// Everything rsanalytics does.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalyticsConfig {
    pub enable: bool,
    /// The frame size the coordinates are given in; 0 means the frame's own pixels.
    pub config_width: u32,
    pub config_height: u32,
    /// 0 draw nothing, 1 shapes and labels, 2 also the counts.
    pub osd_mode: u32,
    pub display_font_size: u32,
    /// Draw the number of objects of each class.
    pub display_obj_cnt: bool,
    /// Rules of one stream, by source id.
    pub streams: BTreeMap<u32, StreamRules>,
    /// Rules of every stream (from element properties).
    pub all_streams: StreamRules,
}

impl Default for AnalyticsConfig {
    fn default() -> Self {
        Self {
            enable: true,
            config_width: 0,
            config_height: 0,
            osd_mode: 2,
            display_font_size: 12,
            display_obj_cnt: false,
            streams: BTreeMap::new(),
            all_streams: StreamRules::default(),
        }
    }
}

impl AnalyticsConfig {
    /// The rules of source `source_id` in a frame of `width` x `height` pixels.
    pub fn rules_for(&self, source_id: u32, width: u32, height: u32) -> StreamRules {
        let mut rules = self.all_streams.clone();
        if let Some(own) = self.streams.get(&source_id) {
            rules.extend(own.clone());
        }
        let factor = |frame: u32, configured: u32| {
            if configured == 0 || frame == 0 {
                1.0
            } else {
                frame as f32 / configured as f32
            }
        };
        rules.scaled(
            factor(width, self.config_width),
            factor(height, self.config_height),
        )
    }

    /// Reads an nvdsanalytics configuration file; returns it with the warnings to post.
    pub fn load(path: &Path) -> Result<(Self, Vec<String>), ConfigError> {
        let ini = IniFile::load(path)?;
        Self::from_ini(&ini)
    }

    pub fn from_ini(ini: &IniFile) -> Result<(Self, Vec<String>), ConfigError> {
        Settings::from_ini(ini).map(|(settings, warnings)| (settings.config, warnings))
    }
}

/// Tuning that nvdsanalytics' format has no keys for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// Half the width of the band around a line inside which an object is on neither side,
    /// in frame pixels.
    pub hysteresis: f32,
    /// How many past positions of a tracked object the direction is measured over.
    pub direction_frames: usize,
    /// The least movement over those frames, in frame pixels, for an object to have a direction.
    pub min_movement: f32,
}

impl Default for Tuning {
    fn default() -> Self {
        Self {
            hysteresis: 4.0,
            direction_frames: 10,
            min_movement: 8.0,
        }
    }
}

/// The rules the element's properties add for every stream, next to the file's own.
#[derive(Debug, Clone, PartialEq)]
pub struct PropertyRules {
    /// `label=x1;y1;...` polygons separated by `|` (see [`parse_shapes`]).
    pub roi: String,
    pub inverse_roi: bool,
    pub overcrowding: String,
    pub object_threshold: u32,
    pub line_crossing: String,
    pub extended: bool,
    pub line_mode: Mode,
    pub direction: String,
    pub direction_mode: Mode,
    /// nvdsanalytics' `class-id` list: empty or `-1` means every class.
    pub class_ids: Vec<i32>,
}

impl Default for PropertyRules {
    fn default() -> Self {
        Self {
            roi: String::new(),
            inverse_roi: false,
            overcrowding: String::new(),
            object_threshold: 1,
            line_crossing: String::new(),
            extended: false,
            line_mode: Mode::Loose,
            direction: String::new(),
            direction_mode: Mode::Balanced,
            class_ids: Vec::new(),
        }
    }
}

impl PropertyRules {
    /// The rules, checked like a file's, with errors naming the property and the shape.
    pub fn rules(&self) -> Result<StreamRules, String> {
        let classes = Classes::new(self.class_ids.clone());
        let shapes = |name: &str, text: &str| {
            parse_shapes(text).map_err(|m| format!("property {name}: {m}"))
        };
        let named = |name: &str, label: &str, m: String| format!("property {name}, `{label}`: {m}");
        let mut all = StreamRules::default();
        for (label, points) in shapes("roi", &self.roi)? {
            all.rois.push(RoiRule {
                polygon: polygon(points).map_err(|m| named("roi", &label, m))?,
                label,
                inverse: self.inverse_roi,
                classes: classes.clone(),
            });
        }
        for (label, points) in shapes("overcrowding", &self.overcrowding)? {
            all.crowding.push(CrowdingRule {
                polygon: polygon(points).map_err(|m| named("overcrowding", &label, m))?,
                label,
                threshold: self.object_threshold,
                hold_ms: 0,
                classes: classes.clone(),
            });
        }
        for (label, points) in shapes("line-crossing", &self.line_crossing)? {
            let (arrow, line) = line(&points).map_err(|m| named("line-crossing", &label, m))?;
            all.lines.push(LineRule {
                label,
                arrow,
                line,
                extended: self.extended,
                mode: self.line_mode,
                classes: classes.clone(),
            });
        }
        for (label, points) in shapes("direction", &self.direction)? {
            all.directions.push(DirectionRule {
                arrow: arrow(&points).map_err(|m| named("direction", &label, m))?,
                label,
                mode: self.direction_mode,
                classes: classes.clone(),
            });
        }
        Ok(all)
    }
}

/// What rsanalytics' settings hold: the file's `[property]` keys and the element's properties,
/// declared once in [`SETTINGS`].
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub config: AnalyticsConfig,
    pub rules: PropertyRules,
    pub tuning: Tuning,
    pub post_messages: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            config: AnalyticsConfig::default(),
            rules: PropertyRules::default(),
            tuning: Tuning::default(),
            post_messages: true,
        }
    }
}

/// Every setting of `rsanalytics` but `config-file-path`: the `[property]` keys of an
/// nvdsanalytics file and the element's properties.
pub static SETTINGS: LazyLock<Table<Settings>> = LazyLock::new(|| {
    let mut t: Table<Settings> = Table::new("property");
    t.file_property(
        "nvdsanalytics configuration file (DeepStream's INI format); properties set on the \
         element override its [property] keys and add rules for every stream",
    );
    let shapes = |text: &String, _| parse_shapes(text).map(drop);
    // `setting::<Settings, _>`: `field!`'s closures must know the configuration type when
    // they are checked, and a builder method's receiver gets no type from `add`.
    t.add(
        setting::<Settings, _>("enable", field!(config.enable), Bool)
            .nick("Enable")
            .blurb("Apply the rules (off: buffers pass unchanged)"),
    )
    .add(
        setting::<Settings, _>("osd-mode", field!(config.osd_mode), UInt::range(0, 2))
            .nick("OSD mode")
            .blurb("What rsosd draws: 0 nothing, 1 shapes and labels, 2 also the counts"),
    )
    .add(
        setting::<Settings, _>("config-width", field!(config.config_width), UInt::any())
            .check(file_size)
            .nick("Config width")
            .blurb("Frame width the coordinates are given in (0: frame pixels)"),
    )
    .add(
        setting::<Settings, _>("config-height", field!(config.config_height), UInt::any())
            .check(file_size)
            .nick("Config height")
            .blurb("Frame height the coordinates are given in (0: frame pixels)"),
    )
    .add(
        setting::<Settings, _>(
            "display-font-size",
            field!(config.display_font_size),
            UInt::any(),
        )
        // nvdsanalytics ignores 0.
        .merge(|size, current| {
            if *size > 0 {
                *current = *size;
            }
        })
        .file_only(),
    )
    .add(
        setting::<Settings, _>("display-obj-cnt", field!(config.display_obj_cnt), Bool).file_only(),
    )
    // DeepStream's sample files carry it; rsanalytics measures over each object's tracked
    // path, so nothing needs it.
    .accept("property", "obj-cnt-win-in-ms", UInt::any())
    .add(
        setting::<Settings, _>("roi", field!(rules.roi), Text::new())
            .no_key()
            .check(shapes)
            .nick("Regions of interest")
            .blurb("Polygons for every stream: label=x1;y1;x2;y2;x3;y3... items separated by |"),
    )
    .add(
        setting::<Settings, _>("inverse-roi", field!(rules.inverse_roi), Bool)
            .no_key()
            .nick("Inverse ROI")
            .blurb("Count the objects outside the roi polygons instead of inside"),
    )
    .add(
        setting::<Settings, _>("overcrowding", field!(rules.overcrowding), Text::new())
            .no_key()
            .check(shapes)
            .nick("Overcrowding regions")
            .blurb("Polygons for every stream: label=x1;y1;x2;y2;x3;y3... items separated by |"),
    )
    .add(
        setting::<Settings, _>(
            "object-threshold",
            field!(rules.object_threshold),
            UInt::at_least(1),
        )
        .no_key()
        .nick("Object threshold")
        .blurb("Objects in an overcrowding region at which it is crowded"),
    )
    .add(
        setting::<Settings, _>("line-crossing", field!(rules.line_crossing), Text::new())
            .no_key()
            .check(shapes)
            .nick("Counting lines")
            .blurb(
                "Lines for every stream: label=ax1;ay1;ax2;ay2;lx1;ly1;lx2;ly2 (the forward \
                 arrow, then the line) items separated by |",
            ),
    )
    .add(
        setting::<Settings, _>("extended", field!(rules.extended), Bool)
            .no_key()
            .nick("Extended lines")
            .blurb("Count crossings of the whole infinite line, not only between its ends"),
    )
    .add(
        setting::<Settings, _>("line-mode", field!(rules.line_mode), Parsed::<Mode>::new())
            .no_key()
            .nick("Line mode")
            .blurb(
                "How closely a crossing must follow the arrow: strict (30 degrees), balanced \
                 (60) or loose (any)",
            ),
    )
    .add(
        setting::<Settings, _>("direction", field!(rules.direction), Text::new())
            .no_key()
            .check(shapes)
            .nick("Directions")
            .blurb("Named directions for every stream: label=x1;y1;x2;y2 items separated by |"),
    )
    .add(
        setting::<Settings, _>(
            "direction-mode",
            field!(rules.direction_mode),
            Parsed::<Mode>::new(),
        )
        .no_key()
        .nick("Direction mode")
        .blurb(
            "How closely a movement must follow a direction: strict (30 degrees), balanced \
             (60) or loose (90)",
        ),
    )
    .add(
        setting::<Settings, _>("class-ids", field!(rules.class_ids), List::<i32>::new())
            .no_key()
            .nick("Class ids")
            .blurb("Classes the property rules apply to, ';'-separated (empty or -1: all)"),
    )
    .add(
        setting::<Settings, _>(
            "line-hysteresis",
            field!(tuning.hysteresis),
            Float::range(0.0, 1000.0),
        )
        .no_key()
        .nick("Line hysteresis")
        .blurb(
            "Half-width in frame pixels of the band around a line in which an object is on \
             neither side (absorbs jitter on the line)",
        ),
    )
    .add(
        setting::<Settings, _>(
            "direction-frames",
            field!(tuning.direction_frames),
            Mapped::new(UInt::range(1, 1000), |n| n as usize, |&n: &usize| n as u32),
        )
        .no_key()
        .nick("Direction frames")
        .blurb("Frames of a tracked path the direction is measured over"),
    )
    .add(
        setting::<Settings, _>(
            "min-movement",
            field!(tuning.min_movement),
            Float::range(0.0, 10000.0),
        )
        .no_key()
        .nick("Min movement")
        .blurb("Least movement in frame pixels over direction-frames for a direction"),
    )
    .add(
        setting::<Settings, _>("post-messages", field!(post_messages), Bool)
            .no_key()
            .nick("Post messages")
            .blurb("Post line crossings and overcrowding changes as element messages"),
    );
    t
});

/// A file gives the frame size its coordinates are written for; a property may leave it 0
/// (the frame's own pixels).
fn file_size(size: &u32, source: Source) -> Result<(), String> {
    if source == Source::File && *size == 0 {
        Err("must be above 0".into())
    } else {
        Ok(())
    }
}

impl Settings {
    /// Reads an nvdsanalytics configuration file; returns it with the warnings to post.
    pub fn load(path: &Path) -> Result<(Self, Vec<String>), ConfigError> {
        Self::from_ini(&IniFile::load(path)?)
    }

    pub fn from_ini(ini: &IniFile) -> Result<(Self, Vec<String>), ConfigError> {
        let mut settings = Settings::default();
        let warnings = SETTINGS.read_ini(ini, &mut settings, |section, settings, warnings| {
            let section_error = |message: String| ConfigError {
                path: ini.path.clone(),
                line: section.line,
                message,
            };
            let Some((kind, stream)) = SectionKind::parse(&section.name) else {
                return Ok(false);
            };
            let stream = stream.map_err(section_error)?;
            let mut reader = SectionReader::new(ini, &section.entries, kind);
            let rules = reader.read()?;
            warnings.extend(reader.warnings);
            if rules.is_empty() {
                return Err(section_error(format!(
                    "section [{}] names no {}",
                    section.name,
                    kind.shape_key()
                )));
            }
            if !reader.enable {
                warnings.push(format!(
                    "{}:{}: section [{}] has no enable=1, so it is off (as in nvdsanalytics)",
                    ini.path.display(),
                    section.line,
                    section.name
                ));
            } else {
                settings
                    .config
                    .streams
                    .entry(stream)
                    .or_default()
                    .extend(rules);
            }
            Ok(true)
        })?;
        if !ini.sections.iter().any(|s| s.name == "property") {
            return Err(ConfigError {
                path: ini.path.clone(),
                line: 0,
                message: "no [property] section (nvdsanalytics needs one with config-width and \
                          config-height)"
                    .into(),
            });
        }
        let missing = |key: &str| ConfigError {
            path: ini.path.clone(),
            line: 0,
            message: format!(
                "[property] has no {key} (the frame size the coordinates are given in)"
            ),
        };
        if settings.config.config_width == 0 {
            return Err(missing("config-width"));
        }
        if settings.config.config_height == 0 {
            return Err(missing("config-height"));
        }
        Ok((settings, warnings))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SectionKind {
    Roi,
    Crowding,
    Line,
    Direction,
}

impl SectionKind {
    /// The kind and the stream id of a per-stream section name, or `None` for other names.
    fn parse(name: &str) -> Option<(Self, Result<u32, String>)> {
        const PREFIXES: [(&str, SectionKind); 4] = [
            ("roi-filtering-stream-", SectionKind::Roi),
            ("overcrowding-stream-", SectionKind::Crowding),
            ("line-crossing-stream-", SectionKind::Line),
            ("direction-detection-stream-", SectionKind::Direction),
        ];
        PREFIXES.iter().find_map(|&(prefix, kind)| {
            let suffix = name.strip_prefix(prefix)?;
            let stream = suffix.parse::<u32>().map_err(|_| {
                format!(
                    "section [{name}]: `{suffix}` is not a stream id (a source index: 0, 1, ...)"
                )
            });
            Some((kind, stream))
        })
    }

    fn shape_key(self) -> &'static str {
        match self {
            SectionKind::Roi | SectionKind::Crowding => "roi-<label>",
            SectionKind::Line => "line-crossing-<label>",
            SectionKind::Direction => "direction-<label>",
        }
    }
}

/// Reads one per-stream section. Its settings (`class-id`, `mode`, ...) apply to every shape
/// of the section, wherever they appear in it.
struct SectionReader<'a> {
    ini: &'a IniFile,
    entries: &'a [Entry],
    kind: SectionKind,
    enable: bool,
    warnings: Vec<String>,
}

impl<'a> SectionReader<'a> {
    fn new(ini: &'a IniFile, entries: &'a [Entry], kind: SectionKind) -> Self {
        Self {
            ini,
            entries,
            kind,
            enable: false,
            warnings: Vec::new(),
        }
    }

    fn read(&mut self) -> Result<StreamRules, ConfigError> {
        let ini = self.ini;
        let mut classes = Classes::default();
        let mut inverse = false;
        let mut threshold = 1u32;
        let mut hold_ms = 0u32;
        let mut extended = false;
        let mut mode = match self.kind {
            SectionKind::Line => Mode::Loose,
            _ => Mode::Balanced,
        };
        let mut shapes: Vec<(&Entry, String, Vec<i64>)> = Vec::new();
        for e in self.entries {
            let kind = self.kind;
            match (e.key.as_str(), kind) {
                ("enable", _) => self.enable = ini.bool_value(e)?,
                ("class-id", _) => classes = Classes::new(ini.list_value(e)?),
                ("inverse-roi", SectionKind::Roi) => inverse = ini.bool_value(e)?,
                ("object-threshold", SectionKind::Crowding) => threshold = ini.value(e)?,
                ("time-threshold", SectionKind::Crowding) => hold_ms = ini.value(e)?,
                ("extended", SectionKind::Line) => extended = ini.bool_value(e)?,
                ("mode", SectionKind::Line | SectionKind::Direction) => {
                    mode = e.value.parse().map_err(|m: String| ini.error(e, m))?
                }
                (key, _) => match shape_label(key, kind) {
                    Some(label) if !label.is_empty() => {
                        let numbers = ini.list_value::<i64>(e)?;
                        if shapes.iter().any(|(_, l, _)| l == label) {
                            self.warnings.push(format!(
                                "{}:{}: `{key}` given twice; the last one counts",
                                ini.path.display(),
                                e.line
                            ));
                            shapes.retain(|(_, l, _)| l != label);
                        }
                        shapes.push((e, label.to_owned(), numbers));
                    }
                    Some(_) => return Err(ini.error(e, "the label after the prefix is empty")),
                    None => self.warnings.push(format!(
                        "{}:{}: unknown key `{key}` here; ignored",
                        ini.path.display(),
                        e.line
                    )),
                },
            }
        }
        let mut rules = StreamRules::default();
        for (e, label, numbers) in shapes {
            let points = points(&numbers).map_err(|m| ini.error(e, m))?;
            match self.kind {
                SectionKind::Roi => rules.rois.push(RoiRule {
                    label,
                    polygon: polygon(points).map_err(|m| ini.error(e, m))?,
                    inverse,
                    classes: classes.clone(),
                }),
                SectionKind::Crowding => rules.crowding.push(CrowdingRule {
                    label,
                    polygon: polygon(points).map_err(|m| ini.error(e, m))?,
                    threshold,
                    hold_ms,
                    classes: classes.clone(),
                }),
                SectionKind::Line => {
                    let (arrow, line) = line(&points).map_err(|m| ini.error(e, m))?;
                    rules.lines.push(LineRule {
                        label,
                        arrow,
                        line,
                        extended,
                        mode,
                        classes: classes.clone(),
                    })
                }
                SectionKind::Direction => rules.directions.push(DirectionRule {
                    label,
                    arrow: arrow(&points).map_err(|m| ini.error(e, m))?,
                    mode,
                    classes: classes.clone(),
                }),
            }
        }
        Ok(rules)
    }
}

/// The label of a shape key of a section of `kind` (`roi-<label>`, ...).
fn shape_label(key: &str, kind: SectionKind) -> Option<&str> {
    match kind {
        SectionKind::Roi | SectionKind::Crowding => key.strip_prefix("roi-"),
        SectionKind::Line => key.strip_prefix("line-crossing-"),
        SectionKind::Direction => key.strip_prefix("direction-"),
    }
}

/// Pairs a coordinate list into points: an even count of non-negative numbers.
pub fn points(numbers: &[i64]) -> Result<Vec<Point>, String> {
    if !numbers.len().is_multiple_of(2) {
        return Err(format!(
            "{} numbers: coordinates come in x;y pairs",
            numbers.len()
        ));
    }
    if let Some(n) = numbers.iter().find(|&&n| n < 0) {
        return Err(format!("coordinate {n} is negative"));
    }
    Ok(numbers
        .chunks_exact(2)
        .map(|c| [c[0] as f32, c[1] as f32])
        .collect())
}

/// The most corners a region may have. Regions drawn by hand have a few dozen; the crossing
/// check compares every pair of edges (at most half a million pairs here, a few milliseconds),
/// and every object is tested against every edge of its regions on every frame.
pub const MAX_CORNERS: usize = 1024;

/// Checks a polygon: at least three corners and at most [`MAX_CORNERS`], some area, no
/// crossing edges.
pub fn polygon(points: Vec<Point>) -> Result<Vec<Point>, String> {
    if points.len() < 3 {
        return Err(format!(
            "a region needs at least 3 corners, found {}",
            points.len()
        ));
    }
    if points.len() > MAX_CORNERS {
        return Err(format!(
            "a region may have at most {MAX_CORNERS} corners, found {}",
            points.len()
        ));
    }
    if let Some((a, b)) = geometry::self_intersection(&points) {
        return Err(format!(
            "the region's edges {} and {} cross (edge i joins corner i to corner i+1): the \
             polygon intersects itself",
            a + 1,
            b + 1
        ));
    }
    if geometry::doubled_area(&points).abs() < 1e-3 {
        return Err("the region has no area (its corners are on one line)".into());
    }
    Ok(points)
}

/// A counting line: the arrow's two points, then the line's; the arrow must cross the line's
/// direction.
pub fn line(points: &[Point]) -> Result<([Point; 2], [Point; 2]), String> {
    let &[a0, a1, l0, l1] = points else {
        return Err(format!(
            "a counting line takes 8 numbers (arrow x1;y1;x2;y2, then line x1;y1;x2;y2), found {}",
            points.len() * 2
        ));
    };
    let l = geometry::Line::new(l0, l1).ok_or("the line has zero length (its ends coincide)")?;
    if a0 == a1 {
        return Err("the direction arrow has zero length".into());
    }
    let along = l.normal_component(geometry::vector(a0, a1));
    if along.abs() < 1e-3 * geometry::norm(geometry::vector(a0, a1)) {
        return Err("the direction arrow runs along the line, so it names no side".into());
    }
    Ok(([a0, a1], [l0, l1]))
}

/// A direction arrow: two distinct points.
pub fn arrow(points: &[Point]) -> Result<[Point; 2], String> {
    let &[a0, a1] = points else {
        return Err(format!(
            "a direction takes 4 numbers (x1;y1;x2;y2), found {}",
            points.len() * 2
        ));
    };
    if a0 == a1 {
        return Err("the direction arrow has zero length".into());
    }
    Ok([a0, a1])
}

/// Parses a property's rules: `label=x1;y1;...` items separated by `|`.
pub fn parse_shapes(text: &str) -> Result<Vec<(String, Vec<Point>)>, String> {
    text.split('|')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            let (label, numbers) = item
                .split_once('=')
                .ok_or_else(|| format!("`{item}`: expected label=x1;y1;..."))?;
            let label = label.trim();
            if label.is_empty() {
                return Err(format!("`{item}`: the label is empty"));
            }
            let numbers = parse_list::<i64>(numbers).map_err(|m| format!("`{label}`: {m}"))?;
            let points = points(&numbers).map_err(|m| format!("`{label}`: {m}"))?;
            Ok((label.to_owned(), points))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<(AnalyticsConfig, Vec<String>), ConfigError> {
        AnalyticsConfig::from_ini(&IniFile::parse(Path::new("a.txt"), text).unwrap())
    }

    /// A configuration written in DeepStream's format, with every section kind.
    const DEEPSTREAM_FORMAT: &str = include_str!("../tests/nvdsanalytics_format.txt");

    #[test]
    fn deepstreams_format_reads_as_it_is() {
        let (c, warnings) = parse(DEEPSTREAM_FORMAT).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            (c.config_width, c.config_height, c.osd_mode),
            (1920, 1080, 2)
        );
        let s0 = &c.streams[&0];
        assert_eq!(s0.rois.len(), 1);
        assert_eq!(s0.rois[0].label, "RF");
        assert_eq!(s0.rois[0].polygon[0], [300.0, 600.0]);
        assert!(!s0.rois[0].inverse);
        assert!(s0.rois[0].classes.contains(7));
        assert_eq!(s0.lines.len(), 1);
        assert_eq!(s0.lines[0].label, "Exit");
        assert_eq!(s0.lines[0].arrow, [[800.0, 680.0], [1080.0, 900.0]]);
        assert_eq!(s0.lines[0].line, [[860.0, 780.0], [1200.0, 740.0]]);
        assert_eq!(s0.lines[0].mode, Mode::Loose);
        assert!(!s0.lines[0].extended);
        assert!(s0.lines[0].classes.contains(0) && !s0.lines[0].classes.contains(2));
        assert_eq!(s0.directions.len(), 2);
        assert_eq!(c.streams[&1].crowding[0].threshold, 3);
        assert!(c.streams[&2].rois[0].inverse);
        // Scaled to a stream half the configured size.
        let half = c.rules_for(0, 960, 540);
        assert_eq!(half.rois[0].polygon[0], [150.0, 300.0]);
    }

    #[test]
    fn bad_shapes_are_errors_naming_the_key() {
        let head = "[property]\nenable=1\nconfig-width=100\nconfig-height=100\n";
        let cases = [
            (
                "[roi-filtering-stream-0]\nenable=1\nroi-A=0;0;10;10;10;0;0;10\n",
                "intersects itself",
            ),
            (
                "[roi-filtering-stream-0]\nenable=1\nroi-A=0;0;10;10;20;20\n",
                "no area",
            ),
            (
                "[roi-filtering-stream-0]\nenable=1\nroi-A=0;0;10\n",
                "pairs",
            ),
            (
                "[overcrowding-stream-0]\nenable=1\nroi-A=0;0;10;-1;5;5\n",
                "negative",
            ),
            (
                "[line-crossing-stream-0]\nenable=1\nline-crossing-L=0;0;0;10;5;5;5;5\n",
                "zero length",
            ),
            (
                "[line-crossing-stream-0]\nenable=1\nline-crossing-L=0;5;10;5;0;0;10;0\n",
                "along the line",
            ),
            (
                "[line-crossing-stream-0]\nenable=1\nline-crossing-L=0;0;0;10\n",
                "8 numbers",
            ),
            (
                "[direction-detection-stream-0]\nenable=1\ndirection-N=5;5;5;5\n",
                "zero length",
            ),
            (
                "[line-crossing-stream-x]\nenable=1\nline-crossing-L=0;0;0;10;0;5;10;5\n",
                "not a stream id",
            ),
            (
                "[line-crossing-stream-0]\nenable=1\nmode=sideways\nline-crossing-L=0;0;0;10;0;5;10;5\n",
                "unknown mode",
            ),
            (
                "[roi-filtering-stream-0]\nenable=1\n",
                "names no roi-<label>",
            ),
        ];
        for (section, expected) in cases {
            let err = parse(&format!("{head}{section}")).unwrap_err().to_string();
            assert!(err.contains(expected), "{section}: {err}");
            assert!(err.starts_with("a.txt:"), "{err}");
        }
        let err = parse("[roi-filtering-stream-0]\nenable=1\nroi-A=0;0;10;0;0;10\n").unwrap_err();
        assert!(err.message.contains("[property]"), "{err}");
        let err = parse("[property]\nconfig-width=100\n").unwrap_err();
        assert!(err.message.contains("config-height"), "{err}");
    }

    #[test]
    fn unknown_keys_and_disabled_sections_are_warnings() {
        let (c, warnings) = parse(
            "[property]\nenable=1\nconfig-width=100\nconfig-height=100\ncolour=red\n\
             [roi-filtering-stream-0]\nroi-A=0;0;10;0;0;10\n\
             [roi-filtering-stream-1]\nenable=1\nroi-A=0;0;10;0;0;10\nsize=3\n\
             [tiler]\nrows=2\n",
        )
        .unwrap();
        assert_eq!(warnings.len(), 4, "{warnings:?}");
        assert!(warnings[0].contains("colour"));
        assert!(warnings[1].contains("no enable=1"));
        assert!(warnings[2].contains("size"));
        assert!(warnings[3].contains("[tiler]"));
        assert!(!c.streams.contains_key(&0));
        assert_eq!(c.streams[&1].rois.len(), 1);
    }

    #[test]
    fn the_settings_table_checks_out() {
        SETTINGS.check(&Settings::default()).unwrap();
    }

    #[test]
    fn property_rules() {
        let shapes = parse_shapes("door=0;0;10;0;10;10 | exit = 1;2;3;4").unwrap();
        assert_eq!(shapes[0].0, "door");
        assert_eq!(shapes[1].1, vec![[1.0, 2.0], [3.0, 4.0]]);
        assert!(parse_shapes("0;0;1;1").unwrap_err().contains("label="));
        assert!(parse_shapes("a=0;0;1").unwrap_err().contains("pairs"));
    }
}
