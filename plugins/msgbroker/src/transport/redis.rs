// SPDX-License-Identifier: MIT OR Apache-2.0
//! Redis Streams through `redis`: each message is one `XADD` entry (fields `message_id`,
//! `source_id`, `event`, `payload`), acknowledged by the entry id Redis replies with. Several
//! queued messages go in one pipeline.

use std::time::Duration;

use super::{Link, TransportConfig, WINDOW, idle, url_encode};

/// Longest wait for a reply before the connection is given up.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

fn client(config: &TransportConfig) -> Result<redis::Client, String> {
    let host = config.endpoint.host();
    let auth = match (&config.username, &config.password) {
        (Some(u), Some(p)) => format!("{}:{}@", url_encode(u), url_encode(p)),
        (None, Some(p)) => format!(":{}@", url_encode(p)),
        (Some(u), None) => format!("{}@", url_encode(u)),
        (None, None) => String::new(),
    };
    let db = if config.endpoint.path.is_empty() {
        String::new()
    } else {
        format!("/{}", config.endpoint.path)
    };
    match &config.tls {
        None => redis::Client::open(format!("redis://{auth}{host}{db}"))
            .map_err(|e| format!("bad Redis address: {e}")),
        Some(tls) => redis::Client::build_with_tls(
            format!("rediss://{auth}{host}{db}"),
            redis::TlsCertificates {
                client_tls: match (&tls.cert_pem, &tls.key_pem) {
                    (Some(cert), Some(key)) => Some(redis::ClientTlsConfig {
                        client_cert: cert.clone(),
                        client_key: key.clone(),
                    }),
                    _ => None,
                },
                root_cert: Some(tls.ca_pem.clone()),
            },
        )
        .map_err(|e| format!("Redis TLS setup: {e}")),
    }
}

pub async fn session(config: &TransportConfig, link: &Link) -> Result<(), String> {
    let client = client(config)?;
    let mut connection = tokio::time::timeout(
        config.connect_timeout,
        client.get_multiplexed_async_connection(),
    )
    .await
    .map_err(|_| format!("no answer within {:?}", config.connect_timeout))?
    .map_err(|e| format!("cannot connect: {e}"))?;
    link.mark_connected();
    loop {
        let batch: Vec<_> = std::iter::from_fn(|| link.next_message(WINDOW)).collect();
        if batch.is_empty() {
            idle(link, Duration::from_secs(1)).await;
            if link.queue.lock().unwrap().is_empty() {
                // Nothing to send for a while: make sure the connection still works.
                let ping = redis::cmd("PING");
                tokio::time::timeout(REPLY_TIMEOUT, ping.query_async::<String>(&mut connection))
                    .await
                    .map_err(|_| "no reply to PING".to_string())?
                    .map_err(|e| format!("connection lost: {e}"))?;
            }
            continue;
        }
        let mut pipe = redis::pipe();
        for (_, m) in &batch {
            let cmd = pipe.cmd("XADD").arg(&m.topic);
            if config.stream_max_length > 0 {
                cmd.arg("MAXLEN").arg("~").arg(config.stream_max_length);
            }
            cmd.arg("*")
                .arg("message_id")
                .arg(&m.id)
                .arg("source_id")
                .arg(m.source_id)
                .arg("event")
                .arg(m.kind.name())
                .arg("payload")
                .arg(&m.body);
        }
        let ids: Vec<String> =
            tokio::time::timeout(REPLY_TIMEOUT, pipe.query_async(&mut connection))
                .await
                .map_err(|_| format!("no reply to XADD within {REPLY_TIMEOUT:?}"))?
                .map_err(|e| format!("XADD failed: {e}"))?;
        if ids.len() != batch.len() {
            return Err(format!("{} replies to {} XADDs", ids.len(), batch.len()));
        }
        for (seq, _) in &batch {
            link.acknowledge(*seq);
        }
    }
}
