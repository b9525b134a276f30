// SPDX-License-Identifier: MIT OR Apache-2.0
//! Hostile configuration files (proptest, structure-aware, as the other configuration readers
//! are fuzzed in tests/tests/reliability_fuzz.rs): key files and YAML made of deepstream-app's
//! own groups and keys with arbitrary values, mixed with garbage lines. Reading and
//! translating each must end in a plan or an error, never a panic. Cases:
//! `FERROSTREAM_FUZZ_CASES` (default 500).

use std::path::Path;

use ferrostream_app::document::{Document, Form};
use ferrostream_app::keys;
use ferrostream_app::translate::{Env, translate};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

struct Machine;

impl Env for Machine {
    fn has_element(&self, name: &str) -> bool {
        name == "x264enc"
    }
    fn has_display(&self) -> bool {
        false
    }
    fn has_gpu(&self) -> bool {
        false
    }
}

const GROUPS: &[&str] = &[
    "application",
    "tiled-display",
    "source0",
    "source1",
    "source-list",
    "source-attr-all",
    "streammux",
    "primary-gie",
    "secondary-gie0",
    "tracker",
    "nvds-analytics",
    "osd",
    "sink0",
    "sink1",
    "message-converter",
    "message-consumer0",
    "tests",
    "dewarper0",
    "pre-process",
];

const KEYS: &[&str] = &[
    "enable",
    "type",
    "uri",
    "num-sources",
    "list",
    "use-nvmultiurisrcbin",
    "batch-size",
    "config-file",
    "output-file",
    "codec",
    "container",
    "enc-type",
    "bitrate",
    "rows",
    "columns",
    "width",
    "height",
    "msg-broker-proto-lib",
    "msg-broker-conn-str",
    "topic",
    "camera-id",
    "source-id",
    "smart-record",
    "smart-rec-cache",
    "smart-rec-interval",
    "ll-lib-file",
    "ll-config-file",
    "bbox-border-color0",
    "text-color",
    "gie-kitti-output-dir",
    "num-source-bins",
    "max-batch-size",
    "http-port",
    "link-to-demux",
    "rtsp-port",
    "udp-port",
    "plugin-type",
    "operate-on-class-ids",
    "select-rtp-protocol",
    "perf-measurement-interval-sec",
    "proto-lib",
    "conn-str",
    "subscribe-topic-list",
    "sensor-list-file",
];

fn cases() -> u32 {
    std::env::var("FERROSTREAM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        Just("-1".to_owned()),
        Just("0".to_owned()),
        Just("1".to_owned()),
        Just("6".to_owned()),
        Just("4294967296".to_owned()),
        Just("1;0;0;1".to_owned()),
        Just("libnvds_mqtt_proto.so".to_owned()),
        Just("127.0.0.1;1883;t".to_owned()),
        Just("file:///x.mp4;rtsp://h/s".to_owned()),
        "[a-z0-9_./;:-]{0,24}",
        any::<String>(),
    ]
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => prop::sample::select(GROUPS).prop_map(|g| format!("[{g}]")),
        6 => (prop::sample::select(KEYS), value()).prop_map(|(k, v)| format!("{k}={v}")),
        1 => any::<String>(),
    ]
}

fn check(doc: Result<Document, ferrostream_core::ini::ConfigError>) {
    if let Ok(doc) = doc
        && let Ok((config, _)) = keys::read(&doc)
    {
        let _ = translate(&config, &Machine);
    }
}

#[test]
fn key_files_never_panic() {
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&prop::collection::vec(line(), 0..40), |lines| {
            let text = lines.join("\n");
            check(Document::parse(
                Path::new("/f/app.txt"),
                &text,
                Form::KeyFile,
            ));
            Ok(())
        })
        .unwrap();
}

#[test]
fn yaml_files_never_panic() {
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let yaml_line = prop_oneof![
        2 => prop::sample::select(GROUPS).prop_map(|g| format!("{g}:")),
        6 => (prop::sample::select(KEYS), value())
            .prop_map(|(k, v)| format!("  {k}: {}", v.replace('\n', " "))),
        1 => "[ {}\\[\\]:,#&*!|>'\"%@-]{0,12}",
        1 => any::<String>(),
    ];
    runner
        .run(&prop::collection::vec(yaml_line, 0..40), |lines| {
            let text = lines.join("\n");
            check(Document::parse(Path::new("/f/app.yml"), &text, Form::Yaml));
            Ok(())
        })
        .unwrap();
}
