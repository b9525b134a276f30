// SPDX-License-Identifier: MIT OR Apache-2.0
//! ONNX models read and rewritten: the format's messages ([`proto`]) and the FP32 to FP16
//! conversion ([`fp16`]) with its cache ([`fp16_model`]).

pub mod fp16;
pub mod proto;

use std::path::{Path, PathBuf};

/// A model converted to FP16, and where it came from.
#[derive(Debug, Clone)]
pub struct Fp16Model {
    pub bytes: Vec<u8>,
    /// The converted model's file in the cache, when it is stored there.
    pub path: Option<PathBuf>,
    /// What the conversion did (from the cache's record on a hit) and whether it was cached.
    pub summary: String,
}

/// `bytes` (the ONNX model at `model`) converted to FP16: read from `cache_dir` when converted
/// before, else converted and stored there under a key of the model's content and the
/// conversion rules (a cache that cannot be written only costs the conversion next time).
pub fn fp16_model(model: &Path, bytes: &[u8], cache_dir: &Path) -> Result<Fp16Model, String> {
    let key = crate::cache::sha256_hex_of(&[bytes, fp16::rules_digest().as_bytes()]);
    let path = cache_dir.join(format!(
        "{}-fp16-{}.onnx",
        crate::cache::file_stem(model),
        &key[..16]
    ));
    let record = path.with_extension("txt");
    if let (Ok(bytes), Ok(summary)) = (std::fs::read(&path), std::fs::read_to_string(&record)) {
        return Ok(Fp16Model {
            bytes,
            path: Some(path),
            summary: format!("{} (cached)", summary.lines().next().unwrap_or("")),
        });
    }
    let mut proto = proto::decode_model(bytes)?;
    let report = fp16::convert(&mut proto)?;
    let converted = proto::encode_model(&proto);
    let stored = std::fs::create_dir_all(cache_dir)
        .and_then(|()| crate::cache::write_atomically(&path, &converted))
        .and_then(|()| {
            let text = format!(
                "{report}\nmodel-sha256+rules: {key}\nconverter: {} (rules {})\n",
                fp16::CONVERTER_VERSION,
                fp16::rules_digest()
            );
            crate::cache::write_atomically(&record, text.as_bytes())
        });
    let (path, summary) = match stored {
        Ok(()) => (Some(path), format!("{report} (converted, cached)")),
        Err(e) => (
            None,
            format!(
                "{report} (converted; not cached: {}: {e})",
                cache_dir.display()
            ),
        ),
    };
    Ok(Fp16Model {
        bytes: converted,
        path,
        summary,
    })
}
