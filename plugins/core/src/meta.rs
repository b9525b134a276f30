// SPDX-License-Identifier: MIT OR Apache-2.0
//! `BatchMeta`: the GstMeta that carries a [`Batch`] on a buffer.
//!
//! The meta API is tagged `video` and `size`, so standard video elements keep it: buffer copies
//! duplicate it, and scaling elements (`videoscale`, `videoconvertscale`) call its transform,
//! which rescales every box to the new frame size.
//!
//! ```no_run
//! # use gst::prelude::*;
//! use ferrostream_core::meta::BatchMeta;
//! # fn probe(buffer: &gst::BufferRef) {
//! if let Some(meta) = buffer.meta::<BatchMeta>() {
//!     for frame in &meta.batch().frames {
//!         for object in &frame.objects {
//!             println!("{} {:.2} {:?}", object.label, object.confidence, object.bbox());
//!         }
//!     }
//! }
//! # }
//! ```

use std::fmt;
use std::mem::ManuallyDrop;
use std::ptr;
use std::sync::LazyLock;

use gst::glib;
use gst::glib::translate::{IntoGlib, from_glib};
use gst::meta::{MetaAPI, MetaAPIExt};

use crate::analytics::Batch;
use crate::surface::Surface;

/// Name of the meta API GType. Carries a layout version because the meta holds Rust data: two
/// builds with different `Batch` layouts in one process must not read each other's metas.
/// Bump it whenever a type in `analytics` changes shape.
const API_NAME: &std::ffi::CStr = c"FerrostreamBatchMetaV5API";
const IMPL_NAME: &std::ffi::CStr = c"FerrostreamBatchMetaV5";

/// The analytics metadata of a buffer: one [`Batch`] of frames.
#[repr(transparent)]
pub struct BatchMeta(imp::BatchMetaRaw);

// SAFETY: the meta owns a `Batch` and surfaces (buffers and caps, which are `Send + Sync`); GStreamer gives
// mutable access only through a writable buffer.
unsafe impl Send for BatchMeta {}
// SAFETY: see above.
unsafe impl Sync for BatchMeta {}

impl BatchMeta {
    /// Attaches `batch` to `buffer`, replacing any `BatchMeta` already there.
    pub fn add(
        buffer: &mut gst::BufferRef,
        batch: Batch,
    ) -> gst::MetaRefMut<'_, Self, gst::meta::Standalone> {
        Self::add_with_surfaces(buffer, batch, Vec::new())
    }

    /// Attaches a batch whose frames' pixels are in `surfaces` (see [`crate::batch`]),
    /// replacing any `BatchMeta` already there.
    pub fn add_with_surfaces(
        buffer: &mut gst::BufferRef,
        batch: Batch,
        surfaces: Vec<Surface>,
    ) -> gst::MetaRefMut<'_, Self, gst::meta::Standalone> {
        if let Some(existing) = buffer.meta_mut::<BatchMeta>() {
            existing
                .remove()
                .expect("BatchMeta is not locked, it can be removed");
        }
        let mut params = ManuallyDrop::new(imp::BatchMetaParams { batch, surfaces });
        // SAFETY: the info is our registered meta; init takes ownership of `params.batch`
        // (moved out with ptr::read), which is why `params` is never dropped here.
        unsafe {
            let meta = gst::ffi::gst_buffer_add_meta(
                buffer.as_mut_ptr(),
                imp::meta_info(),
                &mut *params as *mut imp::BatchMetaParams as glib::ffi::gpointer,
            ) as *mut imp::BatchMetaRaw;
            Self::from_mut_ptr(buffer, meta)
        }
    }

    /// The buffer's batch, creating an empty one when the buffer has none.
    pub fn get_or_add(
        buffer: &mut gst::BufferRef,
    ) -> gst::MetaRefMut<'_, Self, gst::meta::Standalone> {
        if buffer.meta::<BatchMeta>().is_none() {
            return Self::add(buffer, Batch::default());
        }
        buffer
            .meta_mut::<BatchMeta>()
            .expect("checked above that the meta exists")
    }

    pub fn batch(&self) -> &Batch {
        &self.0.batch
    }

    pub fn batch_mut(&mut self) -> &mut Batch {
        &mut self.0.batch
    }

    /// The source buffers holding the frames' pixels when the buffer is a batch (empty for a
    /// plain frame, whose pixels are the buffer itself).
    pub fn surfaces(&self) -> &[Surface] {
        &self.0.surfaces
    }

    pub fn surfaces_mut(&mut self) -> &mut Vec<Surface> {
        &mut self.0.surfaces
    }

    /// Which state of the batch this is, as applications see it: unique in the process, and
    /// changed by every edit through [`crate::edit`], so a view read at one revision never
    /// edits another.
    pub fn revision(&self) -> u64 {
        self.0.revision
    }

    /// Records a change made on behalf of an application.
    pub fn bump_revision(&mut self) -> u64 {
        self.0.revision = imp::next_revision();
        self.0.revision
    }

    /// Whether the meta on buffers is the one this copy of the library registered. Another
    /// copy (a second build of Ferrostream loaded into the process) would have registered it
    /// first, with callbacks and a layout of its own; its metas must not be read as ours.
    pub fn registered_here() -> bool {
        imp::registered_here()
    }

    /// The buffer's meta, borrowed for as long as the buffer is.
    pub fn of(buffer: &gst::BufferRef) -> Option<&BatchMeta> {
        // SAFETY: `gst_buffer_get_meta` returns our registered meta (or NULL); it lives in the
        // buffer and cannot be removed while the buffer is borrowed immutably.
        unsafe {
            let meta = gst::ffi::gst_buffer_get_meta(
                buffer.as_mut_ptr(),
                imp::meta_api_type().into_glib(),
            ) as *const BatchMeta;
            meta.as_ref()
        }
    }
}

impl fmt::Debug for BatchMeta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchMeta")
            .field("batch", self.batch())
            .finish()
    }
}

// SAFETY: `BatchMeta` is `repr(transparent)` over `BatchMetaRaw`, whose first field is the
// GstMeta, and `meta_api` returns the API type registered for it.
unsafe impl MetaAPI for BatchMeta {
    type GstType = imp::BatchMetaRaw;

    fn meta_api() -> glib::Type {
        imp::meta_api_type()
    }
}

/// Registers the meta API and implementation. Idempotent; called by the plugin's `plugin_init`
/// so that the types exist before the first buffer, and implicitly on first use.
pub fn register() {
    let _ = imp::meta_info();
}

mod imp {
    use super::*;

    pub(super) struct BatchMetaParams {
        pub batch: Batch,
        pub surfaces: Vec<Surface>,
    }

    #[repr(C)]
    pub struct BatchMetaRaw {
        parent: gst::ffi::GstMeta,
        pub(super) batch: Batch,
        pub(super) surfaces: Vec<Surface>,
        pub(super) revision: u64,
    }

    pub(super) fn meta_api_type() -> glib::Type {
        static TYPE: LazyLock<glib::Type> = LazyLock::new(|| {
            // SAFETY: plain C calls with NUL-terminated static strings; `tags` is a
            // NULL-terminated array that GStreamer copies.
            unsafe {
                let existing = glib::gobject_ffi::g_type_from_name(API_NAME.as_ptr());
                if existing != glib::gobject_ffi::G_TYPE_INVALID {
                    return from_glib(existing);
                }
                let mut tags = [c"video".as_ptr(), c"size".as_ptr(), ptr::null()];
                let t: glib::Type = from_glib(gst::ffi::gst_meta_api_type_register(
                    API_NAME.as_ptr(),
                    tags.as_mut_ptr(),
                ));
                assert_ne!(t, glib::Type::INVALID, "registering the BatchMeta API");
                t
            }
        });
        *TYPE
    }

    /// A revision no meta of the process has had: a view that read one meta can never take
    /// another (a copy, a replacement) for it.
    pub(super) fn next_revision() -> u64 {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// The registered meta, and whether this copy of the library registered it.
    struct MetaInfo(ptr::NonNull<gst::ffi::GstMetaInfo>, bool);
    // SAFETY: GstMetaInfo is immutable after registration and lives for the whole process.
    unsafe impl Send for MetaInfo {}
    // SAFETY: see above.
    unsafe impl Sync for MetaInfo {}

    pub(super) fn meta_info() -> *const gst::ffi::GstMetaInfo {
        info().0.as_ptr()
    }

    pub(super) fn registered_here() -> bool {
        info().1
    }

    fn info() -> &'static MetaInfo {
        static INFO: LazyLock<MetaInfo> = LazyLock::new(|| {
            let api = meta_api_type();
            // SAFETY: registering with our own callbacks, which match `BatchMetaRaw`.
            unsafe {
                let existing = gst::ffi::gst_meta_get_info(IMPL_NAME.as_ptr());
                let info = if existing.is_null() {
                    gst::ffi::gst_meta_register(
                        api.into_glib(),
                        IMPL_NAME.as_ptr(),
                        std::mem::size_of::<BatchMetaRaw>(),
                        Some(batch_meta_init),
                        Some(batch_meta_free),
                        Some(batch_meta_transform),
                    )
                } else {
                    existing
                };
                MetaInfo(
                    ptr::NonNull::new(info as *mut gst::ffi::GstMetaInfo)
                        .expect("registering BatchMeta"),
                    existing.is_null(),
                )
            }
        });
        &INFO
    }

    unsafe extern "C" fn batch_meta_init(
        meta: *mut gst::ffi::GstMeta,
        params: glib::ffi::gpointer,
        _buffer: *mut gst::ffi::GstBuffer,
    ) -> glib::ffi::gboolean {
        // SAFETY: GStreamer allocated `size_of::<BatchMetaRaw>()` bytes for `meta`; the batch
        // field is uninitialised and is written exactly once here. `params` is either NULL
        // (meta added from C) or a `BatchMetaParams` whose batch the caller gave up.
        unsafe {
            let meta = meta as *mut BatchMetaRaw;
            let (batch, surfaces) = if params.is_null() {
                (Batch::default(), Vec::new())
            } else {
                let params = params as *const BatchMetaParams;
                (ptr::read(&(*params).batch), ptr::read(&(*params).surfaces))
            };
            ptr::write(ptr::addr_of_mut!((*meta).batch), batch);
            ptr::write(ptr::addr_of_mut!((*meta).surfaces), surfaces);
            ptr::write(ptr::addr_of_mut!((*meta).revision), next_revision());
        }
        glib::ffi::GTRUE
    }

    unsafe extern "C" fn batch_meta_free(
        meta: *mut gst::ffi::GstMeta,
        _buffer: *mut gst::ffi::GstBuffer,
    ) {
        // SAFETY: the batch was initialised in `batch_meta_init` and is dropped exactly once.
        unsafe {
            let meta = meta as *mut BatchMetaRaw;
            ptr::drop_in_place(ptr::addr_of_mut!((*meta).batch));
            ptr::drop_in_place(ptr::addr_of_mut!((*meta).surfaces));
        }
    }

    unsafe extern "C" fn batch_meta_transform(
        dest: *mut gst::ffi::GstBuffer,
        meta: *mut gst::ffi::GstMeta,
        _buffer: *mut gst::ffi::GstBuffer,
        type_: glib::ffi::GQuark,
        data: glib::ffi::gpointer,
    ) -> glib::ffi::gboolean {
        // SAFETY: GStreamer passes our own meta, a writable destination buffer, and for the
        // video scale transform a `GstVideoMetaTransform` describing both frame sizes.
        unsafe {
            let source = &*(meta as *const BatchMetaRaw);
            let mut batch = source.batch.clone();
            if type_ == gst_video::ffi::gst_video_meta_transform_scale_get_quark() {
                let transform = &*(data as *const gst_video::ffi::GstVideoMetaTransform);
                let in_info = &*transform.in_info;
                let out_info = &*transform.out_info;
                rescale_batch(
                    &mut batch,
                    (in_info.width as u32, in_info.height as u32),
                    (out_info.width as u32, out_info.height as u32),
                );
            } else if type_ != copy_quark() {
                // An unknown transform: we cannot know what happened to the pixels.
                return glib::ffi::GFALSE;
            }
            let dest = gst::BufferRef::from_mut_ptr(dest);
            BatchMeta::add_with_surfaces(dest, batch, source.surfaces.clone());
        }
        glib::ffi::GTRUE
    }

    fn copy_quark() -> glib::ffi::GQuark {
        static QUARK: LazyLock<glib::Quark> = LazyLock::new(|| glib::Quark::from_str("gst-copy"));
        QUARK.into_glib()
    }
}

/// Applies a scaling element's size change to a batch: frames of the input size, and frames
/// whose size was never recorded, take the output size. (Batches of several sizes are never
/// scaled by standard elements.)
fn rescale_batch(batch: &mut Batch, from: (u32, u32), to: (u32, u32)) {
    for frame in &mut batch.frames {
        let unknown_size = frame.width == 0 || frame.height == 0;
        if unknown_size || (frame.width, frame.height) == from {
            frame.rescale(to.0, to.1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analytics::{BBox, Frame, Object};
    use gst::glib::translate::ToGlibPtr;
    use gst::prelude::*;

    fn init() {
        gst::init().unwrap();
        register();
    }

    fn sample_batch() -> Batch {
        let mut frame = Frame::new(3, 41, 640, 480);
        frame.pts = Some(gst::ClockTime::from_mseconds(40));
        let mut person = Object::new(
            0,
            "person".into(),
            0.9,
            BBox::new(64.0, 48.0, 128.0, 96.0),
            1,
        );
        person.tracker_bbox = Some(BBox::new(60.0, 40.0, 120.0, 100.0));
        person.object_id = Some(7);
        frame.objects.push(person);
        Batch::single(frame)
    }

    #[test]
    fn meta_survives_buffer_copy() {
        init();
        let mut buffer = gst::Buffer::with_size(16).unwrap();
        BatchMeta::add(buffer.get_mut().unwrap(), sample_batch());
        let copy = buffer.copy();
        let meta = copy.meta::<BatchMeta>().expect("copied meta");
        assert_eq!(meta.batch(), &sample_batch());
        // Deep copy: changing the copy leaves the original alone.
        let mut copy = copy;
        copy.make_mut()
            .meta_mut::<BatchMeta>()
            .unwrap()
            .batch_mut()
            .frames[0]
            .objects
            .clear();
        assert_eq!(
            buffer.meta::<BatchMeta>().unwrap().batch().object_count(),
            1
        );
    }

    #[test]
    fn adding_twice_replaces() {
        init();
        let mut buffer = gst::Buffer::new();
        BatchMeta::add(buffer.get_mut().unwrap(), sample_batch());
        BatchMeta::add(buffer.get_mut().unwrap(), Batch::default());
        assert_eq!(buffer.iter_meta::<BatchMeta>().count(), 1);
        assert_eq!(buffer.meta::<BatchMeta>().unwrap().batch().frames.len(), 0);
    }

    #[test]
    fn scale_transform_rescales_boxes() {
        init();
        let mut buffer = gst::Buffer::with_size(16).unwrap();
        BatchMeta::add(buffer.get_mut().unwrap(), sample_batch());
        let in_info = gst_video::VideoInfo::builder(gst_video::VideoFormat::Rgba, 640, 480)
            .build()
            .unwrap();
        let out_info = gst_video::VideoInfo::builder(gst_video::VideoFormat::Rgba, 320, 240)
            .build()
            .unwrap();
        let mut dest = gst::Buffer::with_size(16).unwrap();
        // SAFETY: calling the registered transform exactly as a scaling element does.
        unsafe {
            let meta = buffer.meta::<BatchMeta>().unwrap();
            let raw = meta.as_ptr() as *mut gst::ffi::GstMeta;
            let mut transform = gst_video::ffi::GstVideoMetaTransform {
                in_info: in_info.to_glib_none().0 as *mut _,
                out_info: out_info.to_glib_none().0 as *mut _,
            };
            let transform_func = (*(*raw).info).transform_func.unwrap();
            let ok = transform_func(
                dest.get_mut().unwrap().as_mut_ptr(),
                raw,
                buffer.as_mut_ptr(),
                gst_video::ffi::gst_video_meta_transform_scale_get_quark(),
                &mut transform as *mut _ as glib::ffi::gpointer,
            );
            assert_eq!(ok, glib::ffi::GTRUE);
        }
        let meta = dest.meta::<BatchMeta>().unwrap();
        let frame = &meta.batch().frames[0];
        assert_eq!((frame.width, frame.height), (320, 240));
        assert_eq!(
            frame.objects[0].detector_bbox,
            BBox::new(32.0, 24.0, 64.0, 48.0)
        );
        assert_eq!(
            frame.objects[0].tracker_bbox,
            Some(BBox::new(30.0, 20.0, 60.0, 50.0))
        );
        assert_eq!(frame.objects[0].object_id, Some(7));
    }

    #[test]
    fn videoscale_element_rescales_boxes() {
        init();
        let Some(_) = gst::ElementFactory::find("videoscale") else {
            panic!("videoscale (gstreamer1.0-plugins-base) is required for this test");
        };
        let pipeline = gst::parse::launch(
            "appsrc name=src caps=video/x-raw,format=RGBA,width=640,height=480,framerate=10/1 format=time \
             ! videoscale ! video/x-raw,width=320,height=240 ! appsink name=sink sync=false",
        )
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
        let src = pipeline.by_name("src").unwrap();
        let sink = pipeline.by_name("sink").unwrap();
        pipeline.set_state(gst::State::Playing).unwrap();
        let mut buffer = gst::Buffer::with_size(640 * 480 * 4).unwrap();
        {
            let b = buffer.get_mut().unwrap();
            b.set_pts(gst::ClockTime::ZERO);
            BatchMeta::add(b, sample_batch());
        }
        let pushed = src.emit_by_name::<gst::FlowReturn>("push-buffer", &[&buffer]);
        assert_eq!(pushed, gst::FlowReturn::Ok);
        let sample = sink
            .emit_by_name::<Option<gst::Sample>>(
                "try-pull-sample",
                &[&gst::ClockTime::from_seconds(5)],
            )
            .expect("a scaled frame");
        pipeline.set_state(gst::State::Null).unwrap();
        let out = sample.buffer().unwrap();
        let meta = out.meta::<BatchMeta>().expect("meta kept by videoscale");
        let frame = &meta.batch().frames[0];
        assert_eq!((frame.width, frame.height), (320, 240));
        assert_eq!(
            frame.objects[0].detector_bbox,
            BBox::new(32.0, 24.0, 64.0, 48.0)
        );
    }
}
