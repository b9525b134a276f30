// SPDX-License-Identifier: MIT OR Apache-2.0
//! Engines that run on an inference server: a batch is sent without waiting, and its answer
//! is collected later ([`RemoteCall`]), so several batches can be on their way at once. The
//! server's health is shared by every call ([`Health`]): an outage starts at the first call
//! that could not reach it and ends at the next answer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{EngineError, InputData, OutputTensor};

/// How a remote call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RemoteError {
    /// The server could not be reached or did not answer in time: it may come back.
    #[error("{0}")]
    Unavailable(String),
    /// The server has not answered for the configured give-up time.
    #[error("the inference server has not answered for {seconds} s (last error: {reason})")]
    GaveUp { seconds: u64, reason: String },
    /// The server answered with an error, or with outputs that do not fit the model: retrying
    /// would not help.
    #[error("{0}")]
    Failed(String),
    /// The element flushed or stopped while the call waited.
    #[error("stopped waiting for the inference server (flushing or stopping)")]
    Interrupted,
}

impl From<RemoteError> for EngineError {
    fn from(e: RemoteError) -> Self {
        EngineError::Run(e.to_string())
    }
}

/// What the server did lately, shared by the engine and its calls.
#[derive(Debug, Default)]
pub struct Health {
    outage: Mutex<Option<Outage>>,
    /// The last outage an answer ended, until [`Health::take_ended`] collects it.
    ended: Mutex<Option<Outage>>,
    /// The element is flushing or stopping: waits end ([`RemoteCall::wait`]).
    interrupted: AtomicBool,
}

/// A time without answers: when it began, the last reason, and the calls that failed in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Outage {
    pub since: Instant,
    pub reason: String,
    pub failures: u64,
}

impl Health {
    /// A call could not reach the server.
    pub fn failed(&self, reason: &str) {
        let mut outage = self.outage.lock().unwrap();
        let outage = outage.get_or_insert_with(|| Outage {
            since: Instant::now(),
            reason: String::new(),
            failures: 0,
        });
        outage.reason = reason.to_string();
        outage.failures += 1;
    }

    /// The server answered: ends the outage going on, if any.
    pub fn answered(&self) {
        if let Some(outage) = self.outage.lock().unwrap().take() {
            *self.ended.lock().unwrap() = Some(outage);
        }
    }

    /// The outage an answer ended since the last call, if any (to report the recovery once).
    pub fn take_ended(&self) -> Option<Outage> {
        self.ended.lock().unwrap().take()
    }

    /// The outage going on, if any.
    pub fn outage(&self) -> Option<Outage> {
        self.outage.lock().unwrap().clone()
    }

    /// Ends every wait for an answer (`true`, while flushing or stopping), or allows them again.
    pub fn interrupt(&self, interrupted: bool) {
        self.interrupted.store(interrupted, Ordering::SeqCst);
    }

    pub fn is_interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }
}

/// The answer to one batch: the outputs, in the order of the engine's description.
pub type RemoteResult = Result<Vec<OutputTensor>, RemoteError>;

/// One batch on its way to the server. Dropping it abandons the call.
pub struct RemoteCall {
    answer: mpsc::Receiver<RemoteResult>,
    /// Ends the call's task when the call is dropped unanswered (a flush, a stop).
    abort: Option<Box<dyn FnOnce() + Send>>,
    health: Arc<Health>,
}

/// Whether a call has been answered.
pub enum Poll {
    Ready(RemoteResult),
    Pending,
}

impl RemoteCall {
    /// A call answered through `answer` by a task that `abort` ends.
    pub fn new(
        answer: mpsc::Receiver<RemoteResult>,
        abort: impl FnOnce() + Send + 'static,
        health: Arc<Health>,
    ) -> Self {
        Self {
            answer,
            abort: Some(Box::new(abort)),
            health,
        }
    }

    /// Waits up to `timeout` for the answer.
    pub fn wait_for(&self, timeout: Duration) -> Poll {
        match self.answer.recv_timeout(timeout) {
            Ok(result) => Poll::Ready(result),
            Err(mpsc::RecvTimeoutError::Timeout) => Poll::Pending,
            Err(mpsc::RecvTimeoutError::Disconnected) => Poll::Ready(Err(RemoteError::Failed(
                "the inference client stopped before the server answered".into(),
            ))),
        }
    }

    /// Waits for the answer, however long the call's own deadlines allow, until the engine's
    /// health is interrupted ([`Health::interrupt`]; checked every 100 ms).
    pub fn wait(&self) -> RemoteResult {
        loop {
            if let Poll::Ready(result) = self.wait_for(Duration::from_millis(100)) {
                return result;
            }
            if self.health.is_interrupted() {
                return Err(RemoteError::Interrupted);
            }
        }
    }

    /// The server's health as this call's engine sees it.
    pub fn health(&self) -> &Arc<Health> {
        &self.health
    }
}

impl Drop for RemoteCall {
    fn drop(&mut self) {
        if let Some(abort) = self.abort.take() {
            abort();
        }
    }
}

/// The remote side of an engine (see [`super::Engine::remote`]): batches answered later, by an
/// inference server or by a local runtime with several requests running at once (OpenVINO).
pub trait RemoteEngine: Send {
    /// Sends a batch: `input` (copied) of `shape`, batch first. Returns at once; the answer
    /// comes through the call.
    fn submit(&mut self, input: InputData<'_>, shape: &[usize]) -> Result<RemoteCall, EngineError>;

    /// The server's health.
    fn health(&self) -> &Arc<Health>;

    /// Where the server is (or the local device), for messages.
    fn server(&self) -> &str;

    /// Whether an inference server answers (with outages, and the element's server-failure
    /// policy), rather than a local runtime.
    fn is_server(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_lasts_from_the_first_failure_to_the_next_answer() {
        let h = Health::default();
        h.answered();
        assert!(h.take_ended().is_none());
        h.failed("connection refused");
        let first = h.outage().unwrap();
        h.failed("deadline exceeded");
        let o = h.outage().unwrap();
        assert_eq!(o.since, first.since);
        assert_eq!((o.failures, o.reason.as_str()), (2, "deadline exceeded"));
        h.answered();
        assert!(h.outage().is_none());
        assert_eq!(h.take_ended().unwrap().failures, 2);
        assert!(h.take_ended().is_none(), "reported once");
    }

    #[test]
    fn a_call_whose_task_is_gone_fails_instead_of_waiting() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let task = rt.spawn(async {});
        let abort = task.abort_handle();
        let call = RemoteCall::new(rx, move || abort.abort(), Arc::default());
        assert!(matches!(call.wait_for(Duration::ZERO), Poll::Pending));
        drop(tx);
        assert!(matches!(call.wait(), Err(RemoteError::Failed(_))));
    }

    #[test]
    fn an_interrupted_wait_returns_at_once_however_long_the_server_takes() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (_tx, rx) = mpsc::channel();
        let task = rt.spawn(async {});
        let health = Arc::new(Health::default());
        let abort = task.abort_handle();
        let call = RemoteCall::new(rx, move || abort.abort(), health.clone());
        let interrupter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            health.interrupt(true);
        });
        let started = Instant::now();
        assert_eq!(call.wait(), Err(RemoteError::Interrupted));
        assert!(started.elapsed() < Duration::from_secs(5));
        interrupter.join().unwrap();
    }
}
