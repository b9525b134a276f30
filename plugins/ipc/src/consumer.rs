// SPDX-License-Identifier: MIT OR Apache-2.0
//! A consumer's side of the connection: maps each allocation once, turns buffer descriptions
//! back into GStreamer buffers (system memory from the memory files; NVMM memory pointing into
//! the imported CUDA allocations, never copied) with their Ferrostream metadata, and tells the
//! producer when a buffer is released.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ferrostream_core::analytics::Batch;
use ferrostream_core::batch::{self, BATCH_FEATURE, CUDA_MEMORY_FEATURE, NVMM_FEATURE};
use ferrostream_core::meta::BatchMeta;
use ferrostream_core::surface::{SourceStream, Surface};

use crate::host::Segment;
use crate::socket::Connection;
use crate::wire::{self, Memory, ToConsumer, ToProducer};

/// What a consumer receives, in order.
pub enum Event {
    Caps(gst::Caps),
    Buffer(gst::Buffer),
    Eos,
}

/// A mapped allocation of the producer.
enum Mapped {
    Host(Segment),
    #[cfg(feature = "cuda")]
    Device {
        memory: ferrostream_core::cuda::shared::ImportedAllocation,
        gpu_id: u32,
        /// The producer's event marking the memory filled, waited on before each buffer.
        ready: Option<ferrostream_core::cuda::shared::IpcEvent>,
    },
}

impl Mapped {
    fn is_device(&self) -> bool {
        match self {
            Mapped::Host(_) => false,
            #[cfg(feature = "cuda")]
            Mapped::Device { .. } => true,
        }
    }
}

/// Tells the producer, once dropped, that buffer `seq` is released.
struct Release {
    conn: Arc<Connection>,
    seq: u64,
}

impl Drop for Release {
    fn drop(&mut self) {
        let m = ToProducer::Release { seq: self.seq };
        // A producer that is gone needs no release.
        let _ = self.conn.send(&m.encode(), &[], Duration::from_millis(500));
    }
}

/// What keeps a frame's memory valid: the mapping and the release.
struct Keep {
    _mapped: Arc<Mapped>,
    _release: Arc<Release>,
}

impl AsRef<[u8]> for HostBytes {
    fn as_ref(&self) -> &[u8] {
        match &*self.keep._mapped {
            Mapped::Host(s) => &s.as_slice()[self.range.clone()],
            #[cfg(feature = "cuda")]
            Mapped::Device { .. } => unreachable!("host bytes are made of host mappings only"),
        }
    }
}

/// A frame's bytes in a memory file, as GStreamer memory.
struct HostBytes {
    keep: Keep,
    range: std::ops::Range<usize>,
}

pub struct Consumer {
    conn: Arc<Connection>,
    mapped: HashMap<u64, Arc<Mapped>>,
    caps: Option<gst::Caps>,
    // Read by the device paths only.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    nvmm_abi: ferrostream_core::nvmm::NvmmAbi,
    /// Nanoseconds added to the producer's timestamps: this pipeline's running time at the
    /// first buffer, minus that buffer's timestamp.
    offset: Option<i128>,
    /// Each source's stream, by source id, source caps and stream id.
    streams: HashMap<(u32, Option<String>, Option<String>), Arc<SourceStream>>,
    /// Where messages are received (the longest a message may be), allocated once.
    scratch: Vec<u8>,
}

/// How long a poll waits before checking for a flush.
const SLICE: Duration = Duration::from_millis(50);

impl Consumer {
    /// Connects to the producer at `path`; `nvmm_abi` is the NvBufSurface layout device frames
    /// are handed downstream in.
    pub fn connect(path: &Path, nvmm_abi: ferrostream_core::nvmm::NvmmAbi) -> Result<Self, String> {
        // Producers' caps may name GstVideo types (the multiview flag set) that nothing in this
        // process has registered yet; caps naming an unknown type do not parse.
        // SAFETY: a GType getter: registers the type once, no arguments.
        unsafe { gst_video::ffi::gst_video_multiview_flagset_get_type() };
        let conn = Connection::connect(path, Duration::from_secs(5))
            .map_err(|e| format!("no producer at {}: {e}", path.display()))?;
        // Only a producer of this user is trusted with what it sends (pointers into its memory
        // among them): a socket path someone else made is refused.
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        match conn.peer_uid() {
            Ok(peer) if peer == uid || peer == 0 => {}
            Ok(peer) => {
                return Err(format!(
                    "the producer at {} runs as user {peer}, not as this user ({uid})",
                    path.display()
                ));
            }
            Err(e) => {
                return Err(format!(
                    "cannot identify the producer at {}: {e}",
                    path.display()
                ));
            }
        }
        let hello = ToProducer::Hello {
            version: wire::VERSION,
        };
        conn.send(&hello.encode(), &[], Duration::from_secs(2))
            .map_err(|e| format!("the producer at {} hung up: {e}", path.display()))?;
        Ok(Self {
            conn: Arc::new(conn),
            mapped: HashMap::new(),
            caps: None,
            nvmm_abi,
            offset: None,
            streams: HashMap::new(),
            scratch: vec![0; wire::MAX_MESSAGE],
        })
    }

    /// The next caps, buffer or end of stream; `Ok(None)` when `stop` was set while waiting.
    /// Buffers are restamped to this pipeline's running time (`now`, when it has a clock): the
    /// first one at its arrival, the others at the same distance from it as at the producer.
    /// Their frames' metadata keeps the producer's timestamps.
    pub fn next(
        &mut self,
        stop: &AtomicBool,
        now: &dyn Fn() -> Option<u64>,
    ) -> Result<Option<Event>, String> {
        loop {
            if stop.load(Ordering::SeqCst) {
                return Ok(None);
            }
            let (len, fds) = match self.conn.receive_into(&mut self.scratch, Some(SLICE)) {
                Ok(Some(r)) => r,
                Ok(None) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    return Err("the producer closed the connection".into());
                }
                Err(e) => return Err(format!("reading from the producer: {e}")),
            };
            let message = ToConsumer::decode(&self.scratch[..len])
                .map_err(|e| format!("the producer sent a bad message: {e}"))?;
            let mut fds = fds.into_iter();
            match message {
                ToConsumer::Hello { version } if version == wire::VERSION => {}
                ToConsumer::Hello { version } => {
                    return Err(format!(
                        "the producer speaks protocol version {version}, this consumer {}",
                        wire::VERSION
                    ));
                }
                ToConsumer::Caps { caps } => {
                    let caps = output_caps(&caps)?;
                    self.caps = Some(caps.clone());
                    self.streams.clear();
                    return Ok(Some(Event::Caps(caps)));
                }
                ToConsumer::Allocation {
                    id,
                    size,
                    memory,
                    event,
                } => {
                    let fd = fds
                        .next()
                        .ok_or("the producer announced an allocation without its descriptor")?;
                    let size = usize::try_from(size).map_err(|_| "an allocation too large")?;
                    let mapped = match memory {
                        Memory::Host if event.is_some() => {
                            return Err("the producer sent an event for system memory".into());
                        }
                        Memory::Host => Mapped::Host(
                            Segment::open(fd, size)
                                .map_err(|e| format!("mapping a shared memory file: {e}"))?,
                        ),
                        #[cfg(feature = "cuda")]
                        Memory::Device { gpu_id } => {
                            use ferrostream_core::cuda::{Context, shared};
                            use std::os::fd::AsFd;
                            let ctx = Context::primary(gpu_id)
                                .map_err(|e| format!("GPU {gpu_id}: {e}"))?;
                            let ready = match event {
                                Some(hex) => {
                                    let handle = shared::handle_from_hex(&hex)
                                        .ok_or("the producer sent a malformed event handle")?;
                                    Some(shared::IpcEvent::open(&ctx, &handle).map_err(|e| {
                                        format!("opening the producer's CUDA event: {e}")
                                    })?)
                                }
                                None => None,
                            };
                            Mapped::Device {
                                memory: shared::ImportedAllocation::import(&ctx, fd.as_fd(), size)
                                    .map_err(|e| {
                                        format!("mapping the producer's GPU memory: {e}")
                                    })?,
                                gpu_id,
                                ready,
                            }
                        }
                        #[cfg(not(feature = "cuda"))]
                        Memory::Device { .. } => {
                            return Err(
                                "GPU frames arrived, but this build has no CUDA support".into()
                            );
                        }
                    };
                    if self.mapped.len() >= wire::MAX_KNOWN && !self.mapped.contains_key(&id) {
                        return Err(format!(
                            "the producer has more than {} allocations mapped here without \
                             forgetting any",
                            wire::MAX_KNOWN
                        ));
                    }
                    self.mapped.insert(id, Arc::new(mapped));
                }
                ToConsumer::Forget { id } => {
                    self.mapped.remove(&id);
                }
                ToConsumer::Buffer(b) => {
                    if self.offset.is_none()
                        && let (Some(pts), Some(now)) = (b.pts, now())
                    {
                        self.offset = Some(now as i128 - pts as i128);
                    }
                    return self.buffer(*b).map(|b| Some(Event::Buffer(b)));
                }
                ToConsumer::Eos => return Ok(Some(Event::Eos)),
            }
            if fds.next().is_some() {
                return Err("the producer sent descriptors with a message that has none".into());
            }
        }
    }

    fn buffer(&mut self, b: wire::Buffer) -> Result<gst::Buffer, String> {
        let caps = self
            .caps
            .clone()
            .ok_or("the producer sent a buffer before its caps")?;
        let release = Arc::new(Release {
            conn: self.conn.clone(),
            seq: b.seq,
        });
        let batched = batch::is_batch(&caps);
        if !batched && b.surfaces.len() != 1 {
            return Err(format!(
                "the producer sent a frame of {} surfaces (one expected)",
                b.surfaces.len()
            ));
        }
        let offset = self.offset.unwrap_or(0);
        let restamp = |t: Option<u64>| {
            t.map(|t| {
                let shifted = t as i128 + offset;
                gst::ClockTime::from_nseconds(shifted.clamp(0, i64::MAX as i128) as u64)
            })
        };
        let mut surfaces = Vec::with_capacity(b.surfaces.len());
        let mut memories = Vec::with_capacity(b.surfaces.len());
        for s in &b.surfaces {
            let mapped = self
                .mapped
                .get(&s.allocation)
                .ok_or_else(|| {
                    format!(
                        "the producer named allocation {} it never sent",
                        s.allocation
                    )
                })?
                .clone();
            let stream = self.stream(s, batched.then_some(&s.caps), &caps)?;
            let memory = self.memory(s, &stream.info, mapped, &release)?;
            if batched {
                let mut buffer = gst::Buffer::new();
                {
                    let buffer = buffer.get_mut().expect("new buffers are writable");
                    buffer.append_memory(memory);
                    buffer.set_pts(restamp(s.pts));
                    buffer.set_duration(s.duration.map(gst::ClockTime::from_nseconds));
                }
                surfaces.push(Surface { buffer, stream });
            } else {
                memories.push(memory);
            }
        }
        let mut out = gst::Buffer::new();
        {
            let out = out.get_mut().expect("new buffers are writable");
            for m in memories {
                out.append_memory(m);
            }
            out.set_pts(restamp(b.pts));
            out.set_dts(restamp(b.dts));
            out.set_duration(b.duration.map(gst::ClockTime::from_nseconds));
            out.set_flags(gst::BufferFlags::from_bits_truncate(b.flags));
            if !b.frames.is_empty() || batched {
                let mut frames = Vec::with_capacity(b.frames.len());
                for (line, &surface) in b.frames.iter().zip(&b.surface_index) {
                    let mut frame = ferrostream_core::json::parse_frame_line(line)
                        .map_err(|e| format!("the producer sent unreadable metadata: {e}"))?;
                    frame.surface_index = surface;
                    frames.push(frame);
                }
                BatchMeta::add_with_surfaces(out, Batch { frames }, surfaces);
            }
        }
        Ok(out)
    }

    /// The stream of surface `s`: its source caps (`source_caps` for a batch's surface, else the
    /// stream's `caps`), parsed once per source and caps, not per frame.
    fn stream(
        &mut self,
        s: &wire::Surface,
        source_caps: Option<&String>,
        caps: &gst::Caps,
    ) -> Result<Arc<SourceStream>, String> {
        let key = (s.source_id, source_caps.cloned(), s.stream_id.clone());
        if let Some(stream) = self.streams.get(&key) {
            return Ok(stream.clone());
        }
        let caps = match source_caps {
            Some(c) => output_caps(c)?,
            None => caps.clone(),
        };
        let info = gst_video::VideoInfo::from_caps(&caps)
            .map_err(|_| format!("the producer sent unusable caps {caps}"))?;
        let stream = Arc::new(SourceStream {
            source_id: s.source_id,
            caps,
            info,
            segment: gst::FormattedSegment::new(),
            stream_id: s.stream_id.as_deref().map(Into::into),
        });
        // Bounded: a producer whose sources keep changing caps starts the cache again.
        if self.streams.len() >= wire::MAX_KNOWN {
            self.streams.clear();
        }
        self.streams.insert(key, stream.clone());
        Ok(stream)
    }

    fn memory(
        &self,
        s: &wire::Surface,
        info: &gst_video::VideoInfo,
        mapped: Arc<Mapped>,
        release: &Arc<Release>,
    ) -> Result<gst::Memory, String> {
        let keep = Keep {
            _mapped: mapped.clone(),
            _release: release.clone(),
        };
        // The caps decide what downstream reads the memory as: pixels, or an NvBufSurface.
        let device =
            batch::MemoryKind::from_caps(self.caps.as_ref().expect("buffers come after caps"))
                .is_device();
        if device != mapped.is_device() {
            return Err(format!(
                "the producer's caps say {} memory, but allocation {} is not",
                if device { "device" } else { "system" },
                s.allocation
            ));
        }
        match &*mapped {
            Mapped::Host(segment) => {
                let start = usize::try_from(s.offset).map_err(|_| "offset too large")?;
                let len = usize::try_from(s.size).map_err(|_| "size too large")?;
                if start.checked_add(len).is_none_or(|end| end > segment.len()) || len < info.size()
                {
                    return Err(format!(
                        "the producer described {len} bytes at {start} of a {}-byte file for a {}-byte frame",
                        segment.len(),
                        info.size()
                    ));
                }
                Ok(gst::Memory::from_slice(HostBytes {
                    keep,
                    range: start..start + len,
                }))
            }
            #[cfg(feature = "cuda")]
            Mapped::Device {
                memory,
                gpu_id,
                ready,
            } => {
                // The producer's copy into the slot is done before anyone here reads it
                // (downstream elements take NVMM frames as finished).
                if let Some(event) = ready {
                    event
                        .synchronize()
                        .map_err(|e| format!("waiting for the producer's copy: {e}"))?;
                }
                device_memory(s, info, memory, *gpu_id, self.nvmm_abi, keep)
            }
        }
    }
}

/// An NVMM memory (CUDA device memory surface) for the frame `s` describes in `memory`.
#[cfg(feature = "cuda")]
fn device_memory(
    s: &wire::Surface,
    info: &gst_video::VideoInfo,
    memory: &ferrostream_core::cuda::shared::ImportedAllocation,
    gpu_id: u32,
    abi: ferrostream_core::nvmm::NvmmAbi,
    keep: Keep,
) -> Result<gst::Memory, String> {
    use ferrostream_core::device::{DeviceImage, DevicePlane};
    use ferrostream_core::nvmm::{self, PitchLayout, abi as nvabi};
    let mut image = DeviceImage::unplaced(info.format(), info.width(), info.height())
        .map_err(|e| format!("the producer's frames: {e}"))?;
    let count = image.plane_count().map_err(|e| e.to_string())?;
    if s.planes.len() != count {
        return Err(format!(
            "the producer described {} planes of a {:?} frame, which has {count}",
            s.planes.len(),
            info.format()
        ));
    }
    for (i, p) in s.planes.iter().enumerate() {
        let end = p.pitch as u64 * image.rows(i) as u64;
        if p.pitch < image.row_bytes(i)
            || p.offset
                .checked_add(end)
                .is_none_or(|e| e > memory.size() as u64)
        {
            return Err(format!(
                "plane {i} of a frame lies outside the producer's {}-byte allocation",
                memory.size()
            ));
        }
        image.planes[i] = DevicePlane {
            ptr: memory.ptr() + p.offset,
            pitch: p.pitch,
        };
    }
    let layout = PitchLayout::of_image(&image).map_err(|e| e.to_string())?;
    Ok(nvmm::surface_memory(
        abi,
        gpu_id,
        nvabi::NVBUF_MEM_CUDA_DEVICE,
        &layout,
        image.planes[0].ptr,
        keep,
    ))
}

/// The caps a consumer outputs for the producer's: device frames become NVMM memory (an
/// NvBufSurface pointing into the mapped allocation), whatever device memory they were.
fn output_caps(caps: &str) -> Result<gst::Caps, String> {
    let mut caps: gst::Caps = caps
        .parse()
        .map_err(|_| format!("the producer sent unreadable caps {caps:?}"))?;
    if !caps.is_fixed() {
        return Err(format!("the producer sent caps that are not fixed: {caps}"));
    }
    let caps_mut = caps.make_mut();
    if let Some(features) = caps_mut.features_mut(0)
        && features.contains(CUDA_MEMORY_FEATURE)
    {
        let batched = features.contains(BATCH_FEATURE);
        let mut new = gst::CapsFeatures::new_empty();
        if batched {
            new.add(BATCH_FEATURE);
        }
        new.add(NVMM_FEATURE);
        caps_mut.set_features(0, Some(new));
    }
    Ok(caps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_memory_caps_become_nvmm_and_others_stay() {
        gst::init().unwrap();
        let c = output_caps(
            "video/x-raw(memory:CUDAMemory), format=NV12, width=64, height=48, framerate=30/1",
        )
        .unwrap();
        assert_eq!(
            c.features(0).unwrap().iter().collect::<Vec<_>>(),
            [NVMM_FEATURE]
        );
        let c = output_caps(
            "video/x-raw(ferrostream:batch, memory:CUDAMemory), format=NV12, framerate=30/1",
        )
        .unwrap();
        assert!(batch::is_batch(&c));
        assert!(c.features(0).unwrap().contains(NVMM_FEATURE));
        let c = output_caps("video/x-raw, format=RGBA, width=4, height=4, framerate=0/1").unwrap();
        assert_eq!(batch::MemoryKind::from_caps(&c), batch::MemoryKind::System);
        assert!(output_caps("video/x-raw, format={ NV12, RGBA }").is_err());
        assert!(output_caps("not caps at all (").is_err());
    }
}
