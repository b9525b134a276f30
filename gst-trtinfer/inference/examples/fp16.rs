// SPDX-License-Identifier: MIT OR Apache-2.0
//! Converts an ONNX model to FP16 as `network-mode=fp16` does on ONNX Runtime's CUDA provider
//! (and on TensorRT 11), into a cache directory, and prints what the conversion did and where
//! the converted model is:
//!
//! ```text
//! cargo run -p ferrostream-inference --example fp16 -- model.onnx [CACHE_DIR]
//! ```
//!
//! CACHE_DIR defaults to the element's engine cache (`FERROSTREAM_ENGINE_CACHE`, else
//! `~/.cache/ferrostream/engines`).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(model) = args.first().map(PathBuf::from) else {
        eprintln!("usage: fp16 MODEL.onnx [CACHE_DIR]");
        return ExitCode::from(2);
    };
    let dir = args
        .get(1)
        .map(PathBuf::from)
        .unwrap_or_else(ferrostream_inference::cache::default_dir);
    let bytes = match ferrostream_core::files::read(
        &model,
        ferrostream_core::files::MAX_MODEL_FILE_BYTES,
    ) {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("{}: {e}", model.display());
            return ExitCode::FAILURE;
        }
    };
    match ferrostream_inference::onnx::fp16_model(&model, &bytes, &dir) {
        Ok(converted) => {
            println!("{}", converted.summary);
            if let Some(path) = converted.path {
                println!("{}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{}: {e}", model.display());
            ExitCode::FAILURE
        }
    }
}
