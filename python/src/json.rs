// SPDX-License-Identifier: MIT OR Apache-2.0
//! JSON between Python and the plugin. Values an application attaches (user metadata,
//! attributes) are written as JSON within the bounds the plugin keeps, checked while writing:
//! a value far past a bound is refused before it is copied, not after several copies of it.
//! The plugin's JSON records are read back into Python objects; a record that cannot be read
//! raises, it never reads as empty.

use ferrostream_abi::{MAX_USER_DEPTH, MAX_USER_VALUE_BYTES};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Value};

use crate::errors;

/// `value` (what `json.dumps` takes) as JSON, refused when its text would pass
/// `MAX_USER_VALUE_BYTES` or it nests lists and dicts past `MAX_USER_DEPTH` levels.
pub fn from_py(value: &Bound<'_, PyAny>) -> PyResult<Value> {
    let mut writer = Writer(Vec::new());
    writer.value(value, 0)?;
    serde_json::from_slice(&writer.0)
        .map_err(|e| PyValueError::new_err(format!("the value is not JSON: {e}")))
}

/// A string argument (`what` names it) of at most `most` UTF-8 bytes, refused before it is
/// copied out of Python when it cannot fit (each character takes at least a byte).
pub fn bounded_str(value: &Bound<'_, PyAny>, most: usize, what: &str) -> PyResult<String> {
    let Ok(s) = value.cast::<PyString>() else {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a str, not a {}",
            value.get_type().name()?
        )));
    };
    let too_long = || PyValueError::new_err(format!("{what} is longer than {most} bytes"));
    if s.code_point_len()? > most {
        return Err(too_long());
    }
    let text = s.to_cow()?;
    if text.len() > most {
        return Err(too_long());
    }
    Ok(text.into_owned())
}

/// A user-metadata or attribute key: [`bounded_str`] at the plugin's key bound.
pub fn key(value: &Bound<'_, PyAny>) -> PyResult<String> {
    bounded_str(value, ferrostream_abi::MAX_KEY_BYTES, "the key")
}

/// A JSON record of the plugin's (`what`: "the frame", "the object") as a map.
pub fn record(text: Option<String>, what: &str) -> PyResult<Map<String, Value>> {
    let text =
        text.ok_or_else(|| errors::Error::new_err(format!("the plugin gave no record of {what}")))?;
    serde_json::from_str(&text).map_err(|e| {
        errors::Error::new_err(format!("the plugin's record of {what} cannot be read: {e}"))
    })
}

/// A JSON value as the Python objects `json.loads` would give.
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => PyList::new(
            py,
            a.iter()
                .map(|v| to_py(py, v))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any(),
        Value::Object(o) => {
            let d = PyDict::new(py);
            for (k, v) in o {
                d.set_item(k, to_py(py, v)?)?;
            }
            d.into_any()
        }
    })
}

/// JSON text written as a Python value is walked, stopping at the first bound it passes. It is
/// `serde_json`'s compact form, so its length is the size the plugin measures.
struct Writer(Vec<u8>);

impl Writer {
    /// Writes `v`, which sits inside `depth` dicts and lists.
    fn value(&mut self, v: &Bound<'_, PyAny>, depth: usize) -> PyResult<()> {
        if let Ok(s) = v.cast::<PyString>() {
            return self.string(s);
        }
        if let Some(text) = scalar(v)? {
            return self.push(text.as_bytes());
        }
        if let Ok(dict) = v.cast::<PyDict>() {
            self.open(depth, b"{")?;
            for (i, (key, item)) in dict.iter().enumerate() {
                if i > 0 {
                    self.push(b",")?;
                }
                self.key(&key)?;
                self.push(b":")?;
                self.value(&item, depth + 1)?;
            }
            return self.push(b"}");
        }
        if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
            self.open(depth, b"[")?;
            for (i, item) in v.try_iter()?.enumerate() {
                if i > 0 {
                    self.push(b",")?;
                }
                self.value(&item?, depth + 1)?;
            }
            return self.push(b"]");
        }
        Err(PyTypeError::new_err(format!(
            "the value is not JSON-serialisable: a {} is not a dict, list, tuple, str, int, \
             float, bool or None",
            v.get_type().name()?
        )))
    }

    /// Opens a dict or a list inside `depth` others.
    fn open(&mut self, depth: usize, bracket: &[u8]) -> PyResult<()> {
        if depth >= MAX_USER_DEPTH {
            return Err(PyValueError::new_err(format!(
                "the value nests dicts and lists more than {MAX_USER_DEPTH} levels deep (or \
                 contains itself); at most {MAX_USER_DEPTH} (ferrostream.MAX_USER_DEPTH)"
            )));
        }
        self.push(bracket)
    }

    /// A dict key as `json.dumps` writes it: a number, bool or None as its JSON text, quoted.
    fn key(&mut self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Ok(s) = key.cast::<PyString>() {
            return self.string(s);
        }
        match scalar(key)? {
            Some(text) => self.push(format!("\"{text}\"").as_bytes()),
            None => Err(PyTypeError::new_err(format!(
                "the value is not JSON-serialisable: a dict key must be a str, int, float, bool \
                 or None, not a {}",
                key.get_type().name()?
            ))),
        }
    }

    fn string(&mut self, s: &Bound<'_, PyString>) -> PyResult<()> {
        // Its text takes at least a byte a character and two quotes: a string that cannot fit
        // is refused before it is copied out of Python.
        self.fits(s.code_point_len()? + 2)?;
        serde_json::to_writer(&mut self.0, &*s.to_cow()?)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        self.fits(0)
    }

    fn push(&mut self, text: &[u8]) -> PyResult<()> {
        self.0.extend_from_slice(text);
        self.fits(0)
    }

    /// Refuses the value when its text, with `more` bytes to come, passes the bound.
    fn fits(&self, more: usize) -> PyResult<()> {
        if self.0.len().saturating_add(more) > MAX_USER_VALUE_BYTES {
            return Err(PyValueError::new_err(format!(
                "the value is more than {MAX_USER_VALUE_BYTES} bytes as JSON; at most \
                 {MAX_USER_VALUE_BYTES} (ferrostream.MAX_USER_VALUE_BYTES)"
            )));
        }
        Ok(())
    }
}

/// The JSON text of None, a bool, an int or a float; None for anything else.
fn scalar(v: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    if v.is_none() {
        return Ok(Some("null".into()));
    }
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(Some(b.is_true().to_string()));
    }
    let number = if v.is_instance_of::<PyInt>() {
        if let Ok(i) = v.extract::<i64>() {
            return Ok(Some(i.to_string()));
        }
        if let Ok(u) = v.extract::<u64>() {
            return Ok(Some(u.to_string()));
        }
        // Past 64 bits, as a float: what JSON readers make of it.
        v.extract::<f64>()?
    } else if let Ok(f) = v.cast::<PyFloat>() {
        f.value()
    } else {
        return Ok(None);
    };
    match serde_json::Number::from_f64(number) {
        Some(n) => Ok(Some(n.to_string())),
        None => Err(PyValueError::new_err(format!(
            "the value holds {number}: JSON holds finite numbers only"
        ))),
    }
}
