// SPDX-License-Identifier: MIT OR Apache-2.0
//! The REST API of `rsmultiurisrcbin`: DeepStream's nvmultiurisrcbin REST API (version 1) plus
//! health, Prometheus metrics and smart record. This module turns requests into [`Action`]s
//! and replies into responses; the element carries the actions out.
//!
//! Bodies and paths are DeepStream's (`/api/v1/stream/add` with `{"key": "sensor", "value":
//! {"camera_id", "camera_name", "camera_url", "change", "metadata"}, "headers": {...}}`, run-time
//! changes as `{"stream": {...}}`), and so is every reply body: `{"status": "HTTP/1.1 200 OK",
//! "reason": "STREAM_ADD_SUCCESS", ...}`. One difference: NVIDIA's server always answers
//! `200 OK` on the wire and puts the outcome in `status` only; here the HTTP status is the
//! outcome too (400 for a bad request, 401 without the bearer token, 404 for an unknown camera
//! or path, 405 for a wrong method, 409 for a duplicate camera id or a state that forbids the
//! change, 503 when `max-sources` are playing), so both kinds of clients read it right.
//! As in DeepStream, a stream request's `change` decides what it does (`camera_add`,
//! `camera_streaming`: add; `camera_remove`: remove), whichever of the two paths it is sent to.

use ferrostream_core::http::{self, Request, Response};
use serde_json::{Map, Value, json};

/// What a request asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    AddStream(StreamRequest),
    RemoveStream(StreamRequest),
    StreamInfo,
    /// DeepStream's `get-dsready-state`: the bin is PAUSED or PLAYING.
    DsReady,
    Live,
    Ready,
    Startup,
    /// `dec/drop-frame-interval`: one camera keeps every `interval`-th frame (0, 1: all).
    SetDropFrameInterval {
        stream_id: u32,
        interval: u32,
    },
    /// `app/quit`: end the stream (EOS) and tell the application whether to quit.
    Quit {
        app_quit: bool,
    },
    /// DeepStream's `/api/v1/metrics` (JSON, or Prometheus text when asked for `text/plain`).
    StreamMetrics {
        prometheus: bool,
    },
    /// `/metrics`: the process's Prometheus metrics.
    Metrics,
    Version,
    SetInferInterval {
        interval: u32,
        /// Only this element (an extension: DeepStream sets its one primary nvinfer).
        element: Option<String>,
        /// Asked as `inferserver/set-interval` (nvinferserver's endpoint, answered with its
        /// reasons; rstrtinfer plays both parts).
        server: bool,
    },
    UpdateRois {
        stream_id: u32,
        rois: Vec<Roi>,
    },
    SetBatchedPushTimeout(i64),
    SetMaxLatency(u64),
    RecordStart {
        camera: Camera,
        /// Seconds; `None`: the bin's `record-duration`.
        duration: Option<u32>,
    },
    RecordStop {
        camera: Camera,
    },
}

/// A camera named by its id or by its stream (source) id.
#[derive(Debug, Clone, PartialEq)]
pub enum Camera {
    Id(String),
    Stream(u32),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamRequest {
    pub camera_id: String,
    pub camera_name: String,
    pub camera_url: String,
    pub metadata: Value,
}

/// A rectangle of `roi/update`, in the coordinates of the analytics configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Roi {
    pub id: String,
    pub left: f64,
    pub top: f64,
    pub width: f64,
    pub height: f64,
}

/// A reply: the HTTP status, DeepStream's `reason`, and fields of its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: u16,
    pub reason: String,
    pub fields: Map<String, Value>,
}

impl Reply {
    pub fn ok(reason: &str) -> Self {
        Self::new(200, reason)
    }

    pub fn new(status: u16, reason: impl Into<String>) -> Self {
        Self {
            status,
            reason: reason.into(),
            fields: Map::new(),
        }
    }

    pub fn with(mut self, key: &str, value: Value) -> Self {
        self.fields.insert(key.into(), value);
        self
    }

    /// Adds `key: value` to the object `field` (an empty one first where there is none).
    pub fn add_to(&mut self, field: &str, key: &str, value: Value) {
        let object = self
            .fields
            .entry(field)
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(o) = object {
            o.insert(key.into(), value);
        }
    }

    pub fn response(self) -> Response {
        let mut body = self.fields;
        body.insert(
            "status".into(),
            format!(
                "HTTP/1.1 {} {}",
                self.status,
                http::reason_phrase(self.status)
            )
            .into(),
        );
        body.insert("reason".into(), self.reason.into());
        Response::json(self.status, &Value::Object(body))
    }
}

/// Whether the request carries `Authorization: Bearer <token>` (compared in constant time).
pub fn authorized(request: &Request, token: Option<&str>) -> bool {
    let Some(token) = token else { return true };
    let Some(given) = request
        .header("authorization")
        .and_then(|h| h.strip_prefix("Bearer "))
    else {
        return false;
    };
    let (a, b) = (given.trim().as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub fn unauthorized() -> Response {
    Reply::new(
        401,
        "a bearer token is required (Authorization: Bearer <rest-token>)",
    )
    .response()
    .with_header("WWW-Authenticate", "Bearer")
}

/// The action a request asks for, or the reply that refuses it.
pub fn route(request: &Request) -> Result<Action, Reply> {
    let path = request.path.trim_end_matches('/');
    let get = |action: Action| {
        if request.method == "GET" {
            Ok(action)
        } else {
            Err(Reply::new(405, format!("{path} takes GET")))
        }
    };
    let post = |parse: fn(&Value) -> Result<Action, Reply>| {
        if request.method != "POST" {
            return Err(Reply::new(405, format!("{path} takes POST")));
        }
        let body: Value = serde_json::from_slice(&request.body)
            .map_err(|e| Reply::new(400, format!("the body is not JSON: {e}")))?;
        parse(&body)
    };
    match path {
        "/api/v1/stream/add" | "/api/v1/stream/remove" => post(stream_request),
        "/api/v1/stream/get-stream-info" => get(Action::StreamInfo),
        "/api/v1/health/get-dsready-state" => get(Action::DsReady),
        "/api/v1/health/live" | "/api/v1/live" | "/live" => get(Action::Live),
        "/api/v1/health/ready" | "/api/v1/ready" | "/ready" => get(Action::Ready),
        "/api/v1/startup" | "/startup" => get(Action::Startup),
        "/api/v1/metrics" => get(Action::StreamMetrics {
            prometheus: request
                .header("accept")
                .is_some_and(|a| a.contains("text/plain")),
        }),
        "/metrics" => get(Action::Metrics),
        "/version" => get(Action::Version),
        "/api/v1/infer/set-interval" => post(|body| infer_interval(body, false)),
        "/api/v1/inferserver/set-interval" => post(|body| infer_interval(body, true)),
        "/api/v1/roi/update" => post(roi_update),
        "/api/v1/mux/batched-push-timeout" => post(|body| {
            let v = stream_field(body, "batched_push_timeout")?;
            integer(v, "batched_push_timeout", -1, i64::MAX).map(Action::SetBatchedPushTimeout)
        }),
        "/api/v1/mux/max-latency" => post(|body| {
            let v = stream_field(body, "max_latency")?;
            integer(v, "max_latency", 0, i64::MAX).map(|n| Action::SetMaxLatency(n as u64))
        }),
        "/api/v1/record/start" => post(|body| {
            let camera = camera(body)?;
            let duration = match field(body, "duration") {
                None => None,
                Some(v) => Some(integer(v, "duration", 1, 86400)? as u32),
            };
            Ok(Action::RecordStart { camera, duration })
        }),
        "/api/v1/dec/drop-frame-interval" => post(|body| {
            let stream_id = stream_id(body)?;
            let v = stream_field(body, "drop_frame_interval")?;
            let interval = integer(v, "drop_frame_interval", 0, 30)? as u32;
            Ok(Action::SetDropFrameInterval {
                stream_id,
                interval,
            })
        }),
        "/api/v1/app/quit" => post(|body| {
            let v = stream_field(body, "app_quit")?;
            let app_quit = match v {
                Value::Bool(b) => *b,
                other => integer(other, "app_quit", 0, 1)? == 1,
            };
            Ok(Action::Quit { app_quit })
        }),
        "/api/v1/record/stop" => post(|body| {
            Ok(Action::RecordStop {
                camera: camera(body)?,
            })
        }),
        _ => Err(Reply::new(404, format!("no such endpoint: {path}"))),
    }
}

/// A stream add or remove; `change` decides which.
fn stream_request(body: &Value) -> Result<Action, Reply> {
    let value = body
        .get("value")
        .or_else(|| body.get("event"))
        .filter(|v| v.is_object())
        .ok_or_else(|| Reply::new(400, "Sensor API change string not supported (no `value`)"))?;
    let text = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or_default()
            .to_string()
    };
    let change = text("change");
    let request = StreamRequest {
        camera_id: text("camera_id"),
        camera_name: text("camera_name"),
        camera_url: text("camera_url"),
        metadata: value.get("metadata").cloned().unwrap_or(Value::Null),
    };
    let add = change.contains("add") || change.contains("streaming");
    let remove = change.contains("remove");
    let what = if add {
        "STREAM_ADD_FAIL"
    } else {
        "STREAM_REMOVE_FAIL"
    };
    if !add && !remove {
        return Err(Reply::new(
            400,
            format!("Sensor API change string not supported: `{change}`"),
        ));
    }
    if add && request.camera_url.is_empty() {
        return Err(Reply::new(400, format!("{what}, Source url empty")));
    }
    if add && !request.camera_url.contains("://") {
        return Err(Reply::new(
            400,
            format!(
                "{what}, `{}` is not a URI (file:///path, rtsp://host/path, http://...)",
                request.camera_url
            ),
        ));
    }
    if request.camera_id.is_empty() {
        return Err(Reply::new(400, format!("{what}, Source id empty")));
    }
    Ok(if add {
        Action::AddStream(request)
    } else {
        Action::RemoveStream(request)
    })
}

/// `key` in the body's `stream` object (or in any top-level object, as DeepStream reads it, or
/// at the top level).
fn field<'a>(body: &'a Value, key: &str) -> Option<&'a Value> {
    let object = body.as_object()?;
    object.get(key).or_else(|| {
        object
            .values()
            .filter_map(Value::as_object)
            .find_map(|o| o.get(key))
    })
}

fn stream_field<'a>(body: &'a Value, key: &str) -> Result<&'a Value, Reply> {
    field(body, key).ok_or_else(|| Reply::new(400, format!("`stream.{key}` is missing")))
}

/// An integer given as a number or a string of one (DeepStream sends `"stream_id": "0"`).
fn integer(value: &Value, key: &str, min: i64, max: i64) -> Result<i64, Reply> {
    let n = match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    n.filter(|n| (min..=max).contains(n)).ok_or_else(|| {
        Reply::new(
            400,
            format!("`{key}` must be an integer from {min} to {max}, not {value}"),
        )
    })
}

fn stream_id(body: &Value) -> Result<u32, Reply> {
    let v = stream_field(body, "stream_id")?;
    integer(v, "stream_id", 0, i64::from(u32::MAX)).map(|n| n as u32)
}

fn camera(body: &Value) -> Result<Camera, Reply> {
    if let Some(id) = field(body, "camera_id") {
        return match id.as_str().map(str::trim) {
            Some(id) if !id.is_empty() => Ok(Camera::Id(id.into())),
            _ => Err(Reply::new(400, "`camera_id` must be a non-empty string")),
        };
    }
    if field(body, "stream_id").is_some() {
        return stream_id(body).map(Camera::Stream);
    }
    Err(Reply::new(
        400,
        "name the camera: `camera_id` or `stream_id`",
    ))
}

fn infer_interval(body: &Value, server: bool) -> Result<Action, Reply> {
    // nvinfer's interval applies to every stream; a stream_id, when given, must be a number.
    if field(body, "stream_id").is_some() {
        stream_id(body)?;
    }
    let interval = integer(stream_field(body, "interval")?, "interval", 0, 1 << 20)? as u32;
    let element = match field(body, "element") {
        None => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(other) => {
            return Err(Reply::new(
                400,
                format!("`element` must be an element name, not {other}"),
            ));
        }
    };
    Ok(Action::SetInferInterval {
        interval,
        element,
        server,
    })
}

fn roi_update(body: &Value) -> Result<Action, Reply> {
    let stream_id = stream_id(body)?;
    let list = stream_field(body, "roi")?
        .as_array()
        .ok_or_else(|| Reply::new(400, "`roi` must be a list"))?;
    if let Some(count) = field(body, "roi_count") {
        let count = integer(count, "roi_count", 0, 4096)?;
        if count as usize != list.len() {
            return Err(Reply::new(
                400,
                format!("roi_count is {count} but {} rois are given", list.len()),
            ));
        }
    }
    let rois = list
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let number = |key: &str| {
                let v = r
                    .get(key)
                    .ok_or_else(|| Reply::new(400, format!("roi {i}: `{key}` is missing")))?;
                let n = match v {
                    Value::Number(n) => n.as_f64(),
                    Value::String(s) => s.trim().parse().ok(),
                    _ => None,
                };
                n.filter(|n| n.is_finite() && *n >= 0.0).ok_or_else(|| {
                    Reply::new(400, format!("roi {i}: `{key}` must be a number >= 0"))
                })
            };
            let id = match r.get("roi_id") {
                Some(Value::String(s)) if !s.is_empty() => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => i.to_string(),
            };
            let roi = Roi {
                id,
                left: number("left")?,
                top: number("top")?,
                width: number("width")?,
                height: number("height")?,
            };
            if roi.width <= 0.0 || roi.height <= 0.0 {
                return Err(Reply::new(400, format!("roi {i}: an empty rectangle")));
            }
            Ok(roi)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Action::UpdateRois { stream_id, rois })
}

/// DeepStream's health bodies: `{"<kind>-info": {"<key>": "YES"|"NO"}}`.
pub fn health(kind: &str, key: &str, yes: bool, reason: &str) -> Reply {
    let info = json!({ key: if yes { "YES" } else { "NO" } });
    Reply::new(if yes { 200 } else { 503 }, reason).with(&format!("{kind}-info"), info)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, path: &str, body: &str) -> Request {
        Request {
            method: method.into(),
            path: path.into(),
            query: String::new(),
            headers: vec![],
            body: body.as_bytes().to_vec(),
            peer: "127.0.0.1:1".parse().unwrap(),
        }
    }

    const ADD: &str = r#"{"key": "sensor","value": {"camera_id": "uniqueSensorID1","camera_name": "front_door","camera_url": "file:///opt/nvidia/deepstream/deepstream/samples/streams/sample_1080p_h264.mp4","change": "camera_add","metadata": {"resolution": "1920 x1080","codec": "h264","framerate": 30}},"headers": {"source": "vst","created_at": "2021-06-01T14:34:13.417Z"}}"#;

    #[test]
    fn deepstream_stream_bodies() {
        let Ok(Action::AddStream(s)) = route(&request("POST", "/api/v1/stream/add", ADD)) else {
            panic!("not an add");
        };
        assert_eq!(s.camera_id, "uniqueSensorID1");
        assert_eq!(s.camera_name, "front_door");
        assert_eq!(s.metadata["framerate"], 30);
        let remove = ADD.replace("camera_add", "camera_remove");
        assert!(matches!(
            route(&request("POST", "/api/v1/stream/remove", &remove)),
            Ok(Action::RemoveStream(_))
        ));
    }

    #[test]
    fn bad_stream_requests() {
        let status =
            |path: &str, body: &str| route(&request("POST", path, body)).unwrap_err().status;
        assert_eq!(status("/api/v1/stream/add", "{not json"), 400);
        assert_eq!(
            status(
                "/api/v1/stream/add",
                &ADD.replace("camera_add", "camera_move")
            ),
            400
        );
        assert_eq!(
            status("/api/v1/stream/add", &ADD.replace("uniqueSensorID1", "")),
            400
        );
        let no_url = ADD.replace(
            "file:///opt/nvidia/deepstream/deepstream/samples/streams/sample_1080p_h264.mp4",
            "",
        );
        assert_eq!(status("/api/v1/stream/add", &no_url), 400);
        assert_eq!(
            route(&request("GET", "/api/v1/stream/add", ADD))
                .unwrap_err()
                .status,
            405
        );
        assert_eq!(
            route(&request("GET", "/api/v1/nothing", ""))
                .unwrap_err()
                .status,
            404
        );
    }

    #[test]
    fn deepstream_run_time_changes() {
        let r = |path: &str, body: &str| route(&request("POST", path, body));
        assert_eq!(
            r(
                "/api/v1/infer/set-interval",
                r#"{"stream":{"stream_id":"0","interval":2}}"#
            ),
            Ok(Action::SetInferInterval {
                interval: 2,
                element: None,
                server: false
            })
        );
        assert_eq!(
            r(
                "/api/v1/inferserver/set-interval",
                r#"{"stream":{"stream_id":"0","interval":2}}"#
            ),
            Ok(Action::SetInferInterval {
                interval: 2,
                element: None,
                server: true
            })
        );
        assert_eq!(
            r(
                "/api/v1/mux/batched-push-timeout",
                r#"{"stream":{"batched_push_timeout":100000}}"#
            ),
            Ok(Action::SetBatchedPushTimeout(100000))
        );
        let Ok(Action::UpdateRois { stream_id, rois }) = r(
            "/api/v1/roi/update",
            r#"{"stream": {"stream_id": "0","roi_count": 2,"roi": [{"roi_id": "0","left": 100,"top": 300,"width": 400,"height": 400},{"roi_id": "1","left": 550,"top": 300,"width": 500,"height": 500}]}}"#,
        ) else {
            panic!("not a roi update");
        };
        assert_eq!(stream_id, 0);
        assert_eq!(rois[1].left, 550.0);
        assert_eq!(
            r(
                "/api/v1/roi/update",
                r#"{"stream":{"stream_id":"0","roi_count":3,"roi":[]}}"#
            )
            .unwrap_err()
            .status,
            400
        );
        assert_eq!(
            r(
                "/api/v1/infer/set-interval",
                r#"{"stream":{"stream_id":"x","interval":2}}"#
            )
            .unwrap_err()
            .status,
            400
        );
    }

    #[test]
    fn bearer_tokens() {
        let mut req = request("GET", "/metrics", "");
        assert!(authorized(&req, None));
        assert!(!authorized(&req, Some("s3cret")));
        req.headers
            .push(("Authorization".into(), "Bearer s3cret".into()));
        assert!(authorized(&req, Some("s3cret")));
        assert!(!authorized(&req, Some("s3cre")));
    }
}
