// SPDX-License-Identifier: MIT OR Apache-2.0
//! The Ferrostream GStreamer plugin (`libgstferrostream.so`): registers every element and the
//! analytics metadata, once.
//!
//! Applications that link Ferrostream's crates instead of loading the plugin call
//! [`plugin_register_static`] after `gst::init()`.

use gst::glib;

pub mod capi;

pub use ferrostream_analytics as analytics;
pub use ferrostream_core as core;
pub use ferrostream_ipc as ipc;
pub use ferrostream_msgbroker as msgbroker;
pub use ferrostream_osd as osd;
pub use ferrostream_sources as sources;
pub use ferrostream_streammux as streammux;
pub use gst_dlainfer as dlainfer;
pub use gst_tracker as tracker;
pub use gst_trtinfer as trtinfer;

fn plugin_init(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    ferrostream_core::meta::register();
    if !ferrostream_core::BatchMeta::registered_here() {
        // Another copy of Ferrostream (a second build) is loaded in the process and registered
        // the metadata first, with its own layout: this copy's elements must not touch it.
        return Err(glib::bool_error!(
            "another copy of the Ferrostream library is already loaded in this process"
        ));
    }
    ferrostream_metaexport::register(plugin)?;
    #[cfg(feature = "cuda")]
    ferrostream_nvmmtestsrc::register(plugin)?;
    gst_trtinfer::rstrtinfer::register(plugin)?;
    gst_dlainfer::rsdlainfer::register(plugin)?;
    gst_tracker::rstracker::register(plugin)?;
    ferrostream_analytics::rsanalytics::register(plugin)?;
    ferrostream_streammux::register(plugin)?;
    ferrostream_osd::register(plugin)?;
    ferrostream_sources::register(plugin)?;
    ferrostream_msgbroker::register(plugin)?;
    ferrostream_ipc::register(plugin)?;
    Ok(())
}

gst::plugin_define!(
    ferrostream,
    env!("CARGO_PKG_DESCRIPTION"),
    plugin_init,
    concat!(env!("CARGO_PKG_VERSION"), "-", env!("COMMIT_ID")),
    "MIT/X11",
    env!("CARGO_PKG_NAME"),
    "Ferrostream",
    env!("CARGO_PKG_REPOSITORY"),
    env!("BUILD_REL_DATE")
);
