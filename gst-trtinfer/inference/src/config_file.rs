// SPDX-License-Identifier: MIT OR Apache-2.0
//! Reading a configuration file, whichever format it is in: nvinfer's INI (`[property]`) or
//! nvinferserver's protobuf text format (`infer_config { ... }`), told apart by content so that
//! `config-file-path` (and deepstream-app's `config-file` of either plugin type) takes both.
//!
//! The formats are a list tried in order; nvinfer's INI comes last and takes any text, so a
//! file in no known format gets the INI reader's error naming its first wrong line.

use std::path::Path;

use ferrostream_core::ini::{ConfigError, IniFile};

use crate::config::{InferConfig, LoadedConfig};

/// A configuration file format.
struct Format {
    /// Whether `text` is in this format.
    recognises: fn(&str) -> bool,
    /// Reads `text`, the content of the file `path`, over the base configuration.
    read: fn(&Path, &str, InferConfig) -> Result<LoadedConfig, ConfigError>,
}

const FORMATS: [Format; 2] = [
    Format {
        recognises: crate::nvinferserver::is_nvinferserver,
        read: crate::nvinferserver::read,
    },
    Format {
        recognises: |_| true,
        read: |path, text, base| InferConfig::from_ini_over(&IniFile::parse(path, text)?, base),
    },
];

impl InferConfig {
    /// Reads an nvinfer or nvinferserver configuration file.
    pub fn from_file(path: &Path) -> Result<LoadedConfig, ConfigError> {
        Self::from_file_over(path, InferConfig::default())
    }

    /// Reads a configuration file over `base` (an element's defaults): settings the file leaves
    /// out keep the base's values.
    pub fn from_file_over(path: &Path, base: InferConfig) -> Result<LoadedConfig, ConfigError> {
        let text = ferrostream_core::files::read_text(path).map_err(|e| ConfigError {
            path: path.to_owned(),
            line: 0,
            message: format!("cannot read configuration file: {e}"),
        })?;
        let format = FORMATS
            .iter()
            .find(|f| (f.recognises)(&text))
            .unwrap_or(&FORMATS[FORMATS.len() - 1]);
        (format.read)(path, &text, base)
    }
}
