//! Small helpers shared by the elements' boilerplate.

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
