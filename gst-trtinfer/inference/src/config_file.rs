// SPDX-License-Identifier: MIT OR Apache-2.0
//! Reading a configuration file, whichever format it is in: nvinfer's INI (`[property]`),
//! nvinfer's YAML form (`property:` and `class-attrs-*:` mappings, in a `.yml`/`.yaml` file, as
//! DeepStream 6.2 and later write them), or nvinferserver's protobuf text format
//! (`infer_config { ... }`), so that `config-file-path` (and deepstream-app's `config-file` of
//! either plugin type) takes all three.
//!
//! The formats are a list tried in order. nvinferserver's is told by content first (NVIDIA
//! ships some of them with a `.yml` name); YAML by the file's extension; nvinfer's INI comes
//! last and takes any text, so a file in no known format gets the INI reader's error naming its
//! first wrong line.

use std::path::Path;

use ferrostream_core::ini::{ConfigError, IniFile};

use crate::config::{InferConfig, LoadedConfig};

/// A configuration file format.
struct Format {
    /// Whether the file `path` holding `text` is in this format.
    recognises: fn(&Path, &str) -> bool,
    /// Reads `text`, the content of the file `path`, over the base configuration.
    read: fn(&Path, &str, InferConfig) -> Result<LoadedConfig, ConfigError>,
}

const FORMATS: [Format; 3] = [
    Format {
        recognises: |_, text| crate::nvinferserver::is_nvinferserver(text),
        read: crate::nvinferserver::read,
    },
    Format {
        recognises: |path, _| {
            path.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| e.eq_ignore_ascii_case("yml") || e.eq_ignore_ascii_case("yaml"))
        },
        read: |path, text, base| {
            InferConfig::from_ini_over(&ferrostream_core::yaml::parse(path, text)?, base)
        },
    },
    Format {
        recognises: |_, _| true,
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
            .find(|f| (f.recognises)(path, &text))
            .unwrap_or(&FORMATS[FORMATS.len() - 1]);
        (format.read)(path, &text, base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The YAML form of a file reads as its INI form: every `[group]` a mapping, every key a
    /// key of it.
    #[test]
    fn the_yaml_form_reads_as_the_ini_form() {
        let ini = "[property]\nonnx-file=m.onnx\ngie-unique-id=3\nnet-scale-factor=0.0039215697906911373\n\
                   infer-dims=3;300;300\noutput-blob-names=a/b:0;c:0\nnum-detected-classes=90\n\
                   cluster-mode=2\n[class-attrs-all]\npre-cluster-threshold=0.4\ntopk=20\n\
                   [class-attrs-0]\nnms-iou-threshold=0.45\n";
        let yaml = "property:\n  onnx-file: m.onnx\n  gie-unique-id: 3\n  \
                    net-scale-factor: 0.0039215697906911373\n  infer-dims: 3;300;300\n  \
                    output-blob-names: a/b:0;c:0\n  num-detected-classes: 90\n  cluster-mode: 2\n\
                    class-attrs-all:\n  pre-cluster-threshold: 0.4\n  topk: 20\n\
                    class-attrs-0:\n  nms-iou-threshold: 0.45\n";
        let dir = std::env::temp_dir().join(format!("inference-yaml-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("c.txt"), ini).unwrap();
        std::fs::write(dir.join("c.yml"), yaml).unwrap();
        let a = InferConfig::from_file(&dir.join("c.txt")).unwrap();
        let b = InferConfig::from_file(&dir.join("c.yml")).unwrap();
        assert_eq!(a.config, b.config);
        assert_eq!(b.config.gie_unique_id, 3);
        assert_eq!(a.warnings, b.warnings);
        // A YAML error names the YAML file's line.
        std::fs::write(dir.join("bad.yml"), "property:\n  topk: [1\n").unwrap();
        let e = InferConfig::from_file(&dir.join("bad.yml")).unwrap_err();
        assert!(e.to_string().contains("bad.yml"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
