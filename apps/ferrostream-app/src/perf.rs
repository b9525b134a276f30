// SPDX-License-Identifier: MIT OR Apache-2.0
//! Throughput as deepstream-app prints it (`**PERF:` lines: frames/s per stream, current and
//! average), and what it cannot tell: how busy the pipeline was. A live camera paces a
//! pipeline, so its frames/s say nothing of the pipeline's speed; the busiest stage's share of
//! the wall time does. Each analysis element is timed from a buffer entering its sink pad to a
//! buffer leaving its source pad; a stage counts as busy while at least one buffer is inside
//! it (elements that keep several batches in flight are not counted twice).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Frames counted per stream since the start and since the last report.
#[derive(Debug, Default)]
struct Streams {
    total: BTreeMap<u32, u64>,
    since: BTreeMap<u32, u64>,
}

/// One timed element.
#[derive(Debug)]
struct Stage {
    name: String,
    inside: u32,
    entered: Option<Instant>,
    busy: Duration,
    busy_since_report: Duration,
}

/// The counters the pad probes update and the report reads.
#[derive(Debug)]
pub struct Perf {
    started: Instant,
    last: Mutex<Instant>,
    streams: Mutex<Streams>,
    stages: Mutex<Vec<Stage>>,
    live: Vec<u32>,
}

/// One report: per-stream rates and the busiest stage.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// (stream, current frames/s, average frames/s).
    pub streams: Vec<(u32, f64, f64)>,
    /// (stage, share of the interval it was busy), the busiest first.
    pub busiest: Option<(String, f64)>,
    /// Frames the pipeline handled per second in the interval (all streams).
    pub frames_per_s: f64,
    pub live: bool,
}

impl Perf {
    pub fn new(stages: &[String], live: Vec<u32>) -> Arc<Self> {
        let now = Instant::now();
        Arc::new(Self {
            started: now,
            last: Mutex::new(now),
            streams: Mutex::new(Streams::default()),
            stages: Mutex::new(
                stages
                    .iter()
                    .map(|name| Stage {
                        name: name.clone(),
                        inside: 0,
                        entered: None,
                        busy: Duration::ZERO,
                        busy_since_report: Duration::ZERO,
                    })
                    .collect(),
            ),
            live,
        })
    }

    /// A frame of `source` went through the pipeline.
    pub fn frame(&self, source: u32) {
        let mut s = self.streams.lock().unwrap();
        *s.total.entry(source).or_default() += 1;
        *s.since.entry(source).or_default() += 1;
    }

    /// A buffer entered stage `index`.
    pub fn enter(&self, index: usize) {
        let mut stages = self.stages.lock().unwrap();
        if let Some(s) = stages.get_mut(index) {
            if s.inside == 0 {
                s.entered = Some(Instant::now());
            }
            s.inside += 1;
        }
    }

    /// A buffer left stage `index`.
    pub fn leave(&self, index: usize) {
        let mut stages = self.stages.lock().unwrap();
        if let Some(s) = stages.get_mut(index) {
            s.inside = s.inside.saturating_sub(1);
            if s.inside == 0
                && let Some(t) = s.entered.take()
            {
                let d = t.elapsed();
                s.busy += d;
                s.busy_since_report += d;
            }
        }
    }

    /// The rates since the previous report (and the averages since the start); resets the
    /// interval counters.
    pub fn report(&self) -> Report {
        let now = Instant::now();
        let interval = {
            let mut last = self.last.lock().unwrap();
            let i = now.duration_since(*last).as_secs_f64().max(1e-6);
            *last = now;
            i
        };
        let all = now.duration_since(self.started).as_secs_f64().max(1e-6);
        let mut s = self.streams.lock().unwrap();
        let streams: Vec<(u32, f64, f64)> = s
            .total
            .iter()
            .map(|(id, total)| {
                let since = s.since.get(id).copied().unwrap_or(0);
                (*id, since as f64 / interval, *total as f64 / all)
            })
            .collect();
        let frames: u64 = s.since.values().sum();
        s.since.clear();
        drop(s);
        let mut stages = self.stages.lock().unwrap();
        let busiest = stages
            .iter_mut()
            .map(|st| {
                // A buffer inside now counts up to now.
                let open = st.entered.map(|t| t.elapsed()).unwrap_or_default();
                let share = (st.busy_since_report + open).as_secs_f64() / interval;
                st.busy_since_report = Duration::ZERO;
                if st.entered.is_some() {
                    st.entered = Some(now);
                    st.busy += open;
                }
                (st.name.clone(), share.min(1.0))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1));
        Report {
            streams,
            busiest,
            frames_per_s: frames as f64 / interval,
            live: !self.live.is_empty(),
        }
    }

    /// The whole run: frames per stream, frames/s, and the busiest stage's share of the time.
    pub fn summary(&self) -> (BTreeMap<u32, u64>, f64, Option<(String, f64)>) {
        let all = self.started.elapsed().as_secs_f64().max(1e-6);
        let totals = self.streams.lock().unwrap().total.clone();
        let stages = self.stages.lock().unwrap();
        let busiest = stages
            .iter()
            .map(|s| (s.name.clone(), (s.busy.as_secs_f64() / all).min(1.0)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        (totals, all, busiest)
    }
}

/// The `**PERF:` lines of a report (deepstream-app's layout), and the headroom line.
pub fn lines(r: &Report) -> Vec<String> {
    let mut header = String::from("**PERF:  ");
    let mut values = String::from("**PERF:  ");
    for (id, current, average) in &r.streams {
        header.push_str(&format!("FPS {id} (Avg)\t"));
        values.push_str(&format!("{current:.2} ({average:.2})\t"));
    }
    let mut out = vec![header, values];
    if let Some((stage, busy)) = &r.busiest {
        let capacity = if *busy > 0.0 {
            format!("{:.1}", r.frames_per_s / busy)
        } else {
            "-".to_owned()
        };
        let paced = if r.live {
            "live sources pace the pipeline; "
        } else {
            ""
        };
        out.push(format!(
            "**PERF:  {paced}busiest stage {stage} busy {:.0}% of the time ({:.0}% headroom): \
             {:.1} frames/s handled, about {capacity} frames/s possible",
            busy * 100.0,
            (1.0 - busy) * 100.0,
            r.frames_per_s
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_busy_share() {
        let perf = Perf::new(&["pgie".into(), "tracker".into()], vec![0]);
        for _ in 0..10 {
            perf.frame(0);
        }
        perf.frame(1);
        // Two batches in flight at once count as one busy span, not two: the share stays below
        // 1 (counted twice it would be about 2, clamped to 1) unless the machine stalls longer
        // than the span between these statements.
        perf.enter(0);
        perf.enter(0);
        std::thread::sleep(Duration::from_millis(200));
        perf.leave(0);
        perf.leave(0);
        perf.enter(1);
        perf.leave(1);
        let r = perf.report();
        assert_eq!(r.streams.len(), 2);
        assert!(r.streams[0].1 > r.streams[1].1 * 5.0);
        let (stage, busy) = r.busiest.clone().unwrap();
        assert_eq!(stage, "pgie");
        assert!(busy > 0.0 && busy < 1.0, "{busy}");
        let text = lines(&r);
        assert!(text[0].starts_with("**PERF:  FPS 0 (Avg)\tFPS 1 (Avg)"));
        assert!(text[2].contains("live sources pace the pipeline"));
        assert!(text[2].contains("busiest stage pgie"));
        // The interval counters restart.
        let r = perf.report();
        assert_eq!(r.streams[0].1, 0.0);
        assert_eq!(perf.summary().0[&0], 10);
    }
}
