// SPDX-License-Identifier: MIT OR Apache-2.0
//! `ferrostream-app`: runs deepstream-app configuration files (`.txt` key files and `.yml`)
//! on Ferrostream's elements.
//!
//! A configuration is read into groups ([`document`]), each key is honoured, noticed or
//! refused by one table ([`keys`]), and the result is translated into one `gst-launch-1.0`
//! pipeline description ([`translate`]): `--print-pipeline` prints it, and the app builds its
//! pipeline from exactly that text. What a description cannot hold (the `**PERF:` lines, KITTI
//! files, the RTSP server of `type=4` sinks, periodic smart record, the MQTT subscribers of
//! `[message-consumer<N>]` ([`consumer`])) the runner ([`run`]) adds around the pipeline it
//! parsed.

pub mod consumer;
pub mod document;
pub mod keys;
pub mod kitti;
pub mod model;
pub mod perf;
pub mod run;
pub mod signals;
pub mod translate;
pub mod value;
