// SPDX-License-Identifier: MIT OR Apache-2.0
//! An inference server's part of the flow (`backend=kserve`): waiting for its answers, the
//! `on-server-failure` policy, and the outage and recovery messages, in the order the frames
//! met them.

use super::*;

impl TrtInfer {
    /// Waits for the server's answers to a buffer's requests and parses them. `None`: the
    /// server did not answer (`on-server-failure=drop`) and the frames go on without results.
    pub(super) fn finish_remote(
        &self,
        batches: Vec<crate::inference::RemoteBatch>,
        frames: usize,
        work: &mut Work,
    ) -> Result<Option<Vec<ItemResult>>, gst::FlowError> {
        let mut results = Vec::new();
        let mut unanswered = None;
        for batch in batches {
            match self.wait_for_server(&batch.call)? {
                Ok(outputs) => {
                    self.report_recovery();
                    if unanswered.is_some() {
                        continue;
                    }
                    let t = Instant::now();
                    let mut guard = self.state.lock().unwrap();
                    let Some(state) = guard.as_mut() else {
                        return Err(gst::FlowError::Flushing);
                    };
                    let parsed =
                        state
                            .inference
                            .finish_remote(&batch.letterboxes, &batch.sizes, outputs);
                    let settings_warnings = state.inference.take_warnings();
                    drop(guard);
                    self.post_warnings(Vec::new(), settings_warnings);
                    let parsed = parsed.map_err(|m| {
                        gst::element_imp_error!(
                            self,
                            gst::StreamError::Decode,
                            ("Parsing the model outputs: {m}")
                        );
                        gst::FlowError::Error
                    })?;
                    work.items += parsed.len() as u64;
                    work.engine_calls += 1;
                    work.times[2] += t.elapsed();
                    results.extend(parsed);
                }
                Err(RemoteError::Unavailable(reason)) => unanswered = Some(reason),
                // A flush or a stop ended the run (an engine interrupted): not an error.
                Err(e) if self.flight.interrupted() => {
                    gst::debug!(CAT, imp = self, "interrupted: {e}");
                    return Err(gst::FlowError::Flushing);
                }
                Err(e) => {
                    match self.server_url() {
                        Some(url) => gst::element_imp_error!(
                            self,
                            gst::ResourceError::Read,
                            ("Inference server {url}: {e}")
                        ),
                        // A local engine with requests in flight.
                        None => gst::element_imp_error!(self, gst::StreamError::Failed, ("{e}")),
                    }
                    return Err(gst::FlowError::Error);
                }
            }
        }
        if let Some(reason) = unanswered {
            self.stats.lock().unwrap().server_dropped += frames as u64;
            if let Some(w) = self.server.lock().unwrap().as_mut() {
                w.dropped += frames as u64;
            }
            // Reported even when the server answered again meanwhile: these frames met it.
            self.watch_outage(Some(&reason))?;
            return Ok(None);
        }
        Ok(Some(results))
    }

    /// The inference server's address; `None` for a local engine with requests in flight.
    pub(super) fn server_url(&self) -> Option<String> {
        self.server.lock().unwrap().as_ref().map(|w| w.url.clone())
    }

    /// Waits for a call's answer, reporting an outage while it lasts; `Flushing` when the
    /// element flushes or stops meanwhile (the call is then abandoned).
    pub(super) fn wait_for_server(
        &self,
        call: &crate::engine::remote::RemoteCall,
    ) -> Result<RemoteResult, gst::FlowError> {
        loop {
            if let Poll::Ready(result) = call.wait_for(Duration::from_millis(100)) {
                return Ok(result);
            }
            if self.flight.interrupted() {
                return Err(gst::FlowError::Flushing);
            }
            self.watch_outage(None)?;
        }
    }

    /// Reports an outage of the server once (a warning and a `<factory>-server-lost` message):
    /// the one going on, or the one that made a frame go without results (`failure`, which may
    /// have ended since). Fails once an outage has lasted `server-give-up` seconds with frames
    /// being dropped (while waiting, the request itself gives up).
    pub(super) fn watch_outage(&self, failure: Option<&str>) -> Result<(), gst::FlowError> {
        let mut guard = self.server.lock().unwrap();
        let Some(w) = guard.as_mut() else {
            return Ok(());
        };
        let ongoing = w.health.outage();
        let reason = match (&ongoing, failure) {
            (Some(outage), _) => outage.reason.clone(),
            (None, Some(failure)) => failure.to_string(),
            (None, None) => return Ok(()),
        };
        let url = w.url.clone();
        let give_up = ongoing.as_ref().and_then(|outage| {
            w.give_up
                .filter(|g| w.on_failure == ServerFailure::Drop && outage.since.elapsed() >= *g)
        });
        let first = !std::mem::replace(&mut w.warned, true);
        let on_failure = w.on_failure;
        drop(guard);
        if let Some(give_up) = give_up {
            gst::element_imp_error!(
                self,
                gst::ResourceError::Read,
                (
                    "Inference server {url} has not answered for {} s: {}",
                    give_up.as_secs(),
                    reason
                ),
                [
                    "server-give-up={}; set 0 to never give up",
                    give_up.as_secs()
                ]
            );
            return Err(gst::FlowError::Error);
        }
        if first {
            let what = match on_failure {
                ServerFailure::Wait => {
                    "holding the stream until it answers (on-server-failure=wait)"
                }
                ServerFailure::Drop => {
                    "frames pass on without results until it answers (on-server-failure=drop)"
                }
            };
            gst::element_imp_warning!(
                self,
                gst::ResourceError::Read,
                (
                    "Inference server {url} does not answer ({}): {what}",
                    reason
                )
            );
            let structure = gst::Structure::builder(format!("{}-server-lost", self.factory_name()))
                .field("server", &url)
                .field("reason", &reason)
                .build();
            let _ = self.obj().post_message(
                gst::message::Element::builder(structure)
                    .src(&*self.obj())
                    .build(),
            );
        }
        Ok(())
    }

    /// Reports the end of an outage: a `<factory>-server-recovered` message with its length and
    /// the frames dropped in it. Only for an outage reported lost, and only once the server
    /// answers again: an answer older than the outage (frames leave in order, answers come
    /// as they come) waits for a later one. An outage that no frame met is not reported.
    pub(super) fn report_recovery(&self) {
        let mut guard = self.server.lock().unwrap();
        let Some(w) = guard.as_mut() else {
            return;
        };
        if !w.warned || w.health.outage().is_some() {
            return;
        }
        let Some(outage) = w.health.take_ended() else {
            return;
        };
        w.warned = false;
        let dropped = std::mem::take(&mut w.dropped);
        let url = w.url.clone();
        drop(guard);
        let ms = outage.since.elapsed().as_millis() as u64;
        gst::info!(
            CAT,
            imp = self,
            "inference server {url} answers again after {ms} ms ({} failed attempts, {dropped} \
             frames dropped)",
            outage.failures
        );
        let structure =
            gst::Structure::builder(format!("{}-server-recovered", self.factory_name()))
                .field("server", &url)
                .field("outage-ms", ms)
                .field("failures", outage.failures)
                .field("dropped", dropped)
                .build();
        let _ = self.obj().post_message(
            gst::message::Element::builder(structure)
                .src(&*self.obj())
                .build(),
        );
    }

    /// Counts frames passed on without results because every request in flight was taken, with
    /// a warning at most every 10 s.
    pub(super) fn count_busy_drop(&self, frames: usize) {
        let total = {
            let mut st = self.stats.lock().unwrap();
            st.server_dropped += frames as u64;
            st.server_dropped
        };
        let mut guard = self.server.lock().unwrap();
        let Some(w) = guard.as_mut() else {
            return;
        };
        if w.last_busy_warning
            .is_some_and(|t| t.elapsed() < BUSY_WARNING_EVERY)
        {
            return;
        }
        w.last_busy_warning = Some(Instant::now());
        let url = w.url.clone();
        drop(guard);
        let in_flight = self
            .state
            .lock()
            .unwrap()
            .as_ref()
            .map_or(0, |s| s.inference.config().remote.requests_in_flight);
        gst::element_imp_warning!(
            self,
            gst::ResourceError::Busy,
            ("Inference server {url} is slower than the stream: all {in_flight} \
                 requests-in-flight are taken, frames pass on without results ({total} so far)")
        );
    }
}
