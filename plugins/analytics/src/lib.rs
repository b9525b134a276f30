// SPDX-License-Identifier: MIT OR Apache-2.0
//! Analytics on tracked objects for Ferrostream: regions of interest, line crossing,
//! overcrowding and direction detection (`rsanalytics`), configured like DeepStream's
//! nvdsanalytics.

pub mod config;
pub mod geometry;
pub mod rsanalytics;
pub mod rules;
