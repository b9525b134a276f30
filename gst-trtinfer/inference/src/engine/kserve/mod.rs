// SPDX-License-Identifier: MIT OR Apache-2.0
//! Remote inference on a server speaking the KServe v2 protocol over gRPC (Triton Inference
//! Server, KServe, MLServer, Seldon): `backend=kserve` (or `triton`).
//!
//! The model's input and outputs come from the server's model metadata; the element
//! pre-processes and parses exactly as for a local engine, and only the input tensor and the
//! outputs cross the network (as raw little-endian bytes). Batches are sent without waiting
//! ([`RemoteEngine::submit`]) on a Tokio runtime of the engine's own; one HTTP/2 connection
//! carries every call in flight and reconnects by itself.
//!
//! When the server cannot be reached or does not answer within `server-timeout`, the
//! [`FailurePolicy`] decides: `wait` retries the batch (back-pressure upstream) until the
//! server answers or `server-give-up` passes; `drop` gives the batch up at once, and the
//! element passes its frames on without results, counting them.

mod client;
pub mod proto;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::Bytes;

pub use client::Connection;
use client::{Client, Failure};

use super::remote::{Health, RemoteCall, RemoteEngine, RemoteError, RemoteResult};
use super::{
    ElementType, Engine, EngineDescription, EngineError, InputData, OutputTensor, TensorInfo,
    to_f32,
};

/// What a batch does when the server cannot be reached or does not answer in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Retry (with back-off up to 2 s) until the server answers; give up with an error after
    /// `give_up`, if set.
    Wait { give_up: Option<Duration> },
    /// Fail the batch at once; the caller passes its frames on without results.
    Drop,
}

/// A model on a server.
#[derive(Debug, Clone, PartialEq)]
pub struct KserveOptions {
    pub connection: Connection,
    pub model_name: String,
    /// Empty: the server's choice.
    pub model_version: String,
    pub policy: FailurePolicy,
    /// The largest answer accepted; `None`: [`auto_message_limit`] of the model's metadata.
    pub max_message_bytes: Option<usize>,
    /// The most frames a request carries (`batch-size`).
    pub batch: usize,
}

/// The metadata calls' answers are small: a few names and shapes per tensor.
const METADATA_MESSAGE_LIMIT: usize = 4 << 20;
/// The least automatic answer limit.
const MIN_AUTO_MESSAGE_LIMIT: usize = 16 << 20;
/// The automatic limit where the metadata leaves a size open (a dynamic axis besides the batch).
const OPEN_AUTO_MESSAGE_LIMIT: usize = 256 << 20;

/// The automatic answer limit: four times the largest answer the metadata allows for `batch`
/// frames (8 bytes a value, the widest type), at least [`MIN_AUTO_MESSAGE_LIMIT`];
/// [`OPEN_AUTO_MESSAGE_LIMIT`] where an output has a dynamic axis besides the batch.
fn auto_message_limit(outputs: &[TensorInfo], batch: usize) -> usize {
    let mut total = 0usize;
    for o in outputs {
        let mut values = 1usize;
        for (axis, d) in o.dims.iter().enumerate() {
            let d = match d {
                Some(d) => *d,
                None if axis == 0 => batch,
                None => return OPEN_AUTO_MESSAGE_LIMIT,
            };
            values = values.saturating_mul(d);
        }
        total = total.saturating_add(values.saturating_mul(8));
    }
    total
        .saturating_mul(4)
        .max(MIN_AUTO_MESSAGE_LIMIT)
        .min((crate::config::MAX_MESSAGE_MIB as usize) << 20)
}

/// The first retry waits this long; each next one twice as long, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

pub struct KserveEngine {
    /// Dropped last (see `Drop`): the calls' tasks run on it.
    runtime: Option<tokio::runtime::Runtime>,
    client: Client,
    options: KserveOptions,
    description: EngineDescription,
    /// The description's outputs, shared with the calls that convert the answers.
    outputs: Arc<[TensorInfo]>,
    /// What every request has in common (model, input name, outputs asked for).
    template: proto::ModelInferRequest,
    health: Arc<Health>,
    calls: u64,
}

/// The protocol's name of an element type, and back.
fn datatype(ty: ElementType) -> &'static str {
    match ty {
        ElementType::F32 => "FP32",
        ElementType::F16 => "FP16",
        ElementType::U8 => "UINT8",
        ElementType::I8 => "INT8",
        ElementType::I32 => "INT32",
        ElementType::I64 => "INT64",
        ElementType::Other(name) => name,
    }
}

fn element_type(datatype: &str) -> ElementType {
    match datatype {
        "FP32" => ElementType::F32,
        "FP16" => ElementType::F16,
        "UINT8" => ElementType::U8,
        "INT8" => ElementType::I8,
        "INT32" => ElementType::I32,
        "INT64" => ElementType::I64,
        "BOOL" => ElementType::Other("BOOL"),
        "FP64" => ElementType::Other("FP64"),
        "BYTES" => ElementType::Other("BYTES"),
        _ => ElementType::Other("unknown"),
    }
}

fn tensor_info(t: &proto::TensorMetadata) -> TensorInfo {
    TensorInfo {
        name: t.name.clone(),
        element_type: element_type(&t.datatype),
        dims: t.shape.iter().map(|&d| usize::try_from(d).ok()).collect(),
    }
}

impl KserveEngine {
    /// Connects, reads the model's metadata and checks that the model is ready. A server that
    /// does not answer within the timeout is an error here: the model's shapes are needed
    /// before the first frame.
    pub fn open(options: KserveOptions) -> Result<Self, EngineError> {
        if options.model_name.is_empty() {
            return Err(EngineError::Model {
                path: options.connection.url.clone(),
                reason: "backend=kserve needs model-name: the model's name on the server".into(),
            });
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("rstrtinfer-kserve")
            .enable_all()
            .build()
            .map_err(|e| EngineError::RuntimeMissing(format!("starting the gRPC client: {e}")))?;
        let client = {
            let _guard = runtime.enter();
            options
                .connection
                .client(METADATA_MESSAGE_LIMIT)
                .map_err(EngineError::ProviderUnavailable)?
        };
        let url = options.connection.url.clone();
        let name = options.model_name.clone();
        let version = options.model_version.clone();
        let model = if version.is_empty() {
            format!("model {name:?}")
        } else {
            format!("model {name:?} version {version:?}")
        };
        let unreachable = |f: Failure| {
            // NotFound is worth retrying mid-stream (a model being reloaded), not at start.
            if f.retry && f.code != tonic::Code::NotFound {
                EngineError::RuntimeMissing(format!(
                    "the KServe server at {url} does not answer ({})",
                    f.message
                ))
            } else {
                EngineError::Model {
                    path: format!("{url} {model}"),
                    reason: f.message,
                }
            }
        };
        let mut c = client.clone();
        let (metadata, ready, server) = runtime
            .block_on(async {
                let metadata = c.model_metadata(&name, &version).await?;
                let ready = c.model_ready(&name, &version).await?;
                // Not every server implements it; only used in messages.
                let server = c.server_metadata().await.ok();
                Ok::<_, Failure>((metadata, ready, server))
            })
            .map_err(unreachable)?;
        let model_error = |reason: String| EngineError::Model {
            path: format!("{url} {model}"),
            reason,
        };
        if !ready {
            return Err(model_error("the server says the model is not ready".into()));
        }
        let [input] = metadata.inputs.as_slice() else {
            let names: Vec<&str> = metadata.inputs.iter().map(|t| t.name.as_str()).collect();
            return Err(model_error(format!(
                "the model has {} inputs ({}); rstrtinfer feeds models with one image input",
                names.len(),
                names.join(", ")
            )));
        };
        if metadata.outputs.is_empty() {
            return Err(model_error(
                "the server lists no outputs for the model".into(),
            ));
        }
        let description = EngineDescription {
            backend: "kserve",
            providers: vec![format!(
                "{url} ({})",
                [metadata.platform.as_str(), "KServe v2 gRPC"]
                    .iter()
                    .filter(|s| !s.is_empty())
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ")
            )],
            version: server.map_or_else(
                || "unknown server".to_string(),
                |s| format!("{} {}", s.name, s.version),
            ),
            input: tensor_info(input),
            outputs: metadata.outputs.iter().map(tensor_info).collect(),
        };
        let limit = options
            .max_message_bytes
            .unwrap_or_else(|| auto_message_limit(&description.outputs, options.batch));
        let client = client.with_message_limit(limit);
        let template = proto::ModelInferRequest {
            model_name: options.model_name.clone(),
            model_version: options.model_version.clone(),
            inputs: vec![proto::InferTensor {
                name: description.input.name.clone(),
                ..Default::default()
            }],
            outputs: description
                .outputs
                .iter()
                .map(|o| proto::InferRequestedOutputTensor {
                    name: o.name.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        Ok(Self {
            runtime: Some(runtime),
            client,
            options,
            outputs: description.outputs.clone().into(),
            description,
            template,
            health: Arc::default(),
            calls: 0,
        })
    }

    /// The request for one batch: the template with the call's id, shape and tensor.
    fn request(&mut self, input: InputData<'_>, shape: &[usize]) -> proto::ModelInferRequest {
        self.calls += 1;
        let mut request = self.template.clone();
        request.id = self.calls.to_string();
        let tensor = &mut request.inputs[0];
        tensor.datatype = datatype(input.element_type()).into();
        tensor.shape = shape.iter().map(|&n| n as i64).collect();
        // The protocol's raw contents are little-endian: the byte order of every platform this
        // runs on (x86-64, aarch64).
        request.raw_input_contents = vec![Bytes::copy_from_slice(input.as_bytes())];
        request
    }
}

/// One call: sends `request`, retrying as `policy` says, and converts the answer.
async fn call(
    mut client: Client,
    request: proto::ModelInferRequest,
    outputs: Arc<[TensorInfo]>,
    policy: FailurePolicy,
    health: Arc<Health>,
) -> RemoteResult {
    let started = Instant::now();
    let mut backoff = FIRST_BACKOFF;
    let batch = request
        .inputs
        .first()
        .and_then(|t| t.shape.first())
        .map_or(1, |&n| usize::try_from(n).unwrap_or(1));
    loop {
        match client.infer(request.clone()).await {
            Ok(response) => {
                health.answered();
                return convert(response, &outputs, batch).map_err(RemoteError::Failed);
            }
            Err(f) if !f.retry => return Err(RemoteError::Failed(f.message)),
            Err(f) => {
                health.failed(&f.message);
                let FailurePolicy::Wait { give_up } = policy else {
                    return Err(RemoteError::Unavailable(f.message));
                };
                let mut pause = backoff;
                if let Some(give_up) = give_up {
                    let left = give_up.saturating_sub(started.elapsed());
                    if left.is_zero() {
                        return Err(RemoteError::GaveUp {
                            seconds: give_up.as_secs(),
                            reason: f.message,
                        });
                    }
                    pause = pause.min(left);
                }
                tokio::time::sleep(pause).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// The outputs of `response` in the order of `wanted`, as f32. Every shape must fit the model's
/// metadata (`wanted`) and a batch of at most `batch`, and come with exactly its values; no
/// value may be NaN. Memory is only taken for values that are in the answer.
fn convert(
    response: proto::ModelInferResponse,
    wanted: &[TensorInfo],
    batch: usize,
) -> Result<Vec<OutputTensor>, String> {
    let proto::ModelInferResponse {
        mut outputs,
        raw_output_contents,
        ..
    } = response;
    let raw = !raw_output_contents.is_empty();
    if raw && raw_output_contents.len() != outputs.len() {
        return Err(format!(
            "the server answered {} outputs with {} raw contents",
            outputs.len(),
            raw_output_contents.len()
        ));
    }
    let mut tensors = Vec::with_capacity(wanted.len());
    for info in wanted {
        let Some(index) = outputs.iter().position(|o| o.name == info.name) else {
            return Err(format!("the server's answer has no output {}", info.name));
        };
        let output = &mut outputs[index];
        let shape = answered_shape(&output.shape, info, batch)
            .map_err(|why| format!("output {} has shape {:?}: {why}", output.name, output.shape))?;
        let elements = shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or_else(|| format!("output {} has shape {:?}", output.name, output.shape))?;
        let ty = element_type(&output.datatype);
        let mut data = Vec::new();
        if raw {
            to_f32(ty, &raw_output_contents[index], &mut data)
                .map_err(|e| format!("output {}: {e}", output.name))?;
        } else {
            let c = output.contents.take().unwrap_or_default();
            match output.datatype.as_str() {
                "FP32" => data = c.fp32_contents,
                "FP64" => data.extend(c.fp64_contents.iter().map(|&v| v as f32)),
                "INT8" | "INT16" | "INT32" => data.extend(c.int_contents.iter().map(|&v| v as f32)),
                "UINT8" | "UINT16" | "UINT32" => {
                    data.extend(c.uint_contents.iter().map(|&v| v as f32));
                }
                "INT64" => data.extend(c.int64_contents.iter().map(|&v| v as f32)),
                "UINT64" => data.extend(c.uint64_contents.iter().map(|&v| v as f32)),
                "BOOL" => data.extend(c.bool_contents.iter().map(|&v| f32::from(u8::from(v)))),
                other => {
                    return Err(format!(
                        "output {} has datatype {other}, which is not a number",
                        output.name
                    ));
                }
            }
        }
        if data.len() != elements {
            return Err(format!(
                "output {} of shape {shape:?} came with {} elements",
                output.name,
                data.len()
            ));
        }
        let nan = data.iter().filter(|v| v.is_nan()).count();
        if nan > 0 {
            return Err(format!(
                "output {} holds {nan} NaN values of {}: the model on the server is broken \
                 (its answer cannot be read as results)",
                output.name,
                data.len()
            ));
        }
        tensors.push(OutputTensor {
            name: info.name.clone(),
            shape,
            data,
        });
    }
    Ok(tensors)
}

/// The shape of an answered output, checked against the model's metadata: the same rank (where
/// the metadata gives one), the fixed axes equal, the batch axis at most `batch`.
fn answered_shape(shape: &[i64], info: &TensorInfo, batch: usize) -> Result<Vec<usize>, String> {
    let shape: Vec<usize> = shape
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| "a negative size".to_string()))
        .collect::<Result<_, _>>()?;
    if info.dims.is_empty() {
        return Ok(shape);
    }
    if shape.len() != info.dims.len() {
        return Err(format!("the model's metadata says {info}"));
    }
    for (axis, (&d, &declared)) in shape.iter().zip(&info.dims).enumerate() {
        match declared {
            Some(declared) if declared != d => {
                return Err(format!("the model's metadata says {info}"));
            }
            None if axis == 0 && d > batch => {
                return Err(format!(
                    "a batch of {d}, but at most {batch} frames were sent"
                ));
            }
            _ => {}
        }
    }
    Ok(shape)
}

impl RemoteEngine for KserveEngine {
    fn submit(&mut self, input: InputData<'_>, shape: &[usize]) -> Result<RemoteCall, EngineError> {
        let request = self.request(input, shape);
        let (answer, receiver) = mpsc::channel();
        let task = call(
            self.client.clone(),
            request,
            self.outputs.clone(),
            self.options.policy,
            self.health.clone(),
        );
        let runtime = self
            .runtime
            .as_ref()
            .expect("the runtime lives as long as the engine");
        let handle = runtime.spawn(async move {
            // The receiver is gone when the call was abandoned.
            let _ = answer.send(task.await);
        });
        let abort = handle.abort_handle();
        Ok(RemoteCall::new(
            receiver,
            move || abort.abort(),
            self.health.clone(),
        ))
    }

    fn health(&self) -> &Arc<Health> {
        &self.health
    }

    fn server(&self) -> &str {
        &self.options.connection.url
    }
}

impl Engine for KserveEngine {
    fn description(&self) -> &EngineDescription {
        &self.description
    }

    fn remote(&mut self) -> Option<&mut dyn RemoteEngine> {
        Some(self)
    }

    fn run(
        &mut self,
        input: InputData<'_>,
        shape: &[usize],
        outputs: &mut Vec<OutputTensor>,
    ) -> Result<(), EngineError> {
        *outputs = self.submit(input, shape)?.wait()?;
        Ok(())
    }
}

impl Drop for KserveEngine {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Calls still retrying are abandoned; the drop may run on any thread.
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(name: &str, datatype: &str, shape: Vec<i64>) -> proto::InferTensor {
        proto::InferTensor {
            name: name.into(),
            datatype: datatype.into(),
            shape,
            ..Default::default()
        }
    }

    fn info(name: &str) -> TensorInfo {
        TensorInfo {
            name: name.into(),
            element_type: ElementType::F32,
            dims: Vec::new(),
        }
    }

    fn info_of(name: &str, dims: &[Option<usize>]) -> TensorInfo {
        TensorInfo {
            dims: dims.to_vec(),
            ..info(name)
        }
    }

    #[test]
    fn declared_shapes_are_bounded_by_the_metadata_and_the_data() {
        // A shape whose product is 10^12 values, with four bytes of data: refused without
        // taking memory for it.
        let huge = proto::ModelInferResponse {
            outputs: vec![output("a", "FP32", vec![1, 1_000_000_000_000])],
            raw_output_contents: vec![1f32.to_le_bytes().to_vec()],
            ..Default::default()
        };
        let e = convert(huge.clone(), &[info("a")], 1).unwrap_err();
        assert!(e.contains("came with 1 elements"), "{e}");
        let e = convert(huge, &[info_of("a", &[None, Some(2)])], 1).unwrap_err();
        assert!(e.contains("the model's metadata says a f32[?,2]"), "{e}");
        let overflow = proto::ModelInferResponse {
            outputs: vec![output("a", "FP32", vec![1 << 40, 1 << 40])],
            raw_output_contents: vec![Vec::new()],
            ..Default::default()
        };
        let e = convert(overflow, &[info("a")], 1).unwrap_err();
        assert!(e.contains("has shape"), "{e}");
        let batch = proto::ModelInferResponse {
            outputs: vec![output("a", "FP32", vec![3, 1])],
            raw_output_contents: vec![vec![0; 12]],
            ..Default::default()
        };
        let e = convert(batch, &[info_of("a", &[None, Some(1)])], 2).unwrap_err();
        assert!(e.contains("a batch of 3, but at most 2 frames"), "{e}");
        let negative = proto::ModelInferResponse {
            outputs: vec![output("a", "FP32", vec![-1])],
            raw_output_contents: vec![Vec::new()],
            ..Default::default()
        };
        let e = convert(negative, &[info("a")], 1).unwrap_err();
        assert!(e.contains("a negative size"), "{e}");
    }

    #[test]
    fn nan_answers_are_errors_not_empty_results() {
        let nan = proto::ModelInferResponse {
            outputs: vec![output("scores", "FP32", vec![1, 2])],
            raw_output_contents: vec![[f32::NAN.to_le_bytes(), 0.5f32.to_le_bytes()].concat()],
            ..Default::default()
        };
        let e = convert(nan, &[info("scores")], 1).unwrap_err();
        assert!(e.contains("output scores holds 1 NaN values of 2"), "{e}");
    }

    #[test]
    fn the_automatic_answer_limit_follows_the_metadata() {
        let small = [info_of("boxes", &[None, Some(100), Some(4)])];
        assert_eq!(auto_message_limit(&small, 8), MIN_AUTO_MESSAGE_LIMIT);
        let big = [info_of("masks", &[None, Some(100), Some(160), Some(160)])];
        // 8 frames x 2,560,000 values x 8 bytes x 4.
        assert_eq!(auto_message_limit(&big, 8), 8 * 2_560_000 * 8 * 4);
        let open = [info_of("rows", &[None, None, Some(6)])];
        assert_eq!(auto_message_limit(&open, 1), OPEN_AUTO_MESSAGE_LIMIT);
    }

    #[test]
    fn outputs_are_taken_by_name_from_raw_or_typed_contents() {
        let raw = proto::ModelInferResponse {
            outputs: vec![
                output("b", "INT64", vec![1, 1]),
                output("a", "FP32", vec![1, 2]),
            ],
            raw_output_contents: vec![
                7i64.to_le_bytes().to_vec(),
                [1.5f32.to_le_bytes(), (-2f32).to_le_bytes()].concat(),
            ],
            ..Default::default()
        };
        let t = convert(raw, &[info("a"), info("b")], 1).unwrap();
        assert_eq!(
            (t[0].name.as_str(), &t[0].data[..]),
            ("a", &[1.5, -2.0][..])
        );
        assert_eq!(
            (t[1].shape.as_slice(), &t[1].data[..]),
            (&[1, 1][..], &[7.0][..])
        );

        let mut typed = output("a", "FP32", vec![2]);
        typed.contents = Some(proto::InferTensorContents {
            fp32_contents: vec![3.0, 4.0],
            ..Default::default()
        });
        let response = proto::ModelInferResponse {
            outputs: vec![typed],
            ..Default::default()
        };
        assert_eq!(
            convert(response, &[info("a")], 1).unwrap()[0].data,
            vec![3.0, 4.0]
        );
    }

    #[test]
    fn answers_that_do_not_fit_are_errors() {
        let missing = proto::ModelInferResponse {
            outputs: vec![output("a", "FP32", vec![1])],
            raw_output_contents: vec![1f32.to_le_bytes().to_vec()],
            ..Default::default()
        };
        let e = convert(missing, &[info("scores")], 1).unwrap_err();
        assert!(e.contains("no output scores"), "{e}");
        let short = proto::ModelInferResponse {
            outputs: vec![output("a", "FP32", vec![3])],
            raw_output_contents: vec![1f32.to_le_bytes().to_vec()],
            ..Default::default()
        };
        let e = convert(short, &[info("a")], 1).unwrap_err();
        assert!(e.contains("came with 1 elements"), "{e}");
        let text = proto::ModelInferResponse {
            outputs: vec![output("a", "BYTES", vec![1])],
            ..Default::default()
        };
        assert!(
            convert(text, &[info("a")], 1)
                .unwrap_err()
                .contains("not a number")
        );
    }

    #[test]
    fn a_server_that_is_not_there_is_a_clear_error_within_the_timeout() {
        // A port nothing listens on: bind one, then close it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let started = Instant::now();
        let e = KserveEngine::open(KserveOptions {
            connection: Connection {
                url: format!("127.0.0.1:{port}"),
                timeout: Duration::from_millis(500),
                ..Default::default()
            },
            model_name: "m".into(),
            model_version: String::new(),
            policy: FailurePolicy::Drop,
            max_message_bytes: None,
            batch: 1,
        })
        .err()
        .unwrap()
        .to_string();
        assert!(
            e.contains(&format!("127.0.0.1:{port} does not answer")),
            "{e}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
