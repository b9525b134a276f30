// SPDX-License-Identifier: MIT OR Apache-2.0
//! Unix sequenced-packet sockets (`SOCK_SEQPACKET`: one message per send, never merged or split)
//! that carry file descriptors with a message (SCM_RIGHTS). std's Unix sockets are stream or
//! datagram sockets without descriptor passing, hence these few libc calls.
//!
//! Such a socket takes no message longer than its send buffer (the kernel's default, about
//! 208 KiB, which an unprivileged process cannot raise past `net.core.wmem_max`), and a long one
//! needs as long a stretch of contiguous kernel memory. So a message longer than `INLINE_MAX`
//! (or than half the send buffer, if that is smaller) travels in a sealed memory file instead:
//! the socket carries a 9-byte header (`IN_FILE`, then the length as a little-endian `u64`)
//! with the file's descriptor first among the message's. The receiver checks the length against
//! its limit before reading, and reads the file with `pread`, never mapping it: a file cut short
//! under a mapping would fault, a short read is just an error. Short messages travel as they
//! are, so the first message of a connection (the protocol's hello) reads the same in every
//! version.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

/// The most descriptors one message carries.
pub const MAX_FDS: usize = 16;
/// The longest message sent in the socket itself (well inside any send buffer).
const INLINE_MAX: usize = 64 << 10;
/// The first byte of the header of a message sent in a memory file; messages starting with it go
/// in a file whatever their length.
const IN_FILE: u8 = 0;
/// The header of a message in a memory file: [`IN_FILE`] and the length.
const HEADER_LEN: usize = 9;
/// The seals a message's memory file has: its contents and length are fixed.
const SEALED: libc::c_int = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn cvt_size(r: libc::ssize_t) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

fn new_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain system call; the descriptor is owned right away.
    let fd =
        cvt(unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn address(path: &Path) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: all-zero is a valid sockaddr_un.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    if bytes.is_empty() || bytes.len() >= addr.sun_path.len() || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "socket path {} must be 1 to {} bytes without NUL",
                path.display(),
                addr.sun_path.len() - 1
            ),
        ));
    }
    for (dst, src) in addr.sun_path.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    Ok((addr, len as libc::socklen_t))
}

/// A listening socket at a path only its owner can connect to; the path is removed on drop.
#[derive(Debug)]
pub struct Listener {
    fd: OwnedFd,
    path: std::path::PathBuf,
}

impl Listener {
    /// Listens at `path`. A socket file left there by a process that is gone is replaced; a path
    /// some process still listens on, or any other kind of file, is refused.
    pub fn bind(path: &Path) -> io::Result<Self> {
        let (addr, len) = address(path)?;
        match std::fs::symlink_metadata(path) {
            Ok(meta) => {
                use std::os::unix::fs::FileTypeExt;
                if !meta.file_type().is_socket() {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!("{} exists and is not a socket", path.display()),
                    ));
                }
                if Connection::connect(path, Duration::ZERO).is_ok() {
                    return Err(io::Error::new(
                        io::ErrorKind::AddrInUse,
                        format!("another producer listens at {}", path.display()),
                    ));
                }
                std::fs::remove_file(path)?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let fd = new_socket()?;
        // SAFETY: valid address of `len` bytes.
        cvt(unsafe { libc::bind(fd.as_raw_fd(), (&raw const addr).cast(), len) })?;
        let listener = Self {
            fd,
            path: path.to_owned(),
        };
        // Owner-only before anyone can connect: connecting needs write permission on the socket
        // file, and nothing is accepted before `listen`.
        let cpath = CString::new(path.as_os_str().as_bytes())?;
        // SAFETY: a NUL-terminated path.
        cvt(unsafe { libc::chmod(cpath.as_ptr(), 0o600) })?;
        // SAFETY: a bound socket.
        cvt(unsafe { libc::listen(listener.fd.as_raw_fd(), 16) })?;
        set_nonblocking(listener.fd.as_fd(), true)?;
        Ok(listener)
    }

    /// A pending connection, if there is one (the listener does not block).
    pub fn accept(&self) -> io::Result<Option<Connection>> {
        // SAFETY: a listening socket; no address wanted.
        let r = unsafe {
            libc::accept4(
                self.fd.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                _ => Err(e),
            };
        }
        // SAFETY: a fresh descriptor.
        Connection::new(unsafe { OwnedFd::from_raw_fd(r) }).map(Some)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl AsFd for Listener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn set_nonblocking(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    // SAFETY: plain fcntl calls on a live descriptor.
    unsafe {
        let flags = cvt(libc::fcntl(fd.as_raw_fd(), libc::F_GETFL))?;
        let flags = if on {
            flags | libc::O_NONBLOCK
        } else {
            flags & !libc::O_NONBLOCK
        };
        cvt(libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags))?;
    }
    Ok(())
}

/// A message received: its bytes and the descriptors that came with it.
#[derive(Debug)]
pub struct Received {
    pub bytes: Vec<u8>,
    pub fds: Vec<OwnedFd>,
}

/// One end of a connection.
#[derive(Debug)]
pub struct Connection {
    fd: OwnedFd,
    /// The longest message sent in the socket itself.
    inline_max: usize,
}

impl Connection {
    /// A connection on `fd`, sending in the socket itself what fits the send buffer it has.
    fn new(fd: OwnedFd) -> io::Result<Self> {
        let mut size: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: valid out buffer of `len` bytes.
        cvt(unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                (&raw mut size).cast(),
                &mut len,
            )
        })?;
        // Half of it: the kernel counts its own bookkeeping against the buffer as well.
        let inline_max = INLINE_MAX.min(size as usize / 2);
        Ok(Self { fd, inline_max })
    }

    /// Connects to the listener at `path`, waiting at most `timeout` while its queue of
    /// pending connections is full.
    pub fn connect(path: &Path, timeout: Duration) -> io::Result<Self> {
        let (addr, len) = address(path)?;
        let fd = new_socket()?;
        set_nonblocking(fd.as_fd(), true)?;
        let deadline = std::time::Instant::now() + timeout;
        loop {
            // SAFETY: valid address of `len` bytes.
            let r = unsafe { libc::connect(fd.as_raw_fd(), (&raw const addr).cast(), len) };
            if r == 0 {
                break;
            }
            let e = io::Error::last_os_error();
            // A Unix socket connects at once or, its listener's queue being full, not at all
            // (EAGAIN): try again until the deadline.
            if !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ) || std::time::Instant::now() >= deadline
            {
                return Err(e);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Self::new(fd)
    }

    /// Closes the sending direction: the other end reads the end of the connection, while
    /// what it still sends can be read here.
    pub fn shutdown_write(&self) {
        // SAFETY: plain call on a live socket.
        unsafe { libc::shutdown(self.fd.as_raw_fd(), libc::SHUT_WR) };
    }

    /// A connected pair (for tests).
    pub fn pair() -> io::Result<(Self, Self)> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: valid out array of two.
        cvt(unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        })?;
        // SAFETY: two fresh descriptors.
        let (a, b) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Ok((Self::new(a)?, Self::new(b)?))
    }

    /// The user id of the process at the other end.
    pub fn peer_uid(&self) -> io::Result<u32> {
        // SAFETY: all-zero is a valid ucred.
        let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        // SAFETY: valid out buffer of `len` bytes.
        cvt(unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                (&raw mut cred).cast(),
                &mut len,
            )
        })?;
        Ok(cred.uid)
    }

    /// Sends one message with `fds` (at most [`MAX_FDS`]), of any length (a long one in a
    /// memory file: see the module documentation); waits at most `timeout` in all for room
    /// (`TimedOut` after).
    pub fn send(&self, bytes: &[u8], fds: &[BorrowedFd<'_>], timeout: Duration) -> io::Result<()> {
        self.send_message(&Message::new(bytes), fds, timeout)
    }

    /// [`Connection::send`] of a message that may go to several peers: a long one is written to
    /// its memory file once, whatever the number of peers.
    pub fn send_message(
        &self,
        message: &Message<'_>,
        fds: &[BorrowedFd<'_>],
        timeout: Duration,
    ) -> io::Result<()> {
        let bytes = message.bytes;
        let deadline = std::time::Instant::now() + timeout;
        if fds.len() > MAX_FDS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} descriptors in one message (at most {MAX_FDS})",
                    fds.len()
                ),
            ));
        }
        if bytes.len() <= self.inline_max && bytes.first() != Some(&IN_FILE) {
            return self.send_packet(bytes, fds, deadline);
        }
        let file = message.file()?;
        let mut header = [IN_FILE; HEADER_LEN];
        header[1..].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
        let mut all = Vec::with_capacity(fds.len() + 1);
        all.push(file.as_fd());
        all.extend_from_slice(fds);
        self.send_packet(&header, &all, deadline)
    }

    /// Sends `bytes` and `fds` as one socket message, waiting for room until `deadline`.
    fn send_packet(
        &self,
        bytes: &[u8],
        fds: &[BorrowedFd<'_>],
        deadline: std::time::Instant,
    ) -> io::Result<()> {
        let mut iov = libc::iovec {
            iov_base: bytes.as_ptr() as *mut libc::c_void,
            iov_len: bytes.len(),
        };
        let mut control = ControlBuffer::new();
        // SAFETY: all-zero is a valid msghdr.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if !fds.is_empty() {
            let payload = std::mem::size_of_val(fds) as u32;
            // SAFETY: the control buffer is aligned and large enough for MAX_FDS + 1 descriptors;
            // CMSG_* compute offsets inside it.
            unsafe {
                msg.msg_control = control.0.as_mut_ptr().cast();
                msg.msg_controllen = libc::CMSG_SPACE(payload) as _;
                let cmsg = libc::CMSG_FIRSTHDR(&msg);
                (*cmsg).cmsg_level = libc::SOL_SOCKET;
                (*cmsg).cmsg_type = libc::SCM_RIGHTS;
                (*cmsg).cmsg_len = libc::CMSG_LEN(payload) as _;
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                for (i, fd) in fds.iter().enumerate() {
                    data.add(i).write_unaligned(fd.as_raw_fd());
                }
            }
        }
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            wait_for(self.fd.as_fd(), libc::POLLOUT, left)?;
            // SAFETY: `msg` points at live buffers; MSG_NOSIGNAL turns a closed peer into EPIPE.
            let r = unsafe {
                libc::sendmsg(
                    self.fd.as_raw_fd(),
                    &msg,
                    libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
                )
            };
            match cvt_size(r) {
                Ok(_) => return Ok(()),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Receives one message of at most `max` bytes, waiting at most `timeout` (`None`: only what
    /// is there). `Ok(None)`: nothing arrived in time. A closed peer is `UnexpectedEof`; a longer
    /// message, more descriptors than [`MAX_FDS`] or a malformed message in a memory file is
    /// `InvalidData` (and the descriptors that came with it are closed).
    pub fn receive(&self, max: usize, timeout: Option<Duration>) -> io::Result<Option<Received>> {
        let mut bytes = vec![0u8; max];
        Ok(self.receive_into(&mut bytes, timeout)?.map(|(n, fds)| {
            bytes.truncate(n);
            Received { bytes, fds }
        }))
    }

    /// [`Connection::receive`] into `buffer` (its length is the most a message may have): the
    /// message's length and descriptors. For a reader of many large messages, which then
    /// allocates nothing per message.
    pub fn receive_into(
        &self,
        buffer: &mut [u8],
        timeout: Option<Duration>,
    ) -> io::Result<Option<(usize, Vec<OwnedFd>)>> {
        let max = buffer.len();
        if !wait_for(
            self.fd.as_fd(),
            libc::POLLIN,
            timeout.unwrap_or(Duration::ZERO),
        )
        .map(|_| true)
        .or_else(|e| {
            if e.kind() == io::ErrorKind::TimedOut {
                Ok(false)
            } else {
                Err(e)
            }
        })? {
            return Ok(None);
        }
        let mut iov = libc::iovec {
            iov_base: buffer.as_mut_ptr().cast(),
            iov_len: max,
        };
        let mut control = ControlBuffer::new();
        // SAFETY: all-zero is a valid msghdr.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.0.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of::<ControlBuffer>() as _;
        // SAFETY: `msg` points at live buffers of the sizes it states.
        let r = unsafe {
            libc::recvmsg(
                self.fd.as_raw_fd(),
                &mut msg,
                libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
            )
        };
        let n = match cvt_size(r) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let mut fds = Vec::new();
        // SAFETY: the kernel filled `msg_controllen` bytes of the control buffer with well-formed
        // headers; every descriptor of an SCM_RIGHTS header is new and owned from here on.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                    let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                    let payload = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                    for i in 0..payload / std::mem::size_of::<RawFd>() {
                        fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                    }
                }
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
        }
        if msg.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a message longer than {max} bytes or with more than {MAX_FDS} descriptors"
                ),
            ));
        }
        if n == 0 && fds.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the other end closed the connection",
            ));
        }
        let (n, fds) = if n > 0 && buffer[0] == IN_FILE {
            read_in_file(n, fds, buffer)?
        } else {
            (n, fds)
        };
        if fds.len() > MAX_FDS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a message with {} descriptors (at most {MAX_FDS})",
                    fds.len()
                ),
            ));
        }
        Ok(Some((n, fds)))
    }
}

/// A message to send, with the sealed memory file it travels in when it is long (made at the
/// first send that needs it, then shared by every peer: each reads it with `pread`).
pub struct Message<'a> {
    bytes: &'a [u8],
    file: std::cell::OnceCell<OwnedFd>,
}

impl<'a> Message<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            file: std::cell::OnceCell::new(),
        }
    }

    fn file(&self) -> io::Result<BorrowedFd<'_>> {
        if self.file.get().is_none() {
            let _ = self.file.set(sealed_file(self.bytes)?);
        }
        Ok(self.file.get().expect("set above").as_fd())
    }
}

/// A memory file holding `bytes`, sealed against any change.
fn sealed_file(bytes: &[u8]) -> io::Result<OwnedFd> {
    use std::io::Write;
    // SAFETY: a NUL-terminated name.
    let fd = cvt(unsafe {
        libc::memfd_create(
            c"ferrostream-ipc-message".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    })?;
    // SAFETY: a fresh descriptor nobody else owns.
    let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    file.write_all(bytes)?;
    // SAFETY: plain fcntl on a live descriptor.
    cvt(unsafe {
        libc::fcntl(
            file.as_raw_fd(),
            libc::F_ADD_SEALS,
            SEALED | libc::F_SEAL_SEAL,
        )
    })?;
    Ok(file.into())
}

/// Replaces the header received in `buffer` (`n` bytes starting with [`IN_FILE`]) by the message
/// it announces, read from the memory file first among `fds`, if it fits: its length and the
/// other descriptors.
fn read_in_file(
    n: usize,
    mut fds: Vec<OwnedFd>,
    buffer: &mut [u8],
) -> io::Result<(usize, Vec<OwnedFd>)> {
    use std::os::unix::fs::FileExt;
    let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    if n != HEADER_LEN || fds.is_empty() {
        return Err(invalid(format!(
            "a malformed message ({n} bytes starting with {IN_FILE}, {} descriptors)",
            fds.len()
        )));
    }
    let max = buffer.len();
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&buffer[1..HEADER_LEN]);
    let len = u64::from_le_bytes(raw);
    let Some(len) = usize::try_from(len).ok().filter(|&len| len <= max) else {
        return Err(invalid(format!("a message of {len} bytes (at most {max})")));
    };
    let file = std::fs::File::from(fds.remove(0));
    // SAFETY: plain fcntl on a live descriptor.
    let seals = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GET_SEALS) };
    let size = file.metadata()?.len();
    if seals < 0 || seals & SEALED != SEALED || size != len as u64 {
        return Err(invalid(format!(
            "a {len}-byte message in a file of {size} bytes that is not a sealed memory file"
        )));
    }
    file.read_exact_at(&mut buffer[..len], 0)
        .map_err(|e| invalid(format!("a {len}-byte message could not be read: {e}")))?;
    Ok((len, fds))
}

impl AsFd for Connection {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Room for one SCM_RIGHTS header with [`MAX_FDS`] descriptors and a message's memory file,
/// aligned as `cmsghdr`.
#[repr(C, align(8))]
struct ControlBuffer([u8; 128]);

impl ControlBuffer {
    fn new() -> Self {
        const _: () = assert!(
            std::mem::size_of::<libc::cmsghdr>() + (MAX_FDS + 1) * std::mem::size_of::<RawFd>()
                <= 128
        );
        Self([0; 128])
    }
}

/// Waits until `fd` is ready for `events` or `timeout` passes (`TimedOut`); a hang-up counts as
/// ready, so that the next call sees it.
pub fn wait_for(fd: BorrowedFd<'_>, events: libc::c_short, timeout: Duration) -> io::Result<()> {
    let deadline = std::time::Instant::now() + timeout;
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    };
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let ms = left.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "timed out"));
        }
        return Ok(());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, Write};

    const T: Duration = Duration::from_secs(5);

    #[test]
    fn messages_keep_their_boundaries_and_carry_descriptors() {
        let (a, b) = Connection::pair().unwrap();
        let mut file = tempfile();
        file.write_all(b"pixels").unwrap();
        a.send(b"first", &[file.as_fd()], T).unwrap();
        a.send(b"second", &[], T).unwrap();
        let first = b.receive(64, Some(T)).unwrap().unwrap();
        assert_eq!(first.bytes, b"first");
        assert_eq!(first.fds.len(), 1);
        let mut received = std::fs::File::from(first.fds.into_iter().next().unwrap());
        received.rewind().unwrap();
        let mut text = String::new();
        received.read_to_string(&mut text).unwrap();
        assert_eq!(text, "pixels");
        let second = b.receive(64, Some(T)).unwrap().unwrap();
        assert_eq!(
            (second.bytes.as_slice(), second.fds.len()),
            (&b"second"[..], 0)
        );
        assert!(b.receive(64, None).unwrap().is_none());
    }

    #[test]
    fn an_oversized_message_is_refused_and_a_closed_peer_is_seen() {
        let (a, b) = Connection::pair().unwrap();
        a.send(&[7u8; 100], &[], T).unwrap();
        let e = b.receive(10, Some(T)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        drop(a);
        let e = b.receive(10, Some(T)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn a_message_of_the_protocol_maximum_crosses_and_one_byte_more_is_refused() {
        let max = crate::wire::MAX_MESSAGE;
        let (a, b) = Connection::pair().unwrap();
        let mut file = tempfile();
        file.write_all(b"pixels").unwrap();
        let mut bytes: Vec<u8> = (0..max).map(|i| (i % 251) as u8).collect();
        a.send(&bytes, &[file.as_fd()], T).unwrap();
        let got = b.receive(max, Some(T)).unwrap().unwrap();
        assert!(got.bytes == bytes, "the {max} bytes arrive as sent");
        assert_eq!(got.fds.len(), 1, "with the descriptor sent along");
        // One byte more leaves the sender (the limit is the receiver's), and is refused there
        // with both sizes named; the connection goes on.
        bytes.push(0);
        a.send(&bytes, &[], T).unwrap();
        let e = b.receive(max, Some(T)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        let text = e.to_string();
        assert!(
            text.contains(&(max + 1).to_string()) && text.contains(&max.to_string()),
            "{text}"
        );
        a.send(b"next", &[], T).unwrap();
        assert_eq!(b.receive(max, Some(T)).unwrap().unwrap().bytes, b"next");
    }

    /// The next socket message as it is on the wire (descriptors dropped).
    fn raw(conn: &Connection) -> Vec<u8> {
        let mut bytes = vec![0u8; INLINE_MAX + 1];
        wait_for(conn.as_fd(), libc::POLLIN, T).unwrap();
        // SAFETY: a valid buffer of its length.
        let n = unsafe {
            libc::recv(
                conn.fd.as_raw_fd(),
                bytes.as_mut_ptr().cast(),
                bytes.len(),
                0,
            )
        };
        bytes.truncate(cvt_size(n).unwrap());
        bytes
    }

    #[test]
    fn short_messages_travel_as_they_are_and_longer_ones_in_a_file() {
        let (a, b) = Connection::pair().unwrap();
        // What a reader of any protocol version reads.
        let hello = br#"{"type":"hello","version":2}"#;
        a.send(hello, &[], T).unwrap();
        assert_eq!(raw(&b), hello);
        let longest = vec![b'x'; a.inline_max];
        a.send(&longest, &[], T).unwrap();
        assert_eq!(raw(&b), longest);
        let longer = vec![b'x'; a.inline_max + 1];
        a.send(&longer, &[], T).unwrap();
        assert_eq!(
            raw(&b)[..],
            [
                [IN_FILE].as_slice(),
                &(a.inline_max as u64 + 1).to_le_bytes()
            ]
            .concat()
        );
        // Received whole, and so is a short message starting like a header.
        for bytes in [longer, vec![IN_FILE, 1, 2]] {
            a.send(&bytes, &[], T).unwrap();
            assert_eq!(b.receive(1 << 20, Some(T)).unwrap().unwrap().bytes, bytes);
        }
    }

    #[test]
    fn a_malformed_message_in_a_file_is_refused() {
        let (a, b) = Connection::pair().unwrap();
        let header = |len: u64| [[IN_FILE].as_slice(), &len.to_le_bytes()].concat();
        let sealed = sealed_file(b"{}").unwrap();
        let mut unsealed = tempfile();
        unsealed.write_all(b"{}").unwrap();
        let deadline = || std::time::Instant::now() + T;
        for (bytes, fds) in [
            (header(2), vec![]),
            (header(3), vec![sealed.as_fd()]),
            (header(2), vec![unsealed.as_fd()]),
            (header(2)[..5].to_vec(), vec![sealed.as_fd()]),
            (header(u64::MAX), vec![sealed.as_fd()]),
        ] {
            a.send_packet(&bytes, &fds, deadline()).unwrap();
            let e = b.receive(64, Some(T)).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{bytes:?}: {e}");
        }
        a.send_packet(&header(2), &[sealed.as_fd(), unsealed.as_fd()], deadline())
            .unwrap();
        let got = b.receive(64, Some(T)).unwrap().unwrap();
        assert_eq!((got.bytes.as_slice(), got.fds.len()), (&b"{}"[..], 1));
    }

    #[test]
    fn the_listener_is_owner_only_and_replaces_a_stale_socket() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("fs-ipc-sock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s");
        let listener = Listener::bind(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let err = Listener::bind(&path).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
        let client = Connection::connect(&path, T).unwrap();
        wait_for(listener.as_fd(), libc::POLLIN, T).unwrap();
        let server = listener.accept().unwrap().unwrap();
        // SAFETY: getuid cannot fail.
        assert_eq!(server.peer_uid().unwrap(), unsafe { libc::getuid() });
        drop(client);
        // A socket file nobody listens on any more (a crashed producer) is replaced.
        let stale = std::os::unix::net::UnixListener::bind(dir.join("stale")).unwrap();
        drop(stale);
        let _again = Listener::bind(&dir.join("stale")).unwrap();
        std::fs::write(dir.join("file"), b"x").unwrap();
        assert_eq!(
            Listener::bind(&dir.join("file")).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        drop(listener);
        assert!(!path.exists(), "the socket file is removed");
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempfile() -> std::fs::File {
        let path = std::env::temp_dir().join(format!(
            "fs-ipc-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        file
    }
}
