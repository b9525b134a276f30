// SPDX-License-Identifier: MIT OR Apache-2.0
//! A small, bounded HTTP/1.1 server on threads of its own, for the elements' REST API and the
//! `/metrics` endpoint.
//!
//! It never runs on a GStreamer streaming thread: one thread accepts, and each connection is
//! served on a thread of its own that calls the [`Handler`]. Everything a client can make it
//! hold is bounded:
//!
//! - One request per connection: every response carries `Connection: close`. HTTP/1.0 and
//!   HTTP/1.1 requests are accepted; responses are HTTP/1.1.
//! - At most 32 connections are served at once; one more is answered 503 and closed at once,
//!   never queued.
//! - The request head (request line and headers) is at most 16 KiB (else 431), the body at
//!   most 1 MiB, whether framed by `Content-Length` or by `Transfer-Encoding: chunked` (else
//!   413). Other transfer codings are answered 501, a request with both framings 400.
//!   `Expect: 100-continue` is honoured.
//! - The whole request must arrive within 5 s of the connection, and the response must be
//!   written within 5 s: a client too slow gets 408 (or, if it sent nothing, is closed).
//! - A malformed request is answered 400; a handler that panics, 500, and the server goes on.
//!
//! Responses carry `Content-Type`, `Content-Length` and `Connection: close` (a 204 carries no
//! body, type or length); the server owns the framing headers, so a handler's own
//! `Content-Length`, `Transfer-Encoding` or `Connection` header is left out.
//!
//! [`Server::stop`] (or dropping the server) stops accepting at once, ends idle and reading
//! connections within 0.1 s, and waits at most 2 s for handlers still running; a handler that
//! takes longer finishes on its own thread after `stop` returned.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Connections served at once.
const MAX_CONNECTIONS: usize = 32;
/// Request line and headers.
const MAX_HEAD_BYTES: usize = 16 << 10;
/// Request body, by either framing.
const MAX_BODY_BYTES: usize = 1 << 20;
/// Header lines in a request.
const MAX_HEADERS: usize = 64;
/// For receiving the whole request, and again for writing the whole response.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// How long `stop` waits for connection threads.
const STOP_WAIT: Duration = Duration::from_secs(2);
/// How often the accept loop looks for a new connection and the stop flag.
const ACCEPT_POLL: Duration = Duration::from_millis(25);
/// How often a connection blocked on its socket looks at the stop flag.
const IO_POLL: Duration = Duration::from_millis(100);
/// Writing the 503 to a connection over the limit, on the accept thread.
const REFUSE_WRITE_TIMEOUT: Duration = Duration::from_millis(200);
/// Reading what a client still sends after an early error response, so that closing the
/// socket does not reset the connection before the client has read the response.
const LINGER: Duration = Duration::from_secs(1);
const LINGER_MAX_BYTES: usize = 2 * MAX_BODY_BYTES;

/// An HTTP request as the handler sees it.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    /// The path of the request target without the query, not percent-decoded.
    pub path: String,
    /// What followed the `?`, not percent-decoded; empty without one.
    pub query: String,
    /// Header names and values in the order received; values that are not UTF-8 are decoded
    /// lossily.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub peer: SocketAddr,
}

impl Request {
    /// The value of the first header `name` (compared without regard to case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// An HTTP response. Statuses outside 200..=599 are sent as 500.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: String,
    /// Extra headers; names that are not tokens and values with control characters are left
    /// out, and so are the framing headers.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// `value` as `application/json`.
    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        Self {
            status,
            content_type: "application/json".to_owned(),
            headers: Vec::new(),
            // Writing a `Value` to memory cannot fail: its map keys are strings.
            body: serde_json::to_vec(value).unwrap_or_default(),
        }
    }

    /// `body` as `text/plain; charset=utf-8`.
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            content_type: "text/plain; charset=utf-8".to_owned(),
            headers: Vec::new(),
            body: body.into().into_bytes(),
        }
    }

    /// Adds a header; `Content-Type` replaces the content type.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        if name.eq_ignore_ascii_case("content-type") {
            self.content_type = value.to_owned();
        } else {
            self.headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }

    /// Status line and headers.
    fn head(&self) -> Vec<u8> {
        let status = if (200..=599).contains(&self.status) {
            self.status
        } else {
            500
        };
        let mut head = format!("HTTP/1.1 {status} {}\r\n", reason_phrase(status));
        if status != 204 {
            let content_type = if is_header_value(&self.content_type) {
                &self.content_type
            } else {
                "application/octet-stream"
            };
            head.push_str(&format!(
                "Content-Type: {content_type}\r\nContent-Length: {}\r\n",
                self.body.len()
            ));
        }
        head.push_str("Connection: close\r\n");
        for (name, value) in &self.headers {
            let framing = ["content-length", "transfer-encoding", "connection"]
                .iter()
                .any(|framing| name.eq_ignore_ascii_case(framing));
            if !framing && is_token(name) && is_header_value(value) {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
        }
        head.push_str("\r\n");
        head.into_bytes()
    }

    /// The body as sent: none for 204.
    fn sent_body(&self) -> &[u8] {
        if self.status == 204 { &[] } else { &self.body }
    }
}

/// The standard reason phrase of an HTTP status (empty for codes it does not know).
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        417 => "Expectation Failed",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        507 => "Insufficient Storage",
        // The reason phrase may be empty.
        _ => "",
    }
}

fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn is_header_value(value: &str) -> bool {
    value.bytes().all(|b| b == b'\t' || !b.is_ascii_control())
}

/// Answers every request; called on the connection's thread, so it may block (briefly: `stop`
/// waits at most 2 s for it).
pub type Handler = Arc<dyn Fn(&Request) -> Response + Send + Sync>;

/// The limits that tests shorten.
#[derive(Clone, Copy, Debug)]
struct Limits {
    max_connections: usize,
    io_timeout: Duration,
    stop_wait: Duration,
}

impl Limits {
    const DEFAULT: Limits = Limits {
        max_connections: MAX_CONNECTIONS,
        io_timeout: IO_TIMEOUT,
        stop_wait: STOP_WAIT,
    };
}

/// What the accept thread and the connection threads share.
struct Shared {
    handler: Handler,
    limits: Limits,
    connection_thread_name: String,
    stop: AtomicBool,
    /// Connections being served; `idle` is notified when one ends.
    active: Mutex<usize>,
    idle: Condvar,
}

impl Shared {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    fn active(&self) -> MutexGuard<'_, usize> {
        // A plain count, consistent even if a holder panicked.
        self.active.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running server; stops when dropped.
pub struct Server {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Binds `address:port` (port 0: any free port; an IPv6 address with or without brackets)
    /// and serves until stopped or dropped. `name` names the threads.
    pub fn start(address: &str, port: u16, name: &str, handler: Handler) -> io::Result<Server> {
        Self::start_with(address, port, name, handler, Limits::DEFAULT)
    }

    fn start_with(
        address: &str,
        port: u16,
        name: &str,
        handler: Handler,
        limits: Limits,
    ) -> io::Result<Server> {
        let host = address
            .strip_prefix('[')
            .and_then(|host| host.strip_suffix(']'))
            .unwrap_or(address);
        let listener = TcpListener::bind((host, port))?;
        // Polled, so that the accept loop sees the stop flag.
        listener.set_nonblocking(true)?;
        let local_addr = listener.local_addr()?;
        // Thread names cannot hold NUL.
        let name = name.replace('\0', "");
        let shared = Arc::new(Shared {
            handler,
            limits,
            connection_thread_name: format!("{name}-conn"),
            stop: AtomicBool::new(false),
            active: Mutex::new(0),
            idle: Condvar::new(),
        });
        let accept = thread::Builder::new().name(name).spawn({
            let shared = shared.clone();
            move || accept_loop(&listener, &shared)
        })?;
        Ok(Server {
            local_addr,
            shared,
            accept: Some(accept),
        })
    }

    /// The address bound, with the port chosen when 0 was asked for.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting, waits (at most about 2 s) for the connection threads, returns.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let Some(accept) = self.accept.take() else {
            return;
        };
        let deadline = Instant::now() + self.shared.limits.stop_wait;
        self.shared.stop.store(true, Ordering::Release);
        // Returns within one poll period: the loop never blocks longer.
        let _ = accept.join();
        let mut active = self.shared.active();
        while *active > 0 {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                break;
            };
            active = self
                .shared
                .idle
                .wait_timeout(active, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    while !shared.stopping() {
        match listener.accept() {
            Ok((stream, peer)) => admit(stream, peer, shared),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            // Nothing pending, or out of descriptors or memory: wait a little either way.
            Err(_) => thread::sleep(ACCEPT_POLL),
        }
    }
}

/// Serves `stream` on a thread of its own, or refuses it when the server is full.
fn admit(stream: TcpStream, peer: SocketAddr, shared: &Arc<Shared>) {
    let Some(slot) = Slot::take(shared) else {
        refuse(stream);
        return;
    };
    let spawned = thread::Builder::new()
        .name(shared.connection_thread_name.clone())
        .spawn(move || serve(stream, peer, &slot.shared));
    // On failure the closure, and with it the stream and the slot, are dropped: the connection
    // is closed and its slot given back.
    let _ = spawned;
}

/// One of the `max_connections` places, given back when dropped (also when its thread panics).
struct Slot {
    shared: Arc<Shared>,
}

impl Slot {
    fn take(shared: &Arc<Shared>) -> Option<Slot> {
        let mut active = shared.active();
        if *active >= shared.limits.max_connections {
            return None;
        }
        *active += 1;
        Some(Slot {
            shared: shared.clone(),
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        *self.shared.active() -= 1;
        self.shared.idle.notify_all();
    }
}

/// Answers 503 on the accept thread, with a short write timeout so that it cannot stall.
fn refuse(mut stream: TcpStream) {
    // Read what already arrived, so that closing does not reset the connection before the
    // client reads the 503; never wait for more.
    if stream.set_nonblocking(true).is_ok() {
        let mut scratch = [0; 4096];
        for _ in 0..(MAX_HEAD_BYTES / scratch.len()) {
            if !matches!(stream.read(&mut scratch), Ok(n) if n > 0) {
                break;
            }
        }
    }
    let response = Response::text(503, "too many connections\n");
    let mut bytes = response.head();
    bytes.extend_from_slice(&response.body);
    if stream.set_nonblocking(false).is_ok()
        && stream.set_write_timeout(Some(REFUSE_WRITE_TIMEOUT)).is_ok()
    {
        let _ = stream.write_all(&bytes);
    }
    let _ = stream.shutdown(Shutdown::Both);
}

/// Why no request came out of a connection.
enum Failure {
    /// Answer with this status and message, then close.
    Respond(u16, &'static str),
    /// Close without a word: the client went, sent nothing in time, or the server stops.
    Close,
}

/// Why a read or write on the connection ended early.
enum Interrupt {
    TimedOut,
    Stopped,
    Broken,
}

/// A connection being served: its socket, the deadline of the current phase and the server's
/// stop flag, looked at every `IO_POLL` while blocked.
struct Connection<'a> {
    stream: TcpStream,
    shared: &'a Shared,
    deadline: Instant,
}

impl Connection<'_> {
    /// Sets the socket timeout for the next blocking call: at most until the deadline, and at
    /// most one poll period.
    fn arm(
        &self,
        set: impl Fn(&TcpStream, Option<Duration>) -> io::Result<()>,
    ) -> Result<(), Interrupt> {
        if self.shared.stopping() {
            return Err(Interrupt::Stopped);
        }
        let left = self
            .deadline
            .checked_duration_since(Instant::now())
            .filter(|left| !left.is_zero())
            .ok_or(Interrupt::TimedOut)?;
        set(&self.stream, Some(left.min(IO_POLL))).map_err(|_| Interrupt::Broken)
    }

    /// Reads some bytes; 0 at the end of the stream.
    fn read_some(&mut self, buf: &mut [u8]) -> Result<usize, Interrupt> {
        loop {
            self.arm(TcpStream::set_read_timeout)?;
            match self.stream.read(buf) {
                Ok(n) => return Ok(n),
                Err(error) if is_retry(&error) => {}
                Err(_) => return Err(Interrupt::Broken),
            }
        }
    }

    fn write_all(&mut self, mut bytes: &[u8]) -> Result<(), Interrupt> {
        while !bytes.is_empty() {
            self.arm(TcpStream::set_write_timeout)?;
            match self.stream.write(bytes) {
                Ok(0) => return Err(Interrupt::Broken),
                Ok(n) => bytes = &bytes[n..],
                Err(error) if is_retry(&error) => {}
                Err(_) => return Err(Interrupt::Broken),
            }
        }
        Ok(())
    }

    /// Reads more of the request into `buf`: what arrives in one read, at most 64 KiB.
    fn fill(&mut self, buf: &mut Vec<u8>) -> Result<(), Failure> {
        let start = buf.len();
        buf.resize(start + (64 << 10), 0);
        let read = self.read_some(&mut buf[start..]);
        buf.truncate(start + *read.as_ref().unwrap_or(&0));
        match read {
            Ok(0) => Err(Failure::Respond(400, "incomplete request\n")),
            Ok(_) => Ok(()),
            Err(Interrupt::TimedOut) => Err(Failure::Respond(408, "request too slow\n")),
            Err(Interrupt::Stopped | Interrupt::Broken) => Err(Failure::Close),
        }
    }

    /// Writes `response` within its own deadline.
    fn respond(&mut self, response: &Response) {
        self.deadline = Instant::now() + self.shared.limits.io_timeout;
        let head = response.head();
        let body = response.sent_body();
        // One write for small responses, no copy of large bodies.
        let written = if body.len() <= 16 << 10 {
            let mut bytes = head;
            bytes.extend_from_slice(body);
            self.write_all(&bytes)
        } else {
            self.write_all(&head).and_then(|()| self.write_all(body))
        };
        if written.is_ok() {
            let _ = self.stream.flush();
        }
    }

    /// After an early error response: stops sending and reads what the client still sends
    /// (briefly, boundedly), so that the close does not reset the connection before the
    /// client has read the response.
    fn linger(&mut self) {
        if self.stream.shutdown(Shutdown::Write).is_err() {
            return;
        }
        self.deadline = Instant::now() + LINGER.min(self.shared.limits.io_timeout);
        let mut scratch = [0; 8192];
        let mut drained = 0;
        while drained < LINGER_MAX_BYTES {
            match self.read_some(&mut scratch) {
                Ok(n) if n > 0 => drained += n,
                _ => break,
            }
        }
    }
}

fn is_retry(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

fn serve(stream: TcpStream, peer: SocketAddr, shared: &Shared) {
    if stream.set_nonblocking(false).is_err() {
        return;
    }
    let mut connection = Connection {
        stream,
        shared,
        deadline: Instant::now() + shared.limits.io_timeout,
    };
    match read_request(&mut connection, peer) {
        Ok(request) => {
            let response = catch_unwind(AssertUnwindSafe(|| (shared.handler)(&request)))
                .unwrap_or_else(|_| Response::text(500, "internal server error\n"));
            connection.respond(&response);
        }
        Err(Failure::Respond(status, message)) => {
            connection.respond(&Response::text(status, message));
            connection.linger();
        }
        Err(Failure::Close) => {}
    }
}

/// The request line and headers, parsed.
struct Head {
    method: String,
    target: String,
    http_1_1: bool,
    headers: Vec<(String, String)>,
}

impl Head {
    fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

fn read_request(connection: &mut Connection<'_>, peer: SocketAddr) -> Result<Request, Failure> {
    let mut buf = Vec::with_capacity(4096);
    let (head, head_len) = loop {
        match connection.fill(&mut buf) {
            Ok(()) => {}
            // A connection closed, or silent until the deadline, before a byte came: no one
            // to answer.
            Err(Failure::Respond(..)) if buf.is_empty() => return Err(Failure::Close),
            Err(failure) => return Err(failure),
        }
        if let Some(parsed) = parse_head(&buf)? {
            break parsed;
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err(Failure::Respond(431, "request head too large\n"));
        }
    };
    let (path, query) =
        split_target(&head.target).ok_or(Failure::Respond(400, "bad request target\n"))?;
    buf.drain(..head_len);
    let body = read_body(connection, &head, buf)?;
    Ok(Request {
        method: head.method,
        path: path.to_owned(),
        query: query.to_owned(),
        headers: head.headers,
        body,
        peer,
    })
}

/// The head, once `buf` holds all of it, with its length.
fn parse_head(buf: &[u8]) -> Result<Option<(Head, usize)>, Failure> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let len = match request.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(Failure::Respond(431, "too many headers\n"));
        }
        Err(_) => return Err(Failure::Respond(400, "malformed request\n")),
    };
    if len > MAX_HEAD_BYTES {
        return Err(Failure::Respond(431, "request head too large\n"));
    }
    let (Some(method), Some(target), Some(version)) =
        (request.method, request.path, request.version)
    else {
        return Err(Failure::Respond(400, "malformed request\n"));
    };
    let head = Head {
        method: method.to_owned(),
        target: target.to_owned(),
        http_1_1: version == 1,
        headers: request
            .headers
            .iter()
            .map(|h| {
                (
                    h.name.to_owned(),
                    String::from_utf8_lossy(h.value).into_owned(),
                )
            })
            .collect(),
    };
    Ok(Some((head, len)))
}

/// Path and query of an origin-form (`/a?b`) or absolute-form (`http://host/a?b`) target.
fn split_target(target: &str) -> Option<(&str, &str)> {
    let origin = if target.starts_with('/') {
        target
    } else {
        let scheme_end = target.find("://")?;
        let scheme = &target[..scheme_end];
        if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
            return None;
        }
        let rest = &target[scheme_end + 3..];
        match rest.find(['/', '?']) {
            Some(i) if rest[i..].starts_with('/') => &rest[i..],
            // `http://host` or `http://host?q`: the path is `/`.
            Some(i) => return Some(("/", &rest[i + 1..])),
            None => return Some(("/", "")),
        }
    };
    Some(origin.split_once('?').unwrap_or((origin, "")))
}

/// The body as the headers frame it; `buf` holds what already arrived after the head.
fn read_body(
    connection: &mut Connection<'_>,
    head: &Head,
    buf: Vec<u8>,
) -> Result<Vec<u8>, Failure> {
    let encodings: Vec<&str> = head.values("transfer-encoding").collect();
    let lengths: Vec<&str> = head
        .values("content-length")
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .collect();
    if !encodings.is_empty() {
        // Both framings at once is how requests are smuggled past proxies; HTTP/1.0 has no
        // transfer codings.
        if !lengths.is_empty() || !head.http_1_1 {
            return Err(Failure::Respond(400, "ambiguous request framing\n"));
        }
        let only_chunked =
            encodings.len() == 1 && encodings[0].trim().eq_ignore_ascii_case("chunked");
        if !only_chunked {
            return Err(Failure::Respond(501, "transfer coding not supported\n"));
        }
        continue_if_expected(connection, head, buf.is_empty())?;
        return read_chunked(connection, buf);
    }
    let Some(&first) = lengths.first() else {
        return Ok(Vec::new());
    };
    if lengths.iter().any(|length| *length != first)
        || first.is_empty()
        || !first.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(Failure::Respond(400, "bad Content-Length\n"));
    }
    // Digits only: a failure to parse is an overflow, a length far beyond the limit.
    let length = first.parse::<usize>().unwrap_or(usize::MAX);
    if length > MAX_BODY_BYTES {
        return Err(Failure::Respond(413, "request body too large\n"));
    }
    let mut body = buf;
    continue_if_expected(connection, head, body.len() < length)?;
    while body.len() < length {
        connection.fill(&mut body)?;
    }
    // Anything after the body would be a second request, which this server does not serve.
    body.truncate(length);
    Ok(body)
}

/// Sends `100 Continue` when the client waits for it before sending a body still `missing`.
fn continue_if_expected(
    connection: &mut Connection<'_>,
    head: &Head,
    missing: bool,
) -> Result<(), Failure> {
    let expects = head
        .values("expect")
        .any(|value| value.trim().eq_ignore_ascii_case("100-continue"));
    if expects && head.http_1_1 && missing {
        connection
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .map_err(|_| Failure::Close)?;
    }
    Ok(())
}

/// A chunked body: chunks of `size CRLF data CRLF`, a last chunk of size 0, trailer lines
/// (ignored) and an empty line.
fn read_chunked(connection: &mut Connection<'_>, mut buf: Vec<u8>) -> Result<Vec<u8>, Failure> {
    const MAX_SIZE_LINE: usize = 4096;
    let mut body = Vec::new();
    loop {
        let (line_len, size) = loop {
            match httparse::parse_chunk_size(&buf) {
                Ok(httparse::Status::Complete(parsed)) => break parsed,
                Ok(httparse::Status::Partial) if buf.len() <= MAX_SIZE_LINE => {
                    connection.fill(&mut buf)?;
                }
                _ => return Err(Failure::Respond(400, "bad chunk size\n")),
            }
        };
        let size = usize::try_from(size)
            .ok()
            .filter(|size| {
                body.len()
                    .checked_add(*size)
                    .is_some_and(|total| total <= MAX_BODY_BYTES)
            })
            .ok_or(Failure::Respond(413, "request body too large\n"))?;
        buf.drain(..line_len);
        if size == 0 {
            break;
        }
        while buf.len() < size + 2 {
            connection.fill(&mut buf)?;
        }
        if &buf[size..size + 2] != b"\r\n" {
            return Err(Failure::Respond(400, "bad chunk\n"));
        }
        body.extend_from_slice(&buf[..size]);
        buf.drain(..size + 2);
    }
    // Trailer lines until an empty one.
    let mut trailer_bytes = 0;
    loop {
        while !buf.contains(&b'\n') {
            if trailer_bytes + buf.len() > MAX_HEAD_BYTES {
                return Err(Failure::Respond(431, "trailer too large\n"));
            }
            connection.fill(&mut buf)?;
        }
        let end = buf.iter().position(|&b| b == b'\n').unwrap_or(0) + 1;
        let empty = matches!(&buf[..end], b"\n" | b"\r\n");
        trailer_bytes += end;
        buf.drain(..end);
        if empty {
            return Ok(body);
        }
        if trailer_bytes > MAX_HEAD_BYTES {
            return Err(Failure::Respond(431, "trailer too large\n"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// Runs `test` on a thread and fails if it takes more than 10 s.
    fn watchdog(test: impl FnOnce() + Send + 'static) {
        let (done, finished) = mpsc::channel();
        let thread = thread::spawn(move || {
            test();
            let _ = done.send(());
        });
        match finished.recv_timeout(Duration::from_secs(10)) {
            Ok(()) => thread.join().unwrap(),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                if let Err(panic) = thread.join() {
                    std::panic::resume_unwind(panic);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("test did not finish within 10 s"),
        }
    }

    /// Answers with what it received: method, path, query, the `X-Test` header and the body.
    fn echo() -> Handler {
        Arc::new(|request: &Request| {
            if request.path == "/panic" {
                panic!("handler panics on purpose");
            }
            if request.path == "/sleep" {
                thread::sleep(Duration::from_secs(3));
            }
            Response::json(
                200,
                &serde_json::json!({
                    "method": request.method,
                    "path": request.path,
                    "query": request.query,
                    "x_test": request.header("x-TEST"),
                    "body": String::from_utf8_lossy(&request.body),
                }),
            )
            .with_header("X-Served-By", "test")
        })
    }

    fn server(limits: Limits) -> Server {
        Server::start_with("127.0.0.1", 0, "http-test", echo(), limits).unwrap()
    }

    /// Sends `request` and reads the response to its end: status, head, body.
    fn exchange(address: SocketAddr, request: &[u8]) -> (u16, String, Vec<u8>) {
        let mut stream = TcpStream::connect(address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(8)))
            .unwrap();
        stream.write_all(request).unwrap();
        read_response(&mut stream)
    }

    fn read_response(stream: &mut TcpStream) -> (u16, String, Vec<u8>) {
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes).unwrap();
        let split = bytes
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a complete head");
        let head = String::from_utf8(bytes[..split].to_vec()).unwrap();
        let status = head[9..12].parse().unwrap();
        (status, head, bytes[split + 4..].to_vec())
    }

    fn json(body: &[u8]) -> serde_json::Value {
        serde_json::from_slice(body).unwrap()
    }

    #[test]
    fn get() {
        watchdog(|| {
            let server = server(Limits::DEFAULT);
            let (status, head, body) = exchange(
                server.local_addr(),
                b"GET /a/b%20c?x=1&y=2 HTTP/1.1\r\nHost: h\r\nX-Test: yes\r\n\r\n",
            );
            assert_eq!(status, 200);
            assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
            assert!(head.contains("\r\nConnection: close"), "{head}");
            assert!(
                head.contains("\r\nContent-Type: application/json"),
                "{head}"
            );
            assert!(head.contains("\r\nX-Served-By: test"), "{head}");
            assert!(
                head.contains(&format!("\r\nContent-Length: {}", body.len())),
                "{head}"
            );
            let value = json(&body);
            assert_eq!(value["method"], "GET");
            assert_eq!(value["path"], "/a/b%20c");
            assert_eq!(value["query"], "x=1&y=2");
            assert_eq!(value["x_test"], "yes");
            server.stop();
        });
    }

    #[test]
    fn http_1_0_and_absolute_form() {
        watchdog(|| {
            let server = server(Limits::DEFAULT);
            let (status, _, body) = exchange(
                server.local_addr(),
                b"GET http://example.com/p?q HTTP/1.0\r\n\r\n",
            );
            assert_eq!(status, 200);
            assert_eq!(json(&body)["path"], "/p");
            assert_eq!(json(&body)["query"], "q");
        });
    }

    #[test]
    fn post_json() {
        watchdog(|| {
            let server = server(Limits::DEFAULT);
            let payload = br#"{"threshold": 0.5}"#;
            let mut request = format!(
                "POST /elements/infer0 HTTP/1.1\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\n\r\n",
                payload.len()
            )
            .into_bytes();
            request.extend_from_slice(payload);
            let (status, _, body) = exchange(server.local_addr(), &request);
            assert_eq!(status, 200);
            let value = json(&body);
            assert_eq!(value["method"], "POST");
            assert_eq!(value["body"], r#"{"threshold": 0.5}"#);
        });
    }

    #[test]
    fn chunked_body_and_expect_continue() {
        watchdog(|| {
            let server = server(Limits::DEFAULT);
            let (status, _, body) = exchange(
                server.local_addr(),
                b"PUT /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
                  5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nTrailer: t\r\n\r\n",
            );
            assert_eq!(status, 200);
            assert_eq!(json(&body)["body"], "hello, world");

            let mut stream = TcpStream::connect(server.local_addr()).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(8)))
                .unwrap();
            stream
                .write_all(b"POST /y HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
                .unwrap();
            let mut interim = [0; 25];
            stream.read_exact(&mut interim).unwrap();
            assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
            stream.write_all(b"ok").unwrap();
            let (status, _, body) = read_response(&mut stream);
            assert_eq!(status, 200);
            assert_eq!(json(&body)["body"], "ok");
        });
    }

    #[test]
    fn oversized_requests() {
        watchdog(|| {
            let server = server(Limits::DEFAULT);
            let address = server.local_addr();
            let (status, head, _) = exchange(
                address,
                b"POST / HTTP/1.1\r\nContent-Length: 1048577\r\n\r\nabc",
            );
            assert_eq!(status, 413);
            assert!(
                head.starts_with("HTTP/1.1 413 Content Too Large\r\n"),
                "{head}"
            );
            let (status, _, _) = exchange(
                address,
                b"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
            );
            assert_eq!(status, 413);
            let (status, _, _) = exchange(
                address,
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n100001\r\n",
            );
            assert_eq!(status, 413);
            let mut request = b"GET / HTTP/1.1\r\nX-Big: ".to_vec();
            request.resize(request.len() + MAX_HEAD_BYTES, b'a');
            request.extend_from_slice(b"\r\n\r\n");
            let (status, _, _) = exchange(address, &request);
            assert_eq!(status, 431);
        });
    }

    #[test]
    fn malformed_requests() {
        watchdog(|| {
            let server = server(Limits::DEFAULT);
            let address = server.local_addr();
            for request in [
                &b"GARBAGE\r\n\r\n"[..],
                b"GET / HTTP/1.1\r\nBad Header\r\n\r\n",
                b"GET nowhere HTTP/1.1\r\n\r\n",
                b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
                b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                b"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            ] {
                let (status, head, _) = exchange(address, request);
                assert_eq!(status, 400, "{}", String::from_utf8_lossy(request));
                assert!(head.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{head}");
            }
            let (status, _, _) = exchange(
                address,
                b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            );
            assert_eq!(status, 501);
            // A request cut short is malformed too.
            let mut stream = TcpStream::connect(address).unwrap();
            stream.write_all(b"GET / HTTP/1.1\r\n").unwrap();
            stream.shutdown(Shutdown::Write).unwrap();
            assert_eq!(read_response(&mut stream).0, 400);
        });
    }

    #[test]
    fn slow_client_times_out() {
        watchdog(|| {
            let limits = Limits {
                io_timeout: Duration::from_millis(300),
                ..Limits::DEFAULT
            };
            let server = server(limits);
            let started = Instant::now();
            let mut stream = TcpStream::connect(server.local_addr()).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(8)))
                .unwrap();
            stream
                .write_all(b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nab")
                .unwrap();
            let (status, _, _) = read_response(&mut stream);
            assert_eq!(status, 408);
            assert!(started.elapsed() < Duration::from_secs(3));
            // A client that sends nothing is closed without a response.
            let mut stream = TcpStream::connect(server.local_addr()).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(8)))
                .unwrap();
            let mut bytes = Vec::new();
            let _ = stream.read_to_end(&mut bytes);
            assert!(bytes.is_empty());
        });
    }

    #[test]
    fn handler_panic_is_500_and_serving_goes_on() {
        watchdog(|| {
            let server = server(Limits::DEFAULT);
            let (status, head, _) = exchange(server.local_addr(), b"GET /panic HTTP/1.1\r\n\r\n");
            assert_eq!(status, 500);
            assert!(
                head.starts_with("HTTP/1.1 500 Internal Server Error\r\n"),
                "{head}"
            );
            let (status, _, _) = exchange(server.local_addr(), b"GET /ok HTTP/1.1\r\n\r\n");
            assert_eq!(status, 200);
            // Both connections give their slots back, the one whose handler panicked too
            // (the watchdog fails the test if one never does).
            while *server.shared.active() > 0 {
                thread::sleep(Duration::from_millis(5));
            }
        });
    }

    #[test]
    fn connections_over_the_limit_get_503() {
        watchdog(|| {
            let server = server(Limits {
                max_connections: 2,
                ..Limits::DEFAULT
            });
            let address = server.local_addr();
            let held: Vec<TcpStream> = (0..2)
                .map(|_| TcpStream::connect(address).unwrap())
                .collect();
            while *server.shared.active() < 2 {
                thread::sleep(Duration::from_millis(5));
            }
            // Sending nothing: a request arriving after the refusal closed the socket would
            // be answered by a reset, which may discard the 503 before it is read.
            let mut refused = TcpStream::connect(address).unwrap();
            refused
                .set_read_timeout(Some(Duration::from_secs(8)))
                .unwrap();
            let (status, head, _) = read_response(&mut refused);
            assert_eq!(status, 503);
            assert!(
                head.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
                "{head}"
            );
            drop(held);
            while *server.shared.active() > 0 {
                thread::sleep(Duration::from_millis(5));
            }
            assert_eq!(exchange(address, b"GET / HTTP/1.1\r\n\r\n").0, 200);
        });
    }

    #[test]
    fn stop_returns_while_clients_hold_connections() {
        watchdog(|| {
            let server = server(Limits {
                stop_wait: Duration::from_millis(500),
                ..Limits::DEFAULT
            });
            let address = server.local_addr();
            let mut idle = TcpStream::connect(address).unwrap();
            idle.write_all(b"GET / HTTP/1.1\r\n").unwrap();
            let mut busy = TcpStream::connect(address).unwrap();
            busy.write_all(b"GET /sleep HTTP/1.1\r\n\r\n").unwrap();
            while *server.shared.active() < 2 {
                thread::sleep(Duration::from_millis(5));
            }
            let started = Instant::now();
            server.stop();
            let took = started.elapsed();
            assert!(took < Duration::from_millis(1500), "stop took {took:?}");
            // The idle connection was closed, and the listener is gone.
            idle.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let mut bytes = Vec::new();
            let _ = idle.read_to_end(&mut bytes);
            assert!(bytes.is_empty());
            assert!(TcpStream::connect(address).is_err());
            drop(busy);
        });
    }

    #[test]
    fn responses_frame_themselves() {
        let response = Response::text(204, "ignored")
            .with_header("Content-Length", "99")
            .with_header("X-Evil", "a\r\nInjected: 1")
            .with_header("X-Fine", "1");
        let head = String::from_utf8(response.head()).unwrap();
        assert_eq!(
            head,
            "HTTP/1.1 204 No Content\r\nConnection: close\r\nX-Fine: 1\r\n\r\n"
        );
        assert!(response.sent_body().is_empty());
        let head = String::from_utf8(Response::text(299, "x").head()).unwrap();
        assert!(head.starts_with("HTTP/1.1 299 \r\n"), "{head}");
        let head = String::from_utf8(Response::text(42, "x").head()).unwrap();
        assert!(
            head.starts_with("HTTP/1.1 500 Internal Server Error\r\n"),
            "{head}"
        );
    }
}
