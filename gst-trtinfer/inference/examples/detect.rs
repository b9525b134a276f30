// SPDX-License-Identifier: MIT OR Apache-2.0
//! Runs the model of an nvinfer configuration on an image file and prints what it found: the
//! inference crate on its own, without GStreamer.
//!
//! ```text
//! cargo run -p ferrostream-inference --example detect -- pipelines/coco_ssd.txt messi5.jpg
//! ```
//!
//! Prints one line per object (class, label, confidence, box in image pixels), or the top class
//! of a classifier. The model and label file are found as the element finds them (beside the
//! configuration, in `FERROSTREAM_MODEL_DIR`, in the user's model cache).

use std::path::PathBuf;
use std::process::ExitCode;

use ferrostream_core::BBox;
use ferrostream_inference::config::InferConfig;
use ferrostream_inference::inference::Inference;
use ferrostream_inference::preprocess::{PackedImage, SourceImage};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [config, image] = args.as_slice() else {
        eprintln!("usage: detect CONFIG.txt IMAGE (JPEG or PNG)");
        return ExitCode::from(2);
    };
    match detect(PathBuf::from(config), PathBuf::from(image)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("detect: {e}");
            ExitCode::FAILURE
        }
    }
}

fn detect(config: PathBuf, image: PathBuf) -> Result<(), String> {
    let loaded = InferConfig::from_file(&config).map_err(|e| e.to_string())?;
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }
    for warning in loaded.config.validate()? {
        eprintln!("warning: {warning}");
    }
    let mut inference = Inference::new(loaded.config, 0).map_err(|e| e.to_string())?;
    for warning in inference.take_warnings() {
        eprintln!("warning: {warning}");
    }
    let pixels = image::open(&image)
        .map_err(|e| format!("{}: {e}", image.display()))?
        .to_rgb8();
    let (width, height) = pixels.dimensions();
    let source = SourceImage::packed(PackedImage::rgb(pixels.as_raw(), width, height))?;
    inference.preprocess(0, &source, BBox::new(0.0, 0.0, width as f32, height as f32));
    inference.infer(1).map_err(|e| e.to_string())?;
    let result = inference.result(0, width, height)?;
    let objects = result.into_frame_objects(width, height);
    println!(
        "{}: {} object(s) ({})",
        image.display(),
        objects.len(),
        inference
            .parser()
            .map_or_else(|| "no parser".to_string(), |p| p.summary())
    );
    for o in objects {
        let b = o.detector_bbox;
        println!(
            "class {:>3} {:<20} {:.2}  x {:.0} y {:.0} w {:.0} h {:.0}",
            o.class_id, o.label, o.confidence, b.left, b.top, b.width, b.height
        );
    }
    Ok(())
}
