// SPDX-License-Identifier: MIT OR Apache-2.0
//! MQTT 3.1.1 through `rumqttc`: QoS 1 publishes, acknowledged by the broker's PUBACK.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use rumqttc::{
    AsyncClient, ConnectReturnCode, Event, MqttOptions, Outgoing, Packet, QoS, TlsConfiguration,
    Transport,
};
use tokio::sync::mpsc;

use super::{Link, TransportConfig, WINDOW, idle};

/// Largest message the client sends or takes (frames with many objects are large).
const MAX_PACKET: usize = 16 * 1024 * 1024;

pub async fn session(config: &TransportConfig, link: &Link) -> Result<(), String> {
    let host = config.endpoint.host();
    let mut options = MqttOptions::new(&config.client_id, &host.host, host.port);
    options
        .set_keep_alive(Duration::from_secs(5))
        .set_clean_session(true)
        .set_inflight(WINDOW as u16)
        .set_max_packet_size(MAX_PACKET, MAX_PACKET);
    if let Some(user) = &config.username {
        options.set_credentials(user, config.password.clone().unwrap_or_default());
    }
    if let Some(tls) = &config.tls {
        options.set_transport(Transport::tls_with_config(TlsConfiguration::Rustls(
            tls.rustls_config()?,
        )));
    }
    let (client, mut eventloop) = AsyncClient::new(options, WINDOW + 8);
    eventloop
        .network_options
        .set_connection_timeout(config.connect_timeout.as_secs().max(1));

    // The event loop runs in a task of its own (its poll must not be cancelled half-way); its
    // events come through a channel, and the task ends with the first error.
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let poller = tokio::spawn(async move {
        loop {
            let event = eventloop.poll().await;
            let failed = event.is_err();
            if events_tx.send(event).is_err() || failed {
                break;
            }
        }
    });
    let _stop_poller = AbortOnDrop(poller);

    let handshake = async {
        loop {
            match events.recv().await {
                Some(Ok(Event::Incoming(Packet::ConnAck(ack)))) => {
                    return if ack.code == ConnectReturnCode::Success {
                        Ok(())
                    } else {
                        Err(format!("the broker refused the connection: {:?}", ack.code))
                    };
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(format!("cannot connect: {e}")),
                None => return Err("the MQTT event loop stopped".into()),
            }
        }
    };
    tokio::time::timeout(config.connect_timeout, handshake)
        .await
        .map_err(|_| format!("no answer within {:?}", config.connect_timeout))??;
    link.mark_connected();

    // Publishes are numbered by the client as it sends them, in order: the queue's sequence
    // numbers wait in `unnumbered` until their packet id comes back.
    let mut unnumbered: VecDeque<u64> = VecDeque::new();
    let mut by_packet_id: HashMap<u16, u64> = HashMap::new();
    loop {
        while let Some((seq, message)) = link.next_message(WINDOW) {
            client
                .try_publish(
                    message.topic.as_str(),
                    QoS::AtLeastOnce,
                    false,
                    message.body.clone(),
                )
                .map_err(|e| format!("cannot publish: {e}"))?;
            unnumbered.push_back(seq);
        }
        tokio::select! {
            event = events.recv() => match event {
                Some(Ok(Event::Outgoing(Outgoing::Publish(pkid)))) => {
                    if let Some(seq) = unnumbered.pop_front() {
                        by_packet_id.insert(pkid, seq);
                    }
                }
                Some(Ok(Event::Incoming(Packet::PubAck(ack)))) => {
                    if let Some(seq) = by_packet_id.remove(&ack.pkid) {
                        link.acknowledge(seq);
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(format!("connection lost: {e}")),
                None => return Err("the MQTT event loop stopped".into()),
            },
            _ = idle(link, Duration::from_secs(1)) => {}
        }
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
