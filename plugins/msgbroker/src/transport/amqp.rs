// SPDX-License-Identifier: MIT OR Apache-2.0
//! AMQP 0-9-1 through `lapin`: persistent messages published to an exchange (the topic is the
//! routing key) on a channel in confirm mode; a message is acknowledged by its publisher
//! confirm. A negative confirm ends the session, and the message is sent again.

use std::time::Duration;

use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::tcp::{OwnedIdentity, OwnedTLSConfig};
use lapin::{BasicProperties, Confirmation, Connection, ConnectionProperties};
use tokio::task::JoinSet;

use super::{Link, TransportConfig, WINDOW, idle, url_encode};

/// AMQP delivery mode of messages the broker keeps on disk.
const PERSISTENT: u8 = 2;

fn uri(config: &TransportConfig) -> String {
    let scheme = if config.tls.is_some() {
        "amqps"
    } else {
        "amqp"
    };
    let auth = match (&config.username, &config.password) {
        (Some(u), p) => format!(
            "{}:{}@",
            url_encode(u),
            url_encode(p.as_deref().unwrap_or_default())
        ),
        _ => String::new(),
    };
    // No path means the default virtual host `/`.
    let vhost = if config.endpoint.path.is_empty() {
        "%2f".to_string()
    } else {
        config.endpoint.path.clone()
    };
    format!("{scheme}://{auth}{}/{vhost}", config.endpoint.host())
}

fn tls_config(config: &TransportConfig) -> OwnedTLSConfig {
    let Some(tls) = &config.tls else {
        return OwnedTLSConfig::default();
    };
    OwnedTLSConfig {
        identity: match (&tls.cert_pem, &tls.key_pem) {
            (Some(cert), Some(key)) => Some(OwnedIdentity::PKCS8 {
                pem: cert.clone(),
                key: key.clone(),
            }),
            _ => None,
        },
        cert_chain: Some(String::from_utf8_lossy(&tls.ca_pem).into_owned()),
    }
}

pub async fn session(config: &TransportConfig, link: &Link) -> Result<(), String> {
    let runtime = lapin::runtime::default_runtime()
        .map_err(|e| format!("no async runtime for the AMQP client: {e}"))?;
    let connect = async {
        let connection = Connection::connect_with_config(
            &uri(config),
            ConnectionProperties::default(),
            tls_config(config),
            runtime,
        )
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
        let channel = connection
            .create_channel()
            .await
            .map_err(|e| format!("cannot open a channel: {e}"))?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .map_err(|e| format!("the broker refused publisher confirms: {e}"))?;
        Ok::<_, String>((connection, channel))
    };
    let (connection, channel) = tokio::time::timeout(config.connect_timeout, connect)
        .await
        .map_err(|_| format!("no answer within {:?}", config.connect_timeout))??;
    link.mark_connected();

    let mut confirms = JoinSet::new();
    loop {
        while confirms.len() < WINDOW {
            let Some((seq, message)) = link.next_message(WINDOW) else {
                break;
            };
            let properties = BasicProperties::default()
                .with_message_id(message.id.as_str().into())
                .with_content_type("application/json".into())
                .with_delivery_mode(PERSISTENT);
            let confirm = channel
                .basic_publish(
                    config.exchange.as_str().into(),
                    message.topic.as_str().into(),
                    BasicPublishOptions::default(),
                    &message.body,
                    properties,
                )
                .await
                .map_err(|e| format!("cannot publish: {e}"))?;
            confirms.spawn(async move { (seq, confirm.await) });
        }
        tokio::select! {
            Some(done) = confirms.join_next() => match done {
                Ok((seq, Ok(Confirmation::Ack(_)))) => link.acknowledge(seq),
                Ok((_, Ok(Confirmation::Nack(_)))) => {
                    return Err("the broker refused a message (negative confirm)".into());
                }
                Ok((_, Ok(Confirmation::NotRequested))) => {
                    return Err("the channel is not in confirm mode".into());
                }
                Ok((_, Err(e))) => return Err(format!("connection lost: {e}")),
                Err(e) => return Err(format!("waiting for a confirm failed: {e}")),
            },
            _ = idle(link, Duration::from_millis(250)) => {
                if !connection.status().connected() {
                    return Err("connection lost".into());
                }
            }
        }
    }
}
