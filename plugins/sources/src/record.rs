// SPDX-License-Identifier: MIT OR Apache-2.0
//! Smart record: a ring of one source's encoded video, written to a file around a trigger
//! without decoding again.
//!
//! The ring holds what reached the source's decoder (parsed, before decoding) for at least
//! `cache` of stream time, always starting at a keyframe: a GOP is dropped only when the next
//! keyframe is itself at least `cache` old. A trigger at stream time `T` writes from the last
//! keyframe at or before `T - cache` to `T + duration`; a trigger while a recording is open
//! extends it to its own `T + duration`. Frames after the end stay in the ring (not written)
//! until the stream is [`HOLD`] past it, so that a trigger that arrives late (it comes from an
//! element after the decoder, which runs behind the encoded stream) still extends the same
//! file. Times are the stream's own timestamps (PTS, else DTS) as the decoder sees them; the
//! decoded frames keep them, so a frame's PTS in the batch metadata names the same instant.
//!
//! The file is written by a small pipeline of its own (`appsrc ! parser ! mp4mux|matroskamux !
//! filesink`) to a hidden temporary name beside the final one and renamed when complete. A
//! write that fails (a full disk, a file size limit) or a writer that falls behind by more than
//! [`MAX_PENDING_BYTES`] ends that recording with a [`RecordEvent::Failed`] and removes the
//! partial file; the source goes on. The ring is bounded by bytes too ([`MAX_RING_BYTES`]).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gst::glib;
use gst::prelude::*;

/// How far past a recording's end the stream goes before the file is closed: a trigger within
/// the recording that arrives this late still extends it.
pub const HOLD: gst::ClockTime = gst::ClockTime::from_seconds(2);
/// The most encoded bytes one ring keeps, whatever `cache` says.
pub const MAX_RING_BYTES: usize = 256 << 20;
/// The most bytes waiting to be written before a recording is given up.
pub const MAX_PENDING_BYTES: u64 = 64 << 20;
/// How long a closing file may take to be finished.
const FINISH_TIMEOUT: Duration = Duration::from_secs(10);
/// A recording whose source sends nothing for this long is closed.
const IDLE_CLOSE: Duration = Duration::from_secs(10);

/// The file format of recordings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, glib::Enum)]
#[enum_type(name = "GstRsRecordContainer")]
pub enum Container {
    #[default]
    #[enum_value(name = "MP4 (mp4mux)", nick = "mp4")]
    Mp4,
    #[enum_value(name = "Matroska (matroskamux)", nick = "mkv")]
    Mkv,
}

impl Container {
    fn muxer(self) -> &'static str {
        match self {
            Container::Mp4 => "mp4mux",
            Container::Mkv => "matroskamux",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Container::Mp4 => "mp4",
            Container::Mkv => "mkv",
        }
    }
}

/// How a source records.
#[derive(Debug, Clone)]
pub struct RecordSettings {
    /// Stream time kept before a trigger; zero: no recording.
    pub cache: gst::ClockTime,
    pub dir: PathBuf,
    pub container: Container,
    /// File names are `<prefix>_<unix ms>_<n>.<ext>`.
    pub prefix: String,
    /// Used when a trigger gives no duration.
    pub default_duration: gst::ClockTime,
}

impl Default for RecordSettings {
    fn default() -> Self {
        Self {
            cache: gst::ClockTime::ZERO,
            dir: PathBuf::from("."),
            container: Container::Mp4,
            prefix: "rec".into(),
            default_duration: gst::ClockTime::from_seconds(20),
        }
    }
}

/// A duration given in seconds by a signal or a request; 0 means none (the default).
pub fn seconds(seconds: u32) -> Option<gst::ClockTime> {
    (seconds > 0).then(|| gst::ClockTime::from_seconds(u64::from(seconds)))
}

/// What a `start-record` action signal returns: the file, or `None` after a warning from
/// `element` naming why nothing is recorded.
pub fn signal_reply(
    element: &impl IsA<gst::Element>,
    started: Result<PathBuf, String>,
) -> Option<String> {
    match started {
        Ok(file) => Some(file.to_string_lossy().into_owned()),
        Err(m) => {
            gst::element_warning!(element, gst::ResourceError::Write, ("cannot record: {m}"));
            None
        }
    }
}

/// What a recording reports, in the order it happens.
#[derive(Debug, Clone)]
pub enum RecordEvent {
    Started {
        file: PathBuf,
        trigger: gst::ClockTime,
        start: gst::ClockTime,
    },
    Done {
        file: PathBuf,
        start: gst::ClockTime,
        end: gst::ClockTime,
        frames: u64,
    },
    Failed {
        file: PathBuf,
        reason: String,
    },
}

type Notify = Arc<dyn Fn(RecordEvent) + Send + Sync>;

struct Entry {
    /// Arrival order (decode order): what an open recording has written is counted in it.
    seq: u64,
    time: gst::ClockTime,
    buffer: gst::Buffer,
}

/// The part of an open recording its writer thread shares.
struct Writer {
    appsrc: gst_app::AppSrc,
    file: PathBuf,
    part: PathBuf,
    start: gst::ClockTime,
    /// Subtracted from every timestamp, so the file starts at zero.
    base: gst::ClockTime,
    closing: AtomicBool,
    /// Why writing stopped, for the writer thread to report.
    failure: Mutex<Option<String>>,
    stats: Mutex<WriterStats>,
}

struct WriterStats {
    frames: u64,
    last: gst::ClockTime,
    last_push: Instant,
}

struct Session {
    writer: Arc<Writer>,
    /// Stream time the recording goes to.
    end: gst::ClockTime,
    /// The last entry written (its `seq`).
    written: Option<u64>,
}

#[derive(Default)]
struct Ring {
    caps: Option<gst::Caps>,
    entries: VecDeque<Entry>,
    bytes: usize,
    newest: Option<gst::ClockTime>,
    session: Option<Session>,
    sessions: u64,
    next_seq: u64,
    /// The `seq` of every keyframe in `entries`, oldest first (the first entry is one).
    keys: VecDeque<u64>,
}

impl Ring {
    /// Where the entry `seq` is, or would be (entries hold consecutive `seq`s).
    fn index(&self, seq: u64) -> usize {
        self.entries
            .front()
            .map_or(0, |f| seq.saturating_sub(f.seq) as usize)
    }
}

/// One source's ring and its recording.
pub struct Recorder {
    settings: RecordSettings,
    ring: Mutex<Ring>,
    /// One start at a time: a start opens its file without holding `ring`, which the
    /// streaming thread takes for every buffer.
    starting: Mutex<()>,
    notify: Notify,
    /// Writer threads, to wait for at [`Recorder::shutdown`].
    finishing: Mutex<Vec<mpsc::Receiver<()>>>,
}

impl Recorder {
    pub fn new(
        settings: RecordSettings,
        notify: impl Fn(RecordEvent) + Send + Sync + 'static,
    ) -> Self {
        Self {
            settings,
            ring: Mutex::default(),
            starting: Mutex::default(),
            notify: Arc::new(notify),
            finishing: Mutex::default(),
        }
    }

    pub fn settings(&self) -> &RecordSettings {
        &self.settings
    }

    /// The stream's caps: when they change, what the ring holds no longer continues the
    /// stream, so it is dropped and an open recording closed.
    pub fn set_caps(&self, caps: &gst::Caps) {
        let mut ring = self.ring.lock().unwrap();
        if ring.caps.as_ref().is_some_and(|c| c == caps) {
            return;
        }
        clear(&mut ring);
        ring.caps = Some(caps.clone());
    }

    /// A new stream starts (the source was replaced, a file loops): its timestamps start
    /// afresh, so the ring is emptied and an open recording closed.
    pub fn reset(&self) {
        let mut ring = self.ring.lock().unwrap();
        clear(&mut ring);
        ring.caps = None;
    }

    /// An encoded buffer on its way to the decoder (a streaming thread: nothing here blocks).
    pub fn push(&self, buffer: &gst::Buffer) {
        let Some(time) = buffer.pts().or(buffer.dts()) else {
            return;
        };
        let key = !buffer.flags().contains(gst::BufferFlags::DELTA_UNIT);
        let mut ring = self.ring.lock().unwrap();
        if ring.caps.is_none() || (ring.entries.is_empty() && !key) {
            return;
        }
        ring.bytes += buffer.size();
        ring.newest = Some(ring.newest.map_or(time, |n| n.max(time)));
        let seq = ring.next_seq;
        ring.next_seq += 1;
        if key {
            ring.keys.push_back(seq);
        }
        ring.entries.push_back(Entry {
            seq,
            time,
            buffer: buffer.clone(),
        });
        self.write_pending(&mut ring);
        trim(&mut ring, self.settings.cache);
    }

    /// Starts a recording (or extends the open one) around `trigger` (the newest stream time
    /// when `None` or outside the ring) for `duration` (the default when `None`). Returns the
    /// file the recording goes to.
    pub fn start(
        &self,
        trigger: Option<gst::ClockTime>,
        duration: Option<gst::ClockTime>,
    ) -> Result<PathBuf, String> {
        let _one_at_a_time = self.starting.lock().unwrap();
        let duration = duration
            .filter(|d| !d.is_zero())
            .unwrap_or(self.settings.default_duration);
        let (caps, at, end, first, n) = {
            let mut ring = self.ring.lock().unwrap();
            let (Some(newest), Some(caps)) = (ring.newest, ring.caps.clone()) else {
                return Err("no video from this source yet".into());
            };
            let oldest = ring.entries.front().map_or(newest, |e| e.time);
            let at = trigger
                .filter(|t| (oldest..=newest + HOLD).contains(t))
                .unwrap_or(newest);
            let end = at + duration;
            if let Some(session) = ring.session.as_mut() {
                if at <= session.end {
                    session.end = session.end.max(end);
                    let file = session.writer.file.clone();
                    self.write_pending(&mut ring);
                    return Ok(file);
                }
                // Past the open recording's end (it waits out `HOLD`): that one is complete,
                // this trigger starts the next.
                let done = ring.session.take().expect("checked above");
                close(&done.writer);
            }
            // The last keyframe at or before the trigger less the cache, else the oldest.
            let from = at.saturating_sub(self.settings.cache);
            let first = ring
                .keys
                .iter()
                .rev()
                .map(|&k| &ring.entries[ring.index(k)])
                .find(|e| e.time <= from)
                .or_else(|| ring.entries.front())
                .ok_or("no keyframe in the cache yet")?;
            let start = first.time;
            let base = first.buffer.dts().unwrap_or(start).min(start);
            let first = (first.seq, start, base);
            ring.sessions += 1;
            (caps, at, end, first, ring.sessions)
        };
        let (first_seq, start, base) = first;
        // Made without the ring: the streaming thread goes on meanwhile.
        let writer = self.open(&caps, start, base, n)?;
        let file = writer.file.clone();
        {
            let mut ring = self.ring.lock().unwrap();
            if ring.caps.as_ref() != Some(&caps) {
                close(&writer);
                return Err("the stream changed while the recording started".into());
            }
            // The start keyframe may have left the ring meanwhile: then its oldest (one too).
            let from = ring.index(first_seq);
            ring.session = Some(Session {
                writer,
                end,
                written: None,
            });
            write_from(&mut ring, from);
        }
        (self.notify)(RecordEvent::Started {
            file: file.clone(),
            trigger: at,
            start,
        });
        Ok(file)
    }

    /// Ends the open recording at what was written so far; `false` when none was open.
    pub fn stop(&self) -> bool {
        let session = self.ring.lock().unwrap().session.take();
        session.map(|s| close(&s.writer)).is_some()
    }

    /// Whether a recording is open.
    pub fn recording(&self) -> bool {
        self.ring.lock().unwrap().session.is_some()
    }

    /// Closes an open recording and waits (bounded) for every file to be finished.
    pub fn shutdown(&self) {
        self.stop();
        let waiting: Vec<_> = std::mem::take(&mut *self.finishing.lock().unwrap());
        let deadline = Instant::now() + FINISH_TIMEOUT;
        for done in waiting {
            let _ = done.recv_timeout(deadline.saturating_duration_since(Instant::now()));
        }
    }

    /// Closes a recording whose source has been silent for [`IDLE_CLOSE`] (called from time to
    /// time by the source's worker).
    pub fn close_if_idle(&self) {
        let mut ring = self.ring.lock().unwrap();
        let idle = ring
            .session
            .as_ref()
            .is_some_and(|s| s.writer.stats.lock().unwrap().last_push.elapsed() >= IDLE_CLOSE);
        if idle && let Some(session) = ring.session.take() {
            close(&session.writer);
        }
    }

    /// Writes what the open recording still lacks up to its end, and closes it once the stream
    /// is [`HOLD`] past the end.
    fn write_pending(&self, ring: &mut Ring) {
        let Some(session) = ring.session.as_ref() else {
            return;
        };
        let from = session.written.map_or(0, |w| ring.index(w + 1));
        write_from(ring, from);
        let (Some(newest), Some(session)) = (ring.newest, ring.session.as_ref()) else {
            return;
        };
        if newest >= session.end + HOLD {
            let session = ring.session.take().expect("checked above");
            close(&session.writer);
        }
    }

    /// A writer pipeline for a new file, and the thread that finishes it.
    fn open(
        &self,
        caps: &gst::Caps,
        start: gst::ClockTime,
        base: gst::ClockTime,
        n: u64,
    ) -> Result<Arc<Writer>, String> {
        let s = &self.settings;
        std::fs::create_dir_all(&s.dir)
            .map_err(|e| format!("cannot make the directory {}: {e}", s.dir.display()))?;
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let name = format!("{}_{unix_ms}_{n}.{}", s.prefix, s.container.extension());
        let file = s.dir.join(&name);
        let part = s.dir.join(format!(".{name}.part"));
        let pipeline = writer_pipeline(caps, s.container, &part)?;
        let appsrc = pipeline
            .by_name("src")
            .and_then(|e| e.downcast::<gst_app::AppSrc>().ok())
            .expect("made above");
        pipeline
            .set_state(gst::State::Playing)
            .map_err(|_| format!("cannot start writing {}", part.display()))?;
        let writer = Arc::new(Writer {
            appsrc,
            file,
            part,
            start,
            base,
            closing: AtomicBool::new(false),
            failure: Mutex::new(None),
            stats: Mutex::new(WriterStats {
                frames: 0,
                last: start,
                last_push: Instant::now(),
            }),
        });
        let (done, waiting) = mpsc::channel();
        self.finishing.lock().unwrap().push(waiting);
        let notify = self.notify.clone();
        let finished = writer.clone();
        std::thread::Builder::new()
            .name("rsrecord".into())
            .spawn(move || {
                let event = finish(&pipeline, &finished);
                let _ = pipeline.set_state(gst::State::Null);
                if !matches!(event, RecordEvent::Done { .. }) {
                    let _ = std::fs::remove_file(&finished.part);
                }
                notify(event);
                let _ = done.send(());
            })
            .map_err(|e| format!("cannot start a writer thread: {e}"))?;
        Ok(writer)
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn clear(ring: &mut Ring) {
    if let Some(session) = ring.session.take() {
        close(&session.writer);
    }
    ring.entries.clear();
    ring.keys.clear();
    ring.bytes = 0;
    ring.newest = None;
}

/// Drops whole GOPs from the front while the next keyframe is at least `cache` old, never
/// what an open recording has not written yet; and whatever it takes to stay within
/// [`MAX_RING_BYTES`] (everything, when one GOP alone is larger: the ring then starts again at
/// the next keyframe).
fn trim(ring: &mut Ring, cache: gst::ClockTime) {
    let Some(newest) = ring.newest else { return };
    let written = ring.session.as_ref().map(|s| s.written);
    loop {
        let too_big = ring.bytes > MAX_RING_BYTES;
        let Some(&next_key) = ring.keys.get(1) else {
            if too_big {
                ring.entries.clear();
                ring.keys.clear();
                ring.bytes = 0;
            }
            return;
        };
        let next = ring.index(next_key);
        let old_enough = ring.entries[next].time + cache <= newest;
        // An open recording has not written all that would go.
        let still_needed = written.is_some_and(|w| w.is_none_or(|w| next_key - 1 > w));
        if !(too_big || (old_enough && !still_needed)) {
            return;
        }
        for entry in ring.entries.drain(..next) {
            ring.bytes -= entry.buffer.size();
        }
        ring.keys.pop_front();
    }
}

/// Writes the ring's entries from index `from` that the open recording's end covers.
fn write_from(ring: &mut Ring, from: usize) {
    let Some(session) = ring.session.as_mut() else {
        return;
    };
    let mut failure = None;
    // In decode order, up to the first frame past the end (frames after it may depend on it).
    for entry in ring.entries.iter().skip(from) {
        if entry.time > session.end {
            break;
        }
        if let Err(reason) = write(&session.writer, &entry.buffer, entry.time) {
            failure = Some(reason);
            break;
        }
        session.written = Some(entry.seq);
    }
    if let Some(reason) = failure {
        // The writer thread stops the pipeline, removes the partial file and reports it.
        let session = ring.session.take().expect("checked above");
        *session.writer.failure.lock().unwrap() = Some(reason);
        session.writer.closing.store(true, Ordering::SeqCst);
    }
}

fn write(writer: &Writer, buffer: &gst::Buffer, time: gst::ClockTime) -> Result<(), String> {
    if writer.appsrc.current_level_bytes() > MAX_PENDING_BYTES {
        return Err(format!(
            "writing {} fell {} MiB behind (a slow or full disk)",
            writer.part.display(),
            MAX_PENDING_BYTES >> 20
        ));
    }
    let mut out = buffer.copy();
    {
        let out = out.make_mut();
        out.set_pts(buffer.pts().map(|t| t.saturating_sub(writer.base)));
        out.set_dts(buffer.dts().map(|t| t.saturating_sub(writer.base)));
    }
    writer
        .appsrc
        .push_buffer(out)
        .map_err(|e| format!("cannot write {}: {e:?}", writer.part.display()))?;
    let mut stats = writer.stats.lock().unwrap();
    stats.frames += 1;
    stats.last = stats.last.max(time);
    stats.last_push = Instant::now();
    Ok(())
}

fn close(writer: &Writer) {
    if !writer.closing.swap(true, Ordering::SeqCst) {
        let _ = writer.appsrc.end_of_stream();
    }
}

/// Waits for the writer pipeline to finish the file (or fail) and says how it went.
fn finish(pipeline: &gst::Pipeline, writer: &Writer) -> RecordEvent {
    let bus = pipeline.bus().expect("a pipeline has a bus");
    let mut closing_since: Option<Instant> = None;
    loop {
        let message = bus.timed_pop_filtered(
            gst::ClockTime::from_mseconds(100),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        );
        match message.as_ref().map(|m| m.view()) {
            Some(gst::MessageView::Eos(_)) => {
                return match std::fs::rename(&writer.part, &writer.file) {
                    Ok(()) => {
                        let stats = writer.stats.lock().unwrap();
                        RecordEvent::Done {
                            file: writer.file.clone(),
                            start: writer.start,
                            end: stats.last,
                            frames: stats.frames,
                        }
                    }
                    Err(e) => RecordEvent::Failed {
                        file: writer.file.clone(),
                        reason: format!("cannot rename {}: {e}", writer.part.display()),
                    },
                };
            }
            Some(gst::MessageView::Error(e)) => {
                close(writer);
                let reason = match e.debug() {
                    Some(d) => format!("{} ({d})", e.error()),
                    None => e.error().to_string(),
                };
                return RecordEvent::Failed {
                    file: writer.file.clone(),
                    reason: format!("writing {} failed: {reason}", writer.part.display()),
                };
            }
            _ => {}
        }
        if let Some(reason) = writer.failure.lock().unwrap().take() {
            return RecordEvent::Failed {
                file: writer.file.clone(),
                reason,
            };
        }
        if writer.closing.load(Ordering::SeqCst) {
            let since = *closing_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= FINISH_TIMEOUT {
                return RecordEvent::Failed {
                    file: writer.file.clone(),
                    reason: format!(
                        "{} was not finished within {} s",
                        writer.part.display(),
                        FINISH_TIMEOUT.as_secs()
                    ),
                };
            }
        }
    }
}

/// The caps to write `caps`' stream with: DivX 4/5 and Xvid (AVI files) are MPEG-4 part 2
/// video, which the MP4 and Matroska muxers take under that name.
fn file_caps(caps: &gst::Caps) -> gst::Caps {
    let Some(s) = caps.structure(0) else {
        return caps.clone();
    };
    let mpeg4 = match s.name().as_str() {
        "video/x-divx" => s.get::<i32>("divxversion").is_ok_and(|v| v >= 4),
        "video/x-xvid" => true,
        _ => false,
    };
    if !mpeg4 {
        return caps.clone();
    }
    let mut out = gst::Structure::builder("video/mpeg")
        .field("mpegversion", 4i32)
        .field("systemstream", false)
        .build();
    for field in [
        "width",
        "height",
        "framerate",
        "pixel-aspect-ratio",
        "codec_data",
    ] {
        if let Ok(v) = s.value(field) {
            out.set_value(field, v.clone());
        }
    }
    gst::Caps::builder_full().structure(out).build()
}

/// `appsrc ! parser ! muxer ! filesink` for encoded video of `caps`.
fn writer_pipeline(
    caps: &gst::Caps,
    container: Container,
    part: &Path,
) -> Result<gst::Pipeline, String> {
    let make = |factory: &str| {
        gst::ElementFactory::make(factory)
            .build()
            .map_err(|_| format!("recording needs the `{factory}` element, which is not installed"))
    };
    let caps = &file_caps(caps);
    let appsrc = gst_app::AppSrc::builder()
        .name("src")
        .caps(caps)
        .format(gst::Format::Time)
        .block(false)
        .build();
    let structure = caps.structure(0).ok_or("the stream has empty caps")?;
    let parser = match structure.name().as_str() {
        "video/x-h264" => Some("h264parse"),
        "video/x-h265" => Some("h265parse"),
        "video/mpeg" => Some("mpeg4videoparse"),
        "image/jpeg" => Some("jpegparse"),
        "video/x-vp8" | "video/x-vp9" | "video/x-av1" | "video/x-divx" | "video/x-msmpeg"
        | "video/x-xvid" => None,
        other => {
            return Err(format!(
                "recording {other} is not supported (H.264, H.265, MPEG-4, DivX, JPEG, VP8, VP9 and AV1 are)"
            ));
        }
    };
    let muxer = make(container.muxer())?;
    let takes = muxer
        .pad_template_list()
        .iter()
        .any(|t| t.direction() == gst::PadDirection::Sink && t.caps().can_intersect(caps));
    if !takes {
        return Err(format!(
            "{} does not take {} (record-container=mkv takes more codecs)",
            container.muxer(),
            structure.name()
        ));
    }
    let sink = gst::ElementFactory::make("filesink")
        .property("location", part.to_string_lossy().as_ref())
        .property("async", false)
        .build()
        .map_err(|e| format!("cannot make filesink: {e}"))?;
    let pipeline = gst::Pipeline::with_name("rsrecord");
    let mut chain: Vec<gst::Element> = vec![appsrc.upcast()];
    if let Some(parser) = parser {
        chain.push(make(parser)?);
    }
    chain.push(muxer);
    chain.push(sink);
    pipeline
        .add_many(&chain)
        .map_err(|e| format!("cannot assemble the writer: {e}"))?;
    gst::Element::link_many(&chain).map_err(|e| {
        format!(
            "cannot link the writer for {}: {e}",
            caps.structure(0)
                .map_or("?".into(), |s| s.name().to_string())
        )
    })?;
    Ok(pipeline)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(ms: u64, key: bool, size: usize) -> gst::Buffer {
        let mut b = gst::Buffer::with_size(size).unwrap();
        {
            let b = b.get_mut().unwrap();
            b.set_pts(gst::ClockTime::from_mseconds(ms));
            if !key {
                b.set_flags(gst::BufferFlags::DELTA_UNIT);
            }
        }
        b
    }

    fn recorder(cache_ms: u64) -> Recorder {
        gst::init().unwrap();
        let settings = RecordSettings {
            cache: gst::ClockTime::from_mseconds(cache_ms),
            ..Default::default()
        };
        let r = Recorder::new(settings, |_| {});
        r.set_caps(&gst::Caps::builder("video/x-h264").build());
        r
    }

    #[test]
    fn ring_starts_at_a_keyframe_old_enough_for_the_cache() {
        let r = recorder(1000);
        // A keyframe every 500 ms, frames every 100 ms, 5 s.
        for i in 0..50u64 {
            r.push(&buffer(i * 100, i % 5 == 0, 10));
        }
        let ring = r.ring.lock().unwrap();
        let first = ring.entries.front().unwrap();
        assert_eq!(ring.keys.front(), Some(&first.seq));
        // Newest 4.9 s: the ring must reach back to a keyframe at or before 3.9 s, and not
        // hold a whole GOP more than needed.
        assert_eq!(first.time, gst::ClockTime::from_mseconds(3500));
        assert_eq!(ring.bytes, ring.entries.len() * 10);
    }

    #[test]
    fn ring_never_starts_with_a_delta_frame() {
        let r = recorder(1000);
        r.push(&buffer(0, false, 10));
        r.push(&buffer(100, false, 10));
        assert!(r.ring.lock().unwrap().entries.is_empty());
        r.push(&buffer(200, true, 10));
        assert_eq!(r.ring.lock().unwrap().entries.len(), 1);
    }

    #[test]
    fn ring_is_bounded_by_bytes() {
        let r = recorder(3_600_000);
        let size = 8 << 20;
        for i in 0..64u64 {
            r.push(&buffer(i * 100, i % 4 == 0, size));
        }
        let ring = r.ring.lock().unwrap();
        assert!(ring.bytes <= MAX_RING_BYTES + 4 * size, "{}", ring.bytes);
        assert_eq!(ring.keys.front(), Some(&ring.entries.front().unwrap().seq));
    }

    #[test]
    fn ring_with_one_keyframe_is_bounded_by_bytes() {
        let r = recorder(3_600_000);
        let size = 8 << 20;
        r.push(&buffer(0, true, size));
        for i in 1..64u64 {
            r.push(&buffer(i * 100, false, size));
        }
        let ring = r.ring.lock().unwrap();
        assert!(ring.bytes <= MAX_RING_BYTES, "{}", ring.bytes);
        // Cleared: it waits for the next keyframe.
        assert!(ring.entries.is_empty());
    }

    #[test]
    fn a_change_of_caps_empties_the_ring() {
        let r = recorder(1000);
        r.push(&buffer(0, true, 10));
        r.set_caps(&gst::Caps::builder("video/x-h265").build());
        assert!(r.ring.lock().unwrap().entries.is_empty());
        assert!(r.start(None, None).is_err());
    }
}
