// SPDX-License-Identifier: MIT OR Apache-2.0
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
///
/// A rectangle smaller than the destination is filled through a buffer of the rectangle's size that
/// is then copied into place: GStreamer's converter also writes outside its destination rectangle
/// for some formats. A rectangle covering the whole destination is converted into it directly.
pub struct Scaler {
    cached: Option<Cached>,
    threads: u32,
}

struct Cached {
    in_info: VideoInfo,
    /// Size of the destination frame.
    out_size: (u32, u32),
    /// The rectangle's size in the destination format.
    tile_info: VideoInfo,
    /// Where a partial rectangle is converted before the copy; `None` for whole frames.
    tile: Option<gst::Buffer>,
    converter: VideoConverter,
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
    /// `rect` must lie inside `dest` and, for subsampled formats, on even coordinates.
    pub fn convert(
        &mut self,
        src: &VideoFrameRef<&gst::BufferRef>,
        dest: &mut VideoFrameRef<&mut gst::BufferRef>,
        rect: Rect,
    ) -> Result<(), String> {
        let (in_info, out_info) = (src.info(), dest.info());
        let out_size = (out_info.width(), out_info.height());
        let reuse = self.cached.as_ref().is_some_and(|c| {
            &c.in_info == in_info
                && c.out_size == out_size
                && c.tile_info.format() == out_info.format()
                && (c.tile_info.width(), c.tile_info.height())
                    == (rect.width as u32, rect.height as u32)
        });
        if !reuse {
            self.cached = Some(self.build(in_info, out_info, rect)?);
        }
        let c = self.cached.as_mut().expect("set above");
        let Some(tile) = &mut c.tile else {
            c.converter.frame_ref(src, dest);
            return Ok(());
        };
        {
            let tile = tile.get_mut().ok_or("tile buffer shared")?;
            let mut tile = VideoFrameRef::from_buffer_ref_writable(tile, &c.tile_info)
                .map_err(|_| "cannot map the tile buffer")?;
            c.converter.frame_ref(src, &mut tile);
        }
        let tile = VideoFrameRef::from_buffer_ref_readable(tile.as_ref(), &c.tile_info)
            .map_err(|_| "cannot map the tile buffer")?;
        copy_into(&tile, dest, rect.x as u32, rect.y as u32)
    }

    fn build(
        &self,
        in_info: &VideoInfo,
        out_info: &VideoInfo,
        rect: Rect,
    ) -> Result<Cached, String> {
        let failed = |e: &dyn std::fmt::Display| {
            format!(
                "cannot convert {:?} {}x{} to {:?} {}x{}: {e}",
                in_info.format(),
                in_info.width(),
                in_info.height(),
                out_info.format(),
                rect.width,
                rect.height
            )
        };
        // Frames are converted one at a time: the frame rate does not matter (and the converter
        // refuses to change it).
        let tile_info =
            VideoInfo::builder(out_info.format(), rect.width as u32, rect.height as u32)
                .fps(in_info.fps())
                .colorimetry(&out_info.colorimetry())
                .chroma_site(out_info.chroma_site())
                .build()
                .map_err(|e| failed(&e))?;
        let mut config = VideoConverterConfig::new();
        config.set_threads(self.threads);
        let whole = rect.x == 0
            && rect.y == 0
            && (rect.width as u32, rect.height as u32) == (out_info.width(), out_info.height());
        let tile = if whole {
            None
        } else {
            Some(gst::Buffer::with_size(tile_info.size()).map_err(|e| failed(&e))?)
        };
        let converter =
            VideoConverter::new(in_info, &tile_info, Some(config)).map_err(|e| failed(&e))?;
        Ok(Cached {
            in_info: in_info.clone(),
            out_size: (out_info.width(), out_info.height()),
            tile_info,
            tile,
            converter,
        })
    }
}

/// Copies `src` into `dest` with its top-left corner at (`x`, `y`), plane by plane.
pub fn copy_into(
    src: &VideoFrameRef<&gst::BufferRef>,
    dest: &mut VideoFrameRef<&mut gst::BufferRef>,
    x: u32,
    y: u32,
) -> Result<(), String> {
    let fi = src.format_info();
    if src.format() != dest.format() {
        return Err("copy between different formats".into());
    }
    if x + src.width() > dest.width() || y + src.height() > dest.height() {
        return Err(format!(
            "a {}x{} tile at ({x}, {y}) does not fit a {}x{} frame",
            src.width(),
            src.height(),
            dest.width(),
            dest.height()
        ));
    }
    for plane in 0..fi.n_planes() {
        let component = (0..fi.n_components() as usize)
            .find(|&c| fi.plane()[c] == plane)
            .ok_or("a plane without components")?;
        let pixel_stride = fi.pixel_stride()[component];
        if pixel_stride <= 0 {
            return Err(format!("format {:?} cannot be tiled", fi.format()));
        }
        let (w_sub, h_sub) = (fi.w_sub()[component], fi.h_sub()[component]);
        let row_bytes = (src.width().div_ceil(1 << w_sub)) as usize * pixel_stride as usize;
        let rows = src.height().div_ceil(1 << h_sub) as usize;
        let x_bytes = (x >> w_sub) as usize * pixel_stride as usize;
        let y_rows = (y >> h_sub) as usize;
        let src_stride = src.plane_stride()[plane as usize] as usize;
        let dest_stride = dest.plane_stride()[plane as usize] as usize;
        let src_data = src
            .plane_data(plane)
            .map_err(|e| format!("tile plane {plane}: {e}"))?;
        let dest_data = dest
            .plane_data_mut(plane)
            .map_err(|e| format!("frame plane {plane}: {e}"))?;
        for row in 0..rows {
            let from = &src_data[row * src_stride..row * src_stride + row_bytes];
            let at = (y_rows + row) * dest_stride + x_bytes;
            dest_data[at..at + row_bytes].copy_from_slice(from);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gst_video::VideoFormat;

    fn frame(format: VideoFormat, w: u32, h: u32, fill: &[u8]) -> (VideoInfo, gst::Buffer) {
        let info = VideoInfo::builder(format, w, h).build().unwrap();
        let data = fill.repeat(info.size() / fill.len());
        (info, gst::Buffer::from_mut_slice(data))
    }

    #[test]
    fn scales_into_a_rectangle_only() {
        gst::init().unwrap();
        let (src_info, src) = frame(VideoFormat::Argb, 16, 16, &[255, 0, 0, 0]);
        let (dst_info, mut dst) = frame(VideoFormat::I420, 64, 48, &[200]);
        let mut scaler = Scaler::new(1);
        {
            let s = VideoFrameRef::from_buffer_ref_readable(src.as_ref(), &src_info).unwrap();
            let mut d =
                VideoFrameRef::from_buffer_ref_writable(dst.get_mut().unwrap(), &dst_info).unwrap();
            let rect = Rect {
                x: 32,
                y: 0,
                width: 32,
                height: 48,
            };
            scaler.convert(&s, &mut d, rect).unwrap();
        }
        let map = dst.map_readable().unwrap();
        // Luma: black (16) inside the rectangle, untouched (200) outside.
        assert_eq!(map[40], 16, "inside");
        assert_eq!(map[10], 200, "outside {:?}", &map[..64]);
        // Chroma of black is neutral.
        assert_eq!(map[64 * 48 + 20], 128);
        drop(map);
        // A rectangle covering the whole frame is converted in place.
        {
            let s = VideoFrameRef::from_buffer_ref_readable(src.as_ref(), &src_info).unwrap();
            let mut d =
                VideoFrameRef::from_buffer_ref_writable(dst.get_mut().unwrap(), &dst_info).unwrap();
            let whole = Rect {
                x: 0,
                y: 0,
                width: 64,
                height: 48,
            };
            scaler.convert(&s, &mut d, whole).unwrap();
        }
        let map = dst.map_readable().unwrap();
        assert!(map[..64 * 48].iter().all(|&y| y == 16));
        // (The converter's chroma rounding alternates 128 and 129 between rows.)
        assert!(map[64 * 48..].iter().all(|&c| c.abs_diff(128) <= 1));
    }
}
