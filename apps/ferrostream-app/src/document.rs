// SPDX-License-Identifier: MIT OR Apache-2.0
//! A deepstream-app configuration file as groups of keys, whichever form it is written in:
//! the GLib key file (`.txt`, `[group]` and `key=value`) or YAML (`.yml`/`.yaml`, top-level
//! mappings). The YAML form lists its sources in a CSV file (`source: {csv-file-path: …}`,
//! a header of source keys and one row per source); those rows become `[source<N>]` groups
//! here, so everything after this module sees one shape.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ferrostream_core::ini::{ConfigError, Entry, IniFile, Section};

/// The most sources a file may list (a CSV of sources, a sensor list); deepstream-app's own
/// limit is lower.
pub const MAX_SOURCES: usize = 1024;

/// Which form the file was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    KeyFile,
    Yaml,
}

/// A parsed configuration file: its groups in file order.
#[derive(Debug, Clone)]
pub struct Document {
    pub path: PathBuf,
    pub form: Form,
    pub groups: Vec<Section>,
}

impl Document {
    /// Reads `path`, choosing the form by extension (`.yml`/`.yaml` is YAML, anything else a
    /// key file, as deepstream-app decides).
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let yaml = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("yml") || e.eq_ignore_ascii_case("yaml"));
        if yaml {
            let file = ferrostream_core::yaml::load(path)?;
            Self::from_yaml(file)
        } else {
            let file = IniFile::load(path)?;
            Ok(Self {
                path: file.path,
                form: Form::KeyFile,
                groups: file.sections,
            })
        }
    }

    /// Parses `text` as the form `form`, attributing it to `path` (paths in it are relative
    /// to `path`'s folder).
    pub fn parse(path: &Path, text: &str, form: Form) -> Result<Self, ConfigError> {
        match form {
            Form::KeyFile => {
                let file = IniFile::parse(path, text)?;
                Ok(Self {
                    path: file.path,
                    form,
                    groups: file.sections,
                })
            }
            Form::Yaml => Self::from_yaml(ferrostream_core::yaml::parse(path, text)?),
        }
    }

    /// The folder relative paths in the file are resolved against.
    pub fn base_dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    fn from_yaml(file: IniFile) -> Result<Self, ConfigError> {
        let mut groups = Vec::with_capacity(file.sections.len());
        for section in file.sections {
            if section.name == "source" {
                groups.extend(csv_sources(&file.path, &section)?);
            } else {
                groups.push(section);
            }
        }
        Ok(Self {
            path: file.path,
            form: Form::Yaml,
            groups,
        })
    }
}

/// The `[source<N>]` groups of the CSV file that the YAML `source` group names.
fn csv_sources(path: &Path, section: &Section) -> Result<Vec<Section>, ConfigError> {
    let error = |line: usize, message: String| ConfigError {
        path: path.to_owned(),
        line,
        message,
    };
    let mut csv = None;
    for entry in &section.entries {
        if entry.key == "csv-file-path" {
            csv = Some(entry);
        } else {
            return Err(error(
                entry.line,
                format!(
                    "[source] key `{}`: the YAML form's `source` group takes only \
                     csv-file-path (each source is a row of that file)",
                    entry.key
                ),
            ));
        }
    }
    let Some(entry) = csv else {
        return Err(error(
            section.line,
            "[source] needs csv-file-path (a CSV file with one row per source)".into(),
        ));
    };
    let base = path.parent().unwrap_or(Path::new("."));
    let csv_path = base.join(&entry.value);
    let text = ferrostream_core::files::read_text(&csv_path).map_err(|e| {
        error(
            entry.line,
            format!("[source] key `csv-file-path`: cannot read the sources: {e}"),
        )
    })?;
    parse_csv(&csv_path, &text)
}

/// Rows of a sources CSV file (comment lines start with `#`; the first other line is the
/// header) as `[source<N>]` groups, each entry keeping its line in the CSV file.
pub fn parse_csv(path: &Path, text: &str) -> Result<Vec<Section>, ConfigError> {
    let mut rows = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let Some((_, header)) = rows.next() else {
        return Err(ConfigError {
            path: path.to_owned(),
            line: 0,
            message: "the sources CSV file has no header line".into(),
        });
    };
    let keys: Vec<&str> = header.split(',').map(str::trim).collect();
    let mut groups = Vec::new();
    for (index, row) in rows {
        let line = index + 1;
        if groups.len() == MAX_SOURCES {
            return Err(ConfigError {
                path: path.to_owned(),
                line,
                message: format!("more than {MAX_SOURCES} sources"),
            });
        }
        let values: Vec<&str> = row.split(',').map(str::trim).collect();
        if values.len() != keys.len() {
            return Err(ConfigError {
                path: path.to_owned(),
                line,
                message: format!(
                    "{} values for {} header columns ({})",
                    values.len(),
                    keys.len(),
                    keys.join(",")
                ),
            });
        }
        groups.push(Section {
            name: format!("source{}", groups.len()),
            line,
            entries: keys
                .iter()
                .zip(values)
                .map(|(key, value)| Entry {
                    key: (*key).to_owned(),
                    value: value.to_owned(),
                    line,
                })
                .collect(),
        });
    }
    Ok(groups)
}

/// NVIDIA's sensor list (`dstest5_msgconv_sample_config.txt` or its `.yml` form): each
/// `[sensor<N>]` group with `enable=1` maps its `id` to source N; other groups (`[place<N>]`,
/// `[analytics<N>]`) are not read.
pub fn read_sensor_list(path: &Path) -> Result<BTreeMap<String, u32>, String> {
    let doc = Document::load(path).map_err(|e| e.to_string())?;
    let mut sensors = BTreeMap::new();
    for group in &doc.groups {
        let Some(number) = group.name.strip_prefix("sensor") else {
            continue;
        };
        let at = |line: usize| format!("{}:{line}: [{}]", path.display(), group.name);
        let source: u32 = number
            .parse()
            .ok()
            .filter(|n| (*n as usize) < MAX_SOURCES)
            .ok_or_else(|| {
                format!(
                    "{}: a sensor group is named sensor<N>, N the source id (below {MAX_SOURCES})",
                    at(group.line)
                )
            })?;
        let value = |key: &str| group.entries.iter().find(|e| e.key == key);
        let enabled = value("enable").is_some_and(|e| matches!(e.value.trim(), "1" | "true"));
        if !enabled {
            continue;
        }
        let Some(id) = value("id").map(|e| (e.line, e.value.trim())) else {
            return Err(format!("{}: an enabled sensor needs id", at(group.line)));
        };
        if id.1.is_empty() {
            return Err(format!("{}: id is empty", at(id.0)));
        }
        if let Some(other) = sensors.insert(id.1.to_owned(), source) {
            return Err(format!("{}: id {} is also sensor{other}'s", at(id.0), id.1));
        }
    }
    Ok(sensors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_file_and_yaml_give_the_same_groups() {
        let txt = Document::parse(
            Path::new("/c/app.txt"),
            "[application]\nenable-perf-measurement=1\n[sink0]\ntype=1\n",
            Form::KeyFile,
        )
        .unwrap();
        let yml = Document::parse(
            Path::new("/c/app.yml"),
            "application:\n  enable-perf-measurement: 1\nsink0:\n  type: 1\n",
            Form::Yaml,
        )
        .unwrap();
        let names = |d: &Document| {
            d.groups
                .iter()
                .map(|g| {
                    (
                        g.name.clone(),
                        g.entries
                            .iter()
                            .map(|e| (e.key.clone(), e.value.clone()))
                            .collect::<Vec<_>>(),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&txt), names(&yml));
        assert_eq!(txt.base_dir(), Path::new("/c"));
    }

    #[test]
    fn sensor_numbers_are_bounded_source_ids() {
        let dir = std::env::temp_dir().join(format!("fsapp-sensors-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let list = dir.join("sensors.txt");
        std::fs::write(
            &list,
            "[sensor2]\nenable=1\nid=door\n[sensor0]\nenable=0\nid=x\n",
        )
        .unwrap();
        assert_eq!(
            read_sensor_list(&list)
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>(),
            vec![("door".to_owned(), 2)]
        );
        std::fs::write(&list, "[sensor4000000000]\nenable=1\nid=far\n").unwrap();
        let e = read_sensor_list(&list).unwrap_err();
        assert!(e.contains("below 1024"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn csv_rows_become_source_groups() {
        let groups = parse_csv(
            Path::new("s.csv"),
            "# sources\nenable,type,uri,num-sources\n1,3,file:///a.mp4,2\n\n0,4,rtsp://h/s,1\n",
        )
        .unwrap();
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].name, "source0");
        assert_eq!(groups[1].name, "source1");
        assert_eq!(groups[1].line, 5);
        assert_eq!(groups[0].entries[2].value, "file:///a.mp4");
        let e = parse_csv(Path::new("s.csv"), "enable,type\n1\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("1 values for 2 header columns"), "{e}");
        assert!(parse_csv(Path::new("s.csv"), "# nothing\n").is_err());
    }

    #[test]
    fn the_yaml_source_group_reads_its_csv_file() {
        let dir = std::env::temp_dir().join(format!("fsapp-doc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("src.csv"),
            "enable,type,uri\n1,3,file:///x.mp4\n1,2,file:///y.mp4\n",
        )
        .unwrap();
        let app = dir.join("app.yml");
        std::fs::write(
            &app,
            "source:\n  csv-file-path: src.csv\nsink0:\n  type: 1\n",
        )
        .unwrap();
        let doc = Document::load(&app).unwrap();
        let names: Vec<_> = doc.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["source0", "source1", "sink0"]);
        std::fs::write(&app, "source:\n  csv-file-path: missing.csv\n").unwrap();
        let e = Document::load(&app).unwrap_err();
        assert!(e.message.contains("cannot read the sources"), "{e}");
        assert_eq!(e.line, 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
