// SPDX-License-Identifier: MIT OR Apache-2.0
//! The GPU painter: applies a [`DrawList`] to a frame in device memory (a [`DeviceImage`]: NV12,
//! I420, RGBA, BGRA, RGBx or BGRx), writing exactly the bytes the CPU painter
//! ([`crate::paint::Painter`]) writes.
//!
//! Exactness comes from sharing every decision that involves arithmetic beyond integers with the
//! CPU painter: colours are converted on the host by the same function
//! ([`crate::paint`]'s per-plane values), and the kernels in `osd.cu` apply the CPU painter's
//! integer rules (blend, chroma covering and averaging, pixelation means, box-blur running sums)
//! in the same order: blurs, then fills, then text, each in list order where they overlap.
//!
//! Text is drawn from the planner's glyph atlas, copied to the GPU once and again only when a
//! glyph was added (its [`revision`](crate::font::GlyphAtlas::revision) changed); per frame only
//! the ops (fills and text runs with their colours converted, blur jobs) and the glyph
//! placements travel, a few tens of kilobytes in one asynchronous copy from pinned memory.
//! Device buffers come from a pool and are kept, so a warm painter allocates nothing.
//!
//! Launches per frame: one per plane subsampling for fills and text (every tile of the planes
//! finds the ops that touch it, in order, on the GPU), and per level of overlapping blurs one for
//! pixelation and six for the box blur.

mod prepare;

use std::sync::Arc;

use ferrostream_core::cuda::{
    BufferPool, Context, CudaError, Event, Function, HostBuffer, KernelParams, KernelSource,
    Module, PooledBuffer, Stream,
};
use ferrostream_core::device::DeviceImage;
use gst_video::VideoFormat;

use crate::color::YuvMatrix;
use crate::font::{ATLAS_WIDTH, GlyphAtlas};
use crate::paint::plane_shapes;
use crate::plan::DrawList;
pub use prepare::PrepareError;
use prepare::{GpuBlurJob, GpuPlane, PlaneDims, Prepared, TILE, bytes_of};

/// The kernels, compiled once per process and GPU architecture.
pub const KERNELS: KernelSource = KernelSource {
    name: "osd.cu",
    code: include_str!("osd.cu"),
};

/// Threads of a pixelation block (`PIXELATE_THREADS` in `osd.cu`).
const PIXELATE_THREADS: u32 = 128;
/// Threads per block of the box-blur passes (one per sample).
const BLUR_THREADS: u32 = 256;
/// Device buffers start at this size and double, so that a growing list reallocates rarely.
const MIN_BUFFER: usize = 64 * 1024;

/// `struct TileParams` of `osd.cu`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct TileParams {
    planes: [GpuPlane; 3],
    ops: u64,
    glyphs: u64,
    atlas: u64,
    count: u32,
    plane_first: i32,
    tiles_x: i32,
    atlas_width: i32,
}

/// `struct BlurParams` of `osd.cu`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct BlurParams {
    planes: [GpuPlane; 3],
    jobs: u64,
    scratch: u64,
    count: u32,
    items: u32,
}

// SAFETY: mirrors `struct TileParams` of osd.cu field by field (sizes tested below); device
// addresses are plain integers.
unsafe impl KernelParams for TileParams {}
// SAFETY: mirrors `struct BlurParams` of osd.cu likewise.
unsafe impl KernelParams for BlurParams {}

/// Why a frame could not be painted on the GPU.
#[derive(Debug, thiserror::Error)]
pub enum GpuPaintError {
    #[error("rsosd cannot draw on {0:?} frames in GPU memory")]
    Format(VideoFormat),
    #[error(
        "the frame is {frame_width}x{frame_height} but the draw list was made for {list_width}x{list_height}"
    )]
    Size {
        frame_width: u32,
        frame_height: u32,
        list_width: i32,
        list_height: i32,
    },
    #[error("plane {plane} of the {format:?} frame in GPU memory: {problem}")]
    Plane {
        plane: usize,
        format: VideoFormat,
        problem: String,
    },
    #[error(
        "the CUDA stream belongs to another context than the painter's (GPU {stream_gpu}, painter on GPU {painter_gpu})"
    )]
    Context { stream_gpu: u32, painter_gpu: u32 },
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    #[error("{0}")]
    Cuda(#[from] CudaError),
}

/// Paints draw lists on frames in device memory of one CUDA context, keeping its kernels,
/// device buffers (the glyph atlas among them) and host scratch between frames.
pub struct GpuPainter {
    ctx: Arc<Context>,
    tiles: Function,
    pixelate: Function,
    blur_rows: Function,
    blur_cols: Function,
    pool: BufferPool,
    /// The ops, glyphs and blur jobs of the last frame, on the device and in pinned host memory
    /// (copied from there without waiting).
    upload: Option<PooledBuffer>,
    staging: Option<HostBuffer>,
    scratch: Option<PooledBuffer>,
    atlas: Option<PooledBuffer>,
    /// What `atlas` holds a copy of.
    atlas_revision: Option<(u64, usize)>,
    /// Recorded after the last frame's work: its buffers are reused only once it has passed.
    done: Event,
    pending: bool,
    prepared: Prepared,
    bytes: Vec<u8>,
}

impl std::fmt::Debug for GpuPainter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuPainter")
            .field("ctx", &self.ctx)
            .field("atlas_revision", &self.atlas_revision)
            .finish_non_exhaustive()
    }
}

impl GpuPainter {
    /// Loads the kernels into `ctx` (compiling them with NVRTC the first time in the process).
    pub fn new(ctx: &Arc<Context>) -> Result<Self, GpuPaintError> {
        let module = Module::load(ctx, &KERNELS)?;
        Ok(Self {
            ctx: ctx.clone(),
            tiles: module.function("osd_paint_tiles")?,
            pixelate: module.function("osd_pixelate")?,
            blur_rows: module.function("osd_blur_rows")?,
            blur_cols: module.function("osd_blur_cols")?,
            pool: BufferPool::new(ctx, 4),
            upload: None,
            staging: None,
            scratch: None,
            atlas: None,
            atlas_revision: None,
            done: Event::new(ctx)?,
            pending: false,
            prepared: Prepared::default(),
            bytes: Vec::new(),
        })
    }

    /// The context the painter draws in.
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// Queues the drawing of `list` on `image` on `stream`, whose colours are converted with
    /// `matrix` (YUV formats) as the CPU painter does; text reads its glyphs from `atlas`, the
    /// atlas of the planner that made `list` as it was right after planning it.
    ///
    /// Everything is queued, the copy of the ops included, and the call returns without waiting
    /// for the GPU (except for the previous call's work, whose buffers it reuses, and for a copy
    /// of the atlas when it changed): synchronise `stream` before the frame is read elsewhere.
    ///
    /// # Safety
    /// `image` must describe device memory of the painter's context that is writable for
    /// `rows x pitch` bytes per plane and stays valid until `stream` has passed the work queued
    /// here; nothing else may write it meanwhile.
    pub unsafe fn paint(
        &mut self,
        list: &DrawList,
        atlas: &GlyphAtlas,
        image: &DeviceImage,
        matrix: YuvMatrix,
        stream: &Stream,
    ) -> Result<(), GpuPaintError> {
        if stream.context().raw() != self.ctx.raw() {
            return Err(GpuPaintError::Context {
                stream_gpu: stream.context().gpu_id(),
                painter_gpu: self.ctx.gpu_id(),
            });
        }
        let format = image.format;
        let shapes = plane_shapes(format).ok_or(GpuPaintError::Format(format))?;
        if image.width as i64 != list.width as i64 || image.height as i64 != list.height as i64 {
            return Err(GpuPaintError::Size {
                frame_width: image.width,
                frame_height: image.height,
                list_width: list.width,
                list_height: list.height,
            });
        }
        if list.is_empty() {
            return Ok(());
        }
        let mut planes = [GpuPlane::default(); 3];
        let mut dims = Vec::with_capacity(3);
        let mut first = 0;
        for (index, shape) in shapes.enumerate() {
            let p = image.planes[index];
            let span = 1u64 << shape.sub;
            let width = (image.width as u64).div_ceil(span);
            let height = (image.height as u64).div_ceil(span);
            let problem = |problem: String| GpuPaintError::Plane {
                plane: index,
                format,
                problem,
            };
            if p.ptr == 0 {
                return Err(problem("no device address".into()));
            }
            let row = width * shape.channels as u64;
            if (p.pitch as u64) < row || p.pitch > i32::MAX as u32 {
                return Err(problem(format!(
                    "pitch {} cannot hold a row of {row} bytes",
                    p.pitch
                )));
            }
            planes[index] = GpuPlane {
                ptr: p.ptr,
                pitch: p.pitch as i32,
                width: width as i32,
                height: height as i32,
                first,
                channels: shape.channels as i32,
                sub: shape.sub as i32,
            };
            dims.push(PlaneDims {
                shape,
                width: width as i32,
                height: height as i32,
            });
            first += shape.channels as i32;
        }
        self.prepared
            .prepare(list, format, matrix, &dims, atlas.rows())?;

        // Everything the kernels read this frame, in one block.
        let prepared = &self.prepared;
        let bytes = &mut self.bytes;
        bytes.clear();
        let mut push = |b: &[u8]| {
            bytes.resize(bytes.len().next_multiple_of(16), 0);
            let at = bytes.len() as u64;
            bytes.extend_from_slice(b);
            at
        };
        let ops_at = push(bytes_of(&prepared.ops));
        let glyphs_at = push(bytes_of(&list.glyphs));
        let jobs_at = push(bytes_of(&prepared.jobs));
        let draws_text = prepared.draws_text();

        // The previous frame's work still reads the staging and device buffers.
        if self.pending {
            self.done.synchronize()?;
            self.pending = false;
        }
        if draws_text {
            self.sync_atlas(atlas, stream)?;
        }
        let len = self.bytes.len();
        let staging = match &mut self.staging {
            Some(staging) if staging.len() >= len => staging,
            slot => {
                *slot = None;
                let capacity = len.max(MIN_BUFFER).next_power_of_two();
                slot.insert(HostBuffer::new(&self.ctx, capacity)?)
            }
        };
        staging.as_mut_slice()[..len].copy_from_slice(&self.bytes);
        let upload = ensure(&self.pool, &mut self.upload, len)?;
        let base = upload.ptr();
        let scratch = if self.prepared.scratch > 0 {
            ensure(&self.pool, &mut self.scratch, self.prepared.scratch)?.ptr()
        } else {
            0
        };
        let atlas_ptr = match (&self.atlas, draws_text) {
            (Some(a), true) => a.ptr(),
            _ => 0,
        };
        let addresses = Addresses {
            ops: base + ops_at,
            glyphs: base + glyphs_at,
            jobs: base + jobs_at,
            scratch,
            atlas: atlas_ptr,
        };
        // SAFETY: the upload buffer holds `len` bytes and is not touched by earlier work (waited
        // for above); the staging buffer is not written again before `done` has passed.
        let queued = unsafe { staging.upload_async(stream, base, len) }
            .map_err(GpuPaintError::from)
            .and_then(|()| self.launch(&planes, &dims, &addresses, stream));
        // Whatever was queued must pass before the buffers are reused or freed.
        self.done.record(stream)?;
        self.pending = true;
        queued
    }

    /// Queues the kernels of the prepared frame.
    fn launch(
        &self,
        planes: &[GpuPlane; 3],
        dims: &[PlaneDims],
        at: &Addresses,
        stream: &Stream,
    ) -> Result<(), GpuPaintError> {
        let planes = *planes;
        let prepared = &self.prepared;

        // Blurs, level by level.
        let job_size = std::mem::size_of::<GpuBlurJob>() as u64;
        let blur_params = |jobs: &std::ops::Range<usize>, items: u32| BlurParams {
            planes,
            jobs: at.jobs + jobs.start as u64 * job_size,
            scratch: at.scratch,
            count: jobs.len() as u32,
            items,
        };
        for level in &prepared.levels {
            if !level.pixelate.is_empty() {
                let params = blur_params(&level.pixelate, level.blocks);
                // SAFETY: the jobs lie in the uploaded buffer and address only samples inside
                // the planes described by `image`, which the caller guarantees.
                unsafe {
                    self.pixelate.launch(
                        stream,
                        (level.blocks, 1, 1),
                        (PIXELATE_THREADS, 1, 1),
                        &params,
                    )?
                };
            }
            if !level.blur.is_empty() {
                let params = blur_params(&level.blur, level.samples);
                let grid = (level.samples.div_ceil(BLUR_THREADS), 1, 1);
                for _ in 0..3 {
                    // SAFETY: as above; each job's scratch region lies in the scratch buffer,
                    // which holds the level's `scratch` bytes.
                    unsafe {
                        self.blur_rows
                            .launch(stream, grid, (BLUR_THREADS, 1, 1), &params)?;
                        self.blur_cols
                            .launch(stream, grid, (BLUR_THREADS, 1, 1), &params)?;
                    }
                }
            }
        }

        // Fills and text: one launch per subsampling, a block per tile of the planes.
        if !prepared.ops.is_empty() {
            let count = dims.len();
            let mut start = 0;
            while start < count {
                let sub = dims[start].shape.sub;
                let end = (start..count)
                    .find(|&i| dims[i].shape.sub != sub)
                    .unwrap_or(count);
                let tiles_x = (dims[start].width as u32).div_ceil(TILE as u32);
                let tiles_y = (dims[start].height as u32).div_ceil(TILE as u32);
                let params = TileParams {
                    planes,
                    ops: at.ops,
                    glyphs: at.glyphs,
                    atlas: at.atlas,
                    count: prepared.ops.len() as u32,
                    plane_first: start as i32,
                    tiles_x: tiles_x as i32,
                    atlas_width: ATLAS_WIDTH as i32,
                };
                // SAFETY: the ops and glyphs lie in the uploaded buffer; every glyph lies inside
                // the atlas copy (checked while preparing); threads write only samples inside
                // the planes described by `image`, which the caller guarantees.
                unsafe {
                    self.tiles.launch(
                        stream,
                        (tiles_x * tiles_y, (end - start) as u32, 1),
                        (TILE as u32, TILE as u32, 1),
                        &params,
                    )?
                };
                start = end;
            }
        }
        Ok(())
    }

    /// Copies the atlas to the GPU unless the copy there is current.
    fn sync_atlas(&mut self, atlas: &GlyphAtlas, stream: &Stream) -> Result<(), GpuPaintError> {
        let revision = atlas.revision();
        if self.atlas_revision == Some(revision) && self.atlas.is_some() {
            return Ok(());
        }
        self.atlas_revision = None;
        let buffer = ensure(&self.pool, &mut self.atlas, atlas.pixels().len())?;
        if !atlas.pixels().is_empty() {
            buffer.upload(stream, atlas.pixels())?;
        }
        self.atlas_revision = Some(revision);
        Ok(())
    }
}

impl Drop for GpuPainter {
    fn drop(&mut self) {
        // The buffers are freed next; queued work may still use them.
        if self.pending {
            let _ = self.done.synchronize();
        }
    }
}

/// Device addresses of what a frame's kernels read.
struct Addresses {
    ops: u64,
    glyphs: u64,
    jobs: u64,
    scratch: u64,
    atlas: u64,
}

/// `slot` holding at least `len` bytes: kept, or replaced by a larger buffer of the pool.
fn ensure<'a>(
    pool: &BufferPool,
    slot: &'a mut Option<PooledBuffer>,
    len: usize,
) -> Result<&'a PooledBuffer, CudaError> {
    if slot.as_ref().is_none_or(|b| b.len() < len) {
        // The old buffer goes back to the pool first, so that it can serve a smaller request.
        *slot = None;
        return Ok(slot.insert(pool.get(len.max(MIN_BUFFER).next_power_of_two())?));
    }
    slot.as_ref()
        .ok_or_else(|| CudaError::Invalid("a device buffer went missing".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The parameter blocks mirror osd.cu's structs; their layout is part of the contract.
    #[test]
    fn parameter_layouts_match_the_kernels() {
        assert_eq!(size_of::<GpuPlane>(), 32);
        assert_eq!(offset_of!(GpuPlane, pitch), 8);
        assert_eq!(offset_of!(GpuPlane, sub), 28);
        assert_eq!(size_of::<TileParams>(), 96 + 24 + 16);
        assert_eq!(offset_of!(TileParams, ops), 96);
        assert_eq!(offset_of!(TileParams, atlas), 112);
        assert_eq!(offset_of!(TileParams, count), 120);
        assert_eq!(offset_of!(TileParams, plane_first), 124);
        assert_eq!(offset_of!(TileParams, tiles_x), 128);
        assert_eq!(offset_of!(TileParams, atlas_width), 132);
        assert_eq!(size_of::<BlurParams>(), 96 + 16 + 8);
        assert_eq!(offset_of!(BlurParams, jobs), 96);
        assert_eq!(offset_of!(BlurParams, count), 112);
        assert_eq!(offset_of!(BlurParams, items), 116);
    }

    /// Compiles osd.cu for Jetson Orin (8.7) and Hopper (9.0) when NVRTC is on the library path;
    /// no GPU is needed.
    #[test]
    fn kernels_compile_with_nvrtc() {
        if !ferrostream_core::cuda::nvrtc_present() {
            println!("skipped: NVRTC (libnvrtc.so) is not on the library path");
            return;
        }
        for cc in [(8, 7), (9, 0)] {
            let ptx = ferrostream_core::cuda::compile_ptx(&KERNELS, cc)
                .unwrap_or_else(|e| panic!("compute capability {cc:?}: {e}"));
            let ptx = ptx.to_string_lossy();
            for kernel in [
                "osd_paint_tiles",
                "osd_pixelate",
                "osd_blur_rows",
                "osd_blur_cols",
            ] {
                assert!(
                    ptx.contains(&format!(".entry {kernel}")),
                    "{kernel} missing for {cc:?}"
                );
            }
        }
    }
}
