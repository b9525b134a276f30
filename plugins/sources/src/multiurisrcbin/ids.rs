// SPDX-License-Identifier: MIT OR Apache-2.0
//! Stream ids per camera: a camera keeps its id for the life of the element, so a camera
//! removed and added again gets the id it had (and the rules configured for it, the muxer pad
//! it used). A new camera gets the lowest id below `max-sources` that no camera playing holds
//! and no earlier camera was given; when every id was given once, the lowest id free now (its
//! earlier camera loses the claim).

use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Default)]
pub struct StreamIds {
    /// Every camera given an id, and which.
    given: BTreeMap<String, u32>,
    /// Ids of the cameras present now.
    active: BTreeSet<u32>,
}

impl StreamIds {
    /// An id for `camera`, or `None` when `max` cameras are present.
    pub fn take(&mut self, camera: &str, max: u32) -> Option<u32> {
        if let Some(&id) = self.given.get(camera)
            && id < max
            && !self.active.contains(&id)
        {
            self.active.insert(id);
            return Some(id);
        }
        let claimed: BTreeSet<u32> = self.given.values().copied().collect();
        let free = |id: &u32| !self.active.contains(id);
        let id = (0..max)
            .find(|id| free(id) && !claimed.contains(id))
            .or_else(|| (0..max).find(free))?;
        self.given.retain(|_, given| *given != id);
        self.given.insert(camera.to_string(), id);
        self.active.insert(id);
        Some(id)
    }

    /// The camera of `id` left.
    pub fn release(&mut self, id: u32) {
        self.active.remove(&id);
    }

    #[cfg(test)]
    pub fn active(&self) -> usize {
        self.active.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cameras_keep_their_ids() {
        let mut ids = StreamIds::default();
        assert_eq!(ids.take("a", 4), Some(0));
        assert_eq!(ids.take("b", 4), Some(1));
        ids.release(0);
        // A new camera does not take a's id while another is unclaimed.
        assert_eq!(ids.take("c", 4), Some(2));
        assert_eq!(ids.take("a", 4), Some(0));
        assert_eq!(ids.take("d", 4), Some(3));
        assert_eq!(ids.take("e", 4), None);
        ids.release(1);
        // Every id was given once: the lowest free one, whose camera loses its claim.
        assert_eq!(ids.take("e", 4), Some(1));
        ids.release(1);
        assert_eq!(ids.take("b", 4), Some(1));
        assert_eq!(ids.active(), 4);
    }
}
