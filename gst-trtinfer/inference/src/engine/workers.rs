// SPDX-License-Identifier: MIT OR Apache-2.0
//! Several engines running one model as one: both DLA cores and the GPU of a Jetson, say. Each
//! worker runs on a thread of its own; a batch goes to the worker expected to finish it first
//! (its queue times its recent run time), taking turns among workers that are about as good
//! (within 20 %), so equal workers (two DLA cores) alternate and a slow one takes fewer batches
//! instead of holding the others up. A worker's first run is its warm-up and is not measured
//! (a GPU's first run can take a hundred times its next), and one batch in 16 goes to each
//! worker in turn, so that an estimate made on a bad run is measured again. Each batch is answered through a [`RemoteCall`]; the caller
//! waits for the calls in the order it made them (rstrtinfer's flight queue does), so results
//! leave in the order the batches came, whichever worker finishes first.
//!
//! A worker whose engine fails is taken out of the rotation (its failure is reported once, see
//! [`WorkerPool::take_notices`]) and its batch, and any queued behind it, run on the others; a
//! batch fails only when no worker is left.
//!
//! The pool's [`Engine::interrupter`] interrupts every worker's engine that can be interrupted;
//! a run that fails while the pool is interrupted answers its batch with the error and leaves
//! the worker in the rotation (a stop or a flush is no failure of the worker's).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;

use super::remote::{Health, RemoteCall, RemoteEngine, RemoteError, RemoteResult};
use super::{
    Engine, EngineDescription, EngineError, EngineLog, InputData, Interrupt, LogLevel, OutputTensor,
};

/// An engine and the name it goes by in messages (`DLA0`, `GPU`).
pub struct Worker {
    pub name: String,
    pub engine: Box<dyn Engine>,
}

/// A batch's input, owned while it waits for a worker.
#[derive(Clone)]
enum OwnedInput {
    F32(Vec<f32>),
    F16(Vec<half::f16>),
    U8(Vec<u8>),
}

impl OwnedInput {
    fn new(input: InputData<'_>) -> Self {
        match input {
            InputData::F32(v) => Self::F32(v.to_vec()),
            InputData::F16(v) => Self::F16(v.to_vec()),
            InputData::U8(v) => Self::U8(v.to_vec()),
        }
    }

    fn data(&self) -> InputData<'_> {
        match self {
            Self::F32(v) => InputData::F32(v),
            Self::F16(v) => InputData::F16(v),
            Self::U8(v) => InputData::U8(v),
        }
    }
}

struct Job {
    input: Arc<OwnedInput>,
    shape: Arc<[usize]>,
    reply: mpsc::Sender<RemoteResult>,
}

/// What submitters and workers share: each worker's queue and state.
struct Slot {
    name: String,
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    /// Batches sent to it and not yet answered.
    queued: AtomicUsize,
    failed: AtomicBool,
    /// Batches it ran.
    runs: AtomicU64,
    /// Its recent run time (ns, a moving average; 0 until its second run, so every worker is
    /// tried and a first run's warm-up, such as a GPU's, does not count).
    average_ns: AtomicU64,
    /// Whether it has run once (its warm-up).
    warm: AtomicBool,
}

impl Slot {
    /// When a batch sent now would be done, in its recent run times.
    fn expected_ns(&self) -> u64 {
        (self.queued.load(Ordering::SeqCst) as u64 + 1)
            .saturating_mul(self.average_ns.load(Ordering::SeqCst))
    }

    fn ran(&self, took: std::time::Duration) {
        if !self.warm.swap(true, Ordering::SeqCst) {
            return;
        }
        let took = took.as_nanos().min(u64::MAX as u128) as u64;
        let average = self.average_ns.load(Ordering::SeqCst);
        let next = if average == 0 {
            took
        } else {
            (average.saturating_mul(7) / 8).saturating_add(took / 8)
        };
        self.average_ns.store(next.max(1), Ordering::SeqCst);
    }
}

/// Every this many batches, one goes to the next healthy worker in turn whatever its estimate,
/// so that an estimate made on a bad run is measured again.
const PROBE_EVERY: u64 = 16;

struct Dispatch {
    slots: Vec<Slot>,
    next: AtomicUsize,
    /// Batches dispatched, and the next worker to probe.
    sent: AtomicU64,
    probe: AtomicUsize,
    notices: Mutex<Vec<String>>,
    /// Where a worker's failure is also told (the element's log: a warning message).
    log: Mutex<Option<EngineLog>>,
    /// Set while the pool is interrupted ([`PoolInterrupt`]).
    interrupted: AtomicBool,
    /// Interruptions so far: a run during which this changed was interrupted, even if the pool
    /// is running again by the time its error is read.
    interruptions: AtomicU64,
}

/// Interrupts every worker's engine that can be interrupted, and tells the workers that runs
/// failing meanwhile are no failures of theirs.
struct PoolInterrupt {
    dispatch: Arc<Dispatch>,
    engines: Vec<Arc<dyn Interrupt>>,
}

impl Interrupt for PoolInterrupt {
    fn interrupt(&self, interrupted: bool) {
        if interrupted {
            self.dispatch.interruptions.fetch_add(1, Ordering::SeqCst);
        }
        self.dispatch
            .interrupted
            .store(interrupted, Ordering::SeqCst);
        for engine in &self.engines {
            engine.interrupt(interrupted);
        }
    }
}

impl Dispatch {
    /// Whether a run that started when `interruptions` read `before` was interrupted.
    fn interrupted_since(&self, before: u64) -> bool {
        self.interrupted.load(Ordering::SeqCst)
            || self.interruptions.load(Ordering::SeqCst) != before
    }

    fn report(&self, notice: String) {
        if let Some(log) = self.log.lock().unwrap().as_ref() {
            log(LogLevel::Warning, &notice);
        }
        self.notices.lock().unwrap().push(notice);
    }

    /// Sends `job` to the healthy worker expected to finish it first (taking turns among those
    /// within 20 % of the best); answers it with an error when no worker is left.
    fn send(&self, mut job: Job) {
        loop {
            let n = self.slots.len();
            let start = self.next.load(Ordering::Relaxed);
            // One reading of every worker: queues and averages move while this runs.
            let healthy: Vec<(usize, u64)> = (0..n)
                .map(|k| (start + k) % n)
                .filter(|&i| !self.slots[i].failed.load(Ordering::SeqCst))
                .map(|i| (i, self.slots[i].expected_ns()))
                .collect();
            let best = healthy.iter().map(|&(_, expected)| expected).min();
            let probe = (self.sent.fetch_add(1, Ordering::Relaxed) + 1).is_multiple_of(PROBE_EVERY);
            let chosen = if probe && !healthy.is_empty() {
                let k = self.probe.fetch_add(1, Ordering::Relaxed);
                Some(healthy[k % healthy.len()].0)
            } else {
                best.and_then(|best| {
                    let bound = best.saturating_add(best / 5);
                    healthy
                        .iter()
                        .find(|&&(_, expected)| expected <= bound)
                        .map(|&(i, _)| i)
                })
            };
            let Some(i) = chosen else {
                let _ = job.reply.send(Err(RemoteError::Failed(
                    "every worker of the engine has failed".into(),
                )));
                return;
            };
            self.next.store(i + 1, Ordering::Relaxed);
            let slot = &self.slots[i];
            slot.queued.fetch_add(1, Ordering::SeqCst);
            let sender = slot.jobs.lock().unwrap().clone();
            match sender.map(|s| s.send(job)) {
                Some(Ok(())) => return,
                // The worker's thread is gone: take it out and try another.
                Some(Err(mpsc::SendError(back))) => job = back,
                None => unreachable!("senders are dropped only when the pool is"),
            }
            slot.queued.fetch_sub(1, Ordering::SeqCst);
            slot.failed.store(true, Ordering::SeqCst);
        }
    }
}

/// Runs one model on several engines at once (see the module documentation).
pub struct WorkerPool {
    description: EngineDescription,
    dispatch: Arc<Dispatch>,
    /// `None` when no worker's engine can be interrupted.
    interrupt: Option<Arc<PoolInterrupt>>,
    threads: Vec<JoinHandle<()>>,
    health: Arc<Health>,
    names: String,
}

impl WorkerPool {
    /// Starts a thread per worker. The workers must take the same input and give the same
    /// outputs (one model); the first one's description is the pool's, with every worker's
    /// providers.
    pub fn new(workers: Vec<Worker>) -> Result<Self, EngineError> {
        let first = workers
            .first()
            .ok_or_else(|| EngineError::Run("a worker pool needs at least one engine".into()))?;
        let mut description = first.engine.description().clone();
        for w in &workers[1..] {
            let d = w.engine.description();
            if d.input != description.input || d.outputs != description.outputs {
                return Err(EngineError::Run(format!(
                    "worker {} does not run the same model as {} (its input or outputs differ)",
                    w.name, first.name
                )));
            }
        }
        description.providers = workers
            .iter()
            .map(|w| format!("{}: {}", w.name, w.engine.description().providers.join("+")))
            .collect();
        let names = workers
            .iter()
            .map(|w| w.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let mut receivers = Vec::new();
        let slots = workers
            .iter()
            .map(|w| {
                let (tx, rx) = mpsc::channel::<Job>();
                receivers.push(rx);
                Slot {
                    name: w.name.clone(),
                    jobs: Mutex::new(Some(tx)),
                    queued: AtomicUsize::new(0),
                    failed: AtomicBool::new(false),
                    runs: AtomicU64::new(0),
                    average_ns: AtomicU64::new(0),
                    warm: AtomicBool::new(false),
                }
            })
            .collect();
        let dispatch = Arc::new(Dispatch {
            slots,
            next: AtomicUsize::new(0),
            sent: AtomicU64::new(0),
            probe: AtomicUsize::new(0),
            notices: Mutex::new(Vec::new()),
            log: Mutex::new(None),
            interrupted: AtomicBool::new(false),
            interruptions: AtomicU64::new(0),
        });
        let engines: Vec<_> = workers
            .iter()
            .filter_map(|w| w.engine.interrupter())
            .collect();
        let interrupt = (!engines.is_empty()).then(|| {
            Arc::new(PoolInterrupt {
                dispatch: dispatch.clone(),
                engines,
            })
        });
        let threads = workers
            .into_iter()
            .zip(receivers)
            .enumerate()
            .map(|(index, (worker, jobs))| {
                let dispatch = dispatch.clone();
                std::thread::Builder::new()
                    .name(format!("worker-{}", worker.name))
                    .spawn(move || work(index, worker.engine, jobs, &dispatch))
                    .map_err(|e| EngineError::Run(format!("cannot start a worker thread: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            description,
            dispatch,
            interrupt,
            threads,
            health: Arc::default(),
            names,
        })
    }

    /// Batches each worker ran so far, by name.
    pub fn runs(&self) -> Vec<(String, u64)> {
        self.dispatch
            .slots
            .iter()
            .map(|s| (s.name.clone(), s.runs.load(Ordering::SeqCst)))
            .collect()
    }

    /// Also tells `log` (as a warning) when a worker is taken out of the rotation.
    pub fn with_log(self, log: EngineLog) -> Self {
        *self.dispatch.log.lock().unwrap() = Some(log);
        self
    }

    /// Workers taken out of the rotation since the last call, with why.
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut self.dispatch.notices.lock().unwrap())
    }

    fn submit_owned(&self, input: Arc<OwnedInput>, shape: &[usize]) -> RemoteCall {
        let (reply, answer) = mpsc::channel();
        self.dispatch.send(Job {
            input,
            shape: shape.into(),
            reply,
        });
        // Dropping the call unanswered (a flush) leaves the batch to finish and be discarded.
        RemoteCall::new(answer, || {}, self.health.clone())
    }
}

/// A worker's thread: runs its jobs until the pool goes; after a failure, passes them on.
fn work(index: usize, mut engine: Box<dyn Engine>, jobs: mpsc::Receiver<Job>, dispatch: &Dispatch) {
    let slot = &dispatch.slots[index];
    let mut outputs = Vec::new();
    while let Ok(job) = jobs.recv() {
        if slot.failed.load(Ordering::SeqCst) {
            slot.queued.fetch_sub(1, Ordering::SeqCst);
            dispatch.send(job);
            continue;
        }
        let started = std::time::Instant::now();
        let interruptions = dispatch.interruptions.load(Ordering::SeqCst);
        match engine.run(job.input.data(), &job.shape, &mut outputs) {
            Ok(()) => {
                slot.ran(started.elapsed());
                slot.runs.fetch_add(1, Ordering::SeqCst);
                slot.queued.fetch_sub(1, Ordering::SeqCst);
                let _ = job.reply.send(Ok(outputs.clone()));
            }
            Err(e) if dispatch.interrupted_since(interruptions) => {
                slot.queued.fetch_sub(1, Ordering::SeqCst);
                let _ = job.reply.send(Err(RemoteError::Failed(format!(
                    "interrupted (the element is stopping or flushing): {e}"
                ))));
            }
            Err(e) => {
                slot.failed.store(true, Ordering::SeqCst);
                slot.queued.fetch_sub(1, Ordering::SeqCst);
                dispatch.report(format!(
                    "worker {} failed and is taken out of the rotation: {e}",
                    slot.name
                ));
                dispatch.send(job);
            }
        }
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        // A worker may be in a run that only an interruption ends.
        if let Some(interrupt) = &self.interrupt {
            interrupt.interrupt(true);
        }
        for slot in &self.dispatch.slots {
            slot.jobs.lock().unwrap().take();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Engine for WorkerPool {
    fn description(&self) -> &EngineDescription {
        &self.description
    }

    fn remote(&mut self) -> Option<&mut dyn RemoteEngine> {
        Some(self)
    }

    fn keep_in_flight(&mut self, _requests: usize) -> Result<bool, EngineError> {
        Ok(true)
    }

    fn interrupter(&self) -> Option<Arc<dyn Interrupt>> {
        self.interrupt.clone().map(|i| i as Arc<dyn Interrupt>)
    }

    fn run(
        &mut self,
        input: InputData<'_>,
        shape: &[usize],
        outputs: &mut Vec<OutputTensor>,
    ) -> Result<(), EngineError> {
        let call = self.submit_owned(Arc::new(OwnedInput::new(input)), shape);
        *outputs = call.wait()?;
        Ok(())
    }
}

impl RemoteEngine for WorkerPool {
    fn submit(&mut self, input: InputData<'_>, shape: &[usize]) -> Result<RemoteCall, EngineError> {
        Ok(self.submit_owned(Arc::new(OwnedInput::new(input)), shape))
    }

    fn health(&self) -> &Arc<Health> {
        &self.health
    }

    fn server(&self) -> &str {
        &self.names
    }

    fn is_server(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{ElementType, TensorInfo};
    use std::time::Duration;

    /// Answers each batch with its first input value plus the worker's id, after `delay`;
    /// fails at run `fail_at` (from 1).
    struct Fake {
        id: f32,
        delay: Duration,
        fail_at: Option<u64>,
        runs: u64,
        description: EngineDescription,
    }

    fn description() -> EngineDescription {
        EngineDescription {
            backend: "fake",
            providers: vec!["CPU".into()],
            version: String::new(),
            input: TensorInfo {
                name: "in".into(),
                dims: vec![Some(1), Some(1)],
                element_type: ElementType::F32,
            },
            outputs: vec![TensorInfo {
                name: "out".into(),
                dims: vec![Some(1), Some(2)],
                element_type: ElementType::F32,
            }],
        }
    }

    impl Engine for Fake {
        fn description(&self) -> &EngineDescription {
            &self.description
        }

        fn run(
            &mut self,
            input: InputData<'_>,
            _shape: &[usize],
            outputs: &mut Vec<OutputTensor>,
        ) -> Result<(), EngineError> {
            self.runs += 1;
            std::thread::sleep(self.delay);
            if self.fail_at == Some(self.runs) {
                return Err(EngineError::Run(format!("worker {} broke", self.id)));
            }
            let InputData::F32(v) = input else {
                unreachable!()
            };
            *outputs = vec![OutputTensor {
                name: "out".into(),
                shape: vec![1, 2],
                data: vec![v[0], self.id],
            }];
            Ok(())
        }
    }

    /// Runs until interrupted: a model that loops for ever.
    struct Endless {
        stop: Arc<Stop>,
        description: EngineDescription,
    }

    #[derive(Default)]
    struct Stop(AtomicBool);

    impl Interrupt for Stop {
        fn interrupt(&self, interrupted: bool) {
            self.0.store(interrupted, Ordering::SeqCst);
        }
    }

    impl Engine for Endless {
        fn description(&self) -> &EngineDescription {
            &self.description
        }

        fn interrupter(&self) -> Option<Arc<dyn Interrupt>> {
            Some(self.stop.clone())
        }

        fn run(
            &mut self,
            _: InputData<'_>,
            _: &[usize],
            _: &mut Vec<OutputTensor>,
        ) -> Result<(), EngineError> {
            while !self.stop.0.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(EngineError::Run("terminated".into()))
        }
    }

    #[test]
    fn an_interrupted_pool_ends_its_runs_and_keeps_its_workers() {
        let endless = || Worker {
            name: "endless".into(),
            engine: Box::new(Endless {
                stop: Arc::default(),
                description: description(),
            }),
        };
        let mut pool = WorkerPool::new(vec![endless(), endless()]).unwrap();
        let interrupt = pool.interrupter().expect("the workers can be interrupted");
        let calls: Vec<RemoteCall> = (0..4)
            .map(|i| pool.submit(InputData::F32(&[i as f32]), &[1, 1]).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(20));
        interrupt.interrupt(true);
        for call in calls {
            let err = call.wait().unwrap_err().to_string();
            assert!(err.contains("interrupted"), "{err}");
        }
        assert!(pool.take_notices().is_empty(), "no worker failed");
        assert!(
            pool.dispatch
                .slots
                .iter()
                .all(|s| !s.failed.load(Ordering::SeqCst))
        );
        // Dropping a pool whose workers run for ever ends them (the drop would hang else).
        interrupt.interrupt(false);
        let _running = pool.submit(InputData::F32(&[9.0]), &[1, 1]).unwrap();
        drop(pool);
    }

    fn worker(id: u32, delay_ms: u64, fail_at: Option<u64>) -> Worker {
        Worker {
            name: format!("W{id}"),
            engine: Box::new(Fake {
                id: id as f32,
                delay: Duration::from_millis(delay_ms),
                fail_at,
                runs: 0,
                description: description(),
            }),
        }
    }

    /// Submits `n` batches (value i each), keeping `in_flight` at once as rstrtinfer does, and
    /// returns the answers in submission order: (value, worker).
    fn run(pool: &mut WorkerPool, n: usize, in_flight: usize) -> Vec<(f32, f32)> {
        let mut calls = std::collections::VecDeque::new();
        let mut answers = Vec::new();
        for i in 0..n {
            if calls.len() == in_flight {
                let call: RemoteCall = calls.pop_front().unwrap();
                let out = call.wait().unwrap();
                answers.push((out[0].data[0], out[0].data[1]));
            }
            calls.push_back(pool.submit(InputData::F32(&[i as f32]), &[1, 1]).unwrap());
        }
        for call in calls {
            let out = call.wait().unwrap();
            answers.push((out[0].data[0], out[0].data[1]));
        }
        answers
    }

    #[test]
    fn batches_come_back_in_order_from_workers_that_finish_out_of_order() {
        // W1 is four times slower than W0: answers still come in submission order.
        let mut pool = WorkerPool::new(vec![worker(0, 2, None), worker(1, 8, None)]).unwrap();
        let answers = run(&mut pool, 40, 4);
        let values: Vec<f32> = answers.iter().map(|a| a.0).collect();
        assert_eq!(values, (0..40).map(|i| i as f32).collect::<Vec<_>>());
        let used: std::collections::BTreeSet<u32> = answers.iter().map(|a| a.1 as u32).collect();
        assert_eq!(used.len(), 2, "both workers ran batches");
    }

    #[test]
    fn equal_workers_take_turns() {
        let mut pool = WorkerPool::new(vec![
            worker(0, 5, None),
            worker(1, 5, None),
            worker(2, 5, None),
        ])
        .unwrap();
        run(&mut pool, 60, 3);
        for (name, runs) in pool.runs() {
            assert!((10..=30).contains(&runs), "{name} ran {runs} of 60");
        }
    }

    #[test]
    fn a_slow_worker_takes_fewer_batches_and_holds_nobody_up() {
        // W1 takes 15 times as long: strict turns would make every other batch wait for it.
        let mut pool = WorkerPool::new(vec![worker(0, 2, None), worker(1, 30, None)]).unwrap();
        let answers = run(&mut pool, 60, 4);
        let values: Vec<f32> = answers.iter().map(|a| a.0).collect();
        assert_eq!(values, (0..60).map(|i| i as f32).collect::<Vec<_>>());
        let runs = pool.runs();
        assert!(runs[0].1 > 3 * runs[1].1, "{runs:?}");
        assert!(runs[1].1 >= 1, "the slow worker was tried: {runs:?}");
    }

    #[test]
    fn a_failing_worker_is_taken_out_and_its_batch_runs_elsewhere() {
        // An untried worker is always tried, so W1 takes the second batch at the latest.
        let mut pool = WorkerPool::new(vec![worker(0, 1, None), worker(1, 1, Some(1))]).unwrap();
        let answers = run(&mut pool, 30, 2);
        let values: Vec<f32> = answers.iter().map(|a| a.0).collect();
        assert_eq!(
            values,
            (0..30).map(|i| i as f32).collect::<Vec<_>>(),
            "no batch lost"
        );
        let notices = pool.take_notices();
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(
            notices[0].contains("W1") && notices[0].contains("broke"),
            "{notices:?}"
        );
        assert_eq!(pool.runs()[1].1, 0, "W1 ran nothing after it broke");
        assert_eq!(pool.runs()[0].1, 30, "W0 ran every batch, W1's included");
        assert!(pool.take_notices().is_empty(), "reported once");
    }

    #[test]
    fn a_worker_failure_is_also_logged_as_a_warning() {
        let logged = Arc::new(Mutex::new(Vec::new()));
        let sink = logged.clone();
        let log: EngineLog =
            Arc::new(move |level, text: &str| sink.lock().unwrap().push((level, text.to_string())));
        let mut pool = WorkerPool::new(vec![worker(0, 1, None), worker(1, 1, Some(1))])
            .unwrap()
            .with_log(log);
        run(&mut pool, 4, 2);
        let logged = logged.lock().unwrap();
        assert_eq!(logged.len(), 1, "{logged:?}");
        assert_eq!(logged[0].0, LogLevel::Warning);
        assert!(logged[0].1.contains("W1"), "{logged:?}");
    }

    #[test]
    fn when_every_worker_fails_the_batch_fails() {
        let mut pool = WorkerPool::new(vec![worker(0, 1, Some(1)), worker(1, 1, Some(1))]).unwrap();
        let call = pool.submit(InputData::F32(&[1.0]), &[1, 1]).unwrap();
        let e = call.wait().unwrap_err();
        assert!(e.to_string().contains("every worker"), "{e}");
        let mut out = Vec::new();
        assert!(pool.run(InputData::F32(&[1.0]), &[1, 1], &mut out).is_err());
    }

    #[test]
    fn workers_of_different_models_are_refused() {
        let mut other = worker(1, 0, None);
        let mut d = description();
        d.outputs[0].dims = vec![Some(1), Some(3)];
        other.engine = Box::new(Fake {
            id: 1.0,
            delay: Duration::ZERO,
            fail_at: None,
            runs: 0,
            description: d,
        });
        let Err(e) = WorkerPool::new(vec![worker(0, 0, None), other]) else {
            panic!("accepted")
        };
        assert!(e.to_string().contains("same model"), "{e}");
    }

    #[test]
    fn single_runs_go_through_the_pool_too() {
        let mut pool = WorkerPool::new(vec![worker(0, 0, None), worker(1, 0, None)]).unwrap();
        let mut out = Vec::new();
        pool.run(InputData::F32(&[7.0]), &[1, 1], &mut out).unwrap();
        assert_eq!(out[0].data[0], 7.0);
        assert_eq!(pool.description().providers, ["W0: CPU", "W1: CPU"]);
    }
}
