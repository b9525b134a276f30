// SPDX-License-Identifier: MIT OR Apache-2.0
use std::collections::BTreeMap;
use std::sync::{LazyLock, Mutex};

use ferrostream_core::batch::{self, FrameSource, frame_pixels};
use ferrostream_core::latency::{LatencyRecorder, now_ns};
use ferrostream_core::{AttributeValue, Batch, BatchMeta, Frame, FrameAnalytics, Object};
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;
use gst_video::VideoInfo;

use super::layout::{Grid, letterbox, map_box};
use crate::convert::{Rect, Scaler};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "rstiler",
        gst::DebugColorFlags::empty(),
        Some("Ferrostream tiler"),
    )
});

const DEFAULT_GRID: Grid = Grid {
    rows: 2,
    columns: 2,
    width: 1280,
    height: 720,
};

/// What one tile shows: where its frame went and the objects of that frame, mapped.
struct Tile {
    dest: Rect,
    scaler: Scaler,
    objects: Vec<Object>,
    /// The frame's rsanalytics results, placed in the tile, labels naming the source.
    analytics: Option<FrameAnalytics>,
    /// The frame's display elements, placed in the tile.
    display: Vec<ferrostream_core::DisplayElement>,
}

struct State {
    source: FrameSource,
    canvas: Canvas,
    frames: u64,
}

/// The composed frame and what each tile shows.
struct Canvas {
    out_info: VideoInfo,
    grid: Grid,
    /// The composed frame; tiles of sources absent from a batch keep their last picture.
    buffer: gst::Buffer,
    /// By source id, so that the output's objects come in source order.
    tiles: BTreeMap<u32, Tile>,
    /// Paints black into a rectangle of the canvas.
    black: (VideoInfo, gst::Buffer, Scaler),
    /// Position alignment for subsampled chroma.
    align: i32,
    warned_sources: Vec<u32>,
}

impl Canvas {
    fn new(out_info: VideoInfo, grid: Grid) -> Result<Self, String> {
        let black_info = VideoInfo::builder(gst_video::VideoFormat::Argb, 16, 16)
            .fps(out_info.fps())
            .build()
            .map_err(|e| e.to_string())?;
        let pixels: Vec<u8> = [255u8, 0, 0, 0].repeat(black_info.size() / 4);
        let sub = {
            let fi = out_info.format_info();
            fi.w_sub()
                .iter()
                .chain(fi.h_sub())
                .copied()
                .max()
                .unwrap_or(0)
        };
        let mut canvas = Self {
            buffer: gst::Buffer::with_size(out_info.size()).map_err(|e| e.to_string())?,
            out_info,
            grid,
            tiles: BTreeMap::new(),
            black: (
                black_info,
                gst::Buffer::from_mut_slice(pixels),
                Scaler::new(1),
            ),
            align: 1 << sub,
            warned_sources: Vec::new(),
        };
        let whole = Rect {
            x: 0,
            y: 0,
            width: grid.width as i32,
            height: grid.height as i32,
        };
        canvas.paint_black(whole)?;
        Ok(canvas)
    }

    fn paint_black(&mut self, rect: Rect) -> Result<(), String> {
        let (info, buffer, scaler) = &mut self.black;
        let src = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer.as_ref(), info)
            .map_err(|_| "cannot map the black frame")?;
        let canvas = self.buffer.get_mut().ok_or("canvas shared")?;
        let mut dest = gst_video::VideoFrameRef::from_buffer_ref_writable(canvas, &self.out_info)
            .map_err(|_| "cannot map the canvas")?;
        scaler.convert(&src, &mut dest, rect)
    }

    /// Draws `frame`, whose pixels are `pixels` laid out as `info`, into its source's tile.
    fn draw(
        &mut self,
        pixels: &gst::BufferRef,
        info: &VideoInfo,
        frame: &Frame,
    ) -> Result<(), String> {
        let Some(tile_rect) = self.grid.tile(frame.source_id) else {
            if !self.warned_sources.contains(&frame.source_id) {
                self.warned_sources.push(frame.source_id);
                return Err(format!(
                    "source {} has no tile in a {}x{} grid; its frames are not shown",
                    frame.source_id, self.grid.rows, self.grid.columns
                ));
            }
            return Ok(());
        };
        let dest = letterbox(tile_rect, info.width(), info.height(), self.align);
        let moved = self
            .tiles
            .get(&frame.source_id)
            .is_none_or(|t| t.dest != dest);
        if moved {
            self.paint_black(tile_rect)?;
        }
        let tile = self.tiles.entry(frame.source_id).or_insert_with(|| Tile {
            dest,
            scaler: Scaler::new(1),
            objects: Vec::new(),
            analytics: None,
            display: Vec::new(),
        });
        tile.dest = dest;
        let src = gst_video::VideoFrameRef::from_buffer_ref_readable(pixels, info)
            .map_err(|_| format!("cannot map the frame of source {}", frame.source_id))?;
        let canvas = self.buffer.get_mut().ok_or("canvas shared")?;
        let mut out = gst_video::VideoFrameRef::from_buffer_ref_writable(canvas, &self.out_info)
            .map_err(|_| "cannot map the canvas")?;
        tile.scaler.convert(&src, &mut out, dest)?;
        let (w, h) = (frame.width.max(1), frame.height.max(1));
        tile.analytics = frame.analytics.as_ref().map(|a| {
            a.relabeled(&format!(" (cam {})", frame.source_id), |[x, y]| {
                let m = map_box(ferrostream_core::BBox::new(x, y, 0.0, 0.0), w, h, dest);
                [m.left, m.top]
            })
        });
        tile.display = frame
            .display
            .iter()
            .map(|e| {
                e.mapped(|[x, y]| {
                    let m = map_box(ferrostream_core::BBox::new(x, y, 0.0, 0.0), w, h, dest);
                    [m.left, m.top]
                })
            })
            .collect();
        tile.objects = frame
            .objects
            .iter()
            .map(|o| {
                let mut o = o.clone();
                // Boxes (turned ones too) and keypoints, as map_box maps a box.
                o.scale(dest.width as f32 / w as f32, dest.height as f32 / h as f32);
                o.translate(dest.x as f32, dest.y as f32);
                if let Some(AttributeValue::Floats(points)) = o.attributes.get_mut("landmarks") {
                    for p in points.chunks_exact_mut(2) {
                        let m = map_box(
                            ferrostream_core::BBox::new(p[0], p[1], 0.0, 0.0),
                            w,
                            h,
                            dest,
                        );
                        (p[0], p[1]) = (m.left, m.top);
                    }
                }
                o.attributes.insert(
                    "source-id".into(),
                    AttributeValue::Int(frame.source_id as i64),
                );
                o
            })
            .collect();
        Ok(())
    }
}

#[derive(Default)]
pub struct Tiler {
    settings: Mutex<Grid>,
    state: Mutex<Option<State>>,
    /// From start to stop (the state is made anew at each caps).
    latency: Mutex<Option<LatencyRecorder>>,
}

impl Default for Grid {
    fn default() -> Self {
        DEFAULT_GRID
    }
}

#[glib::object_subclass]
impl ObjectSubclass for Tiler {
    const NAME: &'static str = "GstRsTiler";
    type Type = super::Tiler;
    type ParentType = gst_base::BaseTransform;
}

impl ObjectImpl for Tiler {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let uint = |name: &str, nick: &str, blurb: &str, default: u32, max: u32| {
                glib::ParamSpecUInt::builder(name)
                    .nick(nick)
                    .blurb(blurb)
                    .minimum(1)
                    .maximum(max)
                    .default_value(default)
                    .mutable_ready()
                    .build()
            };
            vec![
                uint("rows", "Rows", "Rows of tiles", DEFAULT_GRID.rows, 64),
                uint(
                    "columns",
                    "Columns",
                    "Columns of tiles",
                    DEFAULT_GRID.columns,
                    64,
                ),
                uint("width", "Width", "Output width", DEFAULT_GRID.width, 16384),
                uint(
                    "height",
                    "Height",
                    "Output height",
                    DEFAULT_GRID.height,
                    16384,
                ),
            ]
        });
        PROPERTIES.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        ferrostream_core::element::warn_if_set_late(self.obj().upcast_ref(), pspec);
        let mut g = self.settings.lock().unwrap();
        let v: u32 = value.get().expect("type checked upstream");
        match pspec.name() {
            "rows" => g.rows = v,
            "columns" => g.columns = v,
            "width" => g.width = v,
            "height" => g.height = v,
            other => unreachable!("unknown property {other}"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let g = self.settings.lock().unwrap();
        match pspec.name() {
            "rows" => g.rows.to_value(),
            "columns" => g.columns.to_value(),
            "width" => g.width.to_value(),
            "height" => g.height.to_value(),
            other => unreachable!("unknown property {other}"),
        }
    }
}

impl GstObjectImpl for Tiler {}

impl ElementImpl for Tiler {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static METADATA: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "Ferrostream tiler",
                "Filter/Video/Compositor",
                "Composes the frames of a batch into one grid frame, mapping object boxes",
                "Ferrostream developers",
            )
        });
        Some(&*METADATA)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static PAD_TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            let plain = gst_video::VideoCapsBuilder::new().build();
            let mut sink = batch::any_batch_caps();
            sink.merge(plain.clone());
            vec![
                gst::PadTemplate::new(
                    "sink",
                    gst::PadDirection::Sink,
                    gst::PadPresence::Always,
                    &sink,
                )
                .expect("valid pad template"),
                gst::PadTemplate::new(
                    "src",
                    gst::PadDirection::Src,
                    gst::PadPresence::Always,
                    &plain,
                )
                .expect("valid pad template"),
            ]
        });
        PAD_TEMPLATES.as_ref()
    }
}

impl BaseTransformImpl for Tiler {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::NeverInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let grid = *self.settings.lock().unwrap();
        grid.check()
            .map_err(|m| gst::error_msg!(gst::LibraryError::Settings, ("{m}")))?;
        *self.latency.lock().unwrap() = Some(LatencyRecorder::new(self.obj().name()));
        Ok(())
    }

    fn transform_caps(
        &self,
        direction: gst::PadDirection,
        caps: &gst::Caps,
        filter: Option<&gst::Caps>,
    ) -> Option<gst::Caps> {
        let grid = *self.settings.lock().unwrap();
        let mut out = gst::Caps::new_empty();
        {
            let out = out.get_mut().expect("new caps");
            for s in caps.iter() {
                let mut plain = gst::Structure::builder("video/x-raw")
                    .field("pixel-aspect-ratio", gst::Fraction::new(1, 1))
                    .build();
                for field in ["format", "framerate"] {
                    if let Ok(v) = s.value(field) {
                        plain.set_value(field, v.clone());
                    }
                }
                if direction == gst::PadDirection::Sink {
                    plain.set("width", grid.width as i32);
                    plain.set("height", grid.height as i32);
                    out.append_structure(plain);
                } else {
                    plain.remove_field("pixel-aspect-ratio");
                    let mut batched = plain.clone();
                    out.append_structure_full(
                        batched.clone(),
                        Some(gst::CapsFeatures::new([batch::BATCH_FEATURE])),
                    );
                    // A single stream is a batch of one.
                    batched.set("width", gst::IntRange::new(1, i32::MAX));
                    batched.set("height", gst::IntRange::new(1, i32::MAX));
                    out.append_structure(batched);
                }
            }
        }
        Some(match filter {
            Some(f) => f.intersect_with_mode(&out, gst::CapsIntersectMode::First),
            None => out,
        })
    }

    fn transform_size(
        &self,
        _direction: gst::PadDirection,
        _caps: &gst::Caps,
        _size: usize,
        othercaps: &gst::Caps,
    ) -> Option<usize> {
        if batch::is_batch(othercaps) {
            return Some(0);
        }
        VideoInfo::from_caps(othercaps).ok().map(|i| i.size())
    }

    fn unit_size(&self, caps: &gst::Caps) -> Option<usize> {
        if batch::is_batch(caps) {
            return Some(1);
        }
        VideoInfo::from_caps(caps).ok().map(|i| i.size())
    }

    fn set_caps(&self, incaps: &gst::Caps, outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let source =
            FrameSource::from_caps(incaps).map_err(|m| gst::loggable_error!(CAT, "{m}"))?;
        let out_info = VideoInfo::from_caps(outcaps)
            .map_err(|_| gst::loggable_error!(CAT, "invalid output caps {outcaps}"))?;
        let grid = *self.settings.lock().unwrap();
        let canvas = Canvas::new(out_info, grid)
            .map_err(|m| gst::loggable_error!(CAT, "setting up the tiler: {m}"))?;
        let state = State {
            source,
            canvas,
            frames: 0,
        };
        gst::debug!(CAT, imp = self, "{incaps} -> {outcaps}");
        *self.state.lock().unwrap() = Some(state);
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        self.state.lock().unwrap().take();
        self.latency.lock().unwrap().take();
        Ok(())
    }

    fn transform(
        &self,
        inbuf: &gst::Buffer,
        outbuf: &mut gst::BufferRef,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let entry = now_ns();
        let mut guard = self.state.lock().unwrap();
        let Some(state) = guard.as_mut() else {
            return Err(gst::FlowError::NotNegotiated);
        };
        let meta = BatchMeta::of(inbuf).filter(|m| !m.batch().frames.is_empty());
        let single;
        let frames: &[Frame] = match (&state.source, meta) {
            (_, Some(meta)) => &meta.batch().frames,
            (FrameSource::Single(info), None) => {
                single = [Frame::new(0, state.frames, info.width(), info.height())];
                &single
            }
            (FrameSource::Batched, None) => &[],
        };
        let mut warnings = Vec::new();
        for (index, frame) in frames.iter().enumerate() {
            let drawn = frame_pixels(&state.source, inbuf, index)
                .map_err(|e| e.to_string())
                .and_then(|(pixels, info)| state.canvas.draw(pixels, info, frame));
            if let Err(m) = drawn {
                warnings.push(m);
            }
        }
        let canvas = state
            .canvas
            .buffer
            .map_readable()
            .map_err(|_| gst::FlowError::Error)?;
        outbuf
            .copy_from_slice(0, &canvas)
            .map_err(|_| gst::FlowError::Error)?;
        drop(canvas);
        let grid = state.canvas.grid;
        let mut frame = Frame::new(0, state.frames, grid.width, grid.height);
        state.frames += 1;
        frame.pts = inbuf.pts();
        // The mosaic is as late as its oldest tracked frame.
        frame.latency = frames
            .iter()
            .filter_map(|f| f.latency.as_ref())
            .min_by_key(|l| l.origin_ns)
            .cloned();
        frame.objects = state
            .canvas
            .tiles
            .values()
            .flat_map(|t| t.objects.iter().cloned())
            .collect();
        frame.display = state
            .canvas
            .tiles
            .values()
            .flat_map(|t| t.display.iter().cloned())
            .collect();
        for analytics in state
            .canvas
            .tiles
            .values()
            .filter_map(|t| t.analytics.clone())
        {
            frame
                .analytics
                .get_or_insert_with(FrameAnalytics::default)
                .merge(analytics);
        }
        drop(guard);
        for m in warnings {
            gst::element_imp_warning!(self, gst::StreamError::Failed, ("{m}"));
        }
        let mut batch = Batch::single(frame);
        if let Some(recorder) = self.latency.lock().unwrap().as_ref() {
            recorder.record(&mut batch, entry);
        }
        BatchMeta::add(outbuf, batch);
        Ok(gst::FlowSuccess::Ok)
    }
}
