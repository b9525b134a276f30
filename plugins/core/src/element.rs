// SPDX-License-Identifier: MIT OR Apache-2.0
//! Small helpers shared by the elements' boilerplate.

#[doc(hidden)]
pub use gst as __gst;

/// The `ElementImpl` of a metadata element (one that passes every buffer on and reads or adds
/// analytics metadata): its long name, classification and description, and the shared any-caps
/// pad templates ([`any_caps_pad_templates`](crate::element::any_caps_pad_templates)).
///
/// ```ignore
/// ferrostream_core::metadata_element_impl!(
///     RsTracker,
///     "Ferrostream tracker",
///     "Filter/Analytics/Video",
///     "Tracks the detected objects across frames and gives them stable ids",
/// );
/// ```
#[macro_export]
macro_rules! metadata_element_impl {
    ($imp:ty, $longname:expr, $classification:expr, $description:expr $(,)?) => {
        impl $crate::element::__gst::subclass::prelude::ElementImpl for $imp {
            fn metadata() -> Option<&'static $crate::element::__gst::subclass::ElementMetadata> {
                static METADATA: std::sync::LazyLock<
                    $crate::element::__gst::subclass::ElementMetadata,
                > = std::sync::LazyLock::new(|| {
                    $crate::element::__gst::subclass::ElementMetadata::new(
                        $longname,
                        $classification,
                        $description,
                        "Ferrostream developers",
                    )
                });
                Some(&*METADATA)
            }

            fn pad_templates() -> &'static [$crate::element::__gst::PadTemplate] {
                $crate::element::any_caps_pad_templates()
            }
        }
    };
}

/// The frame size `caps` give (`width`, `height`), or 0 x 0 where they give none (caps of any
/// media pass through the metadata elements).
pub fn caps_frame_size(caps: &gst::CapsRef) -> (u32, u32) {
    caps.structure(0)
        .and_then(|s| Some((s.get::<i32>("width").ok()?, s.get::<i32>("height").ok()?)))
        .map(|(w, h)| (w.max(0) as u32, h.max(0) as u32))
        .unwrap_or((0, 0))
}

/// The always-present `sink` and `src` pad templates of a one-in, one-out element.
pub fn filter_pad_templates(caps: &gst::Caps) -> Vec<gst::PadTemplate> {
    [
        ("src", gst::PadDirection::Src),
        ("sink", gst::PadDirection::Sink),
    ]
    .into_iter()
    .map(|(name, direction)| {
        gst::PadTemplate::new(name, direction, gst::PadPresence::Always, caps)
            .expect("valid static pad template")
    })
    .collect()
}

/// The `sink` and `src` templates, of any caps, of an element that passes every buffer on
/// (the metadata elements): one shared set.
pub fn any_caps_pad_templates() -> &'static [gst::PadTemplate] {
    static TEMPLATES: std::sync::LazyLock<Vec<gst::PadTemplate>> =
        std::sync::LazyLock::new(|| filter_pad_templates(&gst::Caps::new_any()));
    TEMPLATES.as_ref()
}

/// Posts a warning when a property that the element only reads as it starts (flagged
/// `GST_PARAM_MUTABLE_READY`) is set while it is PAUSED or PLAYING: the value is kept and takes
/// effect the next time the element starts, which the application would otherwise not know.
/// Elements call it first thing in `set_property`.
pub fn warn_if_set_late(element: &gst::Element, pspec: &gst::glib::ParamSpec) {
    use gst::prelude::*;
    let flags = pspec.flags();
    let later = gst::PARAM_FLAG_MUTABLE_PAUSED | gst::PARAM_FLAG_MUTABLE_PLAYING;
    if !flags.contains(gst::PARAM_FLAG_MUTABLE_READY) || flags.intersects(later) {
        return;
    }
    let state = element.current_state();
    if state <= gst::State::Ready {
        return;
    }
    gst::element_warning!(
        element,
        gst::LibraryError::Settings,
        (
            "Property {} was set while the element is {state:?}: it takes effect the next time \
             the element starts (READY to PAUSED)",
            pspec.name()
        )
    );
}

/// The outermost bin `element` is in (itself when it has no parent): the pipeline.
pub fn top_level(element: &gst::Element) -> gst::Element {
    use gst::prelude::*;
    let mut top = element.clone();
    while let Some(parent) = top.parent().and_then(|p| p.downcast::<gst::Element>().ok()) {
        top = parent;
    }
    top
}

/// Brings `element`, a child added to a running bin, to its parent's state, and again while the
/// parent's state moves on (at most a few rounds; past those, the parent's own state change
/// reaches the child, which is already in it).
///
/// `gst_element_sync_state_with_parent` reads the parent's state, then sets it. When the parent
/// changes state in between (a camera added over REST while the pipeline starts), the child is set
/// to the older state after the parent has already moved it on, and it stays behind: a source
/// left in READY, a pipeline that never prerolls. Reading the parent's state again after each
/// change closes that window: a change of the parent that starts later sets the child itself.
pub fn sync_state_with_parent(
    element: &impl gst::prelude::IsA<gst::Element>,
) -> Result<(), gst::StateChangeError> {
    use gst::prelude::*;
    let element = element.upcast_ref::<gst::Element>();
    let Some(parent) = element
        .parent()
        .and_then(|p| p.downcast::<gst::Element>().ok())
    else {
        return Ok(());
    };
    // The state the parent is going to (set before it changes its children), else its own.
    let wanted = || match parent.state(gst::ClockTime::ZERO) {
        (_, current, gst::State::VoidPending) => current,
        (_, _, pending) => pending,
    };
    for _ in 0..8 {
        let target = wanted();
        element.set_state(target)?;
        if wanted() == target {
            break;
        }
    }
    Ok(())
}
