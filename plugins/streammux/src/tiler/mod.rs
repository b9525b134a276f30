pub fn register(_plugin: &gst::Plugin) -> Result<(), gst::glib::BoolError> {
    Ok(())
}
