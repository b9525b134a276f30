// SPDX-License-Identifier: MIT OR Apache-2.0
//! Where Ferrostream looks for models and keeps downloaded files.
//!
//! Model files named without a directory (`onnx-file=centerface.onnx`) that are not found next to
//! the configuration file are searched for in, in order: the directories listed in
//! `FERROSTREAM_MODEL_DIR` (`:`-separated), then `<cache>/models`, where `<cache>` is
//! `FERROSTREAM_CACHE_DIR`, else `$XDG_CACHE_HOME/ferrostream`, else `~/.cache/ferrostream`.
//! `scripts/fetch-models.sh` fills that cache.

use std::path::{Path, PathBuf};

/// Environment variable listing extra model directories.
pub const MODEL_DIR_ENV: &str = "FERROSTREAM_MODEL_DIR";
/// Environment variable overriding the cache directory.
pub const CACHE_DIR_ENV: &str = "FERROSTREAM_CACHE_DIR";

/// The per-user cache directory of Ferrostream.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = non_empty_env(CACHE_DIR_ENV) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = non_empty_env("XDG_CACHE_HOME") {
        return Path::new(&dir).join("ferrostream");
    }
    let home = non_empty_env("HOME").unwrap_or_else(|| "/tmp".into());
    Path::new(&home).join(".cache").join("ferrostream")
}

/// Directories searched for model files, in order.
pub fn model_search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = non_empty_env(MODEL_DIR_ENV)
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    dirs.push(cache_dir().join("models"));
    dirs
}

/// Resolves a model path: `path` itself when it exists, else (for a bare file name) the first
/// match in [`model_search_dirs`]. On failure returns every location tried.
pub fn resolve_model(path: &Path) -> Result<PathBuf, Vec<PathBuf>> {
    // A link that leads nowhere (a loop) is this path too: reading it says what is wrong.
    if path.exists() || path.symlink_metadata().is_ok() {
        return Ok(path.to_owned());
    }
    let mut tried = vec![path.to_owned()];
    if let Some(name) = path.file_name() {
        for dir in model_search_dirs() {
            let candidate = dir.join(name);
            if candidate.exists() {
                return Ok(candidate);
            }
            tried.push(candidate);
        }
    }
    Err(tried)
}

fn non_empty_env(key: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(key).filter(|v| !v.is_empty())
}
