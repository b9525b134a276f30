// SPDX-License-Identifier: MIT OR Apache-2.0
//! Kafka through `rdkafka` (librdkafka, linked from the system): each message is produced with
//! `acks=all` and acknowledged by its delivery report. A failed delivery ends the session (a new
//! producer sends the unacknowledged messages again). TLS and SASL/PLAIN are librdkafka's own
//! (OpenSSL), configured from the same properties.

use std::time::Duration;

use rdkafka::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use tokio::task::JoinSet;

use super::{Link, TransportConfig, WINDOW, idle};

/// How long librdkafka tries to deliver one message before reporting it failed.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);

fn client_config(config: &TransportConfig) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", config.endpoint.host_list())
        .set("client.id", &config.client_id)
        .set("acks", "all")
        .set("linger.ms", "5")
        .set(
            "message.timeout.ms",
            DELIVERY_TIMEOUT.as_millis().to_string(),
        )
        .set(
            "socket.connection.setup.timeout.ms",
            config.connect_timeout.as_millis().max(1000).to_string(),
        )
        .set("reconnect.backoff.ms", "100")
        .set("reconnect.backoff.max.ms", "2000");
    let tls = config.tls.as_ref();
    let protocol = match (tls.is_some(), config.username.is_some()) {
        (false, false) => "plaintext",
        (true, false) => "ssl",
        (false, true) => "sasl_plaintext",
        (true, true) => "sasl_ssl",
    };
    c.set("security.protocol", protocol);
    if let Some(user) = &config.username {
        c.set("sasl.mechanism", "PLAIN")
            .set("sasl.username", user)
            .set("sasl.password", config.password.clone().unwrap_or_default());
    }
    if let Some(tls) = tls {
        if let Some(ca) = &tls.ca_file {
            c.set("ssl.ca.location", ca.display().to_string());
        }
        if let (Some(cert), Some(key)) = (&tls.cert_file, &tls.key_file) {
            c.set("ssl.certificate.location", cert.display().to_string())
                .set("ssl.key.location", key.display().to_string());
        }
    }
    c
}

/// Creates a producer once, without connecting, so that a configuration librdkafka refuses is
/// a start error.
pub fn validate(config: &TransportConfig) -> Result<(), String> {
    client_config(config)
        .create::<FutureProducer>()
        .map(drop)
        .map_err(|e| format!("librdkafka refused the configuration: {e}"))
}

pub async fn session(config: &TransportConfig, link: &Link) -> Result<(), String> {
    let producer: FutureProducer = client_config(config)
        .create()
        .map_err(|e| format!("cannot create the producer: {e}"))?;
    // librdkafka connects on its own; asking for the cluster's metadata tells whether it can.
    let probe = producer.clone();
    let timeout = config.connect_timeout;
    tokio::task::spawn_blocking(move || probe.client().fetch_metadata(None, timeout))
        .await
        .map_err(|e| format!("metadata request failed: {e}"))?
        .map_err(|e| format!("cannot connect: {e}"))?;
    link.mark_connected();

    let mut deliveries = JoinSet::new();
    loop {
        while deliveries.len() < WINDOW {
            let Some((seq, message)) = link.next_message(WINDOW) else {
                break;
            };
            // Keyed by source, so that one source's messages stay in order on one partition.
            let key = message.source_id.to_string();
            let record = FutureRecord::to(&message.topic)
                .payload(&message.body)
                .key(&key);
            let delivery = producer
                .send_result(record)
                .map_err(|(e, _)| format!("cannot produce: {e}"))?;
            deliveries.spawn(async move { (seq, delivery.await) });
        }
        tokio::select! {
            Some(done) = deliveries.join_next() => match done {
                Ok((seq, Ok(Ok(_)))) => link.acknowledge(seq),
                Ok((_, Ok(Err((e, _))))) => return Err(format!("delivery failed: {e}")),
                Ok((_, Err(_))) => return Err("the producer dropped a delivery report".into()),
                Err(e) => return Err(format!("waiting for a delivery report failed: {e}")),
            },
            _ = idle(link, Duration::from_secs(1)) => {}
        }
    }
}
