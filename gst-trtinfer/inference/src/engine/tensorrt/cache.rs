// SPDX-License-Identifier: MIT OR Apache-2.0
//! The engine cache: TensorRT engines built from ONNX are stored under a key of everything that
//! makes an engine valid (model content, TensorRT version, GPU, precision, batch range, DLA
//! core...), so the next start loads in milliseconds instead of rebuilding for minutes. Files are
//! written atomically (temporary file, fsync, rename), so a crash mid-write never leaves a
//! truncated engine behind. A cached engine whose key differs only in the GPU or the TensorRT
//! version is reported with the reason it is rebuilt.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use crate::cache::{sha256_hex, write_atomically};

/// Everything an engine's validity depends on. Its text form is stored beside the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheKey {
    pub model_sha256: String,
    /// TensorRT version, e.g. "10.3.0".
    pub tensorrt: String,
    pub gpu: String,
    /// Compute capability, e.g. "8.7".
    pub compute_capability: String,
    pub precision: String,
    pub min_batch: u32,
    pub max_batch: u32,
    pub dla_core: Option<u32>,
    pub gpu_fallback: bool,
    pub int8_calibration_sha256: Option<String>,
    pub workspace_bytes: u64,
}

/// Field names of the key's text form, in order.
const FIELDS: [&str; 11] = [
    "model-sha256",
    "tensorrt",
    "gpu",
    "compute-capability",
    "precision",
    "min-batch",
    "max-batch",
    "dla-core",
    "gpu-fallback",
    "int8-calibration-sha256",
    "workspace-bytes",
];

impl CacheKey {
    fn values(&self) -> [String; 11] {
        let opt = |v: Option<String>| v.unwrap_or_else(|| "none".into());
        [
            self.model_sha256.clone(),
            self.tensorrt.clone(),
            self.gpu.clone(),
            self.compute_capability.clone(),
            self.precision.clone(),
            self.min_batch.to_string(),
            self.max_batch.to_string(),
            opt(self.dla_core.map(|c| c.to_string())),
            self.gpu_fallback.to_string(),
            opt(self.int8_calibration_sha256.clone()),
            self.workspace_bytes.to_string(),
        ]
    }

    /// The key as `name: value` lines (what is stored beside the engine).
    pub fn to_text(&self) -> String {
        FIELDS
            .iter()
            .zip(self.values())
            .fold(String::new(), |mut s, (name, value)| {
                let _ = writeln!(s, "{name}: {value}");
                s
            })
    }

    /// The fields of a stored key, by name.
    fn parse_text(text: &str) -> Vec<(String, String)> {
        text.lines()
            .filter_map(|l| l.split_once(": "))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// 16 hex digits of the key's SHA-256: part of the file name.
    pub fn digest(&self) -> String {
        sha256_hex(self.to_text().as_bytes())[..16].to_string()
    }

    /// How a stored key differs from this one, when it is for the same model and settings but
    /// another GPU or TensorRT version; `None` for anything else.
    fn platform_change(&self, stored: &[(String, String)]) -> Option<String> {
        let value = |name: &str| {
            stored
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        let ours = self.values();
        let mut changes = Vec::new();
        for (name, mine) in FIELDS.iter().zip(&ours) {
            let theirs = value(name)?;
            if theirs == mine {
                continue;
            }
            if !matches!(*name, "tensorrt" | "gpu" | "compute-capability") {
                return None;
            }
            changes.push(format!("{name} {theirs} (cached) vs {mine} (here)"));
        }
        (!changes.is_empty()).then(|| changes.join(", "))
    }
}

/// What the cache holds for a key.
#[derive(Debug, PartialEq)]
pub enum Lookup {
    /// An engine built for exactly this key.
    Hit(PathBuf),
    /// Nothing for this model and these settings.
    Miss,
    /// An engine for this model and settings, built for another GPU or TensorRT version: it is
    /// rebuilt, for the reason given.
    Stale { path: PathBuf, reason: String },
}

/// Engines under a directory, named `<model>-<precision>-b<max batch>-<key digest>.engine`
/// with the key's text in a `.key` file beside each.
#[derive(Debug, Clone)]
pub struct EngineCache {
    dir: PathBuf,
}

impl EngineCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn stem(model: &str, key: &CacheKey) -> String {
        let model: String = model
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        format!("{model}-{}-b{}", key.precision, key.max_batch)
    }

    /// Where the engine of `key` for model `model` (its file stem) is stored.
    pub fn path(&self, model: &str, key: &CacheKey) -> PathBuf {
        self.dir.join(format!(
            "{}-{}.engine",
            Self::stem(model, key),
            key.digest()
        ))
    }

    pub fn lookup(&self, model: &str, key: &CacheKey) -> Lookup {
        let path = self.path(model, key);
        if path.is_file() && path.with_extension("key").is_file() {
            return Lookup::Hit(path);
        }
        let prefix = format!("{}-", Self::stem(model, key));
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return Lookup::Miss;
        };
        for entry in entries.flatten() {
            let p = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if !(name.starts_with(&prefix) && name.ends_with(".key")) {
                continue;
            }
            let engine = p.with_extension("engine");
            let Ok(text) = fs::read_to_string(&p) else {
                continue;
            };
            if !engine.is_file() {
                continue;
            }
            if let Some(reason) = key.platform_change(&CacheKey::parse_text(&text)) {
                return Lookup::Stale {
                    path: engine,
                    reason,
                };
            }
        }
        Lookup::Miss
    }

    /// Stores `engine` for `key`, atomically: the engine and its key are each written to a
    /// temporary file, synced and renamed into place (the key last, so a key always describes a
    /// complete engine). Replaces a stale engine of the same model and settings.
    pub fn store(&self, model: &str, key: &CacheKey, engine: &[u8]) -> std::io::Result<PathBuf> {
        fs::create_dir_all(&self.dir)?;
        if let Lookup::Stale { path, .. } = self.lookup(model, key) {
            let _ = fs::remove_file(path.with_extension("key"));
            let _ = fs::remove_file(&path);
        }
        let path = self.path(model, key);
        write_atomically(&path, engine)?;
        write_atomically(&path.with_extension("key"), key.to_text().as_bytes())?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CacheKey {
        CacheKey {
            model_sha256: sha256_hex(b"model"),
            tensorrt: "10.3.0".into(),
            gpu: "Orin (nvgpu)".into(),
            compute_capability: "8.7".into(),
            precision: "fp16".into(),
            min_batch: 1,
            max_batch: 4,
            dla_core: None,
            gpu_fallback: false,
            int8_calibration_sha256: None,
            workspace_bytes: 0,
        }
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("fs-engine-cache-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn every_field_changes_the_key() {
        let base = key();
        let variants: Vec<CacheKey> = vec![
            CacheKey {
                model_sha256: sha256_hex(b"other model"),
                ..key()
            },
            CacheKey {
                tensorrt: "10.4.0".into(),
                ..key()
            },
            CacheKey {
                gpu: "NVIDIA H100".into(),
                ..key()
            },
            CacheKey {
                compute_capability: "9.0".into(),
                ..key()
            },
            CacheKey {
                precision: "int8".into(),
                ..key()
            },
            CacheKey {
                min_batch: 2,
                ..key()
            },
            CacheKey {
                max_batch: 8,
                ..key()
            },
            CacheKey {
                dla_core: Some(0),
                ..key()
            },
            CacheKey {
                gpu_fallback: true,
                ..key()
            },
            CacheKey {
                int8_calibration_sha256: Some(sha256_hex(b"cal")),
                ..key()
            },
            CacheKey {
                workspace_bytes: 1 << 30,
                ..key()
            },
        ];
        assert_eq!(variants.len(), FIELDS.len());
        let mut digests: Vec<String> = variants.iter().map(CacheKey::digest).collect();
        digests.push(base.digest());
        digests.sort();
        digests.dedup();
        assert_eq!(digests.len(), FIELDS.len() + 1, "all distinct");
        assert_eq!(base.digest(), key().digest(), "stable");
    }

    #[test]
    fn stored_engine_is_found_again() {
        let cache = EngineCache::new(temp_dir("hit"));
        assert_eq!(cache.lookup("yolo v8", &key()), Lookup::Miss);
        let path = cache.store("yolo v8", &key(), b"ENGINE").unwrap();
        assert_eq!(cache.lookup("yolo v8", &key()), Lookup::Hit(path.clone()));
        assert_eq!(fs::read(&path).unwrap(), b"ENGINE");
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("yolo-v8-fp16-b4-"), "{name}");
        // No temporary files are left behind.
        let leftovers: Vec<_> = fs::read_dir(cache.dir())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
        // Another model, or other settings, do not match.
        assert_eq!(cache.lookup("yolo", &key()), Lookup::Miss);
        let int8 = CacheKey {
            precision: "int8".into(),
            ..key()
        };
        assert_eq!(cache.lookup("yolo v8", &int8), Lookup::Miss);
        let changed_model = CacheKey {
            model_sha256: sha256_hex(b"retrained"),
            ..key()
        };
        assert_eq!(cache.lookup("yolo v8", &changed_model), Lookup::Miss);
        fs::remove_dir_all(cache.dir()).unwrap();
    }

    #[test]
    fn another_gpu_or_tensorrt_is_rebuilt_with_the_reason() {
        let cache = EngineCache::new(temp_dir("stale"));
        let old = cache.store("det", &key(), b"OLD").unwrap();
        let here = CacheKey {
            tensorrt: "10.4.0".into(),
            gpu: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: "9.0".into(),
            ..key()
        };
        let Lookup::Stale { path, reason } = cache.lookup("det", &here) else {
            panic!("a stale engine")
        };
        assert_eq!(path, old);
        assert!(
            reason.contains("tensorrt 10.3.0 (cached) vs 10.4.0 (here)")
                && reason.contains("gpu Orin (nvgpu) (cached) vs NVIDIA H100 80GB HBM3 (here)")
                && reason.contains("compute-capability 8.7 (cached) vs 9.0 (here)"),
            "{reason}"
        );
        // Storing the rebuilt engine replaces the stale one.
        let new = cache.store("det", &here, b"NEW").unwrap();
        assert!(!old.exists() && !old.with_extension("key").exists());
        assert_eq!(cache.lookup("det", &here), Lookup::Hit(new));
        fs::remove_dir_all(cache.dir()).unwrap();
    }

    #[test]
    fn an_engine_without_its_key_is_not_trusted() {
        // A crash between the two renames leaves an engine without a key: it is rebuilt.
        let cache = EngineCache::new(temp_dir("partial"));
        fs::create_dir_all(cache.dir()).unwrap();
        let path = cache.path("det", &key());
        write_atomically(&path, b"ENGINE").unwrap();
        assert_eq!(cache.lookup("det", &key()), Lookup::Miss);
        // A leftover temporary file is ignored.
        fs::write(cache.dir().join(".det.engine.1.tmp"), b"half").unwrap();
        assert_eq!(cache.lookup("det", &key()), Lookup::Miss);
        fs::remove_dir_all(cache.dir()).unwrap();
    }

    #[test]
    fn atomic_write_replaces_whole_files() {
        let dir = temp_dir("atomic");
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.engine");
        write_atomically(&path, &[1u8; 4096]).unwrap();
        write_atomically(&path, b"short").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"short");
        // A write into a missing directory fails and leaves nothing.
        let missing = dir.join("no/such/dir/b.engine");
        assert!(write_atomically(&missing, b"x").is_err());
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }
}
