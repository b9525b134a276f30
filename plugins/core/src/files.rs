// SPDX-License-Identifier: MIT OR Apache-2.0
//! Reading the files an operator names (configurations, label files, models, certificates,
//! fonts): only regular files, and never more than a bound chosen for what the file is.
//!
//! A path to `/dev/zero`, `/dev/urandom` or a FIFO would otherwise read until memory runs out
//! or block forever; a file larger than any real one of its kind would take memory for
//! nothing. Every error names the path and says what was wrong with it.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Configuration and label files: far above any real one (DeepStream's largest are a few KiB).
pub const MAX_TEXT_FILE_BYTES: u64 = 16 << 20;
/// Certificates, keys and fonts.
pub const MAX_ASSET_FILE_BYTES: u64 = 64 << 20;
/// Models and engines: ONNX files hold at most 2 GiB (protobuf's limit); TensorRT engines and
/// DLA loadables of real networks stay well below 4 GiB.
pub const MAX_MODEL_FILE_BYTES: u64 = 4 << 30;

/// What was wrong with a file.
#[derive(Debug)]
pub enum FileError {
    /// The path names something else than a regular file.
    NotRegular { path: PathBuf, kind: &'static str },
    /// The file is larger than `limit` bytes.
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    /// The text is not UTF-8.
    NotText { path: PathBuf },
    /// The path could not be opened or read.
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl FileError {
    pub fn path(&self) -> &Path {
        match self {
            FileError::NotRegular { path, .. }
            | FileError::TooLarge { path, .. }
            | FileError::NotText { path }
            | FileError::Io { path, .. } => path,
        }
    }

    /// Whether the file does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, FileError::Io { error, .. } if error.kind() == std::io::ErrorKind::NotFound)
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::NotRegular { path, kind } => {
                write!(f, "{} is {kind}, not a regular file", path.display())
            }
            FileError::TooLarge { path, size, limit } => write!(
                f,
                "{} is {}, more than the {} such a file may have",
                path.display(),
                human_size(*size),
                human_size(*limit)
            ),
            FileError::NotText { path } => write!(f, "{} is not UTF-8 text", path.display()),
            FileError::Io { path, error } => {
                if error.raw_os_error() == Some(libc::ELOOP) {
                    write!(
                        f,
                        "{}: a loop of symbolic links (it never reaches a file)",
                        path.display()
                    )
                } else if error.kind() == std::io::ErrorKind::NotFound {
                    write!(f, "{}: no such file", path.display())
                } else {
                    write!(f, "{}: {error}", path.display())
                }
            }
        }
    }
}

impl std::error::Error for FileError {}

fn human_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b => format!("{b} bytes"),
    }
}

fn kind_of(file_type: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// Checks, without opening it, that `path` (symbolic links followed) is a regular file of at
/// most `limit` bytes; returns its size. For files that another library opens by name (ONNX
/// Runtime, `dlopen`).
pub fn check_regular(path: &Path, limit: u64) -> Result<u64, FileError> {
    let meta = std::fs::metadata(path).map_err(|error| FileError::Io {
        path: path.to_owned(),
        error,
    })?;
    if !meta.is_file() {
        return Err(FileError::NotRegular {
            path: path.to_owned(),
            kind: kind_of(meta.file_type()),
        });
    }
    if meta.len() > limit {
        return Err(FileError::TooLarge {
            path: path.to_owned(),
            size: meta.len(),
            limit,
        });
    }
    Ok(meta.len())
}

/// Reads a regular file of at most `limit` bytes. A file that grows past the bound while it is
/// read is refused too.
pub fn read(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    let size = check_regular(path, limit)?;
    let io = |error| FileError::Io {
        path: path.to_owned(),
        error,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(FileError::TooLarge {
            path: path.to_owned(),
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// Reads a regular UTF-8 text file of at most [`MAX_TEXT_FILE_BYTES`].
pub fn read_text(path: &Path) -> Result<String, FileError> {
    String::from_utf8(read(path, MAX_TEXT_FILE_BYTES)?).map_err(|_| FileError::NotText {
        path: path.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory of this test's own.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("ferrostream-files-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn special_files_are_refused_without_reading() {
        for (path, kind) in [
            ("/dev/zero", "a character device"),
            ("/dev/urandom", "a character device"),
            ("/tmp", "a directory"),
        ] {
            let e = read_text(Path::new(path)).unwrap_err().to_string();
            assert_eq!(e, format!("{path} is {kind}, not a regular file"));
        }
        let dir = scratch("fifo");
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo(3) on a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Would block forever if it were opened.
        let e = read(&fifo, 10).unwrap_err().to_string();
        assert!(e.ends_with("is a FIFO, not a regular file"), "{e}");
    }

    #[test]
    fn sizes_links_and_encodings() {
        let dir = scratch("sizes");
        let big = dir.join("big.txt");
        std::fs::write(&big, vec![b'a'; 2048]).unwrap();
        let e = read(&big, 1024).unwrap_err().to_string();
        assert!(e.contains("is 2048 bytes, more than the 1024 bytes"), "{e}");
        assert_eq!(read(&big, 4096).unwrap().len(), 2048);

        let a = dir.join("a");
        let b = dir.join("b");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        let e = read_text(&a).unwrap_err().to_string();
        assert!(e.contains("a loop of symbolic links"), "{e}");

        let missing = read_text(&dir.join("missing")).unwrap_err();
        assert!(missing.is_not_found());
        assert!(missing.to_string().ends_with("missing: no such file"));

        let binary = dir.join("bin");
        std::fs::write(&binary, [0xff, 0xfe, 0x00]).unwrap();
        assert!(
            read_text(&binary)
                .unwrap_err()
                .to_string()
                .contains("not UTF-8")
        );
    }
}
