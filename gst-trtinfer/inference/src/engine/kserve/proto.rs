// SPDX-License-Identifier: MIT OR Apache-2.0
//! The messages of the KServe v2 ("Open Inference Protocol") gRPC service
//! `inference.GRPCInferenceService` that the client uses, with the field numbers of the
//! protocol's public definition (`grpc_predict_v2.proto`). Triton Inference Server, KServe,
//! MLServer and Seldon speak it; Triton's extra parameter kinds are accepted and ignored.

use std::collections::HashMap;

/// The gRPC service's path prefix.
pub const SERVICE: &str = "/inference.GRPCInferenceService";

#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerLiveRequest {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerLiveResponse {
    #[prost(bool, tag = "1")]
    pub live: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerMetadataRequest {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerMetadataResponse {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
    #[prost(string, repeated, tag = "3")]
    pub extensions: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelReadyRequest {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelReadyResponse {
    #[prost(bool, tag = "1")]
    pub ready: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelMetadataRequest {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorMetadata {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub datatype: String,
    /// -1 marks a variable dimension.
    #[prost(int64, repeated, tag = "3")]
    pub shape: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelMetadataResponse {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, repeated, tag = "2")]
    pub versions: Vec<String>,
    #[prost(string, tag = "3")]
    pub platform: String,
    #[prost(message, repeated, tag = "4")]
    pub inputs: Vec<TensorMetadata>,
    #[prost(message, repeated, tag = "5")]
    pub outputs: Vec<TensorMetadata>,
}

/// A request or response parameter (Triton adds tags 4 and 5: double and uint64).
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferParameter {
    #[prost(oneof = "ParameterChoice", tags = "1, 2, 3, 4, 5")]
    pub choice: Option<ParameterChoice>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum ParameterChoice {
    #[prost(bool, tag = "1")]
    Bool(bool),
    #[prost(int64, tag = "2")]
    Int64(i64),
    #[prost(string, tag = "3")]
    String(String),
    #[prost(double, tag = "4")]
    Double(f64),
    #[prost(uint64, tag = "5")]
    Uint64(u64),
}

/// Tensor elements as typed lists, for servers that do not answer in raw bytes.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferTensorContents {
    #[prost(bool, repeated, tag = "1")]
    pub bool_contents: Vec<bool>,
    #[prost(int32, repeated, tag = "2")]
    pub int_contents: Vec<i32>,
    #[prost(int64, repeated, tag = "3")]
    pub int64_contents: Vec<i64>,
    #[prost(uint32, repeated, tag = "4")]
    pub uint_contents: Vec<u32>,
    #[prost(uint64, repeated, tag = "5")]
    pub uint64_contents: Vec<u64>,
    #[prost(float, repeated, tag = "6")]
    pub fp32_contents: Vec<f32>,
    #[prost(double, repeated, tag = "7")]
    pub fp64_contents: Vec<f64>,
    #[prost(bytes = "vec", repeated, tag = "8")]
    pub bytes_contents: Vec<Vec<u8>>,
}

/// A tensor with its elements: the protocol's `ModelInferRequest.InferInputTensor` and
/// `ModelInferResponse.InferOutputTensor`, which have the same fields and numbers.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferTensor {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub datatype: String,
    #[prost(int64, repeated, tag = "3")]
    pub shape: Vec<i64>,
    #[prost(map = "string, message", tag = "4")]
    pub parameters: HashMap<String, InferParameter>,
    #[prost(message, optional, tag = "5")]
    pub contents: Option<InferTensorContents>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct InferRequestedOutputTensor {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(map = "string, message", tag = "2")]
    pub parameters: HashMap<String, InferParameter>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelInferRequest {
    #[prost(string, tag = "1")]
    pub model_name: String,
    #[prost(string, tag = "2")]
    pub model_version: String,
    #[prost(string, tag = "3")]
    pub id: String,
    #[prost(map = "string, message", tag = "4")]
    pub parameters: HashMap<String, InferParameter>,
    #[prost(message, repeated, tag = "5")]
    pub inputs: Vec<InferTensor>,
    #[prost(message, repeated, tag = "6")]
    pub outputs: Vec<InferRequestedOutputTensor>,
    /// One entry per input, in order, when the inputs' `contents` are empty.
    #[prost(bytes = "bytes", repeated, tag = "7")]
    pub raw_input_contents: Vec<bytes::Bytes>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelInferResponse {
    #[prost(string, tag = "1")]
    pub model_name: String,
    #[prost(string, tag = "2")]
    pub model_version: String,
    #[prost(string, tag = "3")]
    pub id: String,
    #[prost(map = "string, message", tag = "4")]
    pub parameters: HashMap<String, InferParameter>,
    #[prost(message, repeated, tag = "5")]
    pub outputs: Vec<InferTensor>,
    /// One entry per output, in order, when the outputs' `contents` are empty.
    #[prost(bytes = "vec", repeated, tag = "6")]
    pub raw_output_contents: Vec<Vec<u8>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    /// Bytes as the protocol's reference definition encodes them (field numbers and wire
    /// types), so a renumbered field fails here rather than against a server.
    #[test]
    fn wire_format_follows_the_protocol_definition() {
        let request = ModelInferRequest {
            model_name: "m".into(),
            inputs: vec![InferTensor {
                name: "x".into(),
                datatype: "UINT8".into(),
                shape: vec![1, 2],
                ..Default::default()
            }],
            raw_input_contents: vec![bytes::Bytes::from_static(&[7, 9])],
            ..Default::default()
        };
        let bytes = request.encode_to_vec();
        // 1:"m", 5:{1:"x", 2:"UINT8", 3:[1,2] packed}, 7:[7,9]
        let expected: Vec<u8> = [
            &[0x0a, 1, b'm'][..],
            &[0x2a, 14, 0x0a, 1, b'x', 0x12, 5],
            b"UINT8",
            &[0x1a, 2, 1, 2],
            &[0x3a, 2, 7, 9],
        ]
        .concat();
        assert_eq!(bytes, expected);

        let response = ModelInferResponse {
            outputs: vec![InferTensor {
                name: "y".into(),
                datatype: "FP32".into(),
                shape: vec![-1],
                contents: Some(InferTensorContents {
                    fp32_contents: vec![1.5],
                    ..Default::default()
                }),
                ..Default::default()
            }],
            raw_output_contents: vec![vec![1, 2]],
            ..Default::default()
        };
        let decoded = ModelInferResponse::decode(response.encode_to_vec().as_slice()).unwrap();
        assert_eq!(decoded, response);
        let parameter = InferParameter {
            choice: Some(ParameterChoice::Int64(3)),
        };
        assert_eq!(parameter.encode_to_vec(), vec![0x10, 3]);
    }
}
