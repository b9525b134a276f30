// SPDX-License-Identifier: MIT OR Apache-2.0
//! The gRPC connection to a KServe v2 server: one HTTP/2 channel that reconnects by itself,
//! the headers and deadline of every call, and which failures are worth retrying.

use std::path::PathBuf;
use std::time::Duration;

use tonic::Code;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use super::proto;
use crate::engine::remote::RemoteError;

/// Where the server is and how to talk to it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Connection {
    /// `host:port`, `http://host:port`, `grpc://host:port`; `https://` or `grpcs://` for TLS.
    pub url: String,
    /// Each call's deadline.
    pub timeout: Duration,
    /// Sent with every call (e.g. `authorization`).
    pub headers: Vec<(String, String)>,
    /// TLS: the CA that signed the server's certificate (else the public web roots).
    pub ca_file: Option<PathBuf>,
    /// TLS client certificate and key (PEM), for servers that ask for one.
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
}

impl Connection {
    /// The URL with an `http`/`https` scheme, and whether it asks for TLS.
    fn endpoint_url(&self) -> Result<(String, bool), String> {
        let url = self.url.trim();
        let (tls, rest) = match url.split_once("://") {
            None => (false, url),
            Some(("http" | "grpc", rest)) => (false, rest),
            Some(("https" | "grpcs", rest)) => (true, rest),
            Some((scheme, _)) => {
                return Err(format!(
                    "server-url {url}: unknown scheme {scheme}:// (use http://, https://, \
                     grpc:// or grpcs://)"
                ));
            }
        };
        if rest.is_empty() || rest.starts_with(':') || rest.contains(char::is_whitespace) {
            return Err(format!("server-url {url:?} names no host"));
        }
        let scheme = if tls { "https" } else { "http" };
        Ok((format!("{scheme}://{rest}"), tls))
    }

    fn metadata(&self) -> Result<MetadataMap, String> {
        let mut map = MetadataMap::new();
        for (key, value) in &self.headers {
            let name = MetadataKey::from_bytes(key.to_ascii_lowercase().as_bytes())
                .map_err(|_| format!("server-headers: {key:?} is not a valid header name"))?;
            let value = MetadataValue::try_from(value.as_str())
                .map_err(|_| format!("server-headers: the value of {key} is not valid text"))?;
            map.insert(name, value);
        }
        Ok(map)
    }

    fn tls(&self) -> Result<ClientTlsConfig, String> {
        let read = |what: &str, path: &PathBuf| {
            ferrostream_core::files::read(path, ferrostream_core::files::MAX_ASSET_FILE_BYTES)
                .map_err(|e| format!("{what} {e}"))
        };
        let mut tls = ClientTlsConfig::new();
        tls = match &self.ca_file {
            Some(ca) => tls.ca_certificate(Certificate::from_pem(read("server-ca-file", ca)?)),
            None => tls.with_webpki_roots(),
        };
        match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => {
                tls = tls.identity(Identity::from_pem(
                    read("server-cert-file", cert)?,
                    read("server-key-file", key)?,
                ));
            }
            (None, None) => {}
            _ => {
                return Err(
                    "server-cert-file and server-key-file go together: set both or neither".into(),
                );
            }
        }
        Ok(tls)
    }

    /// A client whose channel connects on first use and reconnects after failures, accepting
    /// answers of up to `message_limit` bytes. Must be called within a Tokio runtime.
    pub fn client(&self, message_limit: usize) -> Result<Client, String> {
        let (url, tls) = self.endpoint_url()?;
        if !tls && (self.ca_file.is_some() || self.cert_file.is_some()) {
            return Err(format!(
                "server-url {} is not TLS but TLS files are set: use https:// or grpcs://",
                self.url
            ));
        }
        let mut endpoint = Endpoint::from_shared(url.clone())
            .map_err(|e| format!("server-url {}: {e}", self.url))?
            .connect_timeout(self.timeout)
            .timeout(self.timeout)
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(10))
            .keep_alive_timeout(self.timeout)
            .keep_alive_while_idle(true);
        if tls {
            endpoint = endpoint
                .tls_config(self.tls()?)
                .map_err(|e| format!("TLS for {}: {}", self.url, with_causes(&e)))?;
        }
        let channel = endpoint.connect_lazy();
        Ok(Client {
            grpc: tonic::client::Grpc::new(channel)
                .max_decoding_message_size(message_limit)
                .max_encoding_message_size(usize::MAX),
            headers: self.metadata()?,
            timeout: self.timeout,
            message_limit,
        })
    }
}

/// `e` and the errors that caused it, as one line (a cause whose text is already there, as
/// transport errors repeat theirs, is not added again).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(&format!(": {cause_text}"));
        }
        source = cause.source();
    }
    text
}

/// A cheap-to-clone handle for calls on one channel.
#[derive(Clone)]
pub struct Client {
    grpc: tonic::client::Grpc<Channel>,
    headers: MetadataMap,
    timeout: Duration,
    /// The largest answer accepted, in bytes.
    message_limit: usize,
}

impl Client {
    /// The same channel, accepting answers of up to `limit` bytes.
    pub fn with_message_limit(self, limit: usize) -> Client {
        Client {
            grpc: self.grpc.max_decoding_message_size(limit),
            message_limit: limit,
            ..self
        }
    }

    async fn unary<Req, Resp>(
        &mut self,
        method: &'static str,
        message: Req,
    ) -> Result<Resp, Failure>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let call = async {
            self.grpc
                .ready()
                .await
                .map_err(|e| tonic::Status::unavailable(format!("not connected: {e}")))?;
            let mut request = tonic::Request::new(message);
            *request.metadata_mut() = self.headers.clone();
            request.set_timeout(self.timeout);
            let path = PathAndQuery::try_from(format!("{}/{method}", proto::SERVICE))
                .expect("a valid path");
            self.grpc
                .unary(request, path, tonic_prost::ProstCodec::default())
                .await
                .map(tonic::Response::into_inner)
        };
        match tokio::time::timeout(self.timeout, call).await {
            Ok(Err(status))
                if status.code() == Code::OutOfRange && status.message().contains("too large") =>
            {
                Err(Failure {
                    code: Code::OutOfRange,
                    retry: false,
                    message: format!(
                        "the server's answer is larger than the {} MiB accepted \
                         (server-max-message-mib): {}",
                        self.message_limit >> 20,
                        status.message()
                    ),
                })
            }
            Ok(result) => result.map_err(Failure::from),
            Err(_) => Err(Failure {
                code: Code::DeadlineExceeded,
                retry: true,
                message: format!("no answer within {} ms", self.timeout.as_millis()),
            }),
        }
    }

    pub async fn model_metadata(
        &mut self,
        name: &str,
        version: &str,
    ) -> Result<proto::ModelMetadataResponse, Failure> {
        let request = proto::ModelMetadataRequest {
            name: name.into(),
            version: version.into(),
        };
        self.unary("ModelMetadata", request).await
    }

    pub async fn model_ready(&mut self, name: &str, version: &str) -> Result<bool, Failure> {
        let request = proto::ModelReadyRequest {
            name: name.into(),
            version: version.into(),
        };
        let response: proto::ModelReadyResponse = self.unary("ModelReady", request).await?;
        Ok(response.ready)
    }

    pub async fn server_metadata(&mut self) -> Result<proto::ServerMetadataResponse, Failure> {
        self.unary("ServerMetadata", proto::ServerMetadataRequest {})
            .await
    }

    pub async fn infer(
        &mut self,
        request: proto::ModelInferRequest,
    ) -> Result<proto::ModelInferResponse, Failure> {
        self.unary("ModelInfer", request).await
    }
}

/// A failed call: its status code, why, and whether the server may answer a retry.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub code: Code,
    pub retry: bool,
    pub message: String,
}

impl From<tonic::Status> for Failure {
    fn from(status: tonic::Status) -> Self {
        // Unavailable and deadlines: the server is down, restarting or overloaded. NotFound:
        // the model is being (re)loaded. A broken connection (reset, closed mid-answer) is made
        // here, not sent by a server: it is Unknown with the local error as its source, while a
        // server's own Unknown comes without one and is not retried.
        let broken_connection =
            status.code() == Code::Unknown && std::error::Error::source(&status).is_some();
        let retry = broken_connection
            || matches!(
                status.code(),
                Code::Unavailable
                    | Code::DeadlineExceeded
                    | Code::Cancelled
                    | Code::ResourceExhausted
                    | Code::Aborted
                    | Code::NotFound
            );
        let mut message = format!("{:?}: {}", status.code(), status.message());
        if let Some(cause) = std::error::Error::source(&status) {
            let causes = with_causes(cause);
            if !message.contains(&causes) {
                message.push_str(&format!(": {causes}"));
            }
        }
        Failure {
            code: status.code(),
            retry,
            message,
        }
    }
}

impl From<Failure> for RemoteError {
    fn from(f: Failure) -> Self {
        if f.retry {
            RemoteError::Unavailable(f.message)
        } else {
            RemoteError::Failed(f.message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection(url: &str) -> Connection {
        Connection {
            url: url.into(),
            timeout: Duration::from_secs(1),
            ..Default::default()
        }
    }

    #[test]
    fn urls_and_their_schemes() {
        assert_eq!(
            connection("127.0.0.1:8001").endpoint_url().unwrap(),
            ("http://127.0.0.1:8001".into(), false)
        );
        assert_eq!(
            connection("grpcs://triton.example:443")
                .endpoint_url()
                .unwrap(),
            ("https://triton.example:443".into(), true)
        );
        let e = connection("ftp://x:1").endpoint_url().unwrap_err();
        assert!(e.contains("unknown scheme ftp://"), "{e}");
        assert!(connection("http://").endpoint_url().is_err());
        assert!(connection(":8001").endpoint_url().is_err());
    }

    #[test]
    fn headers_and_tls_files_are_checked() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _guard = rt.enter();
        let mut c = connection("127.0.0.1:1");
        c.headers = vec![("Authorization".into(), "Bearer abc".into())];
        assert!(c.client(1 << 20).is_ok());
        c.headers = vec![("bad header".into(), "x".into())];
        let e = c.client(1 << 20).err().unwrap();
        assert!(e.contains("not a valid header name"), "{e}");
        let mut c = connection("https://127.0.0.1:1");
        c.ca_file = Some("/nonexistent/ca.pem".into());
        let e = c.client(1 << 20).err().unwrap();
        assert!(e.contains("server-ca-file /nonexistent/ca.pem"), "{e}");
        let mut c = connection("127.0.0.1:1");
        c.ca_file = Some("/nonexistent/ca.pem".into());
        let e = c.client(1 << 20).err().unwrap();
        assert!(e.contains("is not TLS"), "{e}");
        let mut c = connection("https://127.0.0.1:1");
        c.cert_file = Some("/x.pem".into());
        let e = c.client(1 << 20).err().unwrap();
        assert!(e.contains("go together"), "{e}");
    }

    #[test]
    fn which_failures_are_retried() {
        for (code, retry) in [
            (Code::Unavailable, true),
            (Code::DeadlineExceeded, true),
            (Code::NotFound, true),
            (Code::InvalidArgument, false),
            (Code::Internal, false),
            (Code::Unimplemented, false),
        ] {
            let f = Failure::from(tonic::Status::new(code, "m"));
            assert_eq!(f.retry, retry, "{code:?}");
        }
        // A server's own Unknown is its answer; a connection that broke mid-answer is retried.
        assert!(!Failure::from(tonic::Status::new(Code::Unknown, "model raised")).retry);
        let reset = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "connection reset");
        let f = Failure::from(tonic::Status::from_error(Box::new(reset)));
        assert_eq!(f.code, Code::Unknown);
        assert!(f.retry, "{}", f.message);
        assert!(f.message.contains("connection reset"), "{}", f.message);
    }
}
