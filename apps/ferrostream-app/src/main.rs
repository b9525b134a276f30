// SPDX-License-Identifier: MIT OR Apache-2.0
//! `ferrostream-app -c CONFIG`: runs a deepstream-app configuration file (`.txt` or `.yml`) on
//! Ferrostream's elements. `--print-pipeline` prints the `gst-launch-1.0` description it runs;
//! `--keys-table` prints the documentation table of every key.

use std::path::PathBuf;
use std::process::ExitCode;

use ferrostream_app::{document::Document, keys, run, translate};

const USAGE: &str = "\
Usage: ferrostream-app -c CONFIG [--print-pipeline] [--frames N] [--metadata FILE]
       ferrostream-app --keys-table

Runs a deepstream-app configuration file (.txt key file or .yml) on Ferrostream's elements.
  -c, --cfg-file CONFIG  the configuration file
  --print-pipeline       print the gst-launch-1.0 description and exit (the app runs exactly it)
  --frames N             end every source after N frames
  --metadata FILE        write every frame's metadata as JSON lines (rsmetaexport) to FILE
  --keys-table           print the table of every deepstream-app key and what Ferrostream does
  -h, --help             this text
While running: q quits, p pauses, r resumes (when standard input is a terminal); Ctrl-C ends
the stream so files are finalised (twice stops at once).";

fn main() -> ExitCode {
    ferrostream_app::signals::block();
    let mut config: Option<PathBuf> = None;
    let mut print = false;
    let mut options = ferrostream_app::model::RunOptions::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-c" | "--cfg-file" => match args.next() {
                Some(path) => config = Some(PathBuf::from(path)),
                None => return usage_error("-c needs a configuration file"),
            },
            a if a.starts_with("--cfg-file=") => {
                config = Some(PathBuf::from(&a["--cfg-file=".len()..]));
            }
            "--print-pipeline" => print = true,
            "--frames" => match args.next().and_then(|n| n.parse().ok()) {
                Some(n) => options.frames = Some(n),
                None => return usage_error("--frames needs a number of frames"),
            },
            "--metadata" => match args.next() {
                Some(path) => options.metadata = Some(PathBuf::from(path)),
                None => return usage_error("--metadata needs a file"),
            },
            "--keys-table" => {
                print!("{}", keys::markdown());
                return ExitCode::SUCCESS;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => return usage_error(&format!("unknown argument `{other}`")),
        }
    }
    let Some(config) = config else {
        return usage_error("no configuration file (-c CONFIG)");
    };
    match app(&config, print, options) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ferrostream-app: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("ferrostream-app: {message}\n\n{USAGE}");
    ExitCode::from(2)
}

fn app(
    path: &std::path::Path,
    print: bool,
    options: ferrostream_app::model::RunOptions,
) -> Result<ExitCode, String> {
    let doc = Document::load(path).map_err(|e| e.to_string())?;
    let (mut config, report) = keys::read(&doc).map_err(|e| e.to_string())?;
    config.options = options;
    run::init()?;
    let plan = translate::translate(&config, &run::SystemEnv)?;
    for warning in report.warnings.iter().chain(&plan.warnings) {
        eprintln!("** WARN: {warning}");
    }
    for notice in report.notices.iter().chain(&plan.notices) {
        eprintln!("** NOTICE: {notice}");
    }
    if print {
        println!("gst-launch-1.0 -e {}", plan.description);
        for out in &plan.rtsp {
            println!(
                "# and an RTSP server on port {} serving /ds-test from UDP port {} ({})",
                out.rtsp_port, out.udp_port, out.encoding
            );
        }
        for sub in &plan.consumers {
            println!(
                "# and an MQTT subscriber ({}) of {} on {}:{} (smart record start and stop)",
                sub.group,
                sub.topics.join(", "),
                sub.host,
                sub.port
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    match run::run(&plan)? {
        run::Outcome::Finished => Ok(ExitCode::SUCCESS),
        run::Outcome::Failed(e) => Err(e),
    }
}
