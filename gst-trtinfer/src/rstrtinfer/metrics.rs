// SPDX-License-Identifier: MIT OR Apache-2.0
//! The element's Prometheus series (labelled `element="<name>"`) and its latency records, from
//! start to stop. They are updated where the `stats` property's counts are, so the two agree.

use ferrostream_core::latency::LatencyRecorder;
use ferrostream_core::metrics::{self, Counter, Gauge, Histogram};

#[derive(Debug)]
pub struct InferMetrics {
    /// Buffers (frames or batches) run through the engine.
    pub batches: Counter,
    /// Frames seen.
    pub frames: Counter,
    /// Engine time per inferred buffer.
    pub engine_seconds: Histogram,
    /// Buffers whose work is queued (GPU or inference server path).
    pub queue_depth: Gauge,
    /// Frames passed on without inference (`interval`, or no answer from the server).
    pub frames_skipped: Counter,
    pub latency: LatencyRecorder,
}

impl InferMetrics {
    pub fn new(element: &str) -> Self {
        let registry = metrics::global();
        let labels = [("element", element)];
        Self {
            batches: registry.counter(
                "ferrostream_inference_batches_total",
                "Buffers (frames or batches) run through the inference engine",
                &labels,
            ),
            frames: registry.counter(
                "ferrostream_inference_frames_total",
                "Frames that reached the inference element",
                &labels,
            ),
            engine_seconds: registry.histogram(
                "ferrostream_inference_engine_seconds",
                "Engine time per inferred buffer",
                &labels,
                metrics::LATENCY_BUCKETS,
            ),
            queue_depth: registry.gauge(
                "ferrostream_inference_queue_depth",
                "Buffers in flight: queued on the GPU or waiting for the inference server",
                &labels,
            ),
            frames_skipped: registry.counter(
                "ferrostream_inference_frames_skipped_total",
                "Frames passed on without inference (interval, or no answer from the server)",
                &labels,
            ),
            latency: LatencyRecorder::new(element),
        }
    }
}
