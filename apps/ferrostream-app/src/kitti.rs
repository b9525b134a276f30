// SPDX-License-Identifier: MIT OR Apache-2.0
//! KITTI files as deepstream-app writes them: one file per frame,
//! `<dir>/00_<stream:03>_<frame:06>.txt`, one line per object. Detections
//! (`gie-kitti-output-dir`): `label 0.0 0 0.0 left top right bottom` then seven zeros and the
//! detector confidence. Tracks (`kitti-track-output-dir`): the same with the track id after the
//! label, the tracker's box and confidence. Terminated tracks
//! (`terminated-track-output-dir`): the ids that ended in the frame, one per line.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use ferrostream_core::{BBox, Frame};

fn file(dir: &Path, frame: &Frame) -> PathBuf {
    dir.join(format!(
        "00_{:03}_{:06}.txt",
        frame.pad_index, frame.frame_num
    ))
}

fn corners(b: &BBox) -> (f32, f32, f32, f32) {
    (b.left, b.top, b.left + b.width, b.top + b.height)
}

/// The detection lines of `frame`: the objects a detector found in it (a tracker's shadow
/// targets, predicted without a detection, have detector confidence 0 and are left out).
pub fn detections(frame: &Frame) -> String {
    let mut out = String::new();
    for o in frame
        .objects
        .iter()
        .filter(|o| !(o.object_id.is_some() && o.confidence == 0.0))
    {
        let (l, t, r, b) = corners(&o.detector_bbox);
        let _ = writeln!(
            out,
            "{} 0.0 0 0.0 {l:.6} {t:.6} {r:.6} {b:.6} 0.0 0.0 0.0 0.0 0.0 0.0 0.0 {:.6}",
            label(&o.label),
            o.confidence
        );
    }
    out
}

/// The track lines of `frame` (tracked objects only).
pub fn tracks(frame: &Frame) -> String {
    let mut out = String::new();
    for o in &frame.objects {
        let Some(id) = o.object_id else { continue };
        let bbox = o.tracker_bbox.as_ref().unwrap_or(&o.detector_bbox);
        let (l, t, r, b) = corners(bbox);
        let _ = writeln!(
            out,
            "{} {id} 0.0 0 0.0 {l:.6} {t:.6} {r:.6} {b:.6} 0.0 0.0 0.0 0.0 0.0 0.0 0.0 {:.6}",
            label(&o.label),
            o.tracker_confidence.unwrap_or(o.confidence)
        );
    }
    out
}

/// KITTI labels are one word.
fn label(l: &str) -> String {
    if l.is_empty() {
        "unknown".to_owned()
    } else {
        l.replace(char::is_whitespace, "_")
    }
}

/// Writes the files of `frame` into the directories that are set. A failed write is returned
/// (the runner reports the first and stops writing).
pub fn write(
    frame: &Frame,
    detections_dir: Option<&Path>,
    tracks_dir: Option<&Path>,
    terminated_dir: Option<&Path>,
) -> std::io::Result<()> {
    if let Some(dir) = detections_dir {
        std::fs::write(file(dir, frame), detections(frame))?;
    }
    if let Some(dir) = tracks_dir {
        std::fs::write(file(dir, frame), tracks(frame))?;
    }
    if let Some(dir) = terminated_dir
        && !frame.terminated_ids.is_empty()
    {
        let ids: String = frame
            .terminated_ids
            .iter()
            .map(|id| format!("{id}\n"))
            .collect();
        std::fs::write(file(dir, frame), ids)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrostream_core::Object;

    #[test]
    fn lines_and_names() {
        let mut f = Frame::new(0, 7, 640, 480);
        f.pad_index = 2;
        let mut o = Object::new(
            0,
            "traffic light".into(),
            0.5,
            BBox {
                left: 10.0,
                top: 20.0,
                width: 30.0,
                height: 40.0,
            },
            1,
        );
        f.objects.push(o.clone());
        o.object_id = Some(12);
        f.objects.push(o);
        assert_eq!(
            detections(&f).lines().next().unwrap(),
            "traffic_light 0.0 0 0.0 10.000000 20.000000 40.000000 60.000000 0.0 0.0 0.0 0.0 \
             0.0 0.0 0.0 0.500000"
        );
        assert_eq!(tracks(&f).lines().count(), 1);
        assert!(tracks(&f).starts_with("traffic_light 12 0.0 0 0.0 10.000000"));
        assert_eq!(file(Path::new("/k"), &f), Path::new("/k/00_002_000007.txt"));
    }
}
