// SPDX-License-Identifier: MIT OR Apache-2.0
//! Pre-processing of frames in device memory: one kernel launch per batch turns every frame
//! (NV12, I420, RGBA, BGRA, RGBx, BGRx, any pitch) into its slot of the network's input tensor,
//! with the exact arithmetic of the CPU [`Preprocessor`](crate::preprocess::Preprocessor).
//!
//! [`GpuStage`] is what `rstrtinfer` keeps per CUDA context: the stream, the kernel, the device
//! tensor, and, for engines that only take host memory, the one copy of the tensor (never the
//! frames) to the host.

pub mod run;
pub mod select;

use std::sync::Arc;

use ferrostream_core::BBox;
use ferrostream_core::cuda::{
    Context, CudaError, DeviceBuffer, Event, Function, HostBuffer, KernelParams, KernelSource,
    Module, Stream,
};
use ferrostream_core::device::DeviceImage;
use gst_video::VideoFormat;

use crate::config::ColorFormat;
use crate::engine::ElementType;
use crate::preprocess::{Letterbox, NetworkInput, YuvToRgb};

/// The kernel source.
pub const PREPROCESS_CU: KernelSource = KernelSource {
    name: "preprocess.cu",
    code: include_str!("preprocess.cu"),
};

/// Mirrors `struct Frame` of preprocess.cu.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct FrameDesc {
    plane: [u64; 3],
    pitch: [u32; 3],
    format: u32,
    width: u32,
    height: u32,
    rgb: [u32; 3],
    pixel_stride: u32,
    roi_left: f32,
    roi_top: f32,
    step_x: f32,
    step_y: f32,
    pad_x: u32,
    pad_y: u32,
    content_w: u32,
    content_h: u32,
    yuv: [i32; 6],
    out: u64,
}

/// Mirrors `struct Params` of preprocess.cu.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Params {
    frames: u64,
    n_frames: u32,
    net_w: u32,
    net_h: u32,
    planar: u32,
    gray: u32,
    out_type: u32,
    order: [u32; 3],
    scale: f32,
    offsets: [f32; 3],
    vector_stores: u32,
}

// SAFETY: `Params` is #[repr(C)] plain data mirroring the kernel's parameter struct (layout test
// below); it holds device addresses, not references.
unsafe impl KernelParams for Params {}

/// How many adjacent output pixels one thread makes (the kernels `preprocess_x1` and
/// `preprocess_x4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PixelsPerThread {
    One,
    Four,
}

impl PixelsPerThread {
    /// The faster variant for a network input, as measured on an H200 (docs/BENCHMARKS.md):
    /// four pixels (16-byte stores) for wide f32 NCHW tensors, one otherwise.
    pub fn for_network(net: &NetworkInput, element: ElementType) -> Self {
        if net.planar && element == ElementType::F32 && net.width >= 512 {
            Self::Four
        } else {
            Self::One
        }
    }

    fn count(self) -> u32 {
        match self {
            Self::One => 1,
            Self::Four => 4,
        }
    }
}

const FMT_NV12: u32 = 0;
const FMT_I420: u32 = 1;
const FMT_PACKED: u32 = 2;

/// One frame (or region of a frame) to pre-process.
#[derive(Debug, Clone, Copy)]
pub struct GpuJob {
    pub image: DeviceImage,
    /// The region to scale to the network size, in frame pixels.
    pub roi: BBox,
    /// YUV to RGB conversion of the frame's colorimetry (ignored for RGB formats).
    pub matrix: YuvToRgb,
}

/// The batched pre-processing kernel loaded into one context.
#[derive(Debug)]
pub struct GpuPreprocessor {
    x1: Function,
    x4: Function,
    /// Forces a variant (benchmarks); `None` picks with [`PixelsPerThread::for_network`].
    variant: Option<PixelsPerThread>,
    /// Frame descriptors, uploaded per batch (128 bytes a frame; never pixels) from pinned
    /// memory without waiting; `uploaded` marks when the kernel that read them has finished.
    descs: Vec<FrameDesc>,
    staging: Option<(HostBuffer, DeviceBuffer)>,
    uploaded: Event,
}

/// Bytes per element of a tensor type the kernel writes (f32, f16, u8).
fn element_size(element: ElementType) -> Option<usize> {
    matches!(
        element,
        ElementType::F32 | ElementType::F16 | ElementType::U8
    )
    .then(|| element.size())
    .flatten()
}

impl GpuPreprocessor {
    /// Loads the kernel (compiled once per process) into `ctx`.
    pub fn new(ctx: &Arc<Context>) -> Result<Self, CudaError> {
        let module = Module::load(ctx, &PREPROCESS_CU)?;
        Ok(Self {
            x1: module.function("preprocess_x1")?,
            x4: module.function("preprocess_x4")?,
            variant: None,
            descs: Vec::new(),
            staging: None,
            uploaded: Event::new(ctx)?,
        })
    }

    /// Forces one kernel variant instead of choosing per network (for benchmarks).
    pub fn set_variant(&mut self, variant: Option<PixelsPerThread>) {
        self.variant = variant;
    }

    /// Queues the pre-processing of `jobs` into consecutive slots of the tensor at device address
    /// `out` (`out_len` bytes, `element` typed) on `stream`, and sets `letterboxes` to each
    /// slot's geometry (a vector the caller keeps, so batches allocate nothing).
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &mut self,
        stream: &Stream,
        jobs: &[GpuJob],
        net: &NetworkInput,
        element: ElementType,
        out: u64,
        out_len: usize,
        letterboxes: &mut Vec<Letterbox>,
    ) -> Result<(), CudaError> {
        letterboxes.clear();
        let size = element_size(element).ok_or_else(|| {
            CudaError::Invalid(format!(
                "input element type {element} is not supported (f32, f16 or u8)"
            ))
        })?;
        let slot_bytes = net.frame_len() * size;
        if jobs.len() * slot_bytes > out_len {
            return Err(CudaError::Invalid(format!(
                "{} frames of {slot_bytes} bytes do not fit the {out_len}-byte device tensor",
                jobs.len()
            )));
        }
        if jobs.is_empty() {
            return Ok(());
        }
        self.descs.clear();
        for (slot, job) in jobs.iter().enumerate() {
            let lb = Letterbox::new(
                job.roi,
                net.width,
                net.height,
                net.maintain_aspect_ratio,
                net.symmetric_padding,
            );
            self.descs
                .push(frame_desc(job, &lb, out + (slot * slot_bytes) as u64)?);
            letterboxes.push(lb);
        }
        let bytes = as_bytes(&self.descs);
        let ctx = stream.context();
        if self
            .staging
            .as_ref()
            .is_none_or(|(h, _)| h.len() < bytes.len())
        {
            let len = bytes.len().max(64 * std::mem::size_of::<FrameDesc>());
            self.staging = Some((HostBuffer::new(ctx, len)?, DeviceBuffer::new(ctx, len)?));
        } else {
            // The previous batch's descriptors must have been read before they are overwritten.
            self.uploaded.synchronize()?;
        }
        let (host, device) = self.staging.as_mut().expect("allocated above");
        host.as_mut_slice()[..bytes.len()].copy_from_slice(bytes);
        // SAFETY: `device` holds at least `bytes.len()` bytes (allocated with the host buffer)
        // and lives in `self` until the next upload, which waits for `uploaded` first.
        unsafe { host.upload_async(stream, device.ptr(), bytes.len()) }?;
        let descs_ptr = device.ptr();
        let params = Params {
            frames: descs_ptr,
            n_frames: jobs.len() as u32,
            net_w: net.width,
            net_h: net.height,
            planar: net.planar as u32,
            gray: (net.channels == 1) as u32,
            out_type: match size {
                4 => 0,
                2 => 1,
                _ => 2,
            },
            order: if net.color == ColorFormat::Bgr {
                [2, 1, 0]
            } else {
                [0, 1, 2]
            },
            scale: net.scale,
            offsets: net.offsets,
            // Rows start 16-byte aligned in every plane of every slot when the tensor does and
            // the row length is a multiple of 4 floats (plane and slot sizes then are too).
            vector_stores: (out.is_multiple_of(16) && net.width.is_multiple_of(4)) as u32,
        };
        let variant = self
            .variant
            .unwrap_or_else(|| PixelsPerThread::for_network(net, element));
        let function = match variant {
            PixelsPerThread::One => &self.x1,
            PixelsPerThread::Four => &self.x4,
        };
        let block = (32, 8, 1);
        let grid = (
            net.width.div_ceil(32 * variant.count()),
            net.height.div_ceil(8),
            jobs.len() as u32,
        );
        // SAFETY: every plane address comes from a mapped frame whose pitches and sizes were
        // checked by `DeviceImage::new`; the kernel reads only rows < height (and chroma rows <
        // height/2 rounded up) and bytes < row bytes of each plane (taps are clamped to the plane
        // size); it writes `jobs.len()` slots of `slot_bytes` at `out`, checked against
        // `out_len` above; the descriptors stay in `staging` until the next `run`. The frames
        // must stay mapped until the stream has passed the kernel: callers synchronise the
        // stream before releasing them.
        unsafe { function.launch(stream, grid, block, &params) }?;
        // Recorded after the kernel, so that the next batch (on any stream) rewrites neither copy
        // of the descriptors while this one still reads them.
        self.uploaded.record(stream)?;
        Ok(())
    }
}

fn frame_desc(job: &GpuJob, lb: &Letterbox, out: u64) -> Result<FrameDesc, CudaError> {
    let img = &job.image;
    let (format, rgb, pixel_stride) = match img.format {
        VideoFormat::Nv12 => (FMT_NV12, [0, 0, 0], 1),
        VideoFormat::I420 => (FMT_I420, [0, 0, 0], 1),
        VideoFormat::Rgba | VideoFormat::Rgbx => (FMT_PACKED, [0, 1, 2], 4),
        VideoFormat::Bgra | VideoFormat::Bgrx => (FMT_PACKED, [2, 1, 0], 4),
        other => {
            return Err(CudaError::Invalid(format!(
                "{other:?} frames cannot be pre-processed on the GPU (NV12, I420, RGBA, BGRA, RGBx, BGRx)"
            )));
        }
    };
    Ok(FrameDesc {
        plane: img.planes.map(|p| p.ptr),
        pitch: img.planes.map(|p| p.pitch),
        format,
        width: img.width,
        height: img.height,
        rgb,
        pixel_stride,
        roi_left: job.roi.left,
        roi_top: job.roi.top,
        step_x: 1.0 / lb.scale_x,
        step_y: 1.0 / lb.scale_y,
        pad_x: lb.pad_x,
        pad_y: lb.pad_y,
        content_w: lb.content_w,
        content_h: lb.content_h,
        yuv: job.matrix.coefficients(),
        out,
    })
}

fn as_bytes(descs: &[FrameDesc]) -> &[u8] {
    // SAFETY: FrameDesc is #[repr(C)] plain data of u32/i32/f32/u64 fields with no padding (the
    // layout test pins 128 bytes with every field at its natural offset).
    unsafe { std::slice::from_raw_parts(descs.as_ptr().cast(), std::mem::size_of_val(descs)) }
}

/// The pre-processing of one CUDA context: stream, kernel and the batch's device tensor.
#[derive(Debug)]
pub struct GpuStage {
    stream: Stream,
    preprocessor: GpuPreprocessor,
    tensor: DeviceBuffer,
    /// The geometry of each slot of the last batch.
    letterboxes: Vec<Letterbox>,
}

impl GpuStage {
    /// A stage in `ctx` for tensors of up to `tensor_bytes` bytes; `priority` is the stream
    /// priority (CUDA convention: 0 default, lower is more urgent).
    pub fn new(ctx: &Arc<Context>, priority: i32, tensor_bytes: usize) -> Result<Self, CudaError> {
        Ok(Self {
            stream: Stream::new(ctx, priority)?,
            preprocessor: GpuPreprocessor::new(ctx)?,
            tensor: DeviceBuffer::new(ctx, tensor_bytes)?,
            letterboxes: Vec::new(),
        })
    }

    pub fn context(&self) -> &Arc<Context> {
        self.stream.context()
    }

    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The device tensor (all slots).
    pub fn tensor(&self) -> &DeviceBuffer {
        &self.tensor
    }

    /// The geometry of each slot filled by the last [`GpuStage::preprocess`].
    pub fn letterboxes(&self) -> &[Letterbox] {
        &self.letterboxes
    }

    /// Queues the pre-processing of `jobs` into the first slots of the device tensor.
    pub fn preprocess(
        &mut self,
        jobs: &[GpuJob],
        net: &NetworkInput,
        element: ElementType,
    ) -> Result<(), CudaError> {
        let (ptr, len) = (self.tensor.ptr(), self.tensor.len());
        self.preprocessor.run(
            &self.stream,
            jobs,
            net,
            element,
            ptr,
            len,
            &mut self.letterboxes,
        )
    }
}

/// Checks that `source` compiles with NVRTC for Jetson Orin (8.7) and Hopper (9.0) and
/// defines the kernels `names`; says it skipped where NVRTC is not installed.
#[cfg(test)]
pub(crate) fn assert_compiles(source: &KernelSource, names: &[&str]) {
    if !ferrostream_core::cuda::nvrtc_present() {
        println!("skipped: NVRTC is not installed (scripts/install-nvrtc.sh)");
        return;
    }
    for cc in [(8, 7), (9, 0)] {
        let ptx = ferrostream_core::cuda::compile_ptx(source, cc)
            .unwrap_or_else(|e| panic!("{} for compute {cc:?}: {e}", source.name));
        for name in names {
            let name = name.as_bytes();
            assert!(
                ptx.to_bytes().windows(name.len()).any(|w| w == name),
                "{} has no kernel {}",
                source.name,
                String::from_utf8_lossy(name)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn descriptor_layout_matches_the_kernel() {
        assert_eq!(size_of::<FrameDesc>(), 128);
        assert_eq!(offset_of!(FrameDesc, pitch), 24);
        assert_eq!(offset_of!(FrameDesc, format), 36);
        assert_eq!(offset_of!(FrameDesc, rgb), 48);
        assert_eq!(offset_of!(FrameDesc, pixel_stride), 60);
        assert_eq!(offset_of!(FrameDesc, roi_left), 64);
        assert_eq!(offset_of!(FrameDesc, pad_x), 80);
        assert_eq!(offset_of!(FrameDesc, yuv), 96);
        assert_eq!(offset_of!(FrameDesc, out), 120);
        assert_eq!(size_of::<Params>(), 64);
        assert_eq!(offset_of!(Params, vector_stores), 60);
        assert_eq!(offset_of!(Params, n_frames), 8);
        assert_eq!(offset_of!(Params, order), 32);
        assert_eq!(offset_of!(Params, scale), 44);
        assert_eq!(offset_of!(Params, offsets), 48);
    }

    #[test]
    fn kernel_compiles_with_nvrtc() {
        assert_compiles(&PREPROCESS_CU, &["preprocess_x1", "preprocess_x4"]);
    }
}
