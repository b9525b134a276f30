// SPDX-License-Identifier: MIT OR Apache-2.0
//! Gives the plugin library a soname, so that C applications linked against it (through the
//! `ferrostream` pkg-config file) record the library's name, not the path they were built with;
//! and the commit and date it was built from (`COMMIT_ID`, `BUILD_REL_DATE`), which
//! `gst-inspect-1.0 ferrostream` shows as the plugin's version and release date.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libgstferrostream.so");
    gst_plugin_version_helper::info();
}
