// SPDX-License-Identifier: MIT OR Apache-2.0
//! Shared system memory for frames in system memory: anonymous memory files (`memfd_create`),
//! mapped by the producer for writing and by consumers for reading, passed as descriptors.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// A mapping of a memory file; unmapped on drop.
#[derive(Debug)]
pub struct Segment {
    ptr: *mut u8,
    len: usize,
    fd: OwnedFd,
}

// SAFETY: the mapping is plain memory; access is synchronised by its users (the producer writes a
// slot only while no consumer holds it).
unsafe impl Send for Segment {}
unsafe impl Sync for Segment {}

impl Segment {
    /// A new memory file of `len` bytes, mapped for writing. Its size can never change (sealed),
    /// so a consumer's mapping cannot be cut short under it.
    pub fn create(len: usize) -> io::Result<Self> {
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty segment"));
        }
        // SAFETY: a NUL-terminated name; the descriptor is owned right away.
        let fd = unsafe {
            libc::memfd_create(
                c"ferrostream-ipc".as_ptr(),
                libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh descriptor.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: plain calls on a live descriptor.
        unsafe {
            if libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) < 0
                || libc::fcntl(
                    fd.as_raw_fd(),
                    libc::F_ADD_SEALS,
                    libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL,
                ) < 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        Self::map(fd, len, true)
    }

    /// Maps `len` bytes of a memory file received from another process, for reading. Refused
    /// unless the file is sealed against shrinking and holds `len` bytes: a producer cannot make
    /// a consumer's reads fault by cutting the file short.
    pub fn open(fd: OwnedFd, len: usize) -> io::Result<Self> {
        // SAFETY: plain calls on a live descriptor; `stat` is a valid out buffer.
        let (seals, size) = unsafe {
            let seals = libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS);
            let mut stat: libc::stat = std::mem::zeroed();
            if seals < 0 || libc::fstat(fd.as_raw_fd(), &mut stat) < 0 {
                return Err(io::Error::last_os_error());
            }
            (seals, stat.st_size as u64)
        };
        if seals & libc::F_SEAL_SHRINK == 0 || size != len as u64 || len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the memory file holds {size} bytes (said {len}) or can shrink"),
            ));
        }
        Self::map(fd, len, false)
    }

    fn map(fd: OwnedFd, len: usize, write: bool) -> io::Result<Self> {
        let prot = if write {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a new shared mapping of a file of at least `len` bytes.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Self {
            ptr: ptr.cast(),
            len,
            fd,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes, for reading.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` mapped bytes, live while `self` is.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Writes `bytes` at the start (only the producer's mapping is writable).
    ///
    /// # Safety
    /// No consumer may be reading the segment meanwhile (its slot is not in flight).
    pub unsafe fn write(&self, bytes: &[u8]) {
        assert!(
            bytes.len() <= self.len,
            "{} bytes into a {}-byte segment",
            bytes.len(),
            self.len
        );
        // SAFETY: within the writable mapping; exclusivity is the caller's promise.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr, bytes.len()) };
    }
}

impl AsFd for Segment {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: mapped in `map`, unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_reads_back_through_a_second_mapping() {
        let segment = Segment::create(4096).unwrap();
        // SAFETY: nobody else maps it yet.
        unsafe { segment.write(b"hello") };
        let fd = segment.as_fd().try_clone_to_owned().unwrap();
        let other = Segment::open(fd, 4096).unwrap();
        assert_eq!(&other.as_slice()[..5], b"hello");
        let fd = segment.as_fd().try_clone_to_owned().unwrap();
        assert!(Segment::open(fd, 8192).is_err(), "a wrong size is refused");
    }

    #[test]
    fn an_unsealed_file_is_refused() {
        let file = std::fs::File::open("/dev/null").unwrap();
        assert!(Segment::open(OwnedFd::from(file), 16).is_err());
    }
}
