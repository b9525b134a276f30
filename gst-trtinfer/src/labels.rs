//! Label files: one class name per line; line `i` (0-based) names class `i`.

use std::path::Path;
use std::sync::Arc;

/// Reads a label file. Blank lines keep their index (they name unused classes).
pub fn load(path: &Path) -> Result<Vec<Arc<str>>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read label file {}: {e}", path.display()))?;
    let labels: Vec<Arc<str>> = text.lines().map(|l| Arc::from(l.trim())).collect();
    if labels.is_empty() {
        return Err(format!("label file {} is empty", path.display()));
    }
    Ok(labels)
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
}
