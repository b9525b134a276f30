// SPDX-License-Identifier: MIT OR Apache-2.0
//! One way to reach the pixels of a frame in GPU memory, whatever memory it came in: GStreamer
//! CUDA memory (in its producer's context) or an NvBufSurface (CUDA_DEVICE / UNIFIED / PINNED by
//! device pointer, Jetson SURFACE_ARRAY through EGL, in the primary context of its GPU).

use std::collections::HashMap;
use std::sync::Arc;

use gst_video::{VideoColorMatrix, VideoColorRange};

use super::context::Context;
use super::error::{CudaError, Result};
use super::gst_cuda::{self, ContextTracker, CudaFrame};
use crate::batch::MemoryKind;
use crate::device::DeviceImage;
use crate::nvmm::{self, NvmmBatch};

/// A frame mapped for device access; the mapping lasts as long as this value.
pub struct DeviceFrame<'a> {
    pub image: DeviceImage,
    /// The context the frame's device pointers belong to.
    pub context: Arc<Context>,
    /// The YUV matrix and range of the pixels (from the surface when it says, else the caps).
    pub matrix: VideoColorMatrix,
    pub range: VideoColorRange,
    _mapping: Mapping<'a>,
}

enum Mapping<'a> {
    Cuda(#[allow(dead_code)] Box<CudaFrame<'a>>),
    Nvmm(#[allow(dead_code)] NvmmBatch<'a>),
}

/// Maps frames in device memory and keeps the contexts they live in: the producer's context for
/// CUDA memory (adopted once, reused while it matches), the primary context of each GPU for
/// NVMM surfaces.
#[derive(Debug, Default)]
pub struct DeviceFrames {
    cuda: ContextTracker,
    primary: HashMap<u32, Arc<Context>>,
    /// The GPU of the last NVMM frame, whose context is current while the next one is read:
    /// Jetson's EGL mapping of SURFACE_ARRAY memory registers in the current context.
    nvmm_gpu: u32,
}

impl DeviceFrames {
    /// Maps `buffer` (laid out as `info`, in `memory`) for reading, or for writing in place.
    /// NVMM buffers must hold one surface (a batch of several is refused).
    pub fn map<'a>(
        &mut self,
        memory: MemoryKind,
        buffer: &'a gst::BufferRef,
        info: &gst_video::VideoInfo,
        write: bool,
    ) -> Result<DeviceFrame<'a>> {
        let colorimetry = info.colorimetry();
        match memory {
            MemoryKind::Cuda => {
                let context = self.cuda.context_of(buffer)?;
                let frame = gst_cuda::map(buffer, info, write)?;
                Ok(DeviceFrame {
                    image: *frame.image(),
                    context,
                    matrix: colorimetry.matrix(),
                    range: colorimetry.range(),
                    _mapping: Mapping::Cuda(Box::new(frame)),
                })
            }
            MemoryKind::Nvmm => {
                let current = self.primary(self.nvmm_gpu)?;
                let batch = {
                    let _bound = current.bind()?;
                    // SAFETY: the negotiated caps say memory:NVMM, so the buffer's memory maps to
                    // an NvBufSurface whose surface list its producer keeps valid while the
                    // buffer lives.
                    unsafe { nvmm::surface_images(buffer) }
                        .map_err(|e| CudaError::Invalid(format!("NVMM buffer: {e}")))?
                };
                if batch.len() != 1 {
                    return Err(CudaError::Invalid(format!(
                        "the NVMM buffer holds {} surfaces; one frame per buffer is expected \
                         (batch with rsstreammux)",
                        batch.len()
                    )));
                }
                let surface = batch.surfaces()[0];
                self.nvmm_gpu = batch.gpu_id();
                let context = self.primary(self.nvmm_gpu)?;
                let (matrix, range) = surface
                    .colorimetry
                    .map_or((colorimetry.matrix(), colorimetry.range()), |c| {
                        (c.matrix, c.range)
                    });
                Ok(DeviceFrame {
                    image: surface.image,
                    context,
                    matrix,
                    range,
                    _mapping: Mapping::Nvmm(batch),
                })
            }
            MemoryKind::System => Err(CudaError::Invalid(
                "system-memory frames are not in GPU memory".into(),
            )),
        }
    }

    /// The primary context of `gpu_id`, retained once.
    fn primary(&mut self, gpu_id: u32) -> Result<Arc<Context>> {
        if let Some(c) = self.primary.get(&gpu_id) {
            return Ok(c.clone());
        }
        let c = Context::primary(gpu_id)?;
        self.primary.insert(gpu_id, c.clone());
        Ok(c)
    }
}
