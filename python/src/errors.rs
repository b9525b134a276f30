// SPDX-License-Identifier: MIT OR Apache-2.0
//! The package's exceptions, and the mapping from the C ABI's status codes to them.

use ferrostream_abi::status;
use pyo3::create_exception;
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    ferrostream,
    Error,
    PyRuntimeError,
    "Base class of the errors of the ferrostream package."
);
create_exception!(
    ferrostream,
    PluginError,
    Error,
    "The Ferrostream GStreamer plugin cannot be found, loaded, or does not match this package."
);
create_exception!(
    ferrostream,
    NotWritableError,
    Error,
    "A change was asked of a buffer that is not writable. In a pad probe, take the batch with \
     `with ferrostream.writable(info) as batch:`."
);
create_exception!(
    ferrostream,
    StaleMetaError,
    Error,
    "The metadata changed since this view read it (another view of the same buffer changed it), \
     or the view was closed at the end of its `with` block."
);

/// The exception for a failed C ABI call.
pub fn from_status(code: i32, message: Option<String>) -> PyErr {
    let message = message.unwrap_or_else(|| format!("Ferrostream call failed with status {code}"));
    match code {
        status::NOT_WRITABLE => NotWritableError::new_err(message),
        status::STALE => StaleMetaError::new_err(message),
        status::BAD_INDEX => PyIndexError::new_err(message),
        status::INVALID | status::UNSUPPORTED => PyValueError::new_err(message),
        status::NOT_A_BUFFER => PyTypeError::new_err(message),
        _ => Error::new_err(message),
    }
}
