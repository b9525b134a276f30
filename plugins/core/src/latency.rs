// SPDX-License-Identifier: MIT OR Apache-2.0
//! Per-frame latency, as DeepStream's latency measurement: with `rsstreammux
//! latency-tracking=true` every frame carries a [`FrameLatency`](crate::FrameLatency) (when it
//! reached the muxer), and every element that has the frame appends its entry and exit times.
//! Times are the process's monotonic clock ([`now_ns`]), so they compare across elements and
//! threads of one process.
//!
//! Each record is also observed in two Prometheus histograms of [`crate::metrics::global`],
//! labelled `component="<element name>"`:
//! - `ferrostream_component_latency_seconds`: exit less entry, the time in the element;
//! - `ferrostream_frame_latency_seconds`: exit less origin, the time from the muxer to the
//!   element's exit (the last element's is the pipeline's).
//!
//! An element keeps one [`LatencyRecorder`] (named after itself) from start to stop and calls
//! [`LatencyRecorder::record`] as a batch leaves. Frames that are not tracked cost one check and
//! no allocation; the histograms appear with the first tracked frame.
//!
//! ```no_run
//! use ferrostream_core::latency::{LatencyRecorder, now_ns};
//! # fn element(batch: &mut ferrostream_core::Batch) {
//! let recorder = LatencyRecorder::new("infer");
//! let entry = now_ns();
//! // ... work on the batch ...
//! recorder.record(batch, entry);
//! # }
//! ```

use std::sync::{Arc, OnceLock};

use crate::analytics::{Batch, ComponentLatency};
use crate::meta::BatchMeta;
use crate::metrics::{self, Histogram};

/// Time spent in one element (histogram name).
pub const COMPONENT_LATENCY: &str = "ferrostream_component_latency_seconds";
/// Time from the muxer to an element's exit (histogram name).
pub const FRAME_LATENCY: &str = "ferrostream_frame_latency_seconds";

/// The process's monotonic clock in nanoseconds: the clock of every latency record.
pub fn now_ns() -> u64 {
    gst::get_timestamp().nseconds()
}

/// Whether any frame of `batch` is tracked.
pub fn is_tracked(batch: &Batch) -> bool {
    batch.frames.iter().any(|f| f.latency.is_some())
}

struct Histograms {
    component: Histogram,
    frame: Histogram,
}

/// Records one element's entry and exit in tracked frames, and observes them in the latency
/// histograms, whose handles it keeps (the series live as long as the recorder).
pub struct LatencyRecorder {
    component: Arc<str>,
    histograms: OnceLock<Histograms>,
}

impl std::fmt::Debug for LatencyRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatencyRecorder")
            .field("component", &self.component)
            .finish_non_exhaustive()
    }
}

impl LatencyRecorder {
    /// A recorder for the element named `component`. Cheap: the histograms are made when the
    /// first tracked frame is recorded.
    pub fn new(component: impl AsRef<str>) -> Self {
        Self {
            component: Arc::from(component.as_ref()),
            histograms: OnceLock::new(),
        }
    }

    /// The component name recorded.
    pub fn component(&self) -> &str {
        &self.component
    }

    /// Appends this component to every tracked frame of `batch`: entry `entry_ns` (when the
    /// batch reached the element, from [`now_ns`]), exit now.
    pub fn record(&self, batch: &mut Batch, entry_ns: u64) {
        self.record_with(batch, |_| entry_ns);
    }

    /// Records this component in the batch of `buffer` when it has tracked frames, making the
    /// buffer writable first (a shared buffer is copied, its memory is not). For pass-through
    /// elements, which hand on the buffers they receive; untracked buffers are left as they are.
    pub fn record_buffer(&self, buffer: &mut gst::Buffer, entry_ns: u64) {
        if !BatchMeta::of(buffer).is_some_and(|m| is_tracked(m.batch())) {
            return;
        }
        if let Some(mut meta) = buffer.make_mut().meta_mut::<BatchMeta>() {
            self.record(meta.batch_mut(), entry_ns);
        }
    }

    /// Appends this component to every tracked frame of `batch`, each entering at its origin
    /// (the muxer, where frames arrive one by one): exit now.
    pub fn record_from_origin(&self, batch: &mut Batch) {
        self.record_with(batch, |origin| origin);
    }

    fn record_with(&self, batch: &mut Batch, entry: impl Fn(u64) -> u64) {
        let mut exit = None;
        for frame in &mut batch.frames {
            let Some(latency) = frame.latency.as_mut() else {
                continue;
            };
            let exit_ns = *exit.get_or_insert_with(now_ns);
            let entry_ns = entry(latency.origin_ns).min(exit_ns);
            latency.components.push(ComponentLatency {
                component: Arc::clone(&self.component),
                entry_ns,
                exit_ns,
            });
            let h = self.histograms();
            h.component.observe(seconds(exit_ns - entry_ns));
            h.frame
                .observe(seconds(exit_ns.saturating_sub(latency.origin_ns)));
        }
    }

    fn histograms(&self) -> &Histograms {
        self.histograms.get_or_init(|| {
            let registry = metrics::global();
            let labels = [("component", &*self.component)];
            Histograms {
                component: registry.histogram(
                    COMPONENT_LATENCY,
                    "Time a frame spent in a pipeline element (latency tracking)",
                    &labels,
                    metrics::LATENCY_BUCKETS,
                ),
                frame: registry.histogram(
                    FRAME_LATENCY,
                    "Time from a frame's arrival at the muxer to its exit from an element \
                     (latency tracking)",
                    &labels,
                    metrics::LATENCY_BUCKETS,
                ),
            }
        })
    }
}

fn seconds(ns: u64) -> f64 {
    ns as f64 * 1e-9
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analytics::{Frame, FrameLatency};

    fn batch(tracked: bool) -> Batch {
        let mut frames = vec![Frame::new(0, 0, 8, 8), Frame::new(1, 0, 8, 8)];
        if tracked {
            for f in &mut frames {
                f.latency = Some(FrameLatency::new(now_ns()));
            }
        }
        Batch { frames }
    }

    #[test]
    fn records_in_order_with_entry_before_exit() {
        gst::init().unwrap();
        let mut batch = batch(true);
        let mux = LatencyRecorder::new("latency-test-mux");
        let infer = LatencyRecorder::new("latency-test-infer");
        mux.record_from_origin(&mut batch);
        let entry = now_ns();
        infer.record(&mut batch, entry);
        for frame in &batch.frames {
            let latency = frame.latency.as_ref().unwrap();
            let names: Vec<&str> = latency.components.iter().map(|c| &*c.component).collect();
            assert_eq!(names, ["latency-test-mux", "latency-test-infer"]);
            assert_eq!(latency.components[0].entry_ns, latency.origin_ns);
            assert_eq!(latency.components[1].entry_ns, entry);
            for c in &latency.components {
                assert!(c.entry_ns <= c.exit_ns);
            }
            assert_eq!(
                latency.end_to_end_ns(),
                latency.components[1].exit_ns - latency.origin_ns
            );
        }
        let text = metrics::global().render();
        assert!(
            text.contains(
                "ferrostream_component_latency_seconds_count{component=\"latency-test-infer\"} 2"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "ferrostream_frame_latency_seconds_count{component=\"latency-test-mux\"} 2"
            ),
            "{text}"
        );
    }

    #[test]
    fn untracked_frames_are_left_alone() {
        gst::init().unwrap();
        let mut untracked = batch(false);
        let recorder = LatencyRecorder::new("latency-test-untracked");
        recorder.record(&mut untracked, now_ns());
        assert!(untracked.frames.iter().all(|f| f.latency.is_none()));
        let text = metrics::global().render();
        assert!(!text.contains("latency-test-untracked"), "{text}");
    }
}
