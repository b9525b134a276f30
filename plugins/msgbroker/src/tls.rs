// SPDX-License-Identifier: MIT OR Apache-2.0
//! TLS material from files, read and checked at start so a bad file is a start error naming it.
//!
//! MQTT, AMQP and Redis use rustls (with the ring provider); Kafka uses librdkafka's OpenSSL,
//! which reads the same files itself.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Where the system's CA bundle is looked for when no CA file is set.
const SYSTEM_CA_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
];

/// TLS settings, with the files' contents.
#[derive(Clone, Default)]
pub struct TlsMaterial {
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// PEM contents of the CA file (or of the system bundle when none is set).
    pub ca_pem: Vec<u8>,
    pub cert_pem: Option<Vec<u8>>,
    pub key_pem: Option<Vec<u8>>,
}

fn read(what: &str, path: &Path) -> Result<Vec<u8>, String> {
    ferrostream_core::files::read(path, ferrostream_core::files::MAX_ASSET_FILE_BYTES)
        .map_err(|e| format!("cannot read the TLS {what} file {e}"))
}

impl TlsMaterial {
    /// Reads and checks the files.
    pub fn load(
        ca_file: Option<&Path>,
        cert_file: Option<&Path>,
        key_file: Option<&Path>,
    ) -> Result<Self, String> {
        if cert_file.is_some() != key_file.is_some() {
            return Err(
                "a TLS client certificate needs both tls-cert-file and tls-key-file".into(),
            );
        }
        let ca_pem = match ca_file {
            Some(path) => read("CA", path)?,
            None => SYSTEM_CA_BUNDLES
                .iter()
                .find_map(|p| std::fs::read(p).ok())
                .unwrap_or_default(),
        };
        let cert_pem = cert_file.map(|p| read("certificate", p)).transpose()?;
        let key_pem = key_file.map(|p| read("key", p)).transpose()?;
        let material = Self {
            ca_file: ca_file.map(Path::to_owned),
            cert_file: cert_file.map(Path::to_owned),
            key_file: key_file.map(Path::to_owned),
            ca_pem,
            cert_pem,
            key_pem,
        };
        // Parse once now, so that a file with no PEM content is a start error.
        material.rustls_config()?;
        Ok(material)
    }

    fn ca_name(&self) -> String {
        self.ca_file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "the system CA bundle".into())
    }

    /// A rustls client configuration trusting the CA file and presenting the client
    /// certificate, if any.
    pub fn rustls_config(&self) -> Result<Arc<rustls::ClientConfig>, String> {
        let mut roots = rustls::RootCertStore::empty();
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&self.ca_pem)
            .collect::<Result<_, _>>()
            .map_err(|e| format!("bad PEM in {}: {e}", self.ca_name()))?;
        let (added, _) = roots.add_parsable_certificates(certs);
        if added == 0 {
            return Err(format!("no usable CA certificate in {}", self.ca_name()));
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS setup: {e}"))?
            .with_root_certificates(roots);
        let config = match (&self.cert_pem, &self.key_pem) {
            (Some(cert), Some(key)) => {
                let cert_name = self.cert_file.as_deref().unwrap_or(Path::new("")).display();
                let key_name = self.key_file.as_deref().unwrap_or(Path::new("")).display();
                let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert)
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("bad PEM in {cert_name}: {e}"))?;
                if chain.is_empty() {
                    return Err(format!("no certificate in {cert_name}"));
                }
                let key = PrivateKeyDer::from_pem_slice(key)
                    .map_err(|e| format!("no usable private key in {key_name}: {e}"))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| format!("client certificate {cert_name} / key {key_name}: {e}"))?
            }
            _ => builder.with_no_client_auth(),
        };
        Ok(Arc::new(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_empty_files_are_named() {
        let missing = Path::new("/nonexistent/ca.pem");
        let err = TlsMaterial::load(Some(missing), None, None).err().unwrap();
        assert!(err.contains("/nonexistent/ca.pem"), "{err}");
        let dir = std::env::temp_dir().join(format!("ferrostream-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate").unwrap();
        let err = TlsMaterial::load(Some(&empty), None, None).err().unwrap();
        assert!(
            err.contains("no usable CA certificate") && err.contains("empty.pem"),
            "{err}"
        );
        let err = TlsMaterial::load(None, Some(&empty), None).err().unwrap();
        assert!(err.contains("both"), "{err}");
    }
}
