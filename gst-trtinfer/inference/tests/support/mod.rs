// SPDX-License-Identifier: MIT OR Apache-2.0
//! What the inference crate's tests and benches share: where the repository and the test images
//! are, feeding an image file to `Inference`, and a watchdog.

#![allow(dead_code)] // each test or bench uses part of it

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ferrostream_core::BBox;
use ferrostream_inference::inference::Inference;
use ferrostream_inference::preprocess::{PackedImage, SourceImage};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A test image: in `FERROSTREAM_MEDIA_DIR`, beside the repository, or in the user's cache.
pub fn media(name: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::env::var_os("FERROSTREAM_MEDIA_DIR")
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    dirs.push(repo_root().join("../shared/media"));
    dirs.push(ferrostream_core::paths::cache_dir().join("media"));
    dirs.iter()
        .map(|d| d.join(name))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("test image {name} not found in {dirs:?}"))
}

/// Pre-processes the whole test image `name` into tensor slot `slot`; returns its size.
pub fn preprocess_file(inference: &mut Inference, slot: usize, name: &str) -> (u32, u32) {
    let pixels = image::open(media(name)).unwrap().to_rgb8();
    let (width, height) = pixels.dimensions();
    let source = SourceImage::packed(PackedImage::rgb(pixels.as_raw(), width, height)).unwrap();
    inference.preprocess(
        slot,
        &source,
        BBox::new(0.0, 0.0, width as f32, height as f32),
    );
    (width, height)
}

/// Ends the process with a message when it is not dropped within `limit`: a test that hangs
/// (a runtime that never answers) fails instead of stalling the suite.
pub struct Watchdog(Arc<AtomicBool>);

impl Watchdog {
    pub fn new(what: &'static str, limit: Duration) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            while !flag.load(Ordering::SeqCst) {
                if start.elapsed() > limit {
                    eprintln!("{what}: no end after {limit:?}; stopping the test process");
                    std::process::exit(101);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Self(done)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}
