// SPDX-License-Identifier: MIT OR Apache-2.0
//! The reader against NvBufSurface bytes written by hand at the offsets of REFERENCE.md (not
//! through the mirrors, so that a wrong mirror cannot agree with itself), in plain system-memory
//! GstMemory, for both layouts.

use gst_video::{VideoColorMatrix, VideoColorRange, VideoFormat};

use super::abi::*;
use super::*;

fn init() {
    gst::init().unwrap();
}

/// One surface's fields, written at their C offsets.
#[derive(Clone)]
struct Surf {
    width: u32,
    height: u32,
    color_format: u32,
    layout: u32,
    data_size: u32,
    data_ptr: u64,
    /// (width, height, pitch, offset, psize, bytesPerPix) per plane.
    planes: Vec<[u32; 6]>,
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_ne_bytes());
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_ne_bytes());
}

fn stride(abi: NvmmAbi) -> usize {
    match abi {
        NvmmAbi::Ds7 => 384,
        NvmmAbi::Ds8 => 416,
    }
}

/// The `surfaceList` array; boxed so that its address does not change.
fn params_bytes(abi: NvmmAbi, surfs: &[Surf]) -> Box<[u8]> {
    let mut b = vec![0xa5u8; stride(abi) * surfs.len()].into_boxed_slice();
    for (i, s) in surfs.iter().enumerate() {
        let p = &mut b[i * stride(abi)..(i + 1) * stride(abi)];
        put_u32(p, 0, s.width);
        put_u32(p, 4, s.height);
        put_u32(p, 8, s.planes.first().map_or(0, |pl| pl[2]));
        put_u32(p, 12, s.color_format);
        put_u32(p, 16, s.layout);
        put_u64(p, 24, 0);
        put_u32(p, 32, s.data_size);
        put_u64(p, 40, s.data_ptr);
        put_u32(p, 48, s.planes.len() as u32);
        for field in 0..6 {
            for plane in 0..4 {
                let v = s.planes.get(plane).map_or(0, |pl| pl[field]);
                put_u32(p, 48 + 4 + field * 16 + plane * 4, v);
            }
        }
    }
    b
}

/// The `NvBufSurface` bytes a mapped NVMM memory shows.
fn surface_bytes(
    abi: NvmmAbi,
    batch_size: u32,
    num_filled: u32,
    mem_type: u32,
    list: *const u8,
) -> Vec<u8> {
    let mut b = vec![0u8; abi.surface_size()];
    put_u32(&mut b, 0, 3); // gpuId
    put_u32(&mut b, 4, batch_size);
    put_u32(&mut b, 8, num_filled);
    b[12] = 1; // isContiguous
    put_u32(&mut b, 16, mem_type);
    put_u64(&mut b, 24, list as u64);
    if abi == NvmmAbi::Ds8 {
        b[32] = 0; // isImportedBuf
    }
    b
}

/// A buffer of one system-memory GstMemory holding a hand-built surface; `params` must outlive it.
fn buffer(abi: NvmmAbi, mem_type: u32, surfs: &[Surf], params: &[u8]) -> gst::Buffer {
    let n = surfs.len() as u32;
    gst::Buffer::from_slice(surface_bytes(abi, n, n, mem_type, params.as_ptr()))
}

const BASE: u64 = 0x7f00_0000_0000;

/// NV12, 1921x1081 (odd), pitch 2048 > 1921 and 1922 row bytes.
fn nv12_odd() -> Surf {
    let (w, h, pitch) = (1921u32, 1081u32, 2048u32);
    let chroma_rows = h.div_ceil(2);
    Surf {
        width: w,
        height: h,
        color_format: NVBUF_COLOR_FORMAT_NV12,
        layout: NVBUF_LAYOUT_PITCH,
        data_size: pitch * (h + chroma_rows),
        data_ptr: BASE,
        planes: vec![
            [w, h, pitch, 0, pitch * h, 1],
            [
                w.div_ceil(2),
                chroma_rows,
                pitch,
                pitch * h,
                pitch * chroma_rows,
                2,
            ],
        ],
    }
}

/// RGBA, 641x3 (odd), pitch 3072 > 2564 row bytes.
fn rgba_odd() -> Surf {
    Surf {
        width: 641,
        height: 3,
        color_format: NVBUF_COLOR_FORMAT_RGBA,
        layout: NVBUF_LAYOUT_PITCH,
        data_size: 3072 * 3,
        data_ptr: BASE + 0x10_0000,
        planes: vec![[641, 3, 3072, 0, 3072 * 3, 4]],
    }
}

/// Reads `buf` with `options`.
fn read(buf: &gst::Buffer, options: ReadOptions) -> Result<Vec<NvmmSurface>, NvmmError> {
    // SAFETY: every buffer in these tests is a hand-built NvBufSurface whose surfaceList points
    // at a params array the test keeps alive while it reads.
    let batch = unsafe { surface_images_with(buf, &options) }?;
    Ok(batch.surfaces().to_vec())
}

fn read_auto(buf: &gst::Buffer) -> Result<Vec<NvmmSurface>, NvmmError> {
    read(buf, ReadOptions::default())
}

#[test]
fn nv12_of_both_layouts_with_padded_pitch_and_odd_width() {
    init();
    for abi in [NvmmAbi::Ds7, NvmmAbi::Ds8] {
        let surf = nv12_odd();
        let params = params_bytes(abi, std::slice::from_ref(&surf));
        let buf = buffer(
            abi,
            NVBUF_MEM_CUDA_DEVICE,
            std::slice::from_ref(&surf),
            &params,
        );
        // SAFETY: as in `read`.
        let batch = unsafe { surface_images(&buf) }.unwrap();
        assert_eq!(batch.abi(), abi);
        assert_eq!(batch.gpu_id(), 3);
        assert_eq!(batch.batch_size(), 1);
        assert_eq!(batch.mem_type(), NVBUF_MEM_CUDA_DEVICE);
        assert_eq!(batch.len(), 1);
        let s = batch.surfaces()[0];
        assert_eq!(s.index, 0);
        assert_eq!(s.color_format, NVBUF_COLOR_FORMAT_NV12);
        assert_eq!(
            s.colorimetry,
            Some(YuvColorimetry {
                matrix: VideoColorMatrix::Bt601,
                range: VideoColorRange::Range16_235
            })
        );
        let img = s.image;
        assert_eq!(
            (img.format, img.width, img.height),
            (VideoFormat::Nv12, 1921, 1081)
        );
        assert_eq!(img.planes[0].ptr, BASE);
        assert_eq!(img.planes[0].pitch, 2048);
        assert_eq!(img.planes[1].ptr, BASE + 2048 * 1081);
        assert_eq!(img.planes[1].pitch, 2048);
        assert_eq!(img.planes[2], crate::device::DevicePlane::default());
        assert_eq!(img.row_bytes(1), 1922);
    }
}

#[test]
fn rgba_of_both_layouts_in_unified_and_pinned_memory() {
    init();
    for (abi, mem) in [
        (NvmmAbi::Ds7, NVBUF_MEM_CUDA_UNIFIED),
        (NvmmAbi::Ds8, NVBUF_MEM_CUDA_PINNED),
    ] {
        let surf = rgba_odd();
        let params = params_bytes(abi, std::slice::from_ref(&surf));
        let buf = buffer(abi, mem, std::slice::from_ref(&surf), &params);
        let s = read_auto(&buf).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].colorimetry, None);
        let img = s[0].image;
        assert_eq!(
            (img.format, img.width, img.height),
            (VideoFormat::Rgba, 641, 3)
        );
        assert_eq!(img.planes[0].ptr, BASE + 0x10_0000);
        assert_eq!(img.planes[0].pitch, 3072);
        assert_eq!(img.planes[1].ptr, 0);
    }
}

#[test]
fn batches_step_by_the_params_size_of_their_layout() {
    init();
    for abi in [NvmmAbi::Ds7, NvmmAbi::Ds8] {
        let mut a = nv12_odd();
        a.color_format = NVBUF_COLOR_FORMAT_NV12_709_ER;
        let mut b = rgba_odd();
        b.color_format = NVBUF_COLOR_FORMAT_BGRX;
        let mut c = nv12_odd();
        c.color_format = NVBUF_COLOR_FORMAT_NV12_2020;
        c.data_ptr = BASE + 0x4000_0000;
        let surfs = [a, b, c];
        let params = params_bytes(abi, &surfs);
        let buf = buffer(abi, NVBUF_MEM_CUDA_DEVICE, &surfs, &params);
        let s = read_auto(&buf).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[1].index, 1);
        assert_eq!(s[1].image.format, VideoFormat::Bgrx);
        assert_eq!(s[1].image.planes[0].pitch, 3072);
        assert_eq!(
            s[0].colorimetry,
            Some(YuvColorimetry {
                matrix: VideoColorMatrix::Bt709,
                range: VideoColorRange::Range0_255
            })
        );
        assert_eq!(
            s[2].colorimetry.map(|c| (c.matrix, c.range)),
            Some((VideoColorMatrix::Bt2020, VideoColorRange::Range16_235))
        );
        assert_eq!(s[2].image.planes[1].ptr, BASE + 0x4000_0000 + 2048 * 1081);
    }
}

#[test]
fn i420_and_the_other_nv12_variants() {
    init();
    let (w, h) = (17u32, 5u32);
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let surf = Surf {
        width: w,
        height: h,
        color_format: NVBUF_COLOR_FORMAT_YUV420,
        layout: NVBUF_LAYOUT_PITCH,
        data_size: 512 * h + 2 * 512 * ch,
        data_ptr: BASE,
        planes: vec![
            [w, h, 512, 0, 512 * h, 1],
            [cw, ch, 512, 512 * h, 512 * ch, 1],
            [cw, ch, 512, 512 * h + 512 * ch, 512 * ch, 1],
        ],
    };
    let params = params_bytes(NvmmAbi::Ds7, std::slice::from_ref(&surf));
    let buf = buffer(
        NvmmAbi::Ds7,
        NVBUF_MEM_CUDA_DEVICE,
        std::slice::from_ref(&surf),
        &params,
    );
    let s = read_auto(&buf).unwrap();
    assert_eq!(s[0].image.format, VideoFormat::I420);
    assert_eq!(s[0].image.planes[2].ptr, BASE + (512 * h + 512 * ch) as u64);

    for (format, matrix, range) in [
        (
            NVBUF_COLOR_FORMAT_NV12_ER,
            VideoColorMatrix::Bt601,
            VideoColorRange::Range0_255,
        ),
        (
            NVBUF_COLOR_FORMAT_NV12_709,
            VideoColorMatrix::Bt709,
            VideoColorRange::Range16_235,
        ),
    ] {
        let mut surf = nv12_odd();
        surf.color_format = format;
        let params = params_bytes(NvmmAbi::Ds8, std::slice::from_ref(&surf));
        let buf = buffer(
            NvmmAbi::Ds8,
            NVBUF_MEM_CUDA_DEVICE,
            std::slice::from_ref(&surf),
            &params,
        );
        let s = read_auto(&buf).unwrap();
        assert_eq!(s[0].image.format, VideoFormat::Nv12);
        assert_eq!(s[0].colorimetry, Some(YuvColorimetry { matrix, range }));
    }
}

#[test]
fn wrong_mapped_size_is_refused_naming_both_sizes() {
    init();
    for size in [0usize, 48, 100, 384] {
        let buf = gst::Buffer::from_slice(vec![0u8; size]);
        let e = read_auto(&buf).unwrap_err();
        assert_eq!(e, NvmmError::MappedSize { size });
        let text = e.to_string();
        assert!(text.contains(&format!("{size} bytes")), "{text}");
        assert!(text.contains("(64)") && text.contains("(72)"), "{text}");
    }
}

#[test]
fn an_explicit_layout_overrides_the_size_but_must_fit() {
    init();
    let surf = rgba_odd();
    let params = params_bytes(NvmmAbi::Ds7, std::slice::from_ref(&surf));
    // DS7 bytes with 8 trailing bytes (72 in all): the size alone would say DS8.
    let mut bytes = surface_bytes(NvmmAbi::Ds7, 1, 1, NVBUF_MEM_CUDA_DEVICE, params.as_ptr());
    bytes.extend_from_slice(&[0u8; 8]);
    let buf = gst::Buffer::from_slice(bytes);
    let s = read(
        &buf,
        ReadOptions {
            abi: Some(NvmmAbi::Ds7),
            platform: None,
        },
    )
    .unwrap();
    assert_eq!(s[0].image.planes[0].pitch, 3072);

    let small = gst::Buffer::from_slice(surface_bytes(
        NvmmAbi::Ds7,
        1,
        1,
        NVBUF_MEM_CUDA_DEVICE,
        params.as_ptr(),
    ));
    let e = read(
        &small,
        ReadOptions {
            abi: Some(NvmmAbi::Ds8),
            platform: None,
        },
    )
    .unwrap_err();
    assert_eq!(
        e,
        NvmmError::TooSmallForAbi {
            size: 64,
            abi: NvmmAbi::Ds8
        }
    );
}

#[test]
fn block_linear_is_refused() {
    init();
    for mem in [NVBUF_MEM_CUDA_DEVICE, NVBUF_MEM_SURFACE_ARRAY] {
        let mut surf = nv12_odd();
        surf.layout = NVBUF_LAYOUT_BLOCK_LINEAR;
        let params = params_bytes(NvmmAbi::Ds7, std::slice::from_ref(&surf));
        let buf = buffer(NvmmAbi::Ds7, mem, std::slice::from_ref(&surf), &params);
        let e = read_auto(&buf).unwrap_err();
        assert_eq!(e, NvmmError::BlockLinear { index: 0 });
        assert!(e.to_string().contains("block linear"));
    }
}

#[test]
fn a_plane_beyond_data_size_is_refused() {
    init();
    for abi in [NvmmAbi::Ds7, NvmmAbi::Ds8] {
        let mut surf = nv12_odd();
        surf.data_size -= 1;
        let params = params_bytes(abi, std::slice::from_ref(&surf));
        let buf = buffer(
            abi,
            NVBUF_MEM_CUDA_DEVICE,
            std::slice::from_ref(&surf),
            &params,
        );
        let e = read_auto(&buf).unwrap_err();
        assert_eq!(
            e,
            NvmmError::PlaneOutOfBounds {
                index: 0,
                plane: 1,
                offset: 2048 * 1081,
                pitch: 2048,
                rows: 541,
                data_size: 2048 * (1081 + 541) - 1,
            }
        );
        assert!(e.to_string().contains("dataSize"), "{e}");
    }
    // An offset alone past the end.
    let mut surf = rgba_odd();
    surf.planes[0][3] = surf.data_size;
    let params = params_bytes(NvmmAbi::Ds7, std::slice::from_ref(&surf));
    let buf = buffer(
        NvmmAbi::Ds7,
        NVBUF_MEM_CUDA_DEVICE,
        std::slice::from_ref(&surf),
        &params,
    );
    assert!(matches!(
        read_auto(&buf),
        Err(NvmmError::PlaneOutOfBounds { plane: 0, .. })
    ));
}

#[test]
fn unsupported_formats_are_refused_by_name() {
    init();
    for (format, name) in [
        (NVBUF_COLOR_FORMAT_NV21, "NV21 (8)"),
        (NVBUF_COLOR_FORMAT_NV12_10LE, "NV12_10LE (29)"),
        (NVBUF_COLOR_FORMAT_RGB, "RGB (27)"),
        (99, "colour format 99"),
    ] {
        let mut surf = nv12_odd();
        surf.color_format = format;
        let params = params_bytes(NvmmAbi::Ds8, std::slice::from_ref(&surf));
        let buf = buffer(
            NvmmAbi::Ds8,
            NVBUF_MEM_CUDA_DEVICE,
            std::slice::from_ref(&surf),
            &params,
        );
        let e = read_auto(&buf).unwrap_err();
        assert_eq!(
            e,
            NvmmError::ColorFormat {
                index: 0,
                format: name.into()
            }
        );
        assert!(e.to_string().contains(name), "{e}");
    }
}

#[test]
fn other_malformed_surfaces_are_refused() {
    init();
    let surf = nv12_odd();
    let params = params_bytes(NvmmAbi::Ds7, std::slice::from_ref(&surf));

    // numFilled > batchSize.
    let buf = gst::Buffer::from_slice(surface_bytes(
        NvmmAbi::Ds7,
        1,
        2,
        NVBUF_MEM_CUDA_DEVICE,
        params.as_ptr(),
    ));
    assert_eq!(
        read_auto(&buf).unwrap_err(),
        NvmmError::Filled {
            num_filled: 2,
            batch_size: 1
        }
    );

    // A null surfaceList.
    let buf = gst::Buffer::from_slice(surface_bytes(
        NvmmAbi::Ds7,
        1,
        1,
        NVBUF_MEM_CUDA_DEVICE,
        std::ptr::null(),
    ));
    assert_eq!(
        read_auto(&buf).unwrap_err(),
        NvmmError::NullSurfaceList { num_filled: 1 }
    );

    // System memory is not device memory.
    let buf = buffer(
        NvmmAbi::Ds7,
        NVBUF_MEM_SYSTEM,
        std::slice::from_ref(&surf),
        &params,
    );
    let e = read_auto(&buf).unwrap_err();
    assert!(
        matches!(&e, NvmmError::MemType { mem_type } if mem_type == "SYSTEM"),
        "{e}"
    );

    // A null dataPtr.
    let mut null = surf.clone();
    null.data_ptr = 0;
    let params_null = params_bytes(NvmmAbi::Ds7, std::slice::from_ref(&null));
    let buf = buffer(
        NvmmAbi::Ds7,
        NVBUF_MEM_CUDA_DEVICE,
        std::slice::from_ref(&null),
        &params_null,
    );
    assert_eq!(
        read_auto(&buf).unwrap_err(),
        NvmmError::NullData { index: 0 }
    );

    // planeParams disagreeing with the format.
    let mut one = surf.clone();
    one.planes.truncate(1);
    let params_one = params_bytes(NvmmAbi::Ds7, std::slice::from_ref(&one));
    let buf = buffer(
        NvmmAbi::Ds7,
        NVBUF_MEM_CUDA_DEVICE,
        std::slice::from_ref(&one),
        &params_one,
    );
    assert!(matches!(
        read_auto(&buf),
        Err(NvmmError::PlaneCount {
            found: 1,
            expected: 2,
            ..
        })
    ));

    // A pitch smaller than a row.
    let mut narrow = rgba_odd();
    narrow.planes[0][2] = 2560;
    let params_narrow = params_bytes(NvmmAbi::Ds7, std::slice::from_ref(&narrow));
    let buf = buffer(
        NvmmAbi::Ds7,
        NVBUF_MEM_CUDA_DEVICE,
        std::slice::from_ref(&narrow),
        &params_narrow,
    );
    assert!(matches!(
        read_auto(&buf),
        Err(NvmmError::Image { index: 0, .. })
    ));

    // Two memories.
    let mut two = gst::Buffer::new();
    {
        let two = two.get_mut().unwrap();
        two.append_memory(gst::Memory::from_slice(vec![0u8; 64]));
        two.append_memory(gst::Memory::from_slice(vec![0u8; 64]));
    }
    assert_eq!(read_auto(&two).unwrap_err(), NvmmError::Memories(2));
}

#[test]
fn default_memory_follows_the_platform() {
    init();
    let surf = rgba_odd();
    let params = params_bytes(NvmmAbi::Ds7, std::slice::from_ref(&surf));
    let buf = buffer(
        NvmmAbi::Ds7,
        NVBUF_MEM_DEFAULT,
        std::slice::from_ref(&surf),
        &params,
    );
    let discrete = ReadOptions {
        abi: None,
        platform: Some(Platform::Discrete),
    };
    assert_eq!(read(&buf, discrete).unwrap()[0].image.planes[0].pitch, 3072);
    // Unnamed, the driver is asked; without one (this machine) that is an error saying why.
    match read_auto(&buf) {
        Ok(s) => assert_eq!(s.len(), 1),
        Err(e) => {
            assert!(matches!(e, NvmmError::DefaultMemType { .. }), "{e}");
            assert!(e.to_string().contains("libcuda"), "{e}");
        }
    }
}

#[test]
fn surface_arrays_go_through_egl() {
    init();
    let surf = nv12_odd();
    let params = params_bytes(NvmmAbi::Ds8, std::slice::from_ref(&surf));
    let buf = buffer(
        NvmmAbi::Ds8,
        NVBUF_MEM_SURFACE_ARRAY,
        std::slice::from_ref(&surf),
        &params,
    );
    // Without JetPack the EGL path stops at loading libnvbufsurface, naming it.
    if let Err(e) = read_auto(&buf) {
        assert!(
            matches!(e, NvmmError::Library { .. } | NvmmError::NoCudaContext),
            "{e}"
        );
    }
}

#[test]
fn produced_memory_reads_back_in_both_layouts() {
    init();
    for abi in [NvmmAbi::Ds7, NvmmAbi::Ds8] {
        for (format, w, h) in [
            (NVBUF_COLOR_FORMAT_NV12, 1921u32, 1081u32),
            (NVBUF_COLOR_FORMAT_RGBA, 641, 3),
        ] {
            let layout = PitchLayout::new(format, w, h, 512).unwrap();
            let mem = surface_memory(abi, 1, NVBUF_MEM_CUDA_DEVICE, &layout, BASE, vec![0u8; 16]);
            assert_eq!(mem.size(), abi.surface_size());
            let mut buf = gst::Buffer::new();
            buf.get_mut().unwrap().append_memory(mem);
            // SAFETY: `surface_memory` builds a valid NVMM memory.
            let batch = unsafe { surface_images(&buf) }.unwrap();
            assert_eq!(batch.abi(), abi);
            assert_eq!(batch.gpu_id(), 1);
            let img = batch.surfaces()[0].image;
            assert_eq!((img.width, img.height), (w, h));
            assert_eq!(img.planes[0].ptr, BASE);
            for (i, plane) in layout.planes.iter().enumerate() {
                assert_eq!(img.planes[i].ptr, BASE + plane.offset as u64);
                assert_eq!(img.planes[i].pitch, plane.pitch);
                assert_eq!(plane.pitch % 512, 0);
                assert_eq!(plane.psize, plane.pitch * plane.height);
            }
        }
    }
}

#[test]
fn pitch_layout_rounds_pitches_like_deepstream() {
    let nv12 = PitchLayout::new(NVBUF_COLOR_FORMAT_NV12, 1920, 1080, 512).unwrap();
    assert_eq!(nv12.planes.len(), 2);
    assert_eq!(nv12.planes[0].pitch, 2048);
    assert_eq!(nv12.planes[1].pitch, 2048);
    assert_eq!(nv12.planes[1].offset, 2048 * 1080);
    assert_eq!((nv12.planes[1].width, nv12.planes[1].height), (960, 540));
    assert_eq!(nv12.planes[1].bytes_per_pix, 2);
    assert_eq!(nv12.data_size, 2048 * 1620);
    let rgba = PitchLayout::new(NVBUF_COLOR_FORMAT_RGBA, 1920, 1080, 512).unwrap();
    assert_eq!(rgba.planes[0].pitch, 7680);
    assert_eq!(rgba.planes[0].bytes_per_pix, 4);
    assert!(PitchLayout::new(NVBUF_COLOR_FORMAT_NV21, 16, 16, 512).is_err());
    assert!(PitchLayout::new(NVBUF_COLOR_FORMAT_NV12, 0, 16, 512).is_err());
    assert!(PitchLayout::new(NVBUF_COLOR_FORMAT_RGBA, 65536, 65536, 512).is_err());
    // A row of 2^30 RGBA pixels overflowed its byte count (a panic) before the side limit.
    assert!(PitchLayout::new(NVBUF_COLOR_FORMAT_RGBA, 1 << 30, 1, 512).is_err());
}
