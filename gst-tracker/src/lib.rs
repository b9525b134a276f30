// SPDX-License-Identifier: MIT OR Apache-2.0
//! Multi-object tracking for Ferrostream: the algorithms behind `rstracker`.

pub mod assignment;
pub mod config;
pub mod config_file;
pub mod grid;
pub mod kalman;
pub mod nvyaml;
pub mod rstracker;
pub mod synthetic;
pub mod tracker;
