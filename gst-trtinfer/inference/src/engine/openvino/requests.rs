// SPDX-License-Identifier: MIT OR Apache-2.0
//! Infer requests of one compiled model, several of them running at once.
//!
//! Each request ([`Slot`]) owns a copy of its input. [`Requests::submit`] starts the next request
//! in turn and returns at once; a worker thread waits for the started requests in the order
//! they were started, reads their outputs and answers each [`RemoteCall`], so answers come in
//! submission order. A request is reused only after its answer was read: a submission that finds
//! its request still running waits for it (the caller's limit on requests in flight normally
//! keeps that from happening). [`Requests::run`] runs the first request and waits for it.
//!
//! Every run starts through the engine's [`Stop`], which cancels the runs going on from another
//! thread and keeps new ones from starting until it is released: a stop does not wait for a run
//! to its end. OpenVINO looks for a cancel between nodes, not within a `Loop` node: loops are
//! capped when the model is read ([`crate::onnx::loops`]).

use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::ffi::{Canceler, Request};
use super::{element_code, element_type};
use crate::engine::remote::{Health, RemoteCall, RemoteError, RemoteResult};
use crate::engine::{EngineError, InputData, Interrupt, OutputTensor, TensorInfo};

/// Ends an engine's runs from another thread: cancels those going on and refuses to start new
/// ones while interrupted. Starting a run and interrupting take the same lock, so a run is
/// either refused or started before the cancel reaches it.
#[derive(Default)]
pub(super) struct Stop {
    state: Mutex<StopState>,
}

#[derive(Default)]
struct StopState {
    interrupted: bool,
    /// The requests of the engine's current [`Requests`], and which ones they are.
    cancelers: Vec<Canceler<'static>>,
    generation: u64,
}

impl Stop {
    /// Starts `request`'s run, unless runs are interrupted.
    fn start(&self, request: &mut Request<'static>) -> Result<(), String> {
        let state = self.state.lock().unwrap();
        if state.interrupted {
            return Err("inference interrupted (the element is stopping or flushing)".into());
        }
        request.start()
    }

    /// Makes `cancelers` the requests to cancel; returns their generation for
    /// [`Stop::unregister`].
    fn register(&self, cancelers: Vec<Canceler<'static>>) -> u64 {
        let mut state = self.state.lock().unwrap();
        state.generation += 1;
        state.cancelers = cancelers;
        state.generation
    }

    /// Forgets the requests of `generation`, if they are still the ones registered: once this
    /// returns, they are not cancelled any more and may be freed.
    fn unregister(&self, generation: u64) {
        let mut state = self.state.lock().unwrap();
        if state.generation == generation {
            state.cancelers.clear();
        }
    }
}

impl Interrupt for Stop {
    fn interrupt(&self, interrupted: bool) {
        let mut state = self.state.lock().unwrap();
        state.interrupted = interrupted;
        if interrupted {
            for canceler in &state.cancelers {
                // SAFETY: registered requests are alive: `Requests` unregisters them (under this
                // lock) before they are freed.
                unsafe { canceler.cancel() };
            }
        }
    }
}

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
    stop: Arc<Stop>,
    /// The requests' cancelers and their generation in `stop`.
    cancelers: Vec<Canceler<'static>>,
    generation: u64,
}

impl Requests {
    /// Takes the requests (at least one) of a model with `outputs`, whose runs `stop` ends from
    /// now on.
    pub(super) fn new(
        requests: Vec<Request<'static>>,
        outputs: Vec<TensorInfo>,
        stop: Arc<Stop>,
    ) -> Result<Self, EngineError> {
        assert!(!requests.is_empty(), "at least one infer request");
        let cancelers: Vec<_> = requests.iter().map(Request::canceler).collect();
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
        let generation = stop.register(cancelers.clone());
        Ok(Self {
            slots,
            outputs,
            next: 0,
            jobs: Some(jobs),
            worker: Some(worker),
            health: Arc::default(),
            stop,
            cancelers,
            generation,
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
        // SAFETY: `input` outlives the run, which is waited for below.
        unsafe { state.request.set_input(code, shape, input.as_bytes()) }
            .and_then(|()| self.stop.start(&mut state.request))
            .and_then(|()| state.request.wait())
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
            .and_then(|()| self.stop.start(&mut state.request))
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
        // Runs still going are abandoned: cancelled (one may never end), the worker waits for
        // them and ends, and the requests are freed after, no longer known to `stop`.
        self.stop.unregister(self.generation);
        for canceler in &self.cancelers {
            // SAFETY: the requests are freed only after this function (with `slots`).
            unsafe { canceler.cancel() };
        }
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
