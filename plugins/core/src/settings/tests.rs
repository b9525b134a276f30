// SPDX-License-Identifier: MIT OR Apache-2.0
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use super::*;

crate::choice_enum! {
    #[derive(Default)]
    enum Cluster: "GstFerrostreamSettingsTestCluster" {
        GroupRectangles = 0 => ("group-rectangles", "OpenCV groupRectangles"),
        #[default]
        Nms = 2 => ("nms", "Non-maximum suppression"),
        None = 4 => ("none", "No clustering"),
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Config {
    batch_size: u32,
    gie_unique_id: i32,
    interval: u32,
    scale: f32,
    threshold: f32,
    maintain_aspect_ratio: bool,
    model: Option<PathBuf>,
    server: String,
    class_ids: Vec<i32>,
    strides: Option<Vec<u32>>,
    cluster: Cluster,
    colors: Vec<String>,
    eps: f32,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            batch_size: 1,
            gie_unique_id: 1,
            interval: 0,
            scale: 1.0,
            threshold: 0.2,
            maintain_aspect_ratio: false,
            model: None,
            server: String::new(),
            class_ids: Vec::new(),
            strides: None,
            cluster: Cluster::Nms,
            colors: Vec::new(),
            eps: 0.0,
        }
    }
}

static TABLE: LazyLock<Table<Config>> = LazyLock::new(|| {
    let mut t: Table<Config> = Table::new("property");
    t.add(
        setting::<Config, _>("batch-size", field!(batch_size), UInt::range(1, 1024))
            .nick("Batch size"),
    )
    .add(
        setting::<Config, _>(
            "gie-unique-id",
            field!(gie_unique_id),
            Mapped::new(
                UInt::range(1, i32::MAX as u32),
                |n| n as i32,
                |&v: &i32| v as u32,
            ),
        )
        .nick("Unique id"),
    )
    .add(setting::<Config, _>("interval", field!(interval), UInt::any()).playing())
    .add(setting::<Config, _>(
        "net-scale-factor",
        field!(scale),
        Float::at_least(0.0),
    ))
    .add(
        setting::<Config, _>("pre-cluster-threshold", field!(threshold), Float::unit())
            .key("class-attrs-all", "pre-cluster-threshold")
            .key("class-attrs-all", "threshold"),
    )
    .add(setting::<Config, _>(
        "maintain-aspect-ratio",
        field!(maintain_aspect_ratio),
        Bool,
    ))
    .add(setting::<Config, _>("onnx-file", field!(model), FilePath))
    .add(setting::<Config, _>(
        "server-url",
        field!(server),
        Text::trimmed(),
    ))
    .add(setting::<Config, _>(
        "operate-on-class-ids",
        field!(class_ids),
        List::<i32>::new(),
    ))
    .add(
        setting::<Config, _>(
            "yolox-strides",
            field!(strides),
            Optional(List::<u32>::new()),
        )
        .check(|v, _| match v {
            Some(s) if s.contains(&0) => Err("a stride of 0".into()),
            _ => Ok(()),
        }),
    )
    .add(
        setting::<Config, _>("cluster-mode", field!(cluster), Enum::<Cluster>::new())
            .alias("cluster"),
    )
    .add(
        setting::<Config, _>("colors", field!(colors), List::<String>::separated_by(','))
            .playing()
            .merge(|property, file| file.extend(property.iter().cloned())),
    )
    .add(
        setting::<Config, _>("eps", field!(eps), Float::unit())
            .key("class-attrs-all", "eps")
            .file_only(),
    )
    .ignore("property", "gpu-id-legacy", "use gpu-id")
    .accept("property", "window-ms", UInt::any());
    t
});

fn read(text: &str) -> Result<(Config, Vec<String>), ConfigError> {
    let ini = IniFile::parse(Path::new("/cfg/model.txt"), text)?;
    let mut config = Config::default();
    let warnings = TABLE.read_ini(&ini, &mut config, |section, _, _| {
        Ok(section.name.starts_with("class-attrs-") && section.name != "class-attrs-all")
    })?;
    Ok((config, warnings))
}

#[test]
fn the_table_checks_out() {
    TABLE.check(&Config::default()).unwrap();
}

#[test]
fn a_file_sets_every_key_relative_paths_in_its_folder() {
    let (c, warnings) = read(
        "[property]\nbatch-size=4\ngie-unique-id=3\nnet-scale-factor=0.5\nonnx-file=m.onnx\n\
         maintain-aspect-ratio=1\nserver-url= grpc://h:8001 \noperate-on-class-ids=0;2\n\
         yolox-strides=8;16\ncluster=0\ncolors=red,blue\n\
         [class-attrs-all]\nthreshold=0.4\neps=0.7\n[class-attrs-2]\nnms-iou-threshold=0.1\n",
    )
    .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        c,
        Config {
            batch_size: 4,
            gie_unique_id: 3,
            interval: 0,
            scale: 0.5,
            threshold: 0.4,
            maintain_aspect_ratio: true,
            model: Some("/cfg/m.onnx".into()),
            server: "grpc://h:8001".into(),
            class_ids: vec![0, 2],
            strides: Some(vec![8, 16]),
            cluster: Cluster::GroupRectangles,
            colors: vec!["red".into(), "blue".into()],
            eps: 0.7,
        }
    );
}

#[test]
fn files_are_held_to_the_property_ranges_and_name_file_line_and_key() {
    for (text, key) in [
        ("[property]\nbatch-size=0\n", "batch-size"),
        ("[property]\ngie-unique-id=0\n", "gie-unique-id"),
        ("[property]\nnet-scale-factor=-1\n", "net-scale-factor"),
        ("[property]\nnet-scale-factor=inf\n", "net-scale-factor"),
        (
            "[class-attrs-all]\npre-cluster-threshold=1.5\n",
            "pre-cluster-threshold",
        ),
        ("[property]\nyolox-strides=8;0\n", "yolox-strides"),
        ("[property]\ncluster-mode=kmeans\n", "cluster-mode"),
        (
            "[property]\nmaintain-aspect-ratio=yes\n",
            "maintain-aspect-ratio",
        ),
    ] {
        let err = read(text).unwrap_err();
        assert_eq!(
            (err.path.as_path(), err.line),
            (Path::new("/cfg/model.txt"), 2)
        );
        assert!(err.message.contains(&format!("`{key}`")), "{err}");
    }
    let err = read("[property]\ncluster-mode=kmeans\n").unwrap_err();
    assert!(
        err.message
            .contains("group-rectangles (0), nms (2), none (4)"),
        "{err}"
    );
}

#[test]
fn unknown_and_ignored_keys_and_sections_are_warnings() {
    let (c, warnings) = read(
        "[property]\nbatch-size=2\nfrobnicate=1\ngpu-id-legacy=1\n[class-attrs-all]\nbatch-size=3\n\
         [mystery]\nx=1\n",
    )
    .unwrap();
    assert_eq!(c.batch_size, 2);
    assert_eq!(warnings.len(), 4, "{warnings:?}");
    assert!(warnings[0].starts_with("/cfg/model.txt:3: unknown key `frobnicate` in [property]"));
    assert!(warnings[1].contains(":4: key `gpu-id-legacy`") && warnings[1].contains("use gpu-id"));
    assert!(warnings[2].contains(":6: unknown key `batch-size` in [class-attrs-all]"));
    assert!(warnings[3].contains(":7: unknown section [mystery]"));
}

#[test]
fn accepted_keys_are_checked_and_dropped_without_a_warning() {
    let (c, warnings) = read("[property]\nwindow-ms=1000\nbatch-size=2\n").unwrap();
    assert_eq!((c.batch_size, warnings.len()), (2, 0), "{warnings:?}");
    let err = read("[property]\nbatch-size=2\nwindow-ms=soon\n").unwrap_err();
    assert_eq!(
        (err.line, err.path.as_path()),
        (3, Path::new("/cfg/model.txt"))
    );
    assert!(err.message.contains("window-ms"), "{err}");
}

#[test]
fn set_properties_override_the_file_and_nothing_else() {
    let (file, _) = read("[property]\nbatch-size=4\nnet-scale-factor=0.5\ncolors=red\n").unwrap();
    let mut props = Props::new(Config::default());
    props.values.batch_size = 8;
    props.values.colors = vec!["blue".into()];
    props.set.insert("batch-size");
    props.set.insert("colors");
    let c = TABLE.resolve(file, &props).unwrap();
    assert_eq!(c.batch_size, 8);
    assert_eq!(c.scale, 0.5);
    assert_eq!(c.colors, vec!["red".to_owned(), "blue".to_owned()]);
}

#[cfg(feature = "gst")]
mod properties {
    use gst::glib;
    use gst::glib::prelude::*;

    use super::*;

    fn string(v: &str) -> glib::Value {
        Some(v).to_value()
    }

    #[test]
    fn param_specs_come_from_the_table() {
        let specs = TABLE.param_specs(&Config::default());
        let names: Vec<&str> = specs.iter().map(|s| s.name()).collect();
        assert!(!names.contains(&"eps"), "a file-only key is no property");
        assert_eq!(names.len(), 12);
        let batch = specs[0].downcast_ref::<glib::ParamSpecUInt>().unwrap();
        assert_eq!(
            (batch.minimum(), batch.maximum(), batch.default_value()),
            (1, 1024, 1)
        );
        assert!(batch.flags().contains(gst::PARAM_FLAG_MUTABLE_READY));
        assert!(specs[2].flags().contains(gst::PARAM_FLAG_MUTABLE_PLAYING));
        let cluster = specs
            .iter()
            .find(|s| s.name() == "cluster-mode")
            .unwrap()
            .downcast_ref::<glib::ParamSpecEnum>()
            .unwrap();
        assert_eq!(cluster.default_value_as_i32(), 2);
        assert_eq!(
            cluster.enum_class().type_().name(),
            "GstFerrostreamSettingsTestCluster"
        );
    }

    #[test]
    fn the_file_property_names_the_file_the_properties_override() {
        let mut table: Table<Config> = Table::new("property");
        table
            .file_property("The configuration file")
            .add(setting::<Config, _>(
                "batch-size",
                field!(batch_size),
                UInt::range(1, 1024),
            ));
        let specs = table.param_specs(&Config::default());
        let names: Vec<&str> = specs.iter().map(|s| s.name()).collect();
        assert_eq!(names, [FILE_PROPERTY, "batch-size"]);
        assert!(specs[0].flags().contains(gst::PARAM_FLAG_MUTABLE_READY));

        let mut props = Props::new(Config::default());
        let file_of = |props: &Props<Config>| {
            table
                .property_value(props, FILE_PROPERTY)
                .unwrap()
                .get::<Option<String>>()
                .unwrap()
        };
        assert_eq!(file_of(&props), None);
        let set = |props: &mut Props<Config>, name, value: &glib::Value| {
            table.set_property(props, name, value).unwrap().unwrap()
        };
        set(&mut props, FILE_PROPERTY, &string("/cfg/model.txt"));
        assert_eq!(props.file(), Some(Path::new("/cfg/model.txt")));
        assert_eq!(file_of(&props).as_deref(), Some("/cfg/model.txt"));
        set(&mut props, "batch-size", &8u32.to_value());

        let (file, warnings) = props
            .read_file(Config::default, |path| {
                assert_eq!(path, Path::new("/cfg/model.txt"));
                let file = Config {
                    batch_size: 4,
                    threshold: 0.5,
                    ..Config::default()
                };
                Ok::<_, String>((file, vec!["unknown key".to_owned()]))
            })
            .unwrap();
        assert_eq!(warnings, ["unknown key"]);
        let resolved = table.resolve(file, &props).unwrap();
        assert_eq!((resolved.batch_size, resolved.threshold), (8, 0.5));

        let failed = props.read_file(Config::default, |_| {
            Err::<(Config, Vec<String>), _>("cannot read /cfg/model.txt")
        });
        assert_eq!(failed.unwrap_err(), "cannot read /cfg/model.txt");

        // An empty path names no file; then the defaults are read.
        set(&mut props, FILE_PROPERTY, &string(""));
        assert_eq!((props.file(), file_of(&props)), (None, None));
        let (file, _) = props
            .read_file(Config::default, |_| -> Result<_, String> {
                panic!("no file to read")
            })
            .unwrap();
        assert_eq!(file, Config::default());
        // A table without a file has no such property.
        assert_eq!(
            TABLE.set_property(&mut props, FILE_PROPERTY, &string("x")),
            None
        );
    }

    #[test]
    fn set_and_get_round_trip_and_refused_text_fails_the_start() {
        let mut props = Props::new(Config::default());
        assert_eq!(
            TABLE.set_property(&mut props, "batch-size", &8u32.to_value()),
            Some(Ok(()))
        );
        assert!(props.is_set("batch-size"));
        assert_eq!(
            TABLE
                .property_value(&props, "batch-size")
                .unwrap()
                .get::<u32>(),
            Ok(8)
        );
        assert_eq!(
            TABLE.set_property(&mut props, "cluster-mode", &GEnum(Cluster::None).to_value()),
            Some(Ok(()))
        );
        assert_eq!(props.values.cluster, Cluster::None);
        assert_eq!(
            TABLE.set_property(&mut props, "no-such", &1u32.to_value()),
            None
        );

        // The text as given comes back, even when it does not parse; start then fails.
        TABLE
            .set_property(&mut props, "operate-on-class-ids", &string("1; 2"))
            .unwrap()
            .unwrap();
        let shown = TABLE
            .property_value(&props, "operate-on-class-ids")
            .unwrap();
        assert_eq!(
            shown.get::<Option<String>>().unwrap().as_deref(),
            Some("1; 2")
        );
        let refused = TABLE
            .set_property(&mut props, "yolox-strides", &string("8;0"))
            .unwrap();
        assert!(refused.unwrap_err().contains("stride of 0"));
        let err = TABLE.resolve(Config::default(), &props).unwrap_err();
        assert!(err.starts_with("property `yolox-strides`"), "{err}");
        TABLE
            .set_property(&mut props, "yolox-strides", &string(""))
            .unwrap()
            .unwrap();
        let c = TABLE.resolve(Config::default(), &props).unwrap();
        assert_eq!(
            (c.batch_size, c.strides, c.class_ids),
            (8, None, vec![1, 2])
        );

        // NaN passes a GParamSpecFloat's range; the table refuses it.
        let nan = TABLE.set_property(&mut props, "net-scale-factor", &f32::NAN.to_value());
        assert!(nan.unwrap().is_err());
    }

    #[test]
    fn a_refused_value_while_playing_keeps_the_previous_one() {
        let mut props = Props::new(Config::default());
        TABLE
            .set_property(&mut props, "colors", &string("red"))
            .unwrap()
            .unwrap();
        // `List<String>` takes any text; a playing setting with a check shows the rule.
        let mut table: Table<Config> = Table::new("property");
        table.add(
            setting::<Config, _>("colors", field!(colors), List::<String>::separated_by(','))
                .playing()
                .check(|v, _| {
                    if v.iter().any(|c| c == "plaid") {
                        Err("no such colour".into())
                    } else {
                        Ok(())
                    }
                }),
        );
        table
            .set_property(&mut props, "colors", &string("red"))
            .unwrap()
            .unwrap();
        assert!(
            table
                .set_property(&mut props, "colors", &string("plaid"))
                .unwrap()
                .is_err()
        );
        assert_eq!(props.values.colors, vec!["red".to_owned()]);
        let shown = table.property_value(&props, "colors").unwrap();
        assert_eq!(
            shown.get::<Option<String>>().unwrap().as_deref(),
            Some("red")
        );
        assert!(table.resolve(Config::default(), &props).is_ok());
    }

    #[test]
    fn a_subclass_installs_only_the_defaults_it_changes() {
        let base = Config::default();
        let dla = Config {
            batch_size: 4,
            ..Config::default()
        };
        let specs = TABLE.param_specs_differing(&base, &dla);
        assert_eq!(specs.len(), 1);
        let batch = specs[0].downcast_ref::<glib::ParamSpecUInt>().unwrap();
        assert_eq!((batch.name(), batch.default_value()), ("batch-size", 4));
    }
}
