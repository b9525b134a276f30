// SPDX-License-Identifier: MIT OR Apache-2.0
//! `rsdlainfer`: inference on a Jetson DLA core. Its start-up report of what runs on the DLA
//! comes from the coverage checker, [`ferrostream_dla_check`] (re-exported as [`check`]).

pub use ferrostream_dla_check as check;
#[cfg(feature = "cudla")]
pub mod cudla;
pub mod mode;
pub mod route;
pub mod rsdlainfer;
