// SPDX-License-Identifier: MIT OR Apache-2.0
//! Label files: one class name per line; line `i` (0-based) names class `i`. nvinfer's
//! classifier files are read too: one line per output layer, its classes separated by `;`.

use std::path::Path;
use std::sync::Arc;

/// Reads a label file. Blank lines keep their index (they name unused classes).
pub fn load(path: &Path) -> Result<Vec<Arc<str>>, String> {
    let text = ferrostream_core::files::read_text(path)
        .map_err(|e| format!("cannot read label file: {e}"))?;
    let max = crate::config::MAX_CLASSES as usize;
    if text.lines().nth(max).is_some() {
        return Err(format!(
            "label file {} has more than {max} lines: more classes than a model may have",
            path.display()
        ));
    }
    let labels: Vec<Arc<str>> = text.lines().map(|l| Arc::from(l.trim())).collect();
    if labels.is_empty() {
        return Err(format!("label file {} is empty", path.display()));
    }
    Ok(labels)
}

/// The labels per output layer of a label file, as nvinfer reads them: for a detector each
/// line names one class (only the text before a `;` counts); for a classifier, a file with `;`
/// gives each layer a line of `;`-separated classes, one without lists one class per line.
pub fn per_layer(lines: &[Arc<str>], classifier: bool) -> Vec<Vec<Arc<str>>> {
    let first = |l: &Arc<str>| -> Arc<str> {
        match l.split_once(';') {
            Some((head, _)) => Arc::from(head.trim()),
            None => l.clone(),
        }
    };
    if classifier && lines.iter().any(|l| l.contains(';')) {
        lines
            .iter()
            .filter(|l| !l.is_empty())
            .map(|l| l.split(';').map(|c| Arc::from(c.trim())).collect())
            .collect()
    } else {
        vec![lines.iter().map(first).collect()]
    }
}

/// The label of `class_id`: from `labels`, else its number.
pub fn label_for(labels: &[Arc<str>], class_id: u32) -> Arc<str> {
    labels
        .get(class_id as usize)
        .filter(|l| !l.is_empty())
        .cloned()
        .unwrap_or_else(|| Arc::from(class_id.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_by_line_with_numeric_fallback() {
        let dir = std::env::temp_dir().join(format!("fs-labels-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("labels.txt");
        std::fs::write(&path, "person\nbicycle\n\ncar\n").unwrap();
        let labels = load(&path).unwrap();
        assert_eq!(&*label_for(&labels, 0), "person");
        assert_eq!(&*label_for(&labels, 3), "car");
        assert_eq!(&*label_for(&labels, 2), "2");
        assert_eq!(&*label_for(&labels, 99), "99");
        assert!(
            load(&dir.join("missing.txt"))
                .unwrap_err()
                .contains("missing.txt")
        );
    }

    #[test]
    fn nvinfer_classifier_files_give_classes_per_layer() {
        let lines: Vec<Arc<str>> = ["black;blue; red", "sedan;suv"]
            .iter()
            .map(|&l| Arc::from(l))
            .collect();
        let layers = per_layer(&lines, true);
        assert_eq!(layers.len(), 2);
        assert_eq!(&*layers[0][2], "red");
        assert_eq!(&*layers[1][1], "suv");
        // A detector takes the first name of each line.
        let detector = per_layer(&lines, false);
        assert_eq!((detector.len(), &*detector[0][1]), (1, "sedan"));
        // One class per line: one layer.
        let plain: Vec<Arc<str>> = ["cat", "dog"].iter().map(|&l| Arc::from(l)).collect();
        assert_eq!(per_layer(&plain, true), vec![plain.clone()]);
    }
}
