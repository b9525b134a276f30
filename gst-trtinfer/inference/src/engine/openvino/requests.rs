// SPDX-License-Identifier: MIT OR Apache-2.0
//! Infer requests of one compiled model, several of them running at once.
//!
//! Each request ([`Slot`]) owns a copy of its input. [`Requests::submit`] starts the next request
//! in turn and returns at once; a worker thread waits for the started requests in the order
//! they were started, reads their outputs and answers each [`RemoteCall`], so answers come in
//! submission order. A request is reused only after its answer was read: a submission that finds
//! its request still running waits for it (the caller's limit on requests in flight normally
//! keeps that from happening). [`Requests::run`] runs the first request synchronously.

use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::ffi::Request;
use super::{element_code, element_type};
use crate::engine::remote::{Health, RemoteCall, RemoteError, RemoteResult};
use crate::engine::{EngineError, InputData, OutputTensor, TensorInfo};

struct SlotState {
    request: Request<'static>,
    /// The input the request reads in place while it runs.
    input: Vec<u8>,
    /// Started and not yet waited for.
    running: bool,
}

struct Slot {
    state: Mutex<SlotState>,
    idle: Condvar,
}

impl Slot {
    /// Locks the slot once its request is not running.
    fn idle(&self) -> std::sync::MutexGuard<'_, SlotState> {
        let mut state = self.state.lock().unwrap();
        while state.running {
            state = self.idle.wait(state).unwrap();
        }
        state
    }
}

/// A started request and where its answer goes.
struct Job {
    slot: usize,
    answer: mpsc::Sender<RemoteResult>,
}

pub(super) struct Requests {
    slots: Arc<Vec<Slot>>,
    outputs: Arc<Vec<TensorInfo>>,
    next: usize,
    jobs: Option<mpsc::Sender<Job>>,
    worker: Option<JoinHandle<()>>,
    /// Never marks an outage: a local runtime has none. [`RemoteCall`] needs one.
    health: Arc<Health>,
}

impl Requests {
    /// Takes the requests (at least one) of a model with `outputs`.
    pub(super) fn new(
        requests: Vec<Request<'static>>,
        outputs: Vec<TensorInfo>,
    ) -> Result<Self, EngineError> {
        assert!(!requests.is_empty(), "at least one infer request");
        let slots: Arc<Vec<Slot>> = Arc::new(
            requests
                .into_iter()
                .map(|request| Slot {
                    state: Mutex::new(SlotState {
                        request,
                        input: Vec::new(),
                        running: false,
                    }),
                    idle: Condvar::new(),
                })
                .collect(),
        );
        let outputs = Arc::new(outputs);
        let (jobs, queue) = mpsc::channel::<Job>();
        let worker = {
            let (slots, outputs) = (slots.clone(), outputs.clone());
            std::thread::Builder::new()
                .name("openvino-wait".into())
                .spawn(move || {
                    for job in queue {
                        let slot = &slots[job.slot];
                        let mut state = slot.state.lock().unwrap();
                        let result = state
                            .request
                            .wait()
                            .and_then(|()| read_outputs(&state.request, &outputs))
                            .map_err(|e| RemoteError::Failed(format!("OpenVINO {e}")));
                        state.running = false;
                        drop(state);
                        slot.idle.notify_all();
                        // The receiver is gone when the call was abandoned (a flush).
                        let _ = job.answer.send(result);
                    }
                })
                .map_err(|e| EngineError::Run(format!("starting OpenVINO's wait thread: {e}")))?
        };
        Ok(Self {
            slots,
            outputs,
            next: 0,
            jobs: Some(jobs),
            worker: Some(worker),
            health: Arc::default(),
        })
    }

    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(super) fn health(&self) -> &Arc<Health> {
        &self.health
    }

    /// Runs `input` of `shape` on the first request and waits; the outputs go to `outputs`.
    pub(super) fn run(
        &mut self,
        input: InputData<'_>,
        shape: &[usize],
        outputs: &mut Vec<OutputTensor>,
    ) -> Result<(), EngineError> {
        let code = input_code(input, shape)?;
        let mut state = self.slots[0].idle();
        let state = &mut *state;
        // SAFETY: `input` outlives the synchronous run below.
        unsafe { state.request.set_input(code, shape, input.as_bytes()) }
            .and_then(|()| state.request.infer())
            .map_err(EngineError::Run)?;
        outputs.resize_with(self.outputs.len(), OutputTensor::default);
        for (index, (out, info)) in outputs.iter_mut().zip(self.outputs.iter()).enumerate() {
            read_output(&state.request, index, info, out).map_err(EngineError::Run)?;
        }
        Ok(())
    }

    /// Starts a run of a copy of `input` on the next request in turn; the answer comes through
    /// the call.
    pub(super) fn submit(
        &mut self,
        input: InputData<'_>,
        shape: &[usize],
    ) -> Result<RemoteCall, EngineError> {
        let code = input_code(input, shape)?;
        let index = self.next;
        self.next = (self.next + 1) % self.slots.len();
        let slot = &self.slots[index];
        let mut state = slot.idle();
        let state = &mut *state;
        state.input.clear();
        state.input.extend_from_slice(input.as_bytes());
        // SAFETY: the slot's input stays unchanged until the worker has waited for this run:
        // the slot is reused only once `running` is false again.
        unsafe { state.request.set_input(code, shape, &state.input) }
            .and_then(|()| state.request.start())
            .map_err(EngineError::Run)?;
        state.running = true;
        let (answer, receiver) = mpsc::channel();
        self.jobs
            .as_ref()
            .expect("the worker lives as long as the requests")
            .send(Job {
                slot: index,
                answer,
            })
            .map_err(|_| EngineError::Run("OpenVINO's wait thread has stopped".into()))?;
        // A run cannot be taken back: an abandoned call's run ends on its own.
        Ok(RemoteCall::new(receiver, || {}, self.health.clone()))
    }
}

impl Drop for Requests {
    fn drop(&mut self) {
        // The worker waits for the runs still going, then ends; the requests are freed after.
        drop(self.jobs.take());
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

/// The element type code of `input`, after checking its size against `shape`.
fn input_code(input: InputData<'_>, shape: &[usize]) -> Result<u32, EngineError> {
    let ty = input.element_type();
    let code = element_code(ty)
        .ok_or_else(|| EngineError::Run(format!("OpenVINO: input element type {ty}")))?;
    let expected = shape.iter().product::<usize>() * ty.size().unwrap_or(0);
    if input.as_bytes().len() != expected {
        return Err(EngineError::Run(format!(
            "OpenVINO: an input of {} bytes for shape {shape:?}",
            input.as_bytes().len()
        )));
    }
    Ok(code)
}

fn read_output(
    request: &Request<'_>,
    index: usize,
    info: &TensorInfo,
    out: &mut OutputTensor,
) -> Result<(), String> {
    if out.name != info.name {
        out.name.clone_from(&info.name);
    }
    request.with_output(index, |o| {
        out.shape = o.shape;
        crate::engine::to_f32(element_type(o.element_type), o.bytes, &mut out.data)
            .map_err(|e| e.to_string())
    })
}

fn read_outputs(request: &Request<'_>, infos: &[TensorInfo]) -> Result<Vec<OutputTensor>, String> {
    infos
        .iter()
        .enumerate()
        .map(|(index, info)| {
            let mut out = OutputTensor::default();
            read_output(request, index, info, &mut out).map(|()| out)
        })
        .collect()
}
