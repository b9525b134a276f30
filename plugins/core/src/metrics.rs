// SPDX-License-Identifier: MIT OR Apache-2.0
//! A process-wide Prometheus registry: counters, gauges and histograms that elements update on
//! their streaming threads and that [`Registry::render`] writes in the text exposition format
//! (version 0.0.4) for a `/metrics` endpoint.
//!
//! Names follow the Prometheus conventions: a `ferrostream_` prefix, counters ending in
//! `_total`, base units in the name (`_seconds`, `_bytes`), and labels for what tells series of
//! one family apart (the element's name, the source id).
//!
//! A handle ([`Counter`], [`Gauge`], [`Histogram`]) is a cheap clone of a reference to its
//! series, updated with atomics only: no lock on the hot path. The registry holds its series
//! weakly, so a series lives while any handle to it does and disappears from the output when
//! the last one drops: an element that owns its handles takes its series with it when it goes.
//! Registering a name and label set that has a live series returns that same series, so two
//! registrations never produce duplicate lines.
//!
//! Metric and label names are fixed by the code that registers them, so an invalid one is a
//! programming error: debug builds panic, release builds replace the offending characters by
//! `_`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};

/// Histogram buckets for latencies in seconds: 0.5 ms to 10 s.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

const RESIDENT_MEMORY_NAME: &str = "process_resident_memory_bytes";

/// The registry of this process, the one a `/metrics` endpoint renders. Its output also carries
/// `process_resident_memory_bytes` where the platform tells it.
pub fn global() -> &'static Registry {
    static GLOBAL: OnceLock<Registry> = OnceLock::new();
    GLOBAL.get_or_init(|| Registry {
        families: Mutex::default(),
        process_metrics: true,
    })
}

/// Resident set size of this process from `/proc/self/statm` (pages times the page size), `None`
/// where that file does not exist or cannot be read.
pub fn process_resident_memory_bytes() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        use std::io::Read;
        let mut text = String::new();
        // A line of seven numbers; the bound only guards against a surprise.
        std::fs::File::open("/proc/self/statm")
            .ok()?
            .take(4096)
            .read_to_string(&mut text)
            .ok()?;
        let pages: u64 = text.split_ascii_whitespace().nth(1)?.parse().ok()?;
        // SAFETY: sysconf only reads a configuration value; _SC_PAGESIZE is always valid.
        let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        pages.checked_mul(u64::try_from(page_size).ok()?)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Label pairs of one series, sorted by name: the identity of a series within its family.
type Labels = Vec<(String, String)>;

/// Metric families by name, each with its series.
///
/// A family registered again with another type or another bucket list keeps its first
/// definition; the second registration gets a detached handle, one that works but that no
/// output shows. A family whose series have all gone is forgotten, so a later registration may
/// define it anew.
#[derive(Debug, Default)]
pub struct Registry {
    families: Mutex<BTreeMap<String, Family>>,
    /// Whether `render` adds the metrics of the process (only the global registry does).
    process_metrics: bool,
}

#[derive(Debug)]
struct Family {
    help: String,
    kind: Kind,
    series: BTreeMap<Labels, Series>,
}

#[derive(Debug, PartialEq)]
enum Kind {
    Counter,
    Gauge,
    Histogram(Arc<[f64]>),
}

#[derive(Debug)]
enum Series {
    Counter(Weak<AtomicU64>),
    Gauge(Weak<AtomicU64>),
    Histogram(Weak<HistogramCore>),
}

impl Series {
    fn is_live(&self) -> bool {
        match self {
            Series::Counter(weak) | Series::Gauge(weak) => weak.strong_count() > 0,
            Series::Histogram(weak) => weak.strong_count() > 0,
        }
    }
}

impl Registry {
    /// An empty registry, one of its own (tests, tools); elements use [`global`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The counter `name` (which ends in `_total`) with these labels.
    pub fn counter(&self, name: &str, help: &str, labels: &[(&str, &str)]) -> Counter {
        debug_assert!(
            name.ends_with("_total"),
            "counter name {name:?} does not end in _total"
        );
        let core = self.register(
            name,
            help,
            labels,
            Kind::Counter,
            |series| match series {
                Series::Counter(weak) => weak.upgrade(),
                _ => None,
            },
            || Arc::new(AtomicU64::new(0)),
            Series::Counter,
        );
        Counter { value: core }
    }

    /// The gauge `name` with these labels, starting at 0.
    pub fn gauge(&self, name: &str, help: &str, labels: &[(&str, &str)]) -> Gauge {
        let core = self.register(
            name,
            help,
            labels,
            Kind::Gauge,
            |series| match series {
                Series::Gauge(weak) => weak.upgrade(),
                _ => None,
            },
            || Arc::new(AtomicU64::new(0f64.to_bits())),
            Series::Gauge,
        );
        Gauge { bits: core }
    }

    /// The histogram `name` with these labels and these upper bucket bounds (finite, strictly
    /// increasing; the `+Inf` bucket is always added). The label `le` is reserved.
    pub fn histogram(
        &self,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        buckets: &[f64],
    ) -> Histogram {
        let bounds = bucket_bounds(buckets);
        let core = self.register(
            name,
            help,
            labels,
            Kind::Histogram(bounds.clone()),
            |series| match series {
                Series::Histogram(weak) => weak.upgrade(),
                _ => None,
            },
            || Arc::new(HistogramCore::new(bounds)),
            Series::Histogram,
        );
        Histogram { core }
    }

    /// Finds the live series `name`/`labels` or makes and records a new one. `existing` upgrades
    /// a recorded series of the wanted type; `make` creates one; `record` keeps it weakly.
    #[allow(clippy::too_many_arguments)]
    fn register<T>(
        &self,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        kind: Kind,
        existing: impl Fn(&Series) -> Option<Arc<T>>,
        make: impl FnOnce() -> Arc<T>,
        record: impl FnOnce(Weak<T>) -> Series,
    ) -> Arc<T> {
        debug_assert!(is_metric_name(name), "invalid metric name {name:?}");
        let name = sanitise(name, true);
        let labels = label_set(labels, matches!(kind, Kind::Histogram(_)));
        let mut families = self.lock();
        prune(&mut families);
        let family = families.entry(name).or_insert_with(|| Family {
            help: help.to_owned(),
            kind: Kind::Counter,
            series: BTreeMap::new(),
        });
        if family.series.is_empty() {
            // New, or forgotten by `prune` a moment ago: this registration defines it.
            family.help = help.to_owned();
            family.kind = kind;
        } else if family.kind != kind {
            return make();
        }
        if let Some(live) = family.series.get(&labels).and_then(existing) {
            return live;
        }
        let core = make();
        family.series.insert(labels, record(Arc::downgrade(&core)));
        core
    }

    /// The text exposition format 0.0.4: per family `# HELP`, `# TYPE`, then its series sorted by
    /// labels; families sorted by name; histograms as cumulative `_bucket{le="..."}` lines
    /// ending with `+Inf`, then `_sum` and `_count`. Families with no live series are left out.
    /// Every line ends with a newline.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let resident = if self.process_metrics {
            process_resident_memory_bytes()
        } else {
            None
        };
        let mut resident = resident.map(|bytes| {
            let mut text = String::new();
            write_header(
                &mut text,
                RESIDENT_MEMORY_NAME,
                "Resident memory size in bytes.",
                "gauge",
            );
            let _ = writeln!(text, "{RESIDENT_MEMORY_NAME} {bytes}");
            text
        });
        let mut families = self.lock();
        prune(&mut families);
        for (name, family) in families.iter() {
            // In its place among the families, unless one of that name was registered.
            if resident.is_some() && name.as_str() >= RESIDENT_MEMORY_NAME {
                let text = resident.take().unwrap_or_default();
                if name != RESIDENT_MEMORY_NAME {
                    out.push_str(&text);
                }
            }
            render_family(&mut out, name, family);
        }
        if let Some(text) = resident {
            out.push_str(&text);
        }
        out
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Family>> {
        // Nothing panics while holding the lock; a poisoned map is still consistent.
        self.families.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Forgets dead series, and families left without any.
fn prune(families: &mut BTreeMap<String, Family>) {
    families.retain(|_, family| {
        family.series.retain(|_, series| series.is_live());
        !family.series.is_empty()
    });
}

fn render_family(out: &mut String, name: &str, family: &Family) {
    let type_name = match family.kind {
        Kind::Counter => "counter",
        Kind::Gauge => "gauge",
        Kind::Histogram(_) => "histogram",
    };
    let mut header = false;
    for (labels, series) in &family.series {
        // Upgrade first: a series whose last handle dropped after pruning writes nothing.
        let live = match series {
            Series::Counter(weak) => weak.upgrade().map(Live::Counter),
            Series::Gauge(weak) => weak.upgrade().map(Live::Gauge),
            Series::Histogram(weak) => weak.upgrade().map(Live::Histogram),
        };
        let Some(live) = live else { continue };
        if !header {
            write_header(out, name, &family.help, type_name);
            header = true;
        }
        match live {
            Live::Counter(value) => {
                write_sample_name(out, name, "", labels, None);
                let _ = writeln!(out, " {}", value.load(Ordering::Relaxed));
            }
            Live::Gauge(bits) => {
                write_sample_name(out, name, "", labels, None);
                out.push(' ');
                write_f64(out, f64::from_bits(bits.load(Ordering::Relaxed)));
                out.push('\n');
            }
            Live::Histogram(core) => {
                let mut cumulative = 0u64;
                let mut le = String::new();
                for (i, bucket) in core.buckets.iter().enumerate() {
                    cumulative += bucket.load(Ordering::Relaxed);
                    le.clear();
                    write_f64(
                        &mut le,
                        core.bounds.get(i).copied().unwrap_or(f64::INFINITY),
                    );
                    write_sample_name(out, name, "_bucket", labels, Some(&le));
                    let _ = writeln!(out, " {cumulative}");
                }
                write_sample_name(out, name, "_sum", labels, None);
                out.push(' ');
                write_f64(out, core.sum());
                out.push('\n');
                // The total of the buckets read above, so that `_count` equals the `+Inf` bucket
                // even while other threads observe.
                write_sample_name(out, name, "_count", labels, None);
                let _ = writeln!(out, " {cumulative}");
            }
        }
    }
}

enum Live {
    Counter(Arc<AtomicU64>),
    Gauge(Arc<AtomicU64>),
    Histogram(Arc<HistogramCore>),
}

fn write_header(out: &mut String, name: &str, help: &str, type_name: &str) {
    let _ = write!(out, "# HELP {name} ");
    for c in help.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    let _ = writeln!(out, "\n# TYPE {name} {type_name}");
}

/// `name` + `suffix`, then the labels in braces (none when there are none), `le` last.
fn write_sample_name(
    out: &mut String,
    name: &str,
    suffix: &str,
    labels: &Labels,
    le: Option<&str>,
) {
    out.push_str(name);
    out.push_str(suffix);
    if labels.is_empty() && le.is_none() {
        return;
    }
    out.push('{');
    let pairs = labels
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .chain(le.map(|le| ("le", le)));
    for (i, (name, value)) in pairs.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(name);
        out.push_str("=\"");
        for c in value.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out.push('}');
}

/// Rust's `{}` never uses an exponent and prints integral values without a fraction, both of
/// which Prometheus parses; only the infinities are spelled differently.
fn write_f64(out: &mut String, value: f64) {
    if value == f64::INFINITY {
        out.push_str("+Inf");
    } else if value == f64::NEG_INFINITY {
        out.push_str("-Inf");
    } else if value.is_nan() {
        out.push_str("NaN");
    } else {
        let _ = write!(out, "{value}");
    }
}

fn is_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn is_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    !name.starts_with("__")
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Replaces every character not allowed at its place by `_`; label names (`colon` false) lose
/// the reserved leading `__` too.
fn sanitise(name: &str, colon: bool) -> String {
    let mut out: String = name
        .chars()
        .enumerate()
        .map(|(i, c)| {
            let allowed = c.is_ascii_alphabetic()
                || c == '_'
                || (colon && c == ':')
                || (i > 0 && c.is_ascii_digit());
            if allowed { c } else { '_' }
        })
        .collect();
    if out.is_empty() {
        out.push('_');
    }
    if !colon {
        while out.starts_with("__") {
            out.remove(0);
        }
    }
    out
}

/// The labels as a series identity: names checked, duplicates dropped, sorted by name.
fn label_set(labels: &[(&str, &str)], histogram: bool) -> Labels {
    let mut set: Labels = Vec::with_capacity(labels.len());
    for &(name, value) in labels {
        debug_assert!(is_label_name(name), "invalid label name {name:?}");
        debug_assert!(
            !(histogram && name == "le"),
            "the label le is reserved for histogram buckets"
        );
        let mut name = sanitise(name, false);
        if histogram && name == "le" {
            name.push('_');
        }
        let duplicate = set.iter().any(|(seen, _)| *seen == name);
        debug_assert!(!duplicate, "label {name:?} given twice");
        if !duplicate {
            set.push((name, value.to_owned()));
        }
    }
    set.sort();
    set
}

/// The bucket bounds as given when they are finite and strictly increasing; otherwise (a
/// programming error) the finite ones sorted and deduplicated.
fn bucket_bounds(buckets: &[f64]) -> Arc<[f64]> {
    let mut bounds: Vec<f64> = buckets
        .iter()
        .copied()
        .filter(|b| *b != f64::INFINITY)
        .collect();
    let valid = bounds.iter().all(|b| b.is_finite()) && bounds.windows(2).all(|w| w[0] < w[1]);
    debug_assert!(
        valid,
        "histogram buckets {buckets:?} are not finite and increasing"
    );
    if !valid {
        bounds.retain(|b| b.is_finite());
        bounds.sort_by(f64::total_cmp);
        bounds.dedup();
    }
    bounds.into()
}

/// Adds to an `f64` kept as bits in an atomic.
fn add_f64(cell: &AtomicU64, delta: f64) {
    let _ = cell.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
        Some((f64::from_bits(bits) + delta).to_bits())
    });
}

/// A monotonic count. Cloning gives another handle to the same series.
#[derive(Clone, Debug)]
pub struct Counter {
    value: Arc<AtomicU64>,
}

impl Counter {
    pub fn inc(&self) {
        self.add(1);
    }

    pub fn add(&self, n: u64) {
        self.value.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.value.load(Ordering::Relaxed)
    }
}

/// A value that goes up and down. Cloning gives another handle to the same series.
#[derive(Clone, Debug)]
pub struct Gauge {
    bits: Arc<AtomicU64>,
}

impl Gauge {
    pub fn set(&self, value: f64) {
        self.bits.store(value.to_bits(), Ordering::Relaxed);
    }

    pub fn add(&self, delta: f64) {
        add_f64(&self.bits, delta);
    }

    pub fn inc(&self) {
        self.add(1.0);
    }

    pub fn dec(&self) {
        self.add(-1.0);
    }

    pub fn get(&self) -> f64 {
        f64::from_bits(self.bits.load(Ordering::Relaxed))
    }
}

/// A distribution of observations over fixed buckets. Cloning gives another handle to the same
/// series.
#[derive(Clone, Debug)]
pub struct Histogram {
    core: Arc<HistogramCore>,
}

#[derive(Debug)]
struct HistogramCore {
    bounds: Arc<[f64]>,
    /// Observations per bucket (not cumulative), one more than `bounds`: the last is `+Inf`.
    buckets: Box<[AtomicU64]>,
    sum: AtomicU64,
}

impl HistogramCore {
    fn new(bounds: Arc<[f64]>) -> Self {
        let buckets = (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect();
        Self {
            bounds,
            buckets,
            sum: AtomicU64::new(0f64.to_bits()),
        }
    }

    fn sum(&self) -> f64 {
        f64::from_bits(self.sum.load(Ordering::Relaxed))
    }
}

impl Histogram {
    /// Records one observation, in the unit the name states (seconds for `_seconds`).
    pub fn observe(&self, value: f64) {
        let core = &*self.core;
        // The first bucket whose bound is at least `value` (`le` is inclusive); NaN counts in
        // `+Inf` only.
        let index = if value.is_nan() {
            core.bounds.len()
        } else {
            core.bounds.partition_point(|bound| *bound < value)
        };
        core.buckets[index].fetch_add(1, Ordering::Relaxed);
        add_f64(&core.sum, value);
    }

    /// The number of observations.
    pub fn count(&self) -> u64 {
        self.core
            .buckets
            .iter()
            .map(|bucket| bucket.load(Ordering::Relaxed))
            .sum()
    }

    /// The sum of the observations.
    pub fn sum(&self) -> f64 {
        self.core.sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_each_type() {
        let registry = Registry::new();
        let frames = registry.counter(
            "ferrostream_frames_total",
            "Frames seen.",
            &[("element", "infer0")],
        );
        frames.add(3);
        let depth = registry.gauge("ferrostream_queue_depth", "Buffers queued.", &[]);
        depth.set(2.5);
        let latency = registry.histogram(
            "ferrostream_latency_seconds",
            "Latency.",
            &[("element", "a")],
            &[0.1, 1.0],
        );
        latency.observe(0.0625);
        latency.observe(0.5);
        latency.observe(3.0);
        let expected = "\
# HELP ferrostream_frames_total Frames seen.
# TYPE ferrostream_frames_total counter
ferrostream_frames_total{element=\"infer0\"} 3
# HELP ferrostream_latency_seconds Latency.
# TYPE ferrostream_latency_seconds histogram
ferrostream_latency_seconds_bucket{element=\"a\",le=\"0.1\"} 1
ferrostream_latency_seconds_bucket{element=\"a\",le=\"1\"} 2
ferrostream_latency_seconds_bucket{element=\"a\",le=\"+Inf\"} 3
ferrostream_latency_seconds_sum{element=\"a\"} 3.5625
ferrostream_latency_seconds_count{element=\"a\"} 3
# HELP ferrostream_queue_depth Buffers queued.
# TYPE ferrostream_queue_depth gauge
ferrostream_queue_depth 2.5
";
        assert_eq!(registry.render(), expected);
        assert_eq!(frames.get(), 3);
        assert_eq!(depth.get(), 2.5);
        assert_eq!(latency.count(), 3);
        assert_eq!(latency.sum(), 3.5625);
    }

    #[test]
    fn series_sorted_by_labels_and_label_order_ignored() {
        let registry = Registry::new();
        let b = registry.gauge("g", "h", &[("source", "1"), ("element", "b")]);
        let a = registry.gauge("g", "h", &[("element", "a"), ("source", "2")]);
        let b_again = registry.gauge("g", "h", &[("element", "b"), ("source", "1")]);
        b.set(1.0);
        b_again.inc();
        a.dec();
        assert_eq!(b.get(), 2.0);
        assert_eq!(
            registry.render(),
            "# HELP g h\n# TYPE g gauge\n\
             g{element=\"a\",source=\"2\"} -1\n\
             g{element=\"b\",source=\"1\"} 2\n"
        );
    }

    #[test]
    fn escapes_label_values_and_help() {
        let registry = Registry::new();
        let _gauge = registry.gauge(
            "ferrostream_x",
            "Back\\slash\nnew \"line\".",
            &[("path", "a\\b\"c\nd")],
        );
        assert_eq!(
            registry.render(),
            "# HELP ferrostream_x Back\\\\slash\\nnew \"line\".\n\
             # TYPE ferrostream_x gauge\n\
             ferrostream_x{path=\"a\\\\b\\\"c\\nd\"} 0\n"
        );
    }

    #[test]
    fn formats_floats() {
        let mut out = String::new();
        for value in [
            1.0,
            0.0005,
            -2.0,
            1e21,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ] {
            write_f64(&mut out, value);
            out.push(' ');
        }
        assert_eq!(out, "1 0.0005 -2 1000000000000000000000 +Inf -Inf NaN ");
    }

    #[test]
    fn series_disappear_with_their_last_handle() {
        let registry = Registry::new();
        let counter = registry.counter("a_total", "A.", &[("element", "x")]);
        let clone = counter.clone();
        let other = registry.counter("a_total", "A.", &[("element", "y")]);
        drop(counter);
        clone.inc();
        assert!(registry.render().contains("a_total{element=\"x\"} 1\n"));
        drop(clone);
        let text = registry.render();
        assert!(!text.contains("element=\"x\""), "{text}");
        assert!(text.contains("a_total{element=\"y\"} 0\n"), "{text}");
        drop(other);
        assert_eq!(registry.render(), "");
        // A new registration starts from zero.
        let counter = registry.counter("a_total", "A.", &[("element", "x")]);
        assert_eq!(counter.get(), 0);
    }

    #[test]
    fn same_labels_share_a_series() {
        let registry = Registry::new();
        let first = registry.counter("c_total", "C.", &[("element", "e")]);
        let second = registry.counter("c_total", "C.", &[("element", "e")]);
        first.inc();
        second.add(2);
        assert_eq!(first.get(), 3);
        assert_eq!(registry.render().matches("c_total{").count(), 1);
    }

    #[test]
    fn conflicting_registration_is_detached() {
        let registry = Registry::new();
        let gauge = registry.gauge("m", "M.", &[]);
        let histogram = registry.histogram("m", "M.", &[("x", "1")], &[1.0]);
        histogram.observe(0.5);
        assert_eq!(histogram.count(), 1);
        let first = registry.histogram("h", "H.", &[], &[1.0]);
        let other_buckets = registry.histogram("h", "H.", &[], &[2.0]);
        other_buckets.observe(1.5);
        first.observe(0.5);
        let text = registry.render();
        assert!(text.contains("# TYPE m gauge\nm 0\n"), "{text}");
        assert!(!text.contains("m_bucket"), "{text}");
        assert!(text.contains("h_bucket{le=\"1\"} 1\n"), "{text}");
        assert!(!text.contains("le=\"2\""), "{text}");
        drop(gauge);
    }

    #[test]
    fn buckets_are_cumulative() {
        let registry = Registry::new();
        let histogram = registry.histogram("d_seconds", "D.", &[], LATENCY_BUCKETS);
        for value in [0.0001, 0.0005, 0.003, 0.003, 7.0, 100.0] {
            histogram.observe(value);
        }
        let text = registry.render();
        let counts: Vec<u64> = text
            .lines()
            .filter(|line| line.starts_with("d_seconds_bucket"))
            .map(|line| line.rsplit(' ').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(counts, [2, 2, 2, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 6]);
        assert!(
            text.contains("d_seconds_bucket{le=\"0.0005\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("d_seconds_bucket{le=\"10\"} 5\n"), "{text}");
        assert!(text.contains("d_seconds_bucket{le=\"+Inf\"} 6\n"), "{text}");
        assert!(text.contains("d_seconds_count 6\n"), "{text}");
    }

    #[test]
    fn concurrent_updates_sum() {
        let registry = Registry::new();
        let counter = registry.counter("n_total", "N.", &[]);
        let gauge = registry.gauge("g", "G.", &[]);
        let histogram = registry.histogram("h", "H.", &[], &[0.5]);
        std::thread::scope(|scope| {
            for _ in 0..8 {
                let counter = registry.counter("n_total", "N.", &[]);
                let (gauge, histogram) = (gauge.clone(), histogram.clone());
                scope.spawn(move || {
                    for _ in 0..10_000 {
                        counter.inc();
                        gauge.add(0.5);
                        histogram.observe(1.0);
                    }
                });
            }
        });
        assert_eq!(counter.get(), 80_000);
        assert_eq!(gauge.get(), 40_000.0);
        assert_eq!(histogram.count(), 80_000);
        assert_eq!(histogram.sum(), 80_000.0);
    }

    #[test]
    fn names_are_checked() {
        assert!(is_metric_name("ferrostream_a:b_total"));
        assert!(!is_metric_name("1abc"));
        assert!(!is_metric_name("a-b"));
        assert!(!is_metric_name(""));
        assert!(is_label_name("element"));
        assert!(!is_label_name("__name"));
        assert!(!is_label_name("a:b"));
        assert_eq!(sanitise("1a-b:c", true), "_a_b:c");
        assert_eq!(sanitise("__x:y", false), "_x_y");
        assert_eq!(sanitise("", false), "_");
    }

    #[test]
    fn global_reports_resident_memory() {
        let _gauge = global().gauge("ferrostream_test_global", "Test.", &[]);
        let text = global().render();
        assert!(text.contains("ferrostream_test_global 0\n"), "{text}");
        if let Some(bytes) = process_resident_memory_bytes() {
            assert!(bytes > 0);
            assert!(
                text.contains("# TYPE process_resident_memory_bytes gauge\n"),
                "{text}"
            );
            // Families stay sorted with it among them.
            let ours = text.find("ferrostream_test_global").unwrap();
            let process = text.find("# HELP process_resident_memory_bytes").unwrap();
            assert!(ours < process);
        }
    }
}
