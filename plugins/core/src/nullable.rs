// SPDX-License-Identifier: MIT OR Apache-2.0
//! Readers of numbers that JSON wrote as `null`: JSON has no NaN or infinity, and `serde_json`
//! writes them as `null`. Read back through these (`#[serde(deserialize_with = ...)]`), such a
//! `null` is NaN, so that whatever a writer held, a reader can read (see [`crate::json`]).

use serde::{Deserialize, Deserializer};

pub fn f32<'de, D: Deserializer<'de>>(d: D) -> Result<f32, D::Error> {
    Ok(Option::<f32>::deserialize(d)?.unwrap_or(f32::NAN))
}

pub fn f64<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

pub fn f32s<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f32>, D::Error> {
    Ok(Vec::<Option<f32>>::deserialize(d)?
        .into_iter()
        .map(|v| v.unwrap_or(f32::NAN))
        .collect())
}
