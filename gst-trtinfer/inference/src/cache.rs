// SPDX-License-Identifier: MIT OR Apache-2.0
//! Files derived from models and kept between runs (TensorRT engines, FP16 conversions of ONNX
//! models): where they live, their content keys and how they are written.

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The cache directory: `FERROSTREAM_ENGINE_CACHE`, else `$XDG_CACHE_HOME/ferrostream/engines`,
/// else `~/.cache/ferrostream/engines`.
pub fn default_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("FERROSTREAM_ENGINE_CACHE").filter(|d| !d.is_empty()) {
        return dir.into();
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("ferrostream/engines")
}

/// The SHA-256 of the concatenation of `parts`, in hex.
pub fn sha256_hex_of(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    hasher
        .finalize()
        .iter()
        .fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// The SHA-256 of `bytes`, in hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    sha256_hex_of(&[bytes])
}

/// A model's file stem made safe for a file name (letters, digits, `_`; anything else `-`).
pub fn file_stem(model: &Path) -> String {
    model
        .file_stem()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Writes `bytes` to a temporary file beside `path`, syncs it and renames it to `path`, so a
/// crash mid-write never leaves a truncated file under the final name.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Unique per writer: two elements of one process may store the same file at once.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()));
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        // The rename itself is durable once the directory is synced.
        if let Some(dir) = path.parent() {
            fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_is_the_standard_digest() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(sha256_hex_of(&[b"a", b"bc"]), sha256_hex(b"abc"));
    }

    #[test]
    fn file_stems_are_safe_names() {
        assert_eq!(file_stem(Path::new("/m/yolo v8.s.onnx")), "yolo-v8-s");
    }

    #[test]
    fn atomic_write_replaces_whole_files() {
        let dir = std::env::temp_dir().join(format!("fs-cache-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.bin");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two!").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two!");
        assert_eq!(
            fs::read_dir(&dir).unwrap().count(),
            1,
            "no temporary file left"
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
