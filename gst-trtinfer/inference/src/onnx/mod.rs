// SPDX-License-Identifier: MIT OR Apache-2.0
//! ONNX models read and rewritten: the format's messages ([`proto`]), the checks a model passes
//! before any backend opens it ([`check`]), loops capped for a runtime that cannot stop them
//! ([`loops`]), and the FP32 to FP16 conversion ([`fp16`]) with its cache ([`fp16_model`]).

pub mod check;
pub mod fp16;
pub mod loops;
pub mod proto;

use std::path::{Path, PathBuf};

/// Whether the ONNX model read from `reader` has Q/DQ nodes: an operator type is stored as its
/// name, so a quantised model holds the bytes `DequantizeLinear`. Read in blocks of 1 MiB (a
/// model can be hundreds of MB), so a file need not be in memory.
pub fn has_qdq_nodes(mut reader: impl std::io::Read) -> std::io::Result<bool> {
    const NEEDLE: &[u8] = b"DequantizeLinear";
    // Each block starts with the previous block's last bytes, so a name across two is found.
    let mut block = vec![0u8; 1 << 20];
    let mut kept = 0;
    loop {
        let n = reader.read(&mut block[kept..])?;
        if n == 0 {
            return Ok(false);
        }
        let end = kept + n;
        if block[..end].windows(NEEDLE.len()).any(|w| w == NEEDLE) {
            return Ok(true);
        }
        kept = (NEEDLE.len() - 1).min(end);
        block.copy_within(end - kept..end, 0);
    }
}

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
    use ferrostream_core::files;
    if let (Ok(bytes), Ok(summary)) = (
        files::read(&path, files::MAX_MODEL_FILE_BYTES),
        files::read_text(&record),
    ) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qdq_nodes_are_found_across_block_boundaries() {
        // The name straddles the end of the first 1 MiB block.
        let mut bytes = vec![0u8; (1 << 20) - 5];
        bytes.extend_from_slice(b"DequantizeLinear");
        bytes.extend_from_slice(&[0; 100]);
        assert!(has_qdq_nodes(&bytes[..]).unwrap());
        assert!(!has_qdq_nodes(&vec![7u8; 3 << 20][..]).unwrap());
    }
}
