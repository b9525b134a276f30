// SPDX-License-Identifier: MIT OR Apache-2.0
//! Batches in flight: the queue between the streaming thread, which queues each buffer's work
//! without waiting (GPU work on the engine's stream, or a request to an inference server), and
//! the output thread, which waits for the oldest buffer, parses it and pushes it downstream, in
//! order. Buffers and requests in flight are bounded ([`Limits`]), so batch k+1 is prepared
//! while batch k runs, and memory stays bounded.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Buffers queued on the GPU at most, per element.
pub const DEPTH: usize = 3;

/// How much may be in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Buffers, whatever their work.
    pub buffers: usize,
    /// Buffers waiting for an inference server's answer.
    pub requests: usize,
}

impl Limits {
    /// GPU work: [`DEPTH`] buffers.
    pub const DEVICE: Limits = Limits {
        buffers: DEPTH,
        requests: DEPTH,
    };

    /// An inference server with `requests` batches in flight; buffers without a request
    /// (skipped by `interval`, or passed on without results) queue behind them, up to four
    /// times as many.
    pub fn remote(requests: usize) -> Limits {
        let requests = requests.max(1);
        Limits {
            buffers: requests * 4,
            requests,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEVICE
    }
}

/// What a buffer in flight waits for.
pub enum Queued {
    /// Nothing: a buffer `interval` skips.
    Nothing,
    /// The server was not asked: as many requests as allowed were in flight
    /// (`on-server-failure=drop`); the frames go on without results.
    Skipped,
    /// GPU work queued on the engine's stream.
    #[cfg(feature = "cuda")]
    Device(Vec<crate::gpu::run::Pending>),
    /// Requests to the inference server.
    Remote(Vec<crate::inference::RemoteBatch>),
}

impl Queued {
    fn is_request(&self) -> bool {
        matches!(self, Queued::Remote(_))
    }
}

/// One buffer in flight.
pub struct InFlight {
    pub buffer: gst::Buffer,
    pub queued: Queued,
    /// The buffer's number (for `interval` and frame metadata).
    pub number: u64,
    /// The element's `gie-unique-id`, which the objects get.
    pub component: i32,
    pub frames: usize,
    /// A plain frame's size (it gets its frame metadata when it leaves).
    pub single_size: Option<(u32, u32)>,
    /// When it entered the element, and how long its queuing took on the host.
    pub arrived: Instant,
    pub queue_time: Duration,
    /// When it reached the element on the latency records' clock (before waiting for room).
    pub entry_ns: u64,
}

#[derive(Default)]
struct Shared {
    queue: VecDeque<InFlight>,
    limits: Limits,
    /// Buffers in the queue or held by the output thread that wait for a server's answer.
    requests: usize,
    /// The output thread holds an item (taken from the queue, not yet pushed), and whether it
    /// is a request.
    busy: bool,
    busy_request: bool,
    flushing: bool,
    stop: bool,
    /// The last flow error of a downstream push, returned to upstream at the next buffer.
    error: Option<gst::FlowError>,
}

/// The queue and its condition variable.
#[derive(Default)]
pub struct Flight {
    shared: Mutex<Shared>,
    changed: Condvar,
}

impl Flight {
    /// Sets how much may be in flight (when the caps are set, before the first buffer).
    pub fn set_limits(&self, limits: Limits) {
        self.shared.lock().unwrap().limits = limits;
        self.changed.notify_all();
    }

    /// Waits until there is room for one more buffer (and, with `request`, one more request to
    /// the server); returns the pending flow error, or `Flushing` while flushing.
    pub fn wait_for_room(&self, request: bool) -> Result<(), gst::FlowError> {
        let mut s = self.shared.lock().unwrap();
        loop {
            if s.flushing || s.stop {
                return Err(gst::FlowError::Flushing);
            }
            if let Some(e) = s.error {
                return Err(e);
            }
            let buffers = s.queue.len() + usize::from(s.busy);
            if buffers < s.limits.buffers && (!request || s.requests < s.limits.requests) {
                return Ok(());
            }
            s = self.changed.wait(s).unwrap();
        }
    }

    /// Whether one more request to the server may be sent now.
    pub fn request_room(&self) -> bool {
        let s = self.shared.lock().unwrap();
        s.requests < s.limits.requests
    }

    /// Whether the output thread should stop waiting for its item (flushing or stopping).
    pub fn interrupted(&self) -> bool {
        let s = self.shared.lock().unwrap();
        s.flushing || s.stop
    }

    pub fn push(&self, item: InFlight) {
        let mut s = self.shared.lock().unwrap();
        s.requests += usize::from(item.queued.is_request());
        s.queue.push_back(item);
        drop(s);
        self.changed.notify_all();
    }

    /// The output thread's next item; `None` when stopping with nothing left. The boolean says
    /// whether the element is flushing (the item is then dropped, not pushed).
    pub fn next(&self) -> Option<(InFlight, bool)> {
        let mut s = self.shared.lock().unwrap();
        loop {
            if let Some(item) = s.queue.pop_front() {
                s.busy = true;
                s.busy_request = item.queued.is_request();
                return Some((item, s.flushing));
            }
            if s.stop {
                return None;
            }
            s = self.changed.wait(s).unwrap();
        }
    }

    /// The output thread finished its item, pushing it with `result`.
    pub fn done(&self, result: Result<gst::FlowSuccess, gst::FlowError>) {
        let mut s = self.shared.lock().unwrap();
        s.busy = false;
        if std::mem::take(&mut s.busy_request) {
            s.requests -= 1;
        }
        if let Err(e) = result
            && !s.flushing
            && e != gst::FlowError::Flushing
        {
            s.error.get_or_insert(e);
        }
        drop(s);
        self.changed.notify_all();
    }

    /// Buffers in flight: queued, or held by the output thread.
    pub fn in_flight(&self) -> usize {
        let s = self.shared.lock().unwrap();
        s.queue.len() + usize::from(s.busy)
    }

    /// Waits until every buffer in flight has left (before a serialized event goes downstream,
    /// so that it keeps its place after the buffers).
    pub fn drain(&self) {
        let mut s = self.shared.lock().unwrap();
        while !s.queue.is_empty() || s.busy {
            s = self.changed.wait(s).unwrap();
        }
    }

    pub fn set_flushing(&self, flushing: bool) {
        let mut s = self.shared.lock().unwrap();
        s.flushing = flushing;
        if !flushing {
            s.error = None;
        }
        drop(s);
        self.changed.notify_all();
    }

    /// Asks the output thread to finish (after what is queued, dropped when flushing).
    pub fn stop(&self, stop: bool) {
        let mut s = self.shared.lock().unwrap();
        s.stop = stop;
        if stop {
            s.flushing = true;
        } else {
            let limits = s.limits;
            *s = Shared {
                limits,
                ..Shared::default()
            };
        }
        drop(s);
        self.changed.notify_all();
    }
}

/// In-to-out times of batches: the element's latency, reported in the latency query and
/// raised (with a latency message) when the batches take longer than reported.
#[derive(Debug, Default)]
pub struct LatencyTracker {
    /// Every time seen, for the summary at stop (milliseconds).
    all: Vec<f32>,
    /// The reported latency.
    reported: Option<gst::ClockTime>,
}

/// Batches not counted towards the reported latency and the steady throughput: the first ones
/// include cuDNN's algorithm search and memory pool growth.
const WARM_UP: usize = 8;

/// Frames per second once warmed up: from the output of the batch after the warm-up to the last
/// one (what a pipeline that runs for hours sustains; the first batches take seconds of tuning).
#[derive(Debug, Default)]
pub struct Throughput {
    batches: usize,
    frames: u64,
    start: Option<(Instant, u64)>,
    last: Option<Instant>,
}

impl Throughput {
    pub fn record(&mut self, frames: u64) {
        let now = Instant::now();
        self.batches += 1;
        self.frames += frames;
        if self.batches == WARM_UP + 1 {
            self.start = Some((now, self.frames));
        }
        self.last = Some(now);
    }

    /// Frames per second after the warm-up, and the seconds that covers; `None` before two
    /// batches past it.
    pub fn steady(&self) -> Option<(f64, f64)> {
        let (t0, before) = self.start?;
        let seconds = self.last?.duration_since(t0).as_secs_f64();
        (seconds > 0.0).then(|| ((self.frames - before) as f64 / seconds, seconds))
    }
}
/// Times kept for the summary.
const MAX_KEPT: usize = 1 << 20;

impl LatencyTracker {
    /// Records one batch; returns the new latency to report when the recent batches took
    /// longer than the reported latency (the 95th percentile of the last 64, plus a quarter).
    pub fn record(&mut self, elapsed: Duration) -> Option<gst::ClockTime> {
        if self.all.len() < MAX_KEPT {
            self.all.push(elapsed.as_secs_f32() * 1e3);
        }
        let n = self.all.len();
        if n <= WARM_UP {
            return None;
        }
        let mut recent: Vec<f32> = self.all[n.saturating_sub(64).max(WARM_UP)..].to_vec();
        let p95 = percentile(&mut recent, 0.95);
        let needed = gst::ClockTime::from_nseconds((p95 as f64 * 1.25e6) as u64);
        if self.reported.is_none_or(|r| needed > r) {
            self.reported = Some(needed);
            return Some(needed);
        }
        None
    }

    pub fn reported(&self) -> Option<gst::ClockTime> {
        self.reported
    }

    /// The median and 95th percentile of every batch's time, in milliseconds.
    pub fn summary(&self) -> (f32, f32) {
        let mut all = self.all.clone();
        (percentile(&mut all, 0.5), percentile(&mut all, 0.95))
    }
}

fn percentile(values: &mut [f32], p: f32) -> f32 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f32::total_cmp);
    let i = ((values.len() - 1) as f32 * p).round() as usize;
    values[i]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_is_raised_after_warm_up_only_when_batches_take_longer() {
        let mut t = LatencyTracker::default();
        for _ in 0..WARM_UP {
            assert_eq!(t.record(Duration::from_millis(500)), None, "warm-up");
        }
        let first = t.record(Duration::from_millis(10)).expect("first report");
        assert_eq!(first, gst::ClockTime::from_nseconds(12_500_000));
        assert_eq!(
            t.record(Duration::from_millis(8)),
            None,
            "faster: unchanged"
        );
        for _ in 0..64 {
            t.record(Duration::from_millis(20));
        }
        assert_eq!(t.reported(), Some(gst::ClockTime::from_mseconds(25)));
        let (p50, p95) = t.summary();
        assert_eq!((p50, p95), (20.0, 500.0));
    }

    #[test]
    fn steady_throughput_starts_after_the_warm_up() {
        let mut t = Throughput::default();
        for _ in 0..=WARM_UP {
            t.record(4);
        }
        assert_eq!(t.steady(), None, "one batch past the warm-up");
        std::thread::sleep(Duration::from_millis(20));
        t.record(4);
        let (fps, seconds) = t.steady().expect("two batches past the warm-up");
        assert!(seconds >= 0.02);
        // The last batch's 4 frames over at least 20 ms.
        assert!(fps > 0.0 && fps <= 4.0 / 0.02, "{fps}");
    }

    #[test]
    fn room_flushing_and_errors() {
        let f = Flight::default();
        assert!(f.wait_for_room(false).is_ok());
        f.done(Err(gst::FlowError::NotLinked));
        assert_eq!(f.wait_for_room(false), Err(gst::FlowError::NotLinked));
        f.set_flushing(true);
        assert_eq!(f.wait_for_room(false), Err(gst::FlowError::Flushing));
        assert!(f.interrupted());
        f.set_flushing(false);
        assert!(f.wait_for_room(false).is_ok(), "a flush clears the error");
        f.drain();
    }

    fn item(queued: Queued) -> InFlight {
        InFlight {
            buffer: gst::Buffer::new(),
            queued,
            number: 0,
            component: 1,
            frames: 1,
            single_size: None,
            arrived: Instant::now(),
            queue_time: Duration::ZERO,
            entry_ns: 0,
        }
    }

    #[test]
    fn requests_and_buffers_are_bounded_separately() {
        gst::init().unwrap();
        let f = Flight::default();
        f.set_limits(Limits::remote(1));
        assert!(f.request_room());
        f.push(item(Queued::Remote(Vec::new())));
        assert!(!f.request_room(), "one request in flight");
        // Buffers without a request still have room, up to four per request.
        for _ in 0..3 {
            assert!(f.wait_for_room(false).is_ok());
            f.push(item(Queued::Skipped));
        }
        let (first, _) = f.next().unwrap();
        assert!(first.queued.is_request());
        assert!(!f.request_room(), "the held item is still a request");
        f.done(Ok(gst::FlowSuccess::Ok));
        assert!(f.request_room(), "its answer frees the room");
        for _ in 0..3 {
            let _ = f.next().unwrap();
            f.done(Ok(gst::FlowSuccess::Ok));
        }
        f.drain();
    }
}
