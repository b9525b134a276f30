// SPDX-License-Identifier: MIT OR Apache-2.0
//! Reading a tracker configuration file, whichever form it is written in: rstracker's TOML
//! ([`crate::config`]) or NvMultiObjectTracker's YAML ([`crate::nvyaml`]). A module of its own
//! so that neither format's module imports the other.

use std::path::Path;

use crate::config::parse;
use crate::tracker::TrackerConfig;

/// Reads `path` over the defaults, as TOML or as NvMultiObjectTracker YAML (see the module
/// documentation). Returns the configuration and the warnings to post.
pub fn load(path: &Path) -> Result<(TrackerConfig, Vec<String>), String> {
    let text = ferrostream_core::files::read_text(path)
        .map_err(|e| format!("cannot read tracker configuration: {e}"))?;
    if is_nvyaml(path, &text) {
        crate::nvyaml::parse(path, &text)
    } else {
        parse(path, &text)
    }
}

/// Whether the file `path` holding `text` is NvMultiObjectTracker YAML: by its name, else by
/// its text (no TOML, and a section of NvMultiObjectTracker's at the top level).
fn is_nvyaml(path: &Path, text: &str) -> bool {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("yml" | "yaml") => true,
        Some("toml") => false,
        _ => toml::from_str::<toml::Table>(text).is_err() && crate::nvyaml::has_section(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_reads_toml_or_nvmultiobjecttracker_yaml() {
        let dir = std::env::temp_dir().join(format!("rstracker-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let yaml = "%YAML:1.0\nTargetManagement:\n  probationAge: 3\n";
        let toml = "probation-age = 3\n";
        for (name, text, probation_age) in [
            ("tracker.yml", yaml, 4),
            ("tracker.YAML", yaml, 4),
            ("tracker", yaml, 4),
            ("tracker.txt", yaml, 4),
            ("tracker.toml", toml, 3),
            ("tracker.conf", toml, 3),
        ] {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            let (config, warnings) = load(&path).unwrap();
            assert_eq!(config.probation_age, probation_age, "{name}");
            assert!(warnings.is_empty(), "{name}: {warnings:?}");
        }
        // TOML that happens to mention a section name stays TOML.
        let path = dir.join("tricky");
        std::fs::write(&path, "# BaseConfig: not here\nprobation-age = 5\n").unwrap();
        assert_eq!(load(&path).unwrap().0.probation_age, 5);
        // Neither: the TOML error.
        let path = dir.join("broken");
        std::fs::write(&path, "probation-age = \n").unwrap();
        assert!(load(&path).unwrap_err().contains("broken"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
