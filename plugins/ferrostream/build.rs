// SPDX-License-Identifier: MIT OR Apache-2.0
//! Gives the plugin library a soname, so that C applications linked against it (through the
//! `ferrostream` pkg-config file) record the library's name, not the path they were built with.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libgstferrostream.so");
}
