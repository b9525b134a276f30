// SPDX-License-Identifier: MIT OR Apache-2.0
//! Frames as GStreamer hands them to rstrtinfer, read for pre-processing: which raw formats the
//! CPU path takes, a mapped frame as a [`SourceImage`], and the YUV conversion its colorimetry
//! asks for.

use gst_video::prelude::*;
use gst_video::{VideoColorMatrix, VideoColorRange, VideoFormat};

use crate::preprocess::{ColorMatrix, GrayImage, PackedImage, SourceImage, Yuv420Image, YuvToRgb};

/// Raw video formats the CPU path reads: the 8-bit formats whose planes are plain arrays, the
/// same that applications map as arrays.
pub const SUPPORTED_FORMATS: &[VideoFormat] = ferrostream_core::framemap::FORMATS;

/// The YUV to RGB conversion of a frame's colour matrix and range (BT.601 where the
/// colorimetry says nothing).
pub fn yuv_to_rgb(matrix: VideoColorMatrix, range: VideoColorRange) -> YuvToRgb {
    let matrix = match matrix {
        VideoColorMatrix::Bt709 => ColorMatrix::Bt709,
        VideoColorMatrix::Bt2020 => ColorMatrix::Bt2020,
        VideoColorMatrix::Smpte240m => ColorMatrix::Smpte240m,
        VideoColorMatrix::Fcc => ColorMatrix::Fcc,
        _ => ColorMatrix::Bt601,
    };
    YuvToRgb::new(matrix, range == VideoColorRange::Range0_255)
}

/// Views a mapped video frame.
pub fn source_image<'a>(
    frame: &'a gst_video::VideoFrameRef<&'a gst::BufferRef>,
) -> Result<SourceImage<'a>, String> {
    let info = frame.info();
    let (width, height) = (info.width(), info.height());
    let plane = |i: u32| -> Result<&'a [u8], String> {
        frame
            .plane_data(i)
            .map_err(|e| format!("cannot read plane {i}: {e}"))
    };
    let stride = |i: usize| info.stride()[i] as usize;
    let packed = |pixel_stride: usize, rgb: [usize; 3]| {
        SourceImage::packed(PackedImage {
            data: plane(0)?,
            stride: stride(0),
            pixel_stride,
            rgb,
            width,
            height,
        })
    };
    let matrix = yuv_to_rgb(info.colorimetry().matrix(), info.colorimetry().range());
    let yuv = |u_plane: u32, v_plane: u32, offsets: (usize, usize), step: usize| {
        let u = plane(u_plane)?;
        let v = plane(v_plane)?;
        SourceImage::yuv420(Yuv420Image {
            y: plane(0)?,
            y_stride: stride(0),
            u: u.get(offsets.0..).unwrap_or_default(),
            v: v.get(offsets.1..).unwrap_or_default(),
            chroma_stride: stride(u_plane as usize),
            chroma_step: step,
            width,
            height,
            matrix,
        })
    };
    match info.format() {
        VideoFormat::Rgb => packed(3, [0, 1, 2]),
        VideoFormat::Bgr => packed(3, [2, 1, 0]),
        VideoFormat::Rgba | VideoFormat::Rgbx => packed(4, [0, 1, 2]),
        VideoFormat::Bgra | VideoFormat::Bgrx => packed(4, [2, 1, 0]),
        VideoFormat::Argb | VideoFormat::Xrgb => packed(4, [1, 2, 3]),
        VideoFormat::Abgr | VideoFormat::Xbgr => packed(4, [3, 2, 1]),
        VideoFormat::Gray8 => SourceImage::gray(GrayImage {
            data: plane(0)?,
            stride: stride(0),
            width,
            height,
        }),
        VideoFormat::Nv12 => yuv(1, 1, (0, 1), 2),
        VideoFormat::Nv21 => yuv(1, 1, (1, 0), 2),
        VideoFormat::I420 => yuv(1, 2, (0, 0), 1),
        VideoFormat::Yv12 => yuv(2, 1, (0, 0), 1),
        other => Err(format!("unsupported video format {other:?}")),
    }
}
