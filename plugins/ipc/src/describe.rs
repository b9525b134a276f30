// SPDX-License-Identifier: MIT OR Apache-2.0
//! The producer's reading of a buffer: where each surface's pixels are (an allocation another
//! process can map, and where in it), and its metadata. Device memory in a shared CUDA
//! allocation goes as it is; other device memory is copied once into a shared slot (counted in
//! the copy trace); system memory is copied into a memory-file slot, as `shmsink` does.

use std::sync::Arc;

use ferrostream_core::batch::{FrameSource, MemoryKind};
use ferrostream_core::meta::BatchMeta;

use crate::host::Segment;
use crate::producer::{Allocation, FdSource, Outgoing};
use crate::wire::{self, Memory};

/// Slots of one kind: a slot is free when nothing but the pool holds it.
pub struct Slots<T> {
    slots: Vec<(u64, Arc<T>)>,
    limit: usize,
}

impl<T> Slots<T> {
    pub fn new(limit: usize) -> Self {
        Self {
            slots: Vec::new(),
            limit,
        }
    }

    /// A free slot that `fits`, or a new one from `make` (with its id).
    fn get(
        &mut self,
        fits: impl Fn(&T) -> bool,
        make: impl FnOnce() -> Result<(u64, T), String>,
    ) -> Result<(u64, Arc<T>), String> {
        if let Some((id, slot)) = self
            .slots
            .iter()
            .find(|(_, s)| Arc::strong_count(s) == 1 && fits(s))
        {
            return Ok((*id, slot.clone()));
        }
        if self.slots.len() >= self.limit {
            // Free slots that do not fit this frame make room (the caps changed).
            if let Some(i) = self
                .slots
                .iter()
                .position(|(_, s)| Arc::strong_count(s) == 1)
            {
                self.slots.swap_remove(i);
            } else {
                return Err(format!(
                    "all {} shared slots are held by consumers",
                    self.limit
                ));
            }
        }
        let (id, slot) = make()?;
        let slot = Arc::new(slot);
        self.slots.push((id, slot.clone()));
        Ok((id, slot))
    }
}

/// Memory a buffer in flight uses: released (back to its pool) when every consumer is done.
pub trait Slot: Send + Sync {
    /// Waits until the copy into the slot has finished reading its source (before the source
    /// buffer may go).
    fn wait_for_copy(&self) {}
}

impl Slot for Segment {}

/// What keeps a buffer's memory alive while consumers hold it: the upstream buffer (whose memory
/// may be exported as it is) and the slots frames were copied into.
struct Keep {
    slots: Vec<Arc<dyn Slot>>,
    _buffer: gst::Buffer,
}

impl Drop for Keep {
    fn drop(&mut self) {
        // Before the upstream buffer (a field, dropped after this) can be reused: copies out of
        // it that nobody waited for (a buffer no consumer took) must be done.
        for slot in &self.slots {
            slot.wait_for_copy();
        }
    }
}

/// Ids of host slots: apart from CUDA allocation serials, which count up from 1.
static NEXT_HOST_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1 << 62);

/// What the producer keeps to describe buffers.
pub struct Describer {
    host: Slots<Segment>,
    #[cfg(feature = "cuda")]
    device: device::DeviceSlots,
}

/// One surface to describe: its buffer, layout and stream.
struct Part<'a> {
    buffer: &'a gst::BufferRef,
    // Read by the device paths only.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    info: &'a gst_video::VideoInfo,
    caps: String,
    source_id: u32,
    stream_id: Option<String>,
}

impl Describer {
    pub fn new(slot_limit: usize) -> Self {
        Self {
            host: Slots::new(slot_limit),
            #[cfg(feature = "cuda")]
            device: device::DeviceSlots::new(slot_limit),
        }
    }

    /// Describes `buffer` (negotiated as `caps`) for consumers.
    pub fn describe(
        &mut self,
        buffer: &gst::Buffer,
        caps: &gst::CapsRef,
    ) -> Result<Outgoing, String> {
        let memory = MemoryKind::from_caps(caps);
        let source = FrameSource::from_caps(caps)?;
        let meta = BatchMeta::of(buffer);
        let plain_caps;
        let parts: Vec<Part<'_>> = match &source {
            FrameSource::Single(info) => {
                plain_caps = caps.to_string();
                vec![Part {
                    buffer: buffer.as_ref(),
                    info,
                    caps: plain_caps,
                    source_id: meta
                        .and_then(|m| m.batch().frames.first())
                        .map_or(0, |f| f.source_id),
                    stream_id: None,
                }]
            }
            FrameSource::Batched => {
                let meta = meta.ok_or("the batch has no metadata (was it made by rsstreammux?)")?;
                meta.surfaces()
                    .iter()
                    .map(|s| Part {
                        buffer: s.buffer.as_ref(),
                        info: s.info(),
                        caps: s.stream.caps.to_string(),
                        source_id: s.stream.source_id,
                        stream_id: s.stream.stream_id.as_ref().map(|s| s.to_string()),
                    })
                    .collect()
            }
        };
        let mut surfaces = Vec::with_capacity(parts.len());
        let mut allocations: Vec<Allocation> = Vec::new();
        // Built first: on an error below, dropping it waits for the copies already queued.
        let mut keep = Keep {
            slots: Vec::new(),
            _buffer: buffer.clone(),
        };
        let slots = &mut keep.slots;
        for part in &parts {
            let surface = match memory {
                MemoryKind::System => self.host_surface(part, &mut allocations, slots)?,
                #[cfg(feature = "cuda")]
                MemoryKind::Cuda | MemoryKind::Nvmm => {
                    self.device
                        .surface(memory, part.buffer, part.info, &mut allocations, slots)?
                }
                #[cfg(not(feature = "cuda"))]
                _ => return Err("this build has no CUDA support".into()),
            };
            surfaces.push(wire::Surface {
                caps: part.caps.clone(),
                source_id: part.source_id,
                stream_id: part.stream_id.clone(),
                pts: part.buffer.pts().map(|t| t.nseconds()),
                duration: part.buffer.duration().map(|t| t.nseconds()),
                ..surface
            });
        }
        #[cfg(feature = "cuda")]
        self.device.finish()?;
        let (frames, surface_index) = match meta {
            Some(m) => m
                .batch()
                .frames
                .iter()
                .map(|f| {
                    let mut line = Vec::new();
                    ferrostream_core::json::write_frame_line(&mut line, f)
                        .expect("writing to memory succeeds");
                    line.pop();
                    (
                        String::from_utf8(line).expect("JSON is UTF-8"),
                        f.surface_index.min(surfaces.len().saturating_sub(1) as u32),
                    )
                })
                .unzip(),
            None => (Vec::new(), Vec::new()),
        };
        Ok(Outgoing {
            message: wire::Buffer {
                seq: 0,
                pts: buffer.pts().map(|t| t.nseconds()),
                dts: buffer.dts().map(|t| t.nseconds()),
                duration: buffer.duration().map(|t| t.nseconds()),
                flags: buffer.flags().bits(),
                surfaces,
                frames,
                surface_index,
            },
            allocations,
            keep: Arc::new(keep),
        })
    }

    fn host_surface(
        &mut self,
        part: &Part<'_>,
        allocations: &mut Vec<Allocation>,
        slots: &mut Vec<Arc<dyn Slot>>,
    ) -> Result<wire::Surface, String> {
        let map = part
            .buffer
            .map_readable()
            .map_err(|_| "a frame cannot be mapped for reading".to_string())?;
        let len = map.len();
        let (id, segment) = self.host.get(
            |s| s.len() >= len,
            || {
                let id = NEXT_HOST_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                // Whole pages, so that a slot also fits slightly larger frames later.
                let size = len.max(1).next_multiple_of(4096);
                Segment::create(size)
                    .map(|s| (id, s))
                    .map_err(|e| format!("a shared memory file of {size} bytes: {e}"))
            },
        )?;
        // SAFETY: the slot is free (only the pool held it), so no consumer reads it.
        unsafe { segment.write(&map) };
        allocations.push(Allocation {
            id,
            size: segment.len() as u64,
            memory: Memory::Host,
            fd: FdSource::Held(segment.clone()),
            event: None,
        });
        slots.push(segment);
        Ok(wire::Surface {
            allocation: id,
            offset: 0,
            size: len as u64,
            planes: Vec::new(),
            caps: String::new(),
            source_id: 0,
            stream_id: None,
            pts: None,
            duration: None,
        })
    }
}

#[cfg(feature = "cuda")]
mod device {
    use std::collections::HashMap;
    use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
    use std::sync::Arc;

    use ferrostream_core::batch::MemoryKind;
    use ferrostream_core::cuda::{self, DeviceFrames, Stream, shared};

    use super::{Slot, Slots};
    use crate::producer::{Allocation, FdSource};
    use crate::wire::{self, Memory};

    /// A shared device slot, the descriptor it is exported as (once), and the IPC event
    /// recorded after each copy into it (none where the driver cannot share events: the copy
    /// is then waited for here).
    pub struct DeviceSlot {
        memory: shared::SharedAllocation,
        fd: OwnedFd,
        event: Option<(shared::IpcEvent, String)>,
    }

    impl Slot for DeviceSlot {
        fn wait_for_copy(&self) {
            if let Some((event, _)) = &self.event {
                // An error here means the context is gone, and the copy with it.
                let _ = event.synchronize();
            }
        }
    }

    impl AsFd for DeviceSlot {
        fn as_fd(&self) -> BorrowedFd<'_> {
            self.fd.as_fd()
        }
    }

    pub struct DeviceSlots {
        frames: DeviceFrames,
        slots: Slots<DeviceSlot>,
        /// A stream per context that copies went to, to wait for before sending.
        streams: HashMap<usize, Stream>,
        pending: Vec<usize>,
    }

    impl DeviceSlots {
        pub fn new(limit: usize) -> Self {
            Self {
                frames: DeviceFrames::default(),
                slots: Slots::new(limit),
                streams: HashMap::new(),
                pending: Vec::new(),
            }
        }

        pub fn surface(
            &mut self,
            memory: MemoryKind,
            buffer: &gst::BufferRef,
            info: &gst_video::VideoInfo,
            allocations: &mut Vec<Allocation>,
            slots: &mut Vec<Arc<dyn Slot>>,
        ) -> Result<wire::Surface, String> {
            let frame = self
                .frames
                .map(memory, buffer, info, false)
                .map_err(|e| format!("a frame cannot be mapped on the GPU: {e}"))?;
            let image = frame.image;
            let count = image
                .plane_count()
                .map_err(|e| format!("a frame's layout: {e}"))?;
            let planes = &image.planes[..count];
            let start = planes.iter().map(|p| p.ptr).min().unwrap_or(0);
            let end = (0..count)
                .map(|i| planes[i].ptr + planes[i].pitch as u64 * image.rows(i) as u64)
                .max()
                .unwrap_or(start);
            let span = (end - start) as usize;
            let gpu_id = frame.context.gpu_id();
            // `origin`: the address that offset 0 of the allocation stands for.
            let (allocation, origin) = if let Some(at) = shared::find(start, span) {
                // Already in memory other processes can map: sent as it is.
                allocations.push(Allocation {
                    id: at.serial,
                    size: at.size as u64,
                    memory: Memory::Device { gpu_id },
                    fd: FdSource::Exported {
                        base: at.base,
                        serial: at.serial,
                    },
                    event: None,
                });
                (at.serial, at.base)
            } else {
                let id = self.copy_to_slot(&frame.context, start, span, allocations, slots)?;
                (id, start)
            };
            Ok(wire::Surface {
                allocation,
                offset: 0,
                size: 0,
                planes: planes
                    .iter()
                    .map(|p| wire::Plane {
                        offset: p.ptr - origin,
                        pitch: p.pitch,
                    })
                    .collect(),
                caps: String::new(),
                source_id: 0,
                stream_id: None,
                pts: None,
                duration: None,
            })
        }

        /// Copies `span` bytes at `start` into a free shared slot; returns the slot's id.
        fn copy_to_slot(
            &mut self,
            ctx: &Arc<cuda::Context>,
            start: u64,
            span: usize,
            allocations: &mut Vec<Allocation>,
            slots: &mut Vec<Arc<dyn Slot>>,
        ) -> Result<u64, String> {
            let gpu_id = ctx.gpu_id();
            // A slot of this context (and so of this GPU): its event and memory belong there.
            let (id, slot) = self.slots.get(
                |s| s.memory.len() >= span && Arc::ptr_eq(s.memory.context(), ctx),
                || {
                    let memory = shared::SharedAllocation::new(ctx, span)
                        .map_err(|e| format!("shared GPU memory of {span} bytes: {e}"))?;
                    let fd =
                        shared::export(memory.ptr(), memory.serial()).map_err(|e| e.to_string())?;
                    let event = shared::IpcEvent::new(ctx)
                        .and_then(|e| e.handle().map(|h| (e, shared::handle_to_hex(&h))))
                        .ok();
                    Ok((memory.serial(), DeviceSlot { memory, fd, event }))
                },
            )?;
            let key = Arc::as_ptr(ctx) as usize;
            if let std::collections::hash_map::Entry::Vacant(e) = self.streams.entry(key) {
                e.insert(Stream::new(ctx, 0).map_err(|e| e.to_string())?);
            }
            // SAFETY: `span` bytes from `start` are the frame's planes, in a buffer that is not
            // released before the copy is done (the slot's event is waited for when the buffer's
            // `Keep` goes, or the stream in `finish`); the slot holds at least `span` bytes and is
            // not in flight.
            unsafe { self.streams[&key].copy_dtod(slot.memory.ptr(), start, span) }
                .map_err(|e| format!("copying a frame into shared GPU memory: {e}"))?;
            cuda::count_copy_for_sharing(span as u64);
            let stream = &self.streams[&key];
            match &slot.event {
                // Consumers wait for the copy; the producer goes on.
                Some((event, _)) => event
                    .record(stream)
                    .map_err(|e| format!("marking a copied frame ready: {e}"))?,
                None if !self.pending.contains(&key) => self.pending.push(key),
                None => {}
            }
            allocations.push(Allocation {
                id,
                size: slot.memory.size() as u64,
                memory: Memory::Device { gpu_id },
                fd: FdSource::Held(slot.clone()),
                event: slot.event.as_ref().map(|(_, h)| h.clone()),
            });
            slots.push(slot);
            Ok(id)
        }

        /// Waits for the copies queued for this buffer into slots without an event.
        pub fn finish(&mut self) -> Result<(), String> {
            for key in self.pending.drain(..) {
                self.streams[&key]
                    .synchronize()
                    .map_err(|e| format!("copying frames into shared GPU memory: {e}"))?;
            }
            Ok(())
        }
    }
}
