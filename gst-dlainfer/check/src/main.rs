// SPDX-License-Identifier: MIT OR Apache-2.0
//! `ferrostream-dla-check`: which layers of an ONNX model can run on a Jetson DLA core, the
//! GPU fallback subgraphs, the share of compute that stays on the DLA, and how to raise it.
//! Runs on any machine: it reads the model and applies the documented DLA restrictions.
//!
//! ```text
//! ferrostream-dla-check mobilenet_v2_imagenet.onnx
//! ferrostream-dla-check --shape image_tensor:0=1x300x300x3 --json coco.onnx > report.json
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use ferrostream_dla_check as check;
use ferrostream_dla_check::{CheckOptions, Precision};

const USAGE: &str = "usage: ferrostream-dla-check [options] MODEL.onnx

Reports which layers of MODEL a DLA build (TensorRT, GPU fallback) places on the DLA.

options:
  --precision fp16|int8   precision the engine is built for (default fp16; the DLA has no fp32)
  --batch N               batch size the engine is built for (default 1)
  --shape NAME=DxDxDxD    fixed dims of a dynamic input (repeatable)
  --json                  print the report as JSON
  --all-checks            list passed checks too (text output)
  --min-coverage P        exit with status 2 when less than P percent of MACs run on the DLA
  -h, --help              this text";

struct Args {
    model: PathBuf,
    options: CheckOptions,
    json: bool,
    all_checks: bool,
    min_coverage: Option<f64>,
}

fn parse(args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut options = CheckOptions::default();
    let (mut model, mut json, mut all_checks, mut min_coverage) = (None, false, false, None);
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "-h" | "--help" => return Err(String::new()),
            "--json" => json = true,
            "--all-checks" => all_checks = true,
            "--precision" => {
                options.precision = match value("--precision")?.as_str() {
                    "fp16" => Precision::Fp16,
                    "int8" => Precision::Int8,
                    "fp32" => Precision::Fp32,
                    other => return Err(format!("--precision {other}: expected fp16 or int8")),
                }
            }
            "--batch" => {
                let v = value("--batch")?;
                options.batch = v
                    .parse()
                    .ok()
                    .filter(|&b| b > 0)
                    .ok_or(format!("--batch {v}: expected a positive integer"))?;
            }
            "--shape" => {
                let v = value("--shape")?;
                let (name, dims) = v
                    .rsplit_once('=')
                    .ok_or(format!("--shape {v}: expected NAME=DxDxD"))?;
                let dims = dims
                    .split('x')
                    .map(|d| d.parse::<i64>().ok().filter(|&d| d > 0))
                    .collect::<Option<Vec<_>>>()
                    .ok_or(format!("--shape {v}: dims must be positive integers"))?;
                options.input_shapes.insert(name.to_string(), dims);
            }
            "--min-coverage" => {
                let v = value("--min-coverage")?;
                min_coverage = Some(
                    v.parse::<f64>()
                        .ok()
                        .filter(|p| (0.0..=100.0).contains(p))
                        .ok_or(format!("--min-coverage {v}: expected a percentage"))?,
                );
            }
            flag if flag.starts_with('-') => return Err(format!("unknown option {flag}")),
            path if model.is_none() => model = Some(PathBuf::from(path)),
            extra => return Err(format!("unexpected argument {extra}")),
        }
    }
    Ok(Args {
        model: model.ok_or("no model given")?,
        options,
        json,
        all_checks,
        min_coverage,
    })
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("ferrostream-dla-check: {e}\n\n{USAGE}");
            return ExitCode::from(64);
        }
    };
    let report = match check::check_file(&args.model, &args.options) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ferrostream-dla-check: {e}");
            return ExitCode::FAILURE;
        }
    };
    if args.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_text(args.all_checks));
    }
    match args.min_coverage {
        Some(p) if report.dla_share * 100.0 < p => ExitCode::from(2),
        _ => ExitCode::SUCCESS,
    }
}
