// SPDX-License-Identifier: MIT OR Apache-2.0
//! Topic templates: `{source-id}`, `{sensor-id}` and `{event}` (`frame`, `appeared`, `left`,
//! `line-crossed`) are replaced per message.

use crate::endpoint::Protocol;

const FIELDS: &[&str] = &["{source-id}", "{sensor-id}", "{event}"];

/// A checked topic template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicTemplate(String);

impl TopicTemplate {
    /// Checks the template's fields, and for Kafka that the topics it can make are legal
    /// (letters, digits, `.`, `_`, `-`) for the given sensor ids.
    pub fn parse(
        template: &str,
        protocol: Protocol,
        sensor_ids: &[String],
    ) -> Result<Self, String> {
        if template.is_empty() {
            return Err("the topic is empty".into());
        }
        let mut rest = template.to_string();
        for field in FIELDS {
            rest = rest.replace(field, "");
        }
        if let Some(start) = rest.find('{') {
            let end = rest[start..]
                .find('}')
                .map_or(rest.len(), |e| start + e + 1);
            return Err(format!(
                "unknown field `{}` in topic `{template}` (known: {})",
                &rest[start..end],
                FIELDS.join(", ")
            ));
        }
        if rest.contains('}') {
            return Err(format!("unmatched `}}` in topic `{template}`"));
        }
        let t = Self(template.to_string());
        if protocol == Protocol::Kafka {
            let samples = sensor_ids.iter().map(String::as_str).chain(["0"]);
            for sensor in samples {
                let topic = t.render(0, sensor, "line-crossed");
                let legal = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
                if topic.len() > 249 || !topic.chars().all(legal) {
                    return Err(format!(
                        "`{topic}` (from topic `{template}`) is not a legal Kafka topic: use letters, digits, `.`, `_` and `-`"
                    ));
                }
            }
        }
        Ok(t)
    }

    pub fn render(&self, source_id: u32, sensor_id: &str, event: &str) -> String {
        self.0
            .replace("{source-id}", &source_id.to_string())
            .replace("{sensor-id}", sensor_id)
            .replace("{event}", event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_replaced() {
        let t = TopicTemplate::parse("site/{sensor-id}/{source-id}/{event}", Protocol::Mqtt, &[])
            .unwrap();
        assert_eq!(t.render(2, "gate", "left"), "site/gate/2/left");
    }

    #[test]
    fn unknown_fields_and_bad_kafka_topics_are_refused() {
        let err = TopicTemplate::parse("a/{camera}", Protocol::Mqtt, &[]).unwrap_err();
        assert!(err.contains("`{camera}`"), "{err}");
        let err = TopicTemplate::parse("a/{source-id}", Protocol::Kafka, &[]).unwrap_err();
        assert!(err.contains("not a legal Kafka topic"), "{err}");
        let err = TopicTemplate::parse("cam.{sensor-id}", Protocol::Kafka, &["dock 1".into()])
            .unwrap_err();
        assert!(err.contains("cam.dock 1"), "{err}");
        assert!(TopicTemplate::parse("cam.{source-id}.{event}", Protocol::Kafka, &[]).is_ok());
        assert!(TopicTemplate::parse("", Protocol::Redis, &[]).is_err());
    }
}
