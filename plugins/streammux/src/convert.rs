//! Scaling with GStreamer's video converter, cached for the last geometry used.

use gst_video::prelude::*;
use gst_video::{VideoConverter, VideoConverterConfig, VideoFrameRef, VideoInfo};

/// Where a converter writes in its destination frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    pub x: i32,
    pub y: i32,
    pub width: i32,
    pub height: i32,
}

/// Scales (and converts) whole frames into a rectangle of a destination frame. Keeps the
/// converter of the last geometry, so a steady stream builds it once.
#[derive(Default)]
pub struct Scaler {
    cached: Option<(VideoInfo, VideoInfo, Rect, VideoConverter)>,
    threads: u32,
}

impl Scaler {
    /// `threads`: worker threads of the converter (1 keeps it on the calling thread).
    pub fn new(threads: u32) -> Self {
        Self {
            cached: None,
            threads: threads.max(1),
        }
    }

    /// Converts `src` into `rect` of `dest`; pixels of `dest` outside `rect` are left alone.
    pub fn convert(
        &mut self,
        src: &VideoFrameRef<&gst::BufferRef>,
        dest: &mut VideoFrameRef<&mut gst::BufferRef>,
        rect: Rect,
    ) -> Result<(), String> {
        let (in_info, out_info) = (src.info(), dest.info());
        let reuse = matches!(&self.cached, Some((i, o, r, _)) if i == in_info && o == out_info && *r == rect);
        if !reuse {
            let mut config = VideoConverterConfig::new();
            config.set_dest_x(rect.x);
            config.set_dest_y(rect.y);
            config.set_dest_width(Some(rect.width));
            config.set_dest_height(Some(rect.height));
            config.set_fill_border(false);
            config.set_threads(self.threads);
            // The converter refuses frame-rate changes; frames are converted one at a time.
            let mut converter_in = in_info.clone();
            if in_info.fps() != out_info.fps() {
                converter_in = VideoInfo::builder_from_info(in_info)
                    .fps(out_info.fps())
                    .build()
                    .map_err(|e| e.to_string())?;
            }
            let converter =
                VideoConverter::new(&converter_in, out_info, Some(config)).map_err(|e| {
                    format!(
                        "cannot convert {:?} {}x{} to {:?} {}x{}: {e}",
                        in_info.format(),
                        in_info.width(),
                        in_info.height(),
                        out_info.format(),
                        rect.width,
                        rect.height
                    )
                })?;
            self.cached = Some((in_info.clone(), out_info.clone(), rect, converter));
        }
        let (_, _, _, converter) = self.cached.as_ref().expect("set above");
        converter.frame_ref(src, dest);
        Ok(())
    }
}
