//! Batches in flight: the queue between the streaming thread, which queues each buffer's GPU
//! work without waiting, and the output thread, which waits for the oldest batch, parses it and
//! pushes it downstream, in order. At most [`DEPTH`] buffers are in flight, so batch k+1 is
//! pre-processed and queued while batch k runs, and memory stays bounded.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Buffers queued on the GPU at most, per element.
pub const DEPTH: usize = 3;

/// One buffer in flight.
pub struct InFlight {
    pub buffer: gst::Buffer,
    /// The engine calls queued for it (none for a buffer `interval` skips).
    #[cfg(feature = "cuda")]
    pub pending: Vec<crate::gpu::run::Pending>,
    /// The buffer's number (for `interval` and frame metadata).
    pub number: u64,
    pub frames: usize,
    /// A plain frame's size (it gets its frame metadata when it leaves).
    pub single_size: Option<(u32, u32)>,
    /// When it entered the element, and how long its queuing took on the host.
    pub arrived: Instant,
    pub queue_time: Duration,
}

#[derive(Default)]
struct Shared {
    queue: VecDeque<InFlight>,
    /// The output thread holds an item (taken from the queue, not yet pushed).
    busy: bool,
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
    /// Waits until fewer than [`DEPTH`] buffers are in flight; returns the pending flow error,
    /// or `Flushing` while flushing.
    pub fn wait_for_room(&self) -> Result<(), gst::FlowError> {
        let mut s = self.shared.lock().unwrap();
        loop {
            if s.flushing || s.stop {
                return Err(gst::FlowError::Flushing);
            }
            if let Some(e) = s.error {
                return Err(e);
            }
            if s.queue.len() + usize::from(s.busy) < DEPTH {
                return Ok(());
            }
            s = self.changed.wait(s).unwrap();
        }
    }

    pub fn push(&self, item: InFlight) {
        self.shared.lock().unwrap().queue.push_back(item);
        self.changed.notify_all();
    }

    /// The output thread's next item; `None` when stopping with nothing left. The boolean says
    /// whether the element is flushing (the item is then dropped, not pushed).
    pub fn next(&self) -> Option<(InFlight, bool)> {
        let mut s = self.shared.lock().unwrap();
        loop {
            if let Some(item) = s.queue.pop_front() {
                s.busy = true;
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
        if let Err(e) = result
            && !s.flushing
            && e != gst::FlowError::Flushing
        {
            s.error.get_or_insert(e);
        }
        drop(s);
        self.changed.notify_all();
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
            *s = Shared::default();
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
        assert!(f.wait_for_room().is_ok());
        f.done(Err(gst::FlowError::NotLinked));
        assert_eq!(f.wait_for_room(), Err(gst::FlowError::NotLinked));
        f.set_flushing(true);
        assert_eq!(f.wait_for_room(), Err(gst::FlowError::Flushing));
        f.set_flushing(false);
        assert!(f.wait_for_room().is_ok(), "a flush clears the error");
        f.drain();
    }
}
