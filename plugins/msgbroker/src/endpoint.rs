// SPDX-License-Identifier: MIT OR Apache-2.0
//! The broker address: `host:port`, `host`, or a URL whose scheme names the protocol
//! (`mqtt://`, `mqtts://`, `amqp://`, `amqps://`, `redis://`, `rediss://`, `kafka://`); a
//! scheme ending in `s` turns TLS on. An AMQP URL's path is the virtual host, a Redis URL's the
//! database number. Kafka takes a comma-separated list of `host:port` bootstrap servers.

use std::fmt;

ferrostream_core::choice_enum! {
    /// The broker protocol.
    #[derive(Default)]
    pub enum Protocol: "GstRsMsgBrokerProtocol" {
        /// MQTT 3.1.1, QoS 1.
        #[default]
        Mqtt = 0 => ("mqtt", "MQTT 3.1.1 (QoS 1)"),
        /// AMQP 0-9-1 with publisher confirms.
        Amqp = 1 => ("amqp", "AMQP 0-9-1 (publisher confirms)"),
        /// Redis Streams (XADD).
        Redis = 2 => ("redis", "Redis Streams (XADD)"),
        /// Kafka (librdkafka).
        Kafka = 3 => ("kafka", "Kafka (librdkafka)"),
    }
}

impl Protocol {
    pub fn name(self) -> &'static str {
        ferrostream_core::settings::Choice::nick(self)
    }

    pub fn default_port(self, tls: bool) -> u16 {
        match (self, tls) {
            (Protocol::Mqtt, false) => 1883,
            (Protocol::Mqtt, true) => 8883,
            (Protocol::Amqp, false) => 5672,
            (Protocol::Amqp, true) => 5671,
            (Protocol::Redis, _) => 6379,
            (Protocol::Kafka, _) => 9092,
        }
    }
}

/// One broker host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPort {
    pub host: String,
    pub port: u16,
}

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// A parsed `server` property.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub protocol: Protocol,
    /// One host, or several for Kafka's bootstrap list.
    pub hosts: Vec<HostPort>,
    /// The URL asked for TLS (`mqtts://`, `amqps://`, `rediss://`).
    pub tls_scheme: bool,
    /// The URL's path without its leading `/` (AMQP virtual host, Redis database).
    pub path: String,
}

impl Endpoint {
    pub fn parse(protocol: Protocol, server: &str) -> Result<Self, String> {
        let server = server.trim();
        if server.is_empty() {
            return Err("the server address is empty".into());
        }
        let (tls_scheme, rest) = match server.split_once("://") {
            Some((scheme, rest)) => {
                let scheme = scheme.to_ascii_lowercase();
                let tls = match (protocol, scheme.as_str()) {
                    (Protocol::Mqtt, "mqtt" | "tcp") => false,
                    (Protocol::Mqtt, "mqtts" | "ssl") => true,
                    (Protocol::Amqp, "amqp") => false,
                    (Protocol::Amqp, "amqps") => true,
                    (Protocol::Redis, "redis") => false,
                    (Protocol::Redis, "rediss") => true,
                    (Protocol::Kafka, "kafka") => false,
                    _ => {
                        return Err(format!(
                            "scheme `{scheme}://` does not fit protocol {} (server `{server}`)",
                            protocol.name()
                        ));
                    }
                };
                (tls, rest)
            }
            None => (false, server),
        };
        let (authority, path) = match rest.split_once('/') {
            Some((a, p)) => (a, p.to_string()),
            None => (rest, String::new()),
        };
        if authority.contains('@') {
            return Err(format!(
                "put credentials in the username and password properties, not in the server address `{server}`"
            ));
        }
        let default_port = protocol.default_port(tls_scheme);
        let hosts = authority
            .split(',')
            .map(|h| parse_host_port(h, default_port))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("bad server address `{server}`: {e}"))?;
        if hosts.len() > 1 && protocol != Protocol::Kafka {
            return Err(format!(
                "only Kafka takes several servers; `{server}` names {}",
                hosts.len()
            ));
        }
        Ok(Self {
            protocol,
            hosts,
            tls_scheme,
            path,
        })
    }

    /// The first host.
    pub fn host(&self) -> &HostPort {
        &self.hosts[0]
    }

    /// Kafka's `bootstrap.servers`.
    pub fn host_list(&self) -> String {
        self.hosts
            .iter()
            .map(|h| h.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// How the broker is named in messages and warnings.
    pub fn url(&self, tls: bool) -> String {
        let scheme = match (self.protocol, tls) {
            (Protocol::Mqtt, false) => "mqtt",
            (Protocol::Mqtt, true) => "mqtts",
            (Protocol::Amqp, false) => "amqp",
            (Protocol::Amqp, true) => "amqps",
            (Protocol::Redis, false) => "redis",
            (Protocol::Redis, true) => "rediss",
            (Protocol::Kafka, _) => "kafka",
        };
        let path = if self.path.is_empty() {
            String::new()
        } else {
            format!("/{}", self.path)
        };
        format!("{scheme}://{}{path}", self.host_list())
    }
}

fn parse_host_port(s: &str, default_port: u16) -> Result<HostPort, String> {
    let s = s.trim();
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("unclosed `[` in `{s}`"))?;
        match after.strip_prefix(':') {
            Some(p) => (host, Some(p)),
            None if after.is_empty() => (host, None),
            None => return Err(format!("unexpected `{after}` after `[{host}]`")),
        }
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    if host.is_empty() {
        return Err("no host".into());
    }
    if host
        .chars()
        .any(|c| c.is_whitespace() || c == '/' || c == '?')
    {
        return Err(format!("`{host}` is not a host name"));
    }
    let port = match port {
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| format!("`{p}` is not a port number"))?,
        None => default_port,
    };
    Ok(HostPort {
        host: host.to_string(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_forms() {
        let e = Endpoint::parse(Protocol::Mqtt, "127.0.0.1:1884").unwrap();
        assert_eq!(e.host().to_string(), "127.0.0.1:1884");
        assert!(!e.tls_scheme);
        let e = Endpoint::parse(Protocol::Mqtt, "mqtts://broker.local").unwrap();
        assert_eq!((e.host().port, e.tls_scheme), (8883, true));
        let e = Endpoint::parse(Protocol::Amqp, "amqp://[::1]:5673/plant%2fa").unwrap();
        assert_eq!((e.host().host.as_str(), e.host().port), ("::1", 5673));
        assert_eq!(e.path, "plant%2fa");
        assert_eq!(e.url(false), "amqp://[::1]:5673/plant%2fa");
        let e = Endpoint::parse(Protocol::Kafka, "a:9092,b:9093").unwrap();
        assert_eq!(e.host_list(), "a:9092,b:9093");
        assert_eq!(
            Endpoint::parse(Protocol::Redis, "cache")
                .unwrap()
                .host()
                .port,
            6379
        );
    }

    #[test]
    fn bad_addresses_say_why() {
        let err = |p, s| Endpoint::parse(p, s).unwrap_err();
        assert!(err(Protocol::Mqtt, "amqp://x").contains("does not fit protocol mqtt"));
        assert!(err(Protocol::Redis, "foo://x").contains("`foo://`"));
        assert!(err(Protocol::Mqtt, "host:99999").contains("not a port number"));
        assert!(err(Protocol::Mqtt, "host:abc").contains("not a port number"));
        assert!(err(Protocol::Mqtt, "").contains("empty"));
        assert!(err(Protocol::Mqtt, "mqtt://:1883").contains("no host"));
        assert!(err(Protocol::Amqp, "amqp://u:p@h").contains("username and password"));
        assert!(err(Protocol::Mqtt, "a:1,b:2").contains("only Kafka"));
    }
}
