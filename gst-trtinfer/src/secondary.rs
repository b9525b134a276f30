// SPDX-License-Identifier: MIT OR Apache-2.0
//! Secondary inference (`process-mode=secondary`): which objects of a batch an element works on,
//! the results it keeps for tracked objects, and how results are attached.
//!
//! Free of GStreamer plumbing: `rstrtinfer` plans a batch with [`Secondary::plan`], runs the
//! targets' crops through its engine in calls of up to `batch-size`, and hands each result to
//! [`Secondary::store`] and [`attach`].

use std::collections::HashMap;

use ferrostream_core::{BBox, Batch, Frame};

use crate::config::{InferConfig, NetworkType, ObjectLimits};
use crate::inference::{ItemResult, attach_tensors};

/// Results kept for tracked objects at most; the least recently used quarter is dropped when
/// the cache is full.
pub const CACHE_CAPACITY: usize = 4096;

/// Frames without any upstream inference after which the element warns that it has nothing to
/// work on.
const FRAMES_WITHOUT_PRODUCER: u64 = 30;

/// Decides which objects a secondary element works on: `operate-on-gie-id`,
/// `operate-on-class-ids` and `input-object-*` limits.
#[derive(Debug, Clone)]
pub struct ObjectSelector {
    own: i32,
    operate_on: Option<i32>,
    class_ids: Vec<i32>,
    limits: ObjectLimits,
}

impl ObjectSelector {
    pub fn new(config: &InferConfig) -> Self {
        Self {
            own: config.gie_unique_id,
            operate_on: config.operate_on_gie_id,
            class_ids: config.operate_on_class_ids.clone(),
            limits: config.objects,
        }
    }

    /// The region of `object` (its box as shown, a turned box's axis-aligned extent, clipped to
    /// the `frame_w` x `frame_h` frame) to
    /// infer on, or `None` when the element does not work on it. Objects this element produced
    /// itself (a secondary detector's) are never worked on.
    pub fn region(
        &self,
        object: &ferrostream_core::Object,
        frame_w: u32,
        frame_h: u32,
    ) -> Option<BBox> {
        let producer_ok = match self.operate_on {
            Some(id) => object.component_id == id,
            None => object.component_id != self.own,
        };
        let class_ok = self.class_ids.is_empty() || self.class_ids.contains(&object.class_id);
        if !producer_ok || !class_ok {
            return None;
        }
        // A turned box is cut as its axis-aligned extent (the whole object, upright).
        let roi = object
            .bounding_box()
            .clipped(frame_w as f32, frame_h as f32);
        (roi.width >= 1.0 && roi.height >= 1.0 && self.limits.accepts(roi.width, roi.height))
            .then_some(roi)
    }
}

/// A tracked object: tracker ids are unique per source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    pub source: u32,
    pub id: u64,
}

#[derive(Debug, Clone)]
struct Cached {
    /// Frame number (of the object's source) the result was inferred on.
    frame_num: u64,
    result: ItemResult,
    last_used: u64,
}

/// Results of tracked objects, reused until `interval` frames have passed
/// (`secondary-reinfer-interval`). Bounded: terminated tracks are forgotten, and when full the
/// least recently used quarter is dropped.
#[derive(Debug)]
pub struct ResultCache {
    interval: u32,
    capacity: usize,
    entries: HashMap<ObjectKey, Cached>,
    /// Use counter, for least-recently-used eviction.
    clock: u64,
}

impl ResultCache {
    pub fn new(interval: u32, capacity: usize) -> Self {
        Self {
            interval,
            capacity: capacity.max(1),
            entries: HashMap::new(),
            clock: 0,
        }
    }

    /// The result inferred for `key` fewer than `interval` frames before `frame_num`.
    pub fn get(&mut self, key: ObjectKey, frame_num: u64) -> Option<&ItemResult> {
        self.clock += 1;
        let clock = self.clock;
        let interval = self.interval as u64;
        let entry = self.entries.get_mut(&key)?;
        let age = frame_num.checked_sub(entry.frame_num)?;
        if age >= interval {
            return None;
        }
        entry.last_used = clock;
        Some(&entry.result)
    }

    pub fn insert(&mut self, key: ObjectKey, frame_num: u64, result: ItemResult) {
        if self.entries.len() >= self.capacity && !self.entries.contains_key(&key) {
            self.evict_least_recently_used();
        }
        self.clock += 1;
        self.entries.insert(
            key,
            Cached {
                frame_num,
                result,
                last_used: self.clock,
            },
        );
    }

    /// Forgets the tracks of `source` that ended.
    pub fn forget(&mut self, source: u32, ids: &[u64]) {
        for &id in ids {
            self.entries.remove(&ObjectKey { source, id });
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn evict_least_recently_used(&mut self) {
        let mut uses: Vec<u64> = self.entries.values().map(|e| e.last_used).collect();
        let drop = (uses.len() / 4).max(1);
        let (_, &mut threshold, _) = uses.select_nth_unstable(drop - 1);
        self.entries.retain(|_, e| e.last_used > threshold);
    }
}

/// One object to infer on: frame and object index in the batch, and its region.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target {
    pub frame: usize,
    pub object: usize,
    pub roi: BBox,
    /// Set for tracked objects whose result may be cached.
    key: Option<ObjectKey>,
}

/// What to do with the objects of one batch.
#[derive(Debug, Default)]
pub struct Plan {
    /// Objects to infer on, in batch order.
    pub targets: Vec<Target>,
    /// Objects whose cached result is still fresh: frame, object, result.
    pub cached: Vec<(usize, usize, ItemResult)>,
}

impl Plan {
    /// Objects the element works on in this batch.
    pub fn objects(&self) -> usize {
        self.targets.len() + self.cached.len()
    }
}

/// The secondary side of an element: object selection, the result cache, and the check that
/// the configured producer exists.
#[derive(Debug)]
pub struct Secondary {
    selector: ObjectSelector,
    /// Only for tracked objects with `secondary-reinfer-interval` > 0, and not for detectors,
    /// whose boxes would be stale.
    cache: Option<ResultCache>,
    producer: ProducerCheck,
}

impl Secondary {
    pub fn new(config: &InferConfig) -> Self {
        let cacheable = config.network_type != NetworkType::Detector;
        Self {
            selector: ObjectSelector::new(config),
            cache: (cacheable && config.secondary_reinfer_interval > 0)
                .then(|| ResultCache::new(config.secondary_reinfer_interval, CACHE_CAPACITY)),
            producer: ProducerCheck {
                own: config.gie_unique_id,
                operate_on: config.operate_on_gie_id,
                ..Default::default()
            },
        }
    }

    /// Chooses the objects of `batch` to infer on and those whose cached result is reused;
    /// forgets the tracks that ended.
    pub fn plan(&mut self, batch: &Batch) -> Plan {
        let mut plan = Plan::default();
        for (f, frame) in batch.frames.iter().enumerate() {
            if let Some(cache) = &mut self.cache {
                cache.forget(frame.source_id, &frame.terminated_ids);
            }
            for (o, object) in frame.objects.iter().enumerate() {
                let Some(roi) = self.selector.region(object, frame.width, frame.height) else {
                    continue;
                };
                let key = object.object_id.map(|id| ObjectKey {
                    source: frame.source_id,
                    id,
                });
                if let (Some(cache), Some(key)) = (&mut self.cache, key)
                    && let Some(result) = cache.get(key, frame.frame_num)
                {
                    plan.cached.push((f, o, result.clone()));
                    continue;
                }
                plan.targets.push(Target {
                    frame: f,
                    object: o,
                    roi,
                    key,
                });
            }
        }
        plan
    }

    /// Keeps the result of `target`, inferred on `frame`, for reuse.
    pub fn store(&mut self, frame: &Frame, target: &Target, result: &ItemResult) {
        if let (Some(cache), Some(key)) = (&mut self.cache, target.key) {
            cache.insert(key, frame.frame_num, result.clone());
        }
    }

    /// Results kept for tracked objects.
    pub fn cached_results(&self) -> usize {
        self.cache.as_ref().map_or(0, ResultCache::len)
    }

    /// A warning, given once, when the frames show that the configured producer does not
    /// exist upstream, so the element will never have objects to work on.
    pub fn check_producer(&mut self, batch: &Batch) -> Option<String> {
        batch
            .frames
            .iter()
            .find_map(|frame| self.producer.check(frame))
    }
}

/// Watches the frames for the component a secondary element works on.
#[derive(Debug, Default)]
struct ProducerCheck {
    own: i32,
    operate_on: Option<i32>,
    /// Decided: the producer was seen, or the warning was given.
    done: bool,
    frames_without_any: u64,
}

impl ProducerCheck {
    fn check(&mut self, frame: &Frame) -> Option<String> {
        if self.done {
            return None;
        }
        let mut upstream: Vec<i32> = frame
            .components_run
            .iter()
            .copied()
            .chain(frame.objects.iter().map(|o| o.component_id))
            .filter(|&c| c != self.own)
            .collect();
        upstream.sort_unstable();
        upstream.dedup();
        let found = match self.operate_on {
            Some(id) => upstream.contains(&id),
            None => !upstream.is_empty(),
        };
        if found {
            self.done = true;
            return None;
        }
        let wanted = match self.operate_on {
            Some(id) => format!("operate-on-gie-id={id}"),
            None => "process-mode=secondary".to_string(),
        };
        if !upstream.is_empty() {
            self.done = true;
            let ids: Vec<String> = upstream.iter().map(i32::to_string).collect();
            return Some(format!(
                "{wanted}, but no component with gie-unique-id {} runs upstream: frame {} of \
                 source {} carries results of component(s) {} only, so this element has no \
                 objects to work on",
                self.operate_on.unwrap_or_default(),
                frame.frame_num,
                frame.source_id,
                ids.join(", ")
            ));
        }
        self.frames_without_any += 1;
        if self.frames_without_any >= FRAMES_WITHOUT_PRODUCER {
            self.done = true;
            return Some(format!(
                "{wanted}, but no inference component has run upstream in {} frames: put a \
                 primary detector (rstrtinfer process-mode=primary) before this element",
                self.frames_without_any
            ));
        }
        None
    }
}

/// Attaches the result of component `component` to object `object` of `frame`: the
/// classification (replacing an earlier one of the same component), the raw tensors, and a
/// secondary detector's objects as children appended to the frame.
pub fn attach(frame: &mut Frame, object: usize, result: ItemResult, component: i32) {
    let target = &mut frame.objects[object];
    if !result.classifications.is_empty() {
        target
            .classifications
            .retain(|old| old.component_id != component);
        target.classifications.extend(result.classifications);
    }
    attach_tensors(target, component, result.tensors);
    for mut child in result.objects {
        child.parent = Some(object as u32);
        frame.objects.push(child);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ferrostream_core::{AttributeValue, Classification, Object};

    use super::*;
    use crate::config::ProcessMode;

    fn object(component: i32, class: i32, bbox: BBox, id: Option<u64>) -> Object {
        let mut o = Object::new(class, "x".into(), 0.9, bbox, component);
        o.object_id = id;
        o
    }

    fn config(text: impl FnOnce(&mut InferConfig)) -> InferConfig {
        let mut c = InferConfig {
            process_mode: ProcessMode::Secondary,
            gie_unique_id: 2,
            network_type: NetworkType::Classifier,
            ..Default::default()
        };
        text(&mut c);
        c
    }

    fn classified(label: &str) -> ItemResult {
        ItemResult {
            classifications: vec![Classification {
                component_id: 2,
                class_id: 1,
                label: label.into(),
                prob: 0.8,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn selector_filters_producer_class_and_size_and_clips() {
        let selector = ObjectSelector::new(&config(|c| {
            c.operate_on_gie_id = Some(1);
            c.operate_on_class_ids = vec![0, 2];
            c.objects = ObjectLimits {
                min_width: 10,
                min_height: 10,
                max_width: 100,
                max_height: 0,
            };
        }));
        let inside = BBox::new(10.0, 10.0, 50.0, 60.0);
        assert_eq!(
            selector.region(&object(1, 0, inside, None), 640, 480),
            Some(inside)
        );
        assert_eq!(selector.region(&object(3, 0, inside, None), 640, 480), None);
        assert_eq!(selector.region(&object(1, 1, inside, None), 640, 480), None);
        let small = BBox::new(0.0, 0.0, 9.0, 50.0);
        assert_eq!(selector.region(&object(1, 2, small, None), 640, 480), None);
        let wide = BBox::new(0.0, 0.0, 101.0, 50.0);
        assert_eq!(selector.region(&object(1, 2, wide, None), 640, 480), None);
        // Clipped to the frame before the limits apply.
        let overhanging = BBox::new(600.0, -20.0, 80.0, 60.0);
        assert_eq!(
            selector.region(&object(1, 2, overhanging, None), 640, 480),
            Some(BBox::new(600.0, 0.0, 40.0, 40.0))
        );
        let outside = BBox::new(700.0, 10.0, 50.0, 50.0);
        assert_eq!(
            selector.region(&object(1, 2, outside, None), 640, 480),
            None
        );
        // The tracker's box is the one shown, so it is the one cropped.
        let mut tracked = object(1, 0, inside, Some(4));
        tracked.tracker_bbox = Some(BBox::new(12.0, 14.0, 40.0, 40.0));
        assert_eq!(
            selector.region(&tracked, 640, 480),
            Some(BBox::new(12.0, 14.0, 40.0, 40.0))
        );
    }

    #[test]
    fn a_turned_object_is_cut_as_its_upright_extent() {
        let selector = ObjectSelector::new(&config(|_| {}));
        // A 100x10 ship turned a quarter stands 10x100 on the screen.
        let mut ship = object(1, 5, BBox::new(0.0, 45.0, 100.0, 10.0), None);
        ship.angle = Some(std::f32::consts::FRAC_PI_2);
        let r = selector.region(&ship, 200, 200).unwrap();
        assert!(
            (r.left - 45.0).abs() < 1e-3 && (r.top - 0.0).abs() < 1e-3,
            "{r:?}"
        );
        assert!(
            (r.width - 10.0).abs() < 1e-3 && (r.height - 100.0).abs() < 1e-3,
            "{r:?}"
        );
    }

    #[test]
    fn without_operate_on_every_other_component_counts() {
        let selector = ObjectSelector::new(&config(|_| {}));
        let b = BBox::new(0.0, 0.0, 20.0, 20.0);
        assert!(selector.region(&object(1, 5, b, None), 64, 64).is_some());
        assert!(selector.region(&object(7, 5, b, None), 64, 64).is_some());
        // Its own (a secondary detector's) objects are never worked on.
        assert!(selector.region(&object(2, 5, b, None), 64, 64).is_none());
    }

    #[test]
    fn cache_reuses_until_the_interval_has_passed() {
        let mut cache = ResultCache::new(30, 16);
        let key = ObjectKey { source: 0, id: 9 };
        assert!(cache.get(key, 100).is_none());
        cache.insert(key, 100, classified("ball"));
        assert!(cache.get(key, 100).is_some());
        assert!(cache.get(key, 129).is_some());
        assert!(cache.get(key, 130).is_none(), "30 frames later: re-infer");
        assert!(cache.get(key, 99).is_none(), "older frames never reuse");
        // Ids are per source.
        assert!(cache.get(ObjectKey { source: 1, id: 9 }, 101).is_none());
        cache.forget(0, &[9]);
        assert!(cache.is_empty());
    }

    #[test]
    fn cache_is_bounded_and_keeps_the_recently_used() {
        let mut cache = ResultCache::new(1000, 8);
        let key = |id| ObjectKey { source: 0, id };
        for id in 0..8 {
            cache.insert(key(id), 0, classified("a"));
        }
        // Objects 0 and 1 stay in use; 2 and 3 are the least recently used.
        for id in [0, 1, 4, 5, 6, 7] {
            assert!(cache.get(key(id), 1).is_some());
        }
        cache.insert(key(8), 1, classified("b"));
        assert_eq!(cache.len(), 7, "a quarter of 8 dropped, one added");
        assert!(cache.get(key(2), 1).is_none() && cache.get(key(3), 1).is_none());
        for id in [0, 1, 4, 5, 6, 7, 8] {
            assert!(cache.get(key(id), 1).is_some(), "{id}");
        }
        for id in 100..10_000 {
            cache.insert(key(id), 1, classified("c"));
            assert!(cache.len() <= 8);
        }
    }

    fn tracked_frame(frame_num: u64, ids: &[u64]) -> Frame {
        let mut frame = Frame::new(0, frame_num, 640, 480);
        frame.components_run = vec![1];
        for (i, &id) in ids.iter().enumerate() {
            let bbox = BBox::new(10.0 + 60.0 * i as f32, 10.0, 50.0, 80.0);
            frame.objects.push(object(1, 0, bbox, Some(id)));
        }
        frame
    }

    #[test]
    fn plan_infers_new_objects_and_reuses_fresh_results() {
        let mut secondary = Secondary::new(&config(|c| c.secondary_reinfer_interval = 30));
        let first = Batch::single(tracked_frame(0, &[1, 2]));
        let plan = secondary.plan(&first);
        assert_eq!((plan.targets.len(), plan.cached.len()), (2, 0));
        for t in &plan.targets {
            secondary.store(&first.frames[0], t, &classified("person"));
        }
        // Frame 10: both cached; a new object 3 and an untracked one are inferred.
        let mut frame = tracked_frame(10, &[1, 2, 3]);
        frame
            .objects
            .push(object(1, 0, BBox::new(0.0, 300.0, 30.0, 30.0), None));
        let plan = secondary.plan(&Batch::single(frame));
        assert_eq!(plan.cached.len(), 2);
        let inferred: Vec<usize> = plan.targets.iter().map(|t| t.object).collect();
        assert_eq!(inferred, vec![2, 3]);
        assert_eq!(plan.objects(), 4);
        // Frame 30: the results of 1 and 2 are 30 frames old.
        let plan = secondary.plan(&Batch::single(tracked_frame(30, &[1, 2])));
        assert_eq!((plan.targets.len(), plan.cached.len()), (2, 0));
        // A terminated track is forgotten.
        let mut ended = tracked_frame(31, &[]);
        ended.terminated_ids = vec![1];
        secondary.plan(&Batch::single(ended));
        assert_eq!(secondary.cached_results(), 1);
    }

    #[test]
    fn detectors_and_interval_zero_never_cache() {
        for c in [
            config(|c| c.secondary_reinfer_interval = 0),
            config(|c| {
                c.secondary_reinfer_interval = 30;
                c.network_type = NetworkType::Detector;
            }),
        ] {
            let mut secondary = Secondary::new(&c);
            let batch = Batch::single(tracked_frame(0, &[1]));
            let plan = secondary.plan(&batch);
            secondary.store(&batch.frames[0], &plan.targets[0], &classified("a"));
            let plan = secondary.plan(&Batch::single(tracked_frame(1, &[1])));
            assert_eq!((plan.targets.len(), plan.cached.len()), (1, 0));
        }
    }

    #[test]
    fn missing_producer_is_reported_once() {
        let mut secondary = Secondary::new(&config(|c| c.operate_on_gie_id = Some(3)));
        let batch = Batch::single(tracked_frame(5, &[1]));
        let warning = secondary.check_producer(&batch).expect("a warning");
        assert!(
            warning.contains("operate-on-gie-id=3") && warning.contains("component(s) 1"),
            "{warning}"
        );
        assert_eq!(secondary.check_producer(&batch), None, "once");

        let mut ok = Secondary::new(&config(|c| c.operate_on_gie_id = Some(1)));
        assert_eq!(ok.check_producer(&batch), None);

        // No inference upstream at all: warned after a while, not on the first frame.
        let mut none = Secondary::new(&config(|_| {}));
        let empty = Batch::single(Frame::new(0, 0, 64, 64));
        let warnings: Vec<_> = (0..40)
            .filter_map(|_| none.check_producer(&empty))
            .collect();
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("no inference component"),
            "{warnings:?}"
        );
    }

    #[test]
    fn attach_adds_classification_tensors_and_children() {
        let mut frame = tracked_frame(0, &[1, 2]);
        let mut result = classified("person");
        result.tensors = vec![(Arc::from("embedding"), vec![0.5, 0.25])];
        result.objects = vec![object(2, 0, BBox::new(80.0, 20.0, 10.0, 10.0), None)];
        attach(&mut frame, 1, result.clone(), 2);
        // Attaching again (a cached result) replaces rather than duplicates.
        attach(
            &mut frame,
            1,
            ItemResult {
                objects: vec![],
                ..result
            },
            2,
        );
        let o = &frame.objects[1];
        assert_eq!(o.classifications.len(), 1);
        assert_eq!(&*o.classifications[0].label, "person");
        assert_eq!(
            o.attributes.get("tensor:2:embedding"),
            Some(&AttributeValue::Floats(vec![0.5, 0.25]))
        );
        assert_eq!(frame.objects.len(), 3);
        assert_eq!(frame.objects[2].parent, Some(1));
        assert!(frame.objects[0].classifications.is_empty());
    }
}
