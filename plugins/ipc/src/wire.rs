// SPDX-License-Identifier: MIT OR Apache-2.0
//! The messages between `rsipcsink` (the producer) and `rsipcsrc` (a consumer): JSON, one per
//! socket message (a long one in a memory file, see [`crate::socket`]), with the descriptors of
//! new allocations attached. Every field is checked on arrival; anything else is a protocol
//! error that ends the connection.

use serde::{Deserialize, Serialize};

/// Both ends must speak the same version. 2: messages too long for the socket travel in a memory
/// file. (The hello is short, so it reads the same in every version and a mismatch is named.)
pub const VERSION: u32 = 2;
/// The longest message (a buffer's description, mostly its frames' metadata as JSON): the
/// producer sends no longer one and warns instead, a consumer refuses one. A consumer allocates
/// this much once to receive into. It holds the metadata of about 9,000 tracked detections
/// (some 470 bytes each as JSON).
pub const MAX_MESSAGE: usize = 4 << 20;
/// The most frames one buffer carries.
pub const MAX_FRAMES: usize = 1024;
/// Allocations a consumer keeps mapped; the producer tells it which to forget beyond that.
pub const MAX_KNOWN: usize = 256;

/// Where an allocation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Memory {
    /// A sealed memory file (system memory).
    Host,
    /// CUDA device memory of GPU `gpu_id`, exported with the virtual memory API.
    Device { gpu_id: u32 },
}

/// One plane of a frame in an allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plane {
    /// Bytes from the allocation's start.
    pub offset: u64,
    /// Bytes from row to row.
    pub pitch: u32,
}

/// The pixels of one surface (a batch's source frame, or a plain buffer's frame).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Surface {
    /// The allocation holding the pixels.
    pub allocation: u64,
    /// System memory: the frame's bytes, as the caps lay them out.
    pub offset: u64,
    pub size: u64,
    /// Device memory: each plane.
    #[serde(default)]
    pub planes: Vec<Plane>,
    /// The source's plain caps, its id and its stream id.
    pub caps: String,
    pub source_id: u32,
    #[serde(default)]
    pub stream_id: Option<String>,
    /// Timestamps of the source buffer.
    #[serde(default)]
    pub pts: Option<u64>,
    #[serde(default)]
    pub duration: Option<u64>,
}

/// One buffer: its surfaces and analytics metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Buffer {
    /// Released by this number when the consumer is done with it.
    pub seq: u64,
    pub pts: Option<u64>,
    pub dts: Option<u64>,
    pub duration: Option<u64>,
    /// `GST_BUFFER_FLAG_DELTA_UNIT` and the like, as they were.
    pub flags: u32,
    pub surfaces: Vec<Surface>,
    /// The frames' metadata (one line of the rsmetaexport JSON each), when the buffer has any.
    #[serde(default)]
    pub frames: Vec<String>,
    /// Which surface each frame's pixels are in.
    #[serde(default)]
    pub surface_index: Vec<u32>,
}

/// What the producer sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ToConsumer {
    /// First message of a connection.
    Hello {
        version: u32,
    },
    /// The stream's caps, before the first buffer and whenever they change.
    Caps {
        caps: String,
    },
    /// A new allocation whose descriptor is attached; `size` bytes. `event`: the CUDA IPC event
    /// (hexadecimal handle) the producer records after filling it, which the consumer waits on
    /// before a buffer using the allocation is read; none when the memory is ready as sent.
    Allocation {
        id: u64,
        size: u64,
        memory: Memory,
        #[serde(default)]
        event: Option<String>,
    },
    /// The consumer may unmap allocation `id` once its buffers using it are released.
    Forget {
        id: u64,
    },
    Buffer(Box<Buffer>),
    Eos,
}

/// What a consumer sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ToProducer {
    Hello {
        version: u32,
    },
    /// The consumer is done with buffer `seq`: its memory can be reused.
    Release {
        seq: u64,
    },
}

/// Why a message was refused.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("not a message of this protocol: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Invalid(String),
}

impl ToConsumer {
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("the messages serialise")
    }

    /// Parses and checks a message.
    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        let message: Self = serde_json::from_slice(bytes)?;
        if let Self::Buffer(b) = &message {
            if b.surfaces.len() > MAX_FRAMES || b.frames.len() > MAX_FRAMES {
                return Err(WireError::Invalid(format!(
                    "{} surfaces and {} frames in one buffer (at most {MAX_FRAMES})",
                    b.surfaces.len(),
                    b.frames.len()
                )));
            }
            if b.surface_index.len() != b.frames.len()
                || b.surface_index
                    .iter()
                    .any(|&i| i as usize >= b.surfaces.len().max(1))
            {
                return Err(WireError::Invalid(
                    "frames name surfaces the buffer does not have".into(),
                ));
            }
        }
        Ok(message)
    }
}

impl ToProducer {
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("the messages serialise")
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        Ok(serde_json::from_slice(bytes)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer() -> Buffer {
        Buffer {
            seq: 7,
            pts: Some(40_000_000),
            dts: None,
            duration: Some(40_000_000),
            flags: 0,
            surfaces: vec![Surface {
                allocation: 3,
                offset: 0,
                size: 0,
                planes: vec![
                    Plane {
                        offset: 0,
                        pitch: 2048,
                    },
                    Plane {
                        offset: 2048 * 1080,
                        pitch: 2048,
                    },
                ],
                caps: "video/x-raw, format=NV12, width=1920, height=1080".into(),
                source_id: 2,
                stream_id: Some("cam2".into()),
                pts: Some(40_000_000),
                duration: None,
            }],
            frames: vec!["{}".into()],
            surface_index: vec![0],
        }
    }

    #[test]
    fn messages_round_trip() {
        for m in [
            ToConsumer::Hello { version: VERSION },
            ToConsumer::Caps {
                caps: "video/x-raw".into(),
            },
            ToConsumer::Allocation {
                id: 9,
                size: 2 << 20,
                memory: Memory::Device { gpu_id: 1 },
                event: Some("00ff".into()),
            },
            ToConsumer::Forget { id: 9 },
            ToConsumer::Buffer(Box::new(buffer())),
            ToConsumer::Eos,
        ] {
            assert_eq!(ToConsumer::decode(&m.encode()).unwrap(), m);
        }
        let r = ToProducer::Release { seq: 4 };
        assert_eq!(ToProducer::decode(&r.encode()).unwrap(), r);
    }

    #[test]
    fn garbage_and_inconsistent_buffers_are_refused() {
        assert!(ToProducer::decode(b"\x00\x01garbage").is_err());
        assert!(ToProducer::decode(br#"{"type":"release"}"#).is_err());
        assert!(ToProducer::decode(br#"{"type":"release","seq":1,"more":2}"#).is_err());
        let mut b = buffer();
        b.surface_index = vec![1];
        assert!(ToConsumer::decode(&ToConsumer::Buffer(Box::new(b)).encode()).is_err());
        let mut b = buffer();
        b.frames.clear();
        assert!(ToConsumer::decode(&ToConsumer::Buffer(Box::new(b)).encode()).is_err());
    }
}
