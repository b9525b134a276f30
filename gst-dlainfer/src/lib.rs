// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rsdlainfer` (inference on a Jetson DLA core) and the DLA coverage checker.

pub mod check;
#[cfg(feature = "cudla")]
pub mod cudla;
pub mod route;
pub mod rsdlainfer;
