// SPDX-License-Identifier: MIT OR Apache-2.0
//! Engines that fail on purpose, for reliability tests (cargo feature `fault-injection`, never
//! in a release build of the plugin): with `FERROSTREAM_FAULT_ENGINE_RUN=N` set, the N-th run
//! (from 1) of every engine opened fails as a real engine failure would.

use super::{Engine, EngineDescription, EngineError, InputData, OutputTensor};

/// The environment variable that arms the fault.
pub const FAIL_RUN: &str = "FERROSTREAM_FAULT_ENGINE_RUN";

struct FaultyEngine {
    inner: Box<dyn Engine>,
    runs: u64,
    fail_at: u64,
}

impl Engine for FaultyEngine {
    fn description(&self) -> &EngineDescription {
        self.inner.description()
    }

    #[cfg(feature = "cuda")]
    fn device(&mut self) -> Option<&mut dyn super::DeviceEngine> {
        self.inner.device()
    }

    fn remote(&mut self) -> Option<&mut dyn super::remote::RemoteEngine> {
        self.inner.remote()
    }

    fn keep_in_flight(&mut self, requests: usize) -> Result<bool, EngineError> {
        self.inner.keep_in_flight(requests)
    }

    fn interrupter(&self) -> Option<std::sync::Arc<dyn super::Interrupt>> {
        self.inner.interrupter()
    }

    fn run(
        &mut self,
        input: InputData<'_>,
        shape: &[usize],
        outputs: &mut Vec<OutputTensor>,
    ) -> Result<(), EngineError> {
        self.runs += 1;
        if self.runs == self.fail_at {
            return Err(EngineError::Run(format!(
                "fault injected at run {} ({FAIL_RUN})",
                self.runs
            )));
        }
        self.inner.run(input, shape, outputs)
    }
}

/// `engine`, made to fail as [`FAIL_RUN`] asks (unchanged when it is not set).
pub fn arm(engine: Box<dyn Engine>) -> Box<dyn Engine> {
    match std::env::var(FAIL_RUN).ok().and_then(|v| v.parse().ok()) {
        Some(fail_at) => Box::new(FaultyEngine {
            inner: engine,
            runs: 0,
            fail_at,
        }),
        None => engine,
    }
}
