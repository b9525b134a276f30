// SPDX-License-Identifier: MIT OR Apache-2.0
//! A loadable's tensors: how their elements lie in memory ([`TensorLayout`], from cuDLA's
//! descriptors), and a tensor's memory with its DLA registration ([`Tensor`]).

use ferrostream_core::cuda::DeviceBuffer;
use gst_trtinfer::engine::ElementType;

use super::ffi::{self, TensorDescriptor};
use super::{Registered, tensor_name};

/// How a tensor's elements lie in its buffer. Only layouts fully described by the
/// descriptor's dims and size are accepted; a loadable with padded rows (DLA linear with
/// unaligned widths) is refused at open with a message naming the tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Dense NCHW.
    Nchw,
    /// NHWC with the channels padded to `cpad` (dense when `cpad == c`; DLA HWC4 has 4).
    Nhwc { cpad: usize },
    /// Channels in blocks of `x` (TensorRT CHW16 / CHW32), C padded to a multiple of `x`.
    Blocked { x: usize },
}

/// One tensor of the loadable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorLayout {
    pub name: String,
    pub dims: [usize; 4],
    pub element: ElementType,
    pub layout: Layout,
    /// Bytes of the whole tensor (all `n` items).
    pub size: usize,
}

impl TensorLayout {
    /// Works out the layout of a descriptor, or says why the runner cannot use it.
    pub fn from_descriptor(d: &TensorDescriptor) -> Result<Self, String> {
        let name = tensor_name(d);
        let (element, elem) = match d.data_type {
            ffi::TYPE_HALF => (ElementType::F16, 2),
            ffi::TYPE_FLOAT => (ElementType::F32, 4),
            ffi::TYPE_UINT8 => (ElementType::U8, 1),
            ffi::TYPE_INT8 => {
                return Err(format!(
                    "tensor {name} is INT8 I/O, whose quantisation scales the loadable does not \
                     carry; build it with --inputIOFormats=fp16:chw16 \
                     --outputIOFormats=fp16:chw16 (the layers still compute in INT8)"
                ));
            }
            other => return Err(format!("tensor {name} has cuDLA data type {other}")),
        };
        let [n, c, h, w] = [d.n, d.c, d.h, d.w].map(|v| v as usize);
        let size = d.size as usize;
        let dense = n * c * h * w * elem;
        let pad = |x: usize| c.div_ceil(x) * x;
        let layout = match d.data_format {
            ffi::FORMAT_NCHW if size == dense => Layout::Nchw,
            ffi::FORMAT_NHWC if size == dense => Layout::Nhwc { cpad: c },
            ffi::FORMAT_NHWC if size == n * h * w * pad(4) * elem => Layout::Nhwc { cpad: pad(4) },
            ffi::FORMAT_NCXHWX => [16, 32, 4]
                .into_iter()
                .find(|&x| size == n * pad(x) * h * w * elem)
                .map(|x| Layout::Blocked { x })
                .ok_or_else(|| {
                    format!("tensor {name}: NCxHWx of {size} bytes for {n}x{c}x{h}x{w}")
                })?,
            format => {
                return Err(format!(
                    "tensor {name} ({n}x{c}x{h}x{w}, cuDLA format {format}, {size} bytes) has \
                     padded rows, which this runner does not unpack; build the loadable with \
                     --inputIOFormats=fp16:chw16 --outputIOFormats=fp16:chw16"
                ));
            }
        };
        Ok(Self {
            name,
            dims: [n, c, h, w],
            element,
            layout,
            size,
        })
    }

    /// Bytes per element.
    pub fn elem(&self) -> usize {
        self.element.size().unwrap_or(1)
    }

    /// The element index of (n, c, h, w) in the buffer.
    pub fn index(&self, n: usize, c: usize, h: usize, w: usize) -> usize {
        let [_, cc, hh, ww] = self.dims;
        match self.layout {
            Layout::Nchw => ((n * cc + c) * hh + h) * ww + w,
            Layout::Nhwc { cpad } => ((n * hh + h) * ww + w) * cpad + c,
            Layout::Blocked { x } => {
                let blocks = cc.div_ceil(x);
                (((n * blocks + c / x) * hh + h) * ww + w) * x + c % x
            }
        }
    }

    /// Whether the buffer is plain dense NCHW, which the pre-processing writes directly.
    pub fn is_dense_nchw(&self) -> bool {
        self.layout == Layout::Nchw
    }

    /// Copies a dense NCHW tensor into this layout (padding stays zero).
    pub fn pack(&self, dense: &[u8], out: &mut [u8]) {
        let e = self.elem();
        let [n, c, h, w] = self.dims;
        let mut i = 0;
        for n in 0..n {
            for c in 0..c {
                for h in 0..h {
                    for w in 0..w {
                        let o = self.index(n, c, h, w) * e;
                        out[o..o + e].copy_from_slice(&dense[i..i + e]);
                        i += e;
                    }
                }
            }
        }
    }

    /// Reads this layout into dense NCHW f32.
    pub fn unpack(&self, raw: &[u8], out: &mut Vec<f32>) {
        let [n, c, h, w] = self.dims;
        out.clear();
        out.reserve(n * c * h * w);
        for n in 0..n {
            for c in 0..c {
                for h in 0..h {
                    for w in 0..w {
                        let i = self.index(n, c, h, w);
                        out.push(match self.element {
                            ElementType::F16 => {
                                half::f16::from_le_bytes([raw[2 * i], raw[2 * i + 1]]).to_f32()
                            }
                            ElementType::F32 => f32::from_le_bytes(
                                raw[4 * i..4 * i + 4].try_into().expect("4 bytes"),
                            ),
                            _ => raw[i] as f32,
                        });
                    }
                }
            }
        }
    }
}

/// A tensor's CUDA buffer and its DLA registration (dropped first). In standalone mode both
/// import one NvSciBuf buffer, which each keeps alive.
pub(super) struct Tensor {
    pub layout: TensorLayout,
    pub registered: Registered,
    pub buffer: DeviceBuffer,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor(name: &str, dims: [u64; 4], ty: u8, format: u8, size: u64) -> TensorDescriptor {
        let mut d = TensorDescriptor::default();
        for (i, b) in name.bytes().enumerate() {
            d.name[i] = b as std::ffi::c_char;
        }
        [d.n, d.c, d.h, d.w] = dims;
        d.data_type = ty;
        d.data_format = format;
        d.size = size;
        d
    }

    #[test]
    fn layouts_come_from_the_descriptor() {
        let chw16 = descriptor(
            "out",
            [1, 20, 2, 3],
            ffi::TYPE_HALF,
            ffi::FORMAT_NCXHWX,
            2 * 32 * 6,
        );
        let t = TensorLayout::from_descriptor(&chw16).unwrap();
        assert_eq!(
            (t.name.as_str(), t.layout, t.element),
            ("out", Layout::Blocked { x: 16 }, ElementType::F16)
        );
        // Channel 17 of item 0 at (1, 2): block 1, element (1*2+1)*3+2 = ... within the block.
        assert_eq!(t.index(0, 17, 1, 2), ((2 + 1) * 3 + 2) * 16 + 1);
        let hwc4 = descriptor(
            "in",
            [1, 3, 4, 4],
            ffi::TYPE_HALF,
            ffi::FORMAT_NHWC,
            2 * 16 * 4,
        );
        assert_eq!(
            TensorLayout::from_descriptor(&hwc4).unwrap().layout,
            Layout::Nhwc { cpad: 4 }
        );
        let dense = descriptor("in", [2, 3, 4, 4], ffi::TYPE_HALF, ffi::FORMAT_NCHW, 2 * 96);
        assert!(
            TensorLayout::from_descriptor(&dense)
                .unwrap()
                .is_dense_nchw()
        );
        // Padded rows (DLA linear with a narrow width) and INT8 I/O are refused, by name.
        let padded = descriptor(
            "logits",
            [1, 1000, 1, 1],
            ffi::TYPE_HALF,
            ffi::FORMAT_NCHW,
            64_000,
        );
        let e = TensorLayout::from_descriptor(&padded).unwrap_err();
        assert!(e.contains("logits") && e.contains("padded rows"), "{e}");
        let int8 = descriptor("in", [1, 3, 4, 4], ffi::TYPE_INT8, ffi::FORMAT_NHWC, 64);
        assert!(
            TensorLayout::from_descriptor(&int8)
                .unwrap_err()
                .contains("INT8")
        );
    }

    #[test]
    fn pack_and_unpack_round_trip_through_blocked_channels() {
        let d = descriptor(
            "t",
            [1, 5, 2, 2],
            ffi::TYPE_HALF,
            ffi::FORMAT_NCXHWX,
            2 * 16 * 4,
        );
        let t = TensorLayout::from_descriptor(&d).unwrap();
        let values: Vec<f32> = (0..20).map(|v| v as f32 * 0.5).collect();
        let dense: Vec<u8> = values
            .iter()
            .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
            .collect();
        let mut raw = vec![0u8; t.size];
        t.pack(&dense, &mut raw);
        // Element (c=2, h=1, w=0) sits at ((1*2)+0)*16 + 2 in the block.
        let at = |i: usize| half::f16::from_le_bytes([raw[2 * i], raw[2 * i + 1]]).to_f32();
        assert_eq!(at(2 * 16 + 2), values[2 * 4 + 2]);
        let mut back = Vec::new();
        t.unpack(&raw, &mut back);
        assert_eq!(back, values);
    }
}
