// SPDX-License-Identifier: MIT OR Apache-2.0
//! Frames in GPU memory, described by device addresses: the common currency between the memory a
//! frame arrives in (GStreamer CUDA memory, NvBufSurface) and the kernels that read or draw on it.
//! Plain data, with no CUDA dependency, so every crate can name it.

use gst_video::VideoFormat;

/// One plane of a frame in device memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DevicePlane {
    /// Device address of the plane's first byte.
    pub ptr: u64,
    /// Bytes from one row to the next.
    pub pitch: u32,
}

/// The pixels of one frame in device memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceImage {
    pub format: VideoFormat,
    pub width: u32,
    pub height: u32,
    /// Planes in the format's order; planes the format does not have are zero.
    pub planes: [DevicePlane; 3],
}

/// Formats the GPU kernels read and draw on.
pub const DEVICE_FORMATS: &[VideoFormat] = &[
    VideoFormat::Nv12,
    VideoFormat::I420,
    VideoFormat::Rgba,
    VideoFormat::Bgra,
    VideoFormat::Rgbx,
    VideoFormat::Bgrx,
];

/// The widest and tallest frame described in device memory (NVIDIA's engines stop well below),
/// so that every row and plane size fits its integer.
pub const MAX_SIDE: u32 = 1 << 15;

/// Why a frame cannot be described as a [`DeviceImage`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceImageError {
    #[error(
        "{0:?} frames are not supported in GPU memory (supported: NV12, I420, RGBA, BGRA, RGBx, BGRx)"
    )]
    Format(VideoFormat),
    #[error(
        "plane {plane} of a {width}x{height} {format:?} frame has pitch {pitch}, less than its {row} bytes per row"
    )]
    Pitch {
        format: VideoFormat,
        width: u32,
        height: u32,
        plane: usize,
        pitch: u32,
        row: u32,
    },
    #[error("plane {plane} of a {format:?} frame has no device address")]
    Null { format: VideoFormat, plane: usize },
    #[error("a {width}x{height} {format:?} frame is larger than {MAX_SIDE} pixels a side")]
    Size {
        format: VideoFormat,
        width: u32,
        height: u32,
    },
    #[error("plane {plane} of a {format:?} frame starts beyond the end of the address space")]
    Address { format: VideoFormat, plane: usize },
}

impl DeviceImage {
    /// Describes a frame whose planes start at `base + offsets[i]` with the given pitches, and
    /// checks that the pitches hold a row and that every plane the format has is addressed.
    pub fn new(
        format: VideoFormat,
        width: u32,
        height: u32,
        planes: [DevicePlane; 3],
    ) -> Result<Self, DeviceImageError> {
        let image = Self {
            planes,
            ..Self::unplaced(format, width, height)?
        };
        let count = image.plane_count()?;
        for (plane, p) in planes.iter().enumerate().take(count) {
            let row = image.row_bytes(plane);
            if p.ptr == 0 {
                return Err(DeviceImageError::Null { format, plane });
            }
            if p.pitch < row {
                return Err(DeviceImageError::Pitch {
                    format,
                    width,
                    height,
                    plane,
                    pitch: p.pitch,
                    row,
                });
            }
        }
        Ok(image)
    }

    /// A frame's format and size before its planes are placed (all zero), to ask its rows and
    /// row sizes: at most [`MAX_SIDE`] pixels a side, so that none of them overflows.
    pub fn unplaced(
        format: VideoFormat,
        width: u32,
        height: u32,
    ) -> Result<Self, DeviceImageError> {
        if width > MAX_SIDE || height > MAX_SIDE {
            return Err(DeviceImageError::Size {
                format,
                width,
                height,
            });
        }
        Ok(Self {
            format,
            width,
            height,
            planes: Default::default(),
        })
    }

    /// Describes a frame laid out as `info` says, starting at device address `base`.
    pub fn from_info(base: u64, info: &gst_video::VideoInfo) -> Result<Self, DeviceImageError> {
        let mut planes = [DevicePlane::default(); 3];
        for (i, p) in planes.iter_mut().enumerate().take(info.n_planes() as usize) {
            *p = DevicePlane {
                ptr: base.checked_add(info.offset()[i] as u64).ok_or(
                    DeviceImageError::Address {
                        format: info.format(),
                        plane: i,
                    },
                )?,
                pitch: info.stride()[i] as u32,
            };
        }
        Self::new(info.format(), info.width(), info.height(), planes)
    }

    /// Number of planes of the format.
    pub fn plane_count(&self) -> Result<usize, DeviceImageError> {
        match self.format {
            VideoFormat::Nv12 => Ok(2),
            VideoFormat::I420 => Ok(3),
            VideoFormat::Rgba | VideoFormat::Bgra | VideoFormat::Rgbx | VideoFormat::Bgrx => Ok(1),
            other => Err(DeviceImageError::Format(other)),
        }
    }

    /// Bytes of pixel data in one row of `plane`.
    pub fn row_bytes(&self, plane: usize) -> u32 {
        let cw = self.width.div_ceil(2);
        match (self.format, plane) {
            (VideoFormat::Nv12, 1) => cw * 2,
            (VideoFormat::I420, 1 | 2) => cw,
            (VideoFormat::Nv12 | VideoFormat::I420, _) => self.width,
            _ => self.width * 4,
        }
    }

    /// Rows of `plane`.
    pub fn rows(&self, plane: usize) -> u32 {
        match (self.format, plane) {
            (VideoFormat::Nv12 | VideoFormat::I420, 1 | 2) => self.height.div_ceil(2),
            _ => self.height,
        }
    }

    /// Bytes of pixels the frame holds (rows times row bytes over all planes, padding excluded).
    pub fn pixel_bytes(&self) -> u64 {
        let count = self.plane_count().unwrap_or(0);
        (0..count)
            .map(|p| self.row_bytes(p) as u64 * self.rows(p) as u64)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nv12_from_info_has_two_planes_at_their_offsets() {
        gst::init().unwrap();
        let info = gst_video::VideoInfo::builder(VideoFormat::Nv12, 1921, 1081)
            .build()
            .unwrap();
        let img = DeviceImage::from_info(0x1000, &info).unwrap();
        assert_eq!(img.planes[0].ptr, 0x1000);
        assert_eq!(img.planes[1].ptr, 0x1000 + info.offset()[1] as u64);
        assert_eq!(img.planes[1].pitch, info.stride()[1] as u32);
        assert_eq!(img.row_bytes(1), 1922);
        assert_eq!(img.rows(1), 541);
        assert_eq!(img.pixel_bytes(), 1921 * 1081 + 1922 * 541);
    }

    #[test]
    fn pitch_too_small_and_unknown_formats_are_refused() {
        let p = |ptr, pitch| DevicePlane { ptr, pitch };
        let planes = [p(1, 100), p(0, 0), p(0, 0)];
        assert!(matches!(
            DeviceImage::new(VideoFormat::Rgba, 26, 2, planes),
            Err(DeviceImageError::Pitch { row: 104, .. })
        ));
        assert!(matches!(
            DeviceImage::new(VideoFormat::Nv12, 16, 2, planes),
            Err(DeviceImageError::Null { plane: 1, .. })
        ));
        assert!(matches!(
            DeviceImage::new(VideoFormat::Yuy2, 16, 2, planes),
            Err(DeviceImageError::Format(VideoFormat::Yuy2))
        ));
    }

    /// Found by fuzzing the NvBufSurface reader: a surface 2^30 pixels wide overflowed the row
    /// size (a panic; a wrong size in a release build).
    #[test]
    fn sizes_and_addresses_that_overflow_are_refused() {
        gst::init().unwrap();
        let planes = [DevicePlane { ptr: 1, pitch: 0 }; 3];
        for (width, height) in [(1 << 30, 1), (1, u32::MAX), (MAX_SIDE + 1, 2)] {
            let e = DeviceImage::new(VideoFormat::Rgba, width, height, planes).unwrap_err();
            assert!(matches!(e, DeviceImageError::Size { .. }), "{e}");
            assert!(e.to_string().contains("32768 pixels a side"), "{e}");
        }
        let info = gst_video::VideoInfo::builder(VideoFormat::Nv12, 64, 64)
            .build()
            .unwrap();
        assert!(matches!(
            DeviceImage::from_info(u64::MAX - 16, &info),
            Err(DeviceImageError::Address { plane: 1, .. })
        ));
    }
}
