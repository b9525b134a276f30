// SPDX-License-Identifier: MIT OR Apache-2.0
//! Anchor selection on the GPU (the kernel `select_anchors` of select.cu): of a detector's
//! outputs left in device memory, only the rows of anchors that may hold a detection are
//! gathered into a compact list for the host, which decodes them with the parser's own
//! per-anchor code ([`Family::decode_anchor`](crate::parse::Family::decode_anchor)).

use std::sync::Arc;

use ferrostream_core::cuda::{
    Context, CudaError, DeviceBuffer, Function, KernelParams, KernelSource, Module, Stream,
};

use crate::engine::{DeviceTensor, ElementType};
use crate::parse::{AnchorLayout, Select};

/// The kernel source.
pub const SELECT_CU: KernelSource = KernelSource {
    name: "select.cu",
    code: include_str!("select.cu"),
};

/// Groups of values per anchor the kernel gathers (SSD and CenterFace need up to 4).
pub const MAX_GROUPS: usize = 4;
/// Bytes before the first record: the record count and padding.
pub const HEADER_BYTES: usize = 8;

/// Mirrors `struct Group` of select.cu.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct GroupDesc {
    ptr: u64,
    item_stride: u64,
    offset: u32,
    anchor_stride: u32,
    elem_stride: u32,
    count: u32,
    is_half: u32,
    pad: u32,
}

/// Mirrors `struct Params` of select.cu.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Params {
    groups: [GroupDesc; MAX_GROUPS],
    out: u64,
    n_items: u32,
    anchors: u32,
    n_groups: u32,
    row_len: u32,
    mode: u32,
    start: u32,
    count: u32,
    objectness: i32,
    min_threshold: f32,
    capacity: u32,
}

// SAFETY: `Params` is #[repr(C)] plain data mirroring the kernel's parameter struct (layout test
// below); it holds device addresses, not references.
unsafe impl KernelParams for Params {}

/// Bytes of one record of `layout`: item, anchor and the row.
pub fn record_bytes(layout: &AnchorLayout) -> usize {
    (2 + layout.row_len()) * 4
}

/// Bytes a selection of `items` batch items needs at most (every anchor selected).
pub fn buffer_bytes(layout: &AnchorLayout, items: usize) -> usize {
    HEADER_BYTES + items * layout.anchors * record_bytes(layout)
}

/// The kernel, loaded into one context.
#[derive(Debug)]
pub struct AnchorSelector {
    function: Function,
}

impl AnchorSelector {
    pub fn new(ctx: &Arc<Context>) -> Result<Self, CudaError> {
        let module = Module::load(ctx, &SELECT_CU)?;
        Ok(Self {
            function: module.function("select_anchors")?,
        })
    }

    /// Whether the kernel can read `tensors` for `layout`: dense f32 or f16 outputs.
    pub fn supports(tensors: &[DeviceTensor], layout: &AnchorLayout) -> bool {
        layout.groups.len() <= MAX_GROUPS
            && layout.groups.iter().all(|g| {
                tensors.get(g.output).is_some_and(|t| {
                    t.dense && matches!(t.element_type, ElementType::F32 | ElementType::F16)
                })
            })
    }

    /// Queues the selection of the first `items` batch items of `tensors` on `stream` into
    /// `out` (at least [`buffer_bytes`] long): the record count, then the records.
    ///
    /// # Safety
    /// `tensors` must be live device memory of the stream's context, written in stream order,
    /// holding at least `items` items; `out` must not be read before the stream has passed the
    /// kernel.
    pub unsafe fn launch(
        &self,
        stream: &Stream,
        tensors: &[DeviceTensor],
        layout: &AnchorLayout,
        items: usize,
        min_threshold: f32,
        out: &DeviceBuffer,
    ) -> Result<(), CudaError> {
        if !Self::supports(tensors, layout) {
            return Err(CudaError::Invalid(
                "GPU anchor selection reads dense f32/f16 outputs only".into(),
            ));
        }
        let needed = buffer_bytes(layout, items);
        if out.len() < needed {
            return Err(CudaError::Invalid(format!(
                "selection buffer of {} bytes, {needed} needed",
                out.len()
            )));
        }
        let to_u32 = |v: usize| {
            u32::try_from(v).map_err(|_| CudaError::Invalid(format!("{v} exceeds 32 bits")))
        };
        let mut params = Params {
            out: out.ptr(),
            n_items: to_u32(items)?,
            anchors: to_u32(layout.anchors)?,
            n_groups: layout.groups.len() as u32,
            row_len: to_u32(layout.row_len())?,
            min_threshold,
            capacity: to_u32(items * layout.anchors)?,
            objectness: -1,
            ..Params::default()
        };
        (params.mode, params.start, params.count) = match layout.select {
            Select::BestClass {
                start,
                count,
                objectness,
            } => {
                params.objectness = objectness.map_or(-1, |o| o as i32);
                (0, to_u32(start)?, to_u32(count)?)
            }
            Select::Value { index } => (1, to_u32(index)?, 1),
        };
        for (desc, g) in params.groups.iter_mut().zip(&layout.groups) {
            let t = &tensors[g.output];
            let item_len = t.item_len();
            let last = g.offset
                + (layout.anchors.max(1) - 1) * g.anchor_stride
                + g.count.saturating_sub(1) * g.elem_stride;
            if last >= item_len || t.shape.first().is_none_or(|&n| n < items) {
                return Err(CudaError::Invalid(format!(
                    "output {} {:?} is too small for the anchor layout",
                    g.output, t.shape
                )));
            }
            *desc = GroupDesc {
                ptr: t.ptr,
                item_stride: item_len as u64,
                offset: to_u32(g.offset)?,
                anchor_stride: to_u32(g.anchor_stride)?,
                elem_stride: to_u32(g.elem_stride)?,
                count: to_u32(g.count)?,
                is_half: (t.element_type == ElementType::F16) as u32,
                pad: 0,
            };
        }
        out.fill_prefix(stream, HEADER_BYTES, 0)?;
        let block = (256, 1, 1);
        let grid = (layout.anchors.div_ceil(256) as u32, params.n_items, 1);
        // SAFETY: the caller vouches for the tensors; every index the kernel forms is within
        // the item ranges checked above; it writes at most `capacity` records, which fit `out`.
        unsafe { self.function.launch(stream, grid, block, &params) }
    }
}

/// The selected rows of a downloaded selection (header and records), sorted by batch item and
/// anchor: two allocations per batch, none per row.
#[derive(Debug, Default, PartialEq)]
pub struct Records {
    /// The record count the kernel wrote.
    pub count: usize,
    /// `(item, anchor)` of each row, sorted.
    pub keys: Vec<(usize, usize)>,
    /// The rows' values, row after row in the order of `keys`.
    pub values: Vec<f32>,
    pub row_len: usize,
}

impl Records {
    /// Reads the records of `layout` in `bytes`.
    pub fn read(bytes: &[u8], layout: &AnchorLayout) -> Self {
        let word = |b: &[u8]| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
        let count = bytes.get(..4).map_or(0, word) as usize;
        let raw: Vec<&[u8]> = bytes
            .get(HEADER_BYTES..)
            .unwrap_or(&[])
            .chunks_exact(record_bytes(layout))
            .take(count)
            .collect();
        let mut order: Vec<usize> = (0..raw.len()).collect();
        let key = |r: &[u8]| (word(&r[..4]) as usize, word(&r[4..8]) as usize);
        order.sort_unstable_by_key(|&i| key(raw[i]));
        let row_len = layout.row_len();
        let mut values = Vec::with_capacity(raw.len() * row_len);
        for &i in &order {
            values.extend(
                raw[i][8..]
                    .chunks_exact(4)
                    .map(|v| f32::from_ne_bytes([v[0], v[1], v[2], v[3]])),
            );
        }
        Self {
            count,
            keys: order.iter().map(|&i| key(raw[i])).collect(),
            values,
            row_len,
        }
    }

    /// Row `i` (in sorted order).
    pub fn row(&self, i: usize) -> &[f32] {
        &self.values[i * self.row_len..(i + 1) * self.row_len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn parameter_layout_matches_the_kernel() {
        assert_eq!(size_of::<GroupDesc>(), 40);
        assert_eq!(offset_of!(GroupDesc, offset), 16);
        assert_eq!(offset_of!(GroupDesc, is_half), 32);
        assert_eq!(offset_of!(Params, out), 160);
        assert_eq!(offset_of!(Params, n_items), 168);
        assert_eq!(offset_of!(Params, mode), 184);
        assert_eq!(offset_of!(Params, objectness), 196);
        assert_eq!(offset_of!(Params, min_threshold), 200);
        assert_eq!(offset_of!(Params, capacity), 204);
        assert_eq!(size_of::<Params>(), 208);
    }

    #[test]
    fn kernel_compiles_with_nvrtc() {
        super::super::assert_compiles(&SELECT_CU, &["select_anchors"]);
    }

    #[test]
    fn records_come_back_sorted() {
        let layout = AnchorLayout {
            anchors: 10,
            groups: vec![crate::parse::Group {
                output: 0,
                offset: 0,
                anchor_stride: 2,
                elem_stride: 1,
                count: 2,
            }],
            select: Select::Value { index: 0 },
        };
        let mut bytes = vec![0u8; HEADER_BYTES];
        bytes[..4].copy_from_slice(&3u32.to_ne_bytes());
        for (item, anchor, v) in [(1u32, 2u32, 0.5f32), (0, 7, 0.25), (0, 3, 0.75)] {
            bytes.extend(item.to_ne_bytes());
            bytes.extend(anchor.to_ne_bytes());
            bytes.extend(v.to_ne_bytes());
            bytes.extend((v * 2.0).to_ne_bytes());
        }
        let records = Records::read(&bytes, &layout);
        assert_eq!(records.count, 3);
        assert_eq!(records.keys, vec![(0, 3), (0, 7), (1, 2)]);
        assert_eq!(records.row(0), [0.75, 1.5]);
        assert_eq!(records.row(2), [0.5, 1.0]);
    }
}
