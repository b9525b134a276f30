// SPDX-License-Identifier: MIT OR Apache-2.0
//! The producer's side of the connections: consumers attach at any time, get the caps, each new
//! allocation's descriptor once, and buffers; a buffer's memory is held until every consumer it
//! went to has released it or gone. A consumer with `max_buffers` unreleased buffers is skipped
//! (`leaky`) or waited for, up to `block_timeout`, after which it is disconnected as stuck.
//!
//! A consumer disconnected while its process lives (stuck, or sending garbage) may still read the
//! buffers it holds: it is told the connection ended (its end reads the end of the stream) and
//! kept as a *retired* consumer, whose buffers stay held until it releases them or its socket
//! closes, so that their memory is never reused under it.

use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::socket::{Connection, Listener, Message};
use crate::wire::{self, Memory, ToConsumer, ToProducer};

/// How long one send may wait for room in a consumer's socket before the consumer is dropped.
const SEND_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest message a consumer sends.
const MAX_CONSUMER_MESSAGE: usize = 4096;
/// Releases read from one consumer per service round, so a flood cannot stall the producer.
const MAX_MESSAGES_PER_ROUND: usize = 4096;

#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub max_buffers: usize,
    pub leaky: bool,
    pub block_timeout: Duration,
    pub max_consumers: usize,
}

/// Where a consumer gets an allocation's descriptor from.
pub enum FdSource {
    /// Memory the producer owns (a slot): its descriptor, duplicated by the kernel on send.
    Held(Arc<dyn AsFd + Send + Sync>),
    /// A shared CUDA allocation someone upstream made: exported when a consumer first needs it.
    Exported { base: u64, serial: u64 },
}

/// An allocation a buffer uses.
pub struct Allocation {
    pub id: u64,
    pub size: u64,
    pub memory: Memory,
    pub fd: FdSource,
    /// The IPC event marking the memory ready (see [`ToConsumer::Allocation`]).
    pub event: Option<String>,
}

/// A buffer ready to go: its description, the allocations it uses and what keeps its memory
/// alive until released.
pub struct Outgoing {
    pub message: wire::Buffer,
    pub allocations: Vec<Allocation>,
    pub keep: Arc<dyn Send + Sync>,
}

/// Something the element should tell the application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    Attached(u64),
    /// A consumer went away (closed, or dropped for a reason).
    Detached {
        consumer: u64,
        reason: String,
        warn: bool,
    },
}

/// What is known of a consumer, attached or retired.
struct Consumer {
    id: u64,
    conn: Connection,
    /// The caps it was last sent.
    caps: Option<String>,
    /// Allocations it has mapped, least recently used first.
    known: VecDeque<u64>,
    /// Unreleased buffers and what keeps their memory alive.
    in_flight: HashMap<u64, Arc<dyn Send + Sync>>,
    /// Buffers skipped because it was behind.
    skipped: u64,
}

/// Why reading from a consumer stopped: it closed (no news), or it misbehaved (a warning).
type Misbehaviour = (String, bool);

pub struct Producer {
    listener: Listener,
    settings: Settings,
    consumers: Vec<Consumer>,
    /// Consumers disconnected while alive, holding buffers (see the module documentation).
    retired: Vec<Consumer>,
    next_consumer: u64,
    next_seq: u64,
    caps: Option<String>,
    /// The stream ended (consumers attaching now get the end of stream at once).
    eos: bool,
    uid: u32,
    notices: Vec<Notice>,
}

/// Why a send stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum SendError {
    Flushing,
    /// The buffer's description is this many bytes, more than [`wire::MAX_MESSAGE`]: it went to
    /// no consumer.
    TooLong(usize),
}

fn closed(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::UnexpectedEof
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::BrokenPipe
    )
}

impl Producer {
    pub fn new(listener: Listener, settings: Settings) -> Self {
        Self {
            listener,
            settings,
            consumers: Vec::new(),
            retired: Vec::new(),
            next_consumer: 1,
            next_seq: 1,
            caps: None,
            eos: false,
            // SAFETY: getuid cannot fail.
            uid: unsafe { libc::getuid() },
            notices: Vec::new(),
        }
    }

    pub fn consumer_count(&self) -> usize {
        self.consumers.len()
    }

    /// What happened since the last call.
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    pub fn set_caps(&mut self, caps: String) {
        self.caps = Some(caps);
    }

    /// Accepts new consumers, reads what the connected ones sent, and lets retired ones go once
    /// they hold nothing.
    pub fn service(&mut self) {
        self.accept_new();
        let mut i = 0;
        while i < self.consumers.len() {
            match Self::read_messages(&mut self.consumers[i], self.next_seq) {
                Ok(()) => i += 1,
                Err((reason, warn)) => self.detach(i, reason, warn),
            }
        }
        let next_seq = self.next_seq;
        self.retired
            .retain_mut(|c| Self::read_messages(c, next_seq).is_ok() && !c.in_flight.is_empty());
    }

    fn accept_new(&mut self) {
        while let Ok(Some(conn)) = self.listener.accept() {
            self.attach(conn);
        }
    }

    fn attach(&mut self, conn: Connection) {
        let id = self.next_consumer;
        self.next_consumer += 1;
        let refuse = |notices: &mut Vec<Notice>, reason: String| {
            notices.push(Notice::Detached {
                consumer: id,
                reason,
                warn: true,
            })
        };
        // Owner-only permissions keep others out; the peer's user is checked as well (root can
        // connect anyway, and a socket file can be chmod-ed).
        match conn.peer_uid() {
            Ok(uid) if uid == self.uid || self.uid == 0 => {}
            Ok(uid) => {
                return refuse(
                    &mut self.notices,
                    format!("refused a consumer of user {uid}"),
                );
            }
            Err(e) => {
                return refuse(
                    &mut self.notices,
                    format!("cannot identify a consumer: {e}"),
                );
            }
        }
        if self.consumers.len() >= self.settings.max_consumers {
            let reason = format!(
                "refused: {} consumers are attached (max-consumers)",
                self.consumers.len()
            );
            return refuse(&mut self.notices, reason);
        }
        let hello = ToConsumer::Hello {
            version: wire::VERSION,
        };
        if conn.send(&hello.encode(), &[], SEND_TIMEOUT).is_err() {
            return;
        }
        if self.eos {
            // Nothing more will come.
            let _ = conn.send(&ToConsumer::Eos.encode(), &[], SEND_TIMEOUT);
            return;
        }
        self.consumers.push(Consumer {
            id,
            conn,
            caps: None,
            known: VecDeque::new(),
            in_flight: HashMap::new(),
            skipped: 0,
        });
        self.notices.push(Notice::Attached(id));
    }

    fn read_messages(c: &mut Consumer, next_seq: u64) -> Result<(), Misbehaviour> {
        for _ in 0..MAX_MESSAGES_PER_ROUND {
            let received = match c.conn.receive(MAX_CONSUMER_MESSAGE, None) {
                Ok(Some(r)) => r,
                Ok(None) => return Ok(()),
                Err(e) if closed(&e) => return Err(("closed the connection".into(), false)),
                Err(e) => return Err((format!("sent an unreadable message: {e}"), true)),
            };
            if !received.fds.is_empty() {
                return Err(("sent descriptors, which consumers never send".into(), true));
            }
            match ToProducer::decode(&received.bytes) {
                Ok(ToProducer::Release { seq }) => {
                    // A buffer given up on may still come back; one never sent may not.
                    if c.in_flight.remove(&seq).is_none() && seq >= next_seq {
                        return Err((format!("released buffer {seq}, which was never sent"), true));
                    }
                }
                Ok(ToProducer::Hello { version }) if version == wire::VERSION => {}
                Ok(ToProducer::Hello { version }) => {
                    return Err((
                        format!(
                            "speaks protocol version {version}, this producer {}",
                            wire::VERSION
                        ),
                        true,
                    ));
                }
                Err(e) => return Err((format!("sent garbage ({e})"), true)),
            }
        }
        Ok(())
    }

    /// Disconnects consumer `index`. One that closed takes its buffers along; one still alive
    /// (`warn`: stuck or misbehaving) is told the connection ended and retired.
    fn detach(&mut self, index: usize, reason: String, warn: bool) {
        let c = self.consumers.remove(index);
        self.notices.push(Notice::Detached {
            consumer: c.id,
            reason: if c.skipped > 0 {
                format!(
                    "{reason} ({} buffers skipped while it was behind)",
                    c.skipped
                )
            } else {
                reason
            },
            warn,
        });
        if warn && !c.in_flight.is_empty() {
            c.conn.shutdown_write();
            self.retired.push(c);
            // Bounded: past that many, the oldest retired consumer's buffers are let go.
            if self.retired.len() > self.settings.max_consumers {
                self.retired.remove(0);
            }
        }
    }

    /// Sends `buffer` to every consumer (waiting for room or skipping, as set); returns how many
    /// got it. Stops waiting when `flushing` is set. A buffer whose description is longer than
    /// a message may be goes to none (`TooLong`), and the consumers stay.
    pub fn send(&mut self, buffer: Outgoing, flushing: &AtomicBool) -> Result<usize, SendError> {
        self.service();
        self.eos = false;
        let Outgoing {
            mut message,
            allocations,
            keep,
        } = buffer;
        let seq = self.next_seq;
        message.seq = seq;
        let encoded = ToConsumer::Buffer(Box::new(message)).encode();
        if encoded.len() > wire::MAX_MESSAGE {
            return Err(SendError::TooLong(encoded.len()));
        }
        // One memory file for a long message, whatever the number of consumers.
        let body = Message::new(&encoded);
        self.next_seq += 1;
        let mut sent = 0;
        let mut i = 0;
        while i < self.consumers.len() {
            if flushing.load(Ordering::SeqCst) {
                return Err(SendError::Flushing);
            }
            if self.consumers[i].in_flight.len() >= self.settings.max_buffers {
                if self.settings.leaky {
                    self.consumers[i].skipped += 1;
                    i += 1;
                    continue;
                }
                match self.wait_for_room(i, flushing) {
                    Ok(true) => {}
                    Ok(false) => continue, // detached: `i` is the next consumer now
                    Err(e) => return Err(e),
                }
            }
            let c = &mut self.consumers[i];
            match Self::deliver(c, self.caps.as_deref(), &allocations, &body) {
                Ok(()) => {
                    c.in_flight.insert(seq, keep.clone());
                    sent += 1;
                    i += 1;
                }
                Err((reason, warn)) => self.detach(i, reason, warn),
            }
        }
        Ok(sent)
    }

    /// Waits until consumer `i` releases a buffer: `Ok(false)` when it was detached instead.
    /// Consumers attaching meanwhile are accepted.
    fn wait_for_room(&mut self, i: usize, flushing: &AtomicBool) -> Result<bool, SendError> {
        let deadline = Instant::now() + self.settings.block_timeout;
        loop {
            if flushing.load(Ordering::SeqCst) {
                return Err(SendError::Flushing);
            }
            self.accept_new();
            let next_seq = self.next_seq;
            let c = &mut self.consumers[i];
            if let Err((reason, warn)) = Self::read_messages(c, next_seq) {
                self.detach(i, reason, warn);
                return Ok(false);
            }
            let c = &mut self.consumers[i];
            if c.in_flight.len() < self.settings.max_buffers {
                return Ok(true);
            }
            let now = Instant::now();
            if now >= deadline {
                let reason = format!(
                    "held {} buffers for longer than block-timeout ({} ms): disconnected as stuck",
                    c.in_flight.len(),
                    self.settings.block_timeout.as_millis()
                );
                self.detach(i, reason, true);
                return Ok(false);
            }
            let slice = (deadline - now).min(Duration::from_millis(20));
            let _ = crate::socket::wait_for(c.conn.as_fd(), libc::POLLIN, slice);
        }
    }

    fn deliver(
        c: &mut Consumer,
        caps: Option<&str>,
        allocations: &[Allocation],
        body: &Message<'_>,
    ) -> Result<(), Misbehaviour> {
        // A consumer that died is no news; other failures are.
        let failed = |what: &str, e: std::io::Error| {
            if closed(&e) {
                ("closed the connection".to_string(), false)
            } else {
                (format!("{what} could not be sent: {e}"), true)
            }
        };
        if let Some(caps) = caps
            && c.caps.as_deref() != Some(caps)
        {
            let m = ToConsumer::Caps { caps: caps.into() };
            c.conn
                .send(&m.encode(), &[], SEND_TIMEOUT)
                .map_err(|e| failed("the caps", e))?;
            c.caps = Some(caps.into());
        }
        for a in allocations {
            if let Some(at) = c.known.iter().position(|&id| id == a.id) {
                // Most recently used: last to be forgotten.
                c.known.remove(at);
                c.known.push_back(a.id);
                continue;
            }
            if c.known.len() >= wire::MAX_KNOWN
                && let Some(at) = c
                    .known
                    .iter()
                    .position(|id| allocations.iter().all(|a| a.id != *id))
                && let Some(old) = c.known.remove(at)
            {
                let m = ToConsumer::Forget { id: old };
                c.conn
                    .send(&m.encode(), &[], SEND_TIMEOUT)
                    .map_err(|e| failed("a forget", e))?;
            }
            let exported: OwnedFd;
            let fd: BorrowedFd<'_> = match &a.fd {
                FdSource::Held(memory) => memory.as_fd(),
                FdSource::Exported { base, serial } => {
                    exported = export(*base, *serial).map_err(|e| (e, true))?;
                    exported.as_fd()
                }
            };
            let m = ToConsumer::Allocation {
                id: a.id,
                size: a.size,
                memory: a.memory,
                event: a.event.clone(),
            };
            c.conn
                .send(&m.encode(), &[fd], SEND_TIMEOUT)
                .map_err(|e| failed("an allocation", e))?;
            c.known.push_back(a.id);
        }
        c.conn
            .send_message(body, &[], SEND_TIMEOUT)
            .map_err(|e| failed("a buffer", e))
    }

    /// Tells every consumer the stream ended (and those attaching later, at once).
    pub fn send_eos(&mut self) {
        self.eos = true;
        let body = ToConsumer::Eos.encode();
        let mut i = 0;
        while i < self.consumers.len() {
            match self.consumers[i].conn.send(&body, &[], SEND_TIMEOUT) {
                Ok(()) => i += 1,
                Err(e) if closed(&e) => self.detach(i, "closed the connection".into(), false),
                Err(e) => self.detach(i, format!("the end of stream could not be sent: {e}"), true),
            }
        }
    }
}

#[cfg(feature = "cuda")]
fn export(base: u64, serial: u64) -> Result<OwnedFd, String> {
    ferrostream_core::cuda::shared::export(base, serial)
        .map_err(|e| format!("the frame's GPU memory could not be exported: {e}"))
}

#[cfg(not(feature = "cuda"))]
fn export(_base: u64, _serial: u64) -> Result<OwnedFd, String> {
    Err("this build has no CUDA support".into())
}
