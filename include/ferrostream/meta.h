/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Ferrostream metadata for C applications: read the frames and objects that Ferrostream
 * elements attached to a buffer (in a pad probe, an appsink callback, ...).
 *
 * The functions are exported by the Ferrostream plugin library (libgstferrostream.so); link it
 * with `pkg-config --libs ferrostream` and load the plugin as usual (GStreamer then uses that
 * same library, so the metadata type is registered once).
 *
 *   const FerrostreamBatch *batch = ferrostream_batch_get (buffer);
 *   for (guint f = 0; f < ferrostream_batch_n_frames (batch); f++) {
 *     FerrostreamFrame frame;
 *     ferrostream_batch_frame (batch, f, &frame);
 *     for (guint o = 0; o < frame.n_objects; o++) {
 *       FerrostreamObject obj;
 *       ferrostream_batch_object (batch, f, o, &obj);
 *       printf ("%.*s %.2f\n", (int) obj.label_len, obj.label, obj.confidence);
 *     }
 *   }
 *
 * Strings are UTF-8 with a length (not NUL-terminated) and, like the arrays, point into the
 * metadata: they are valid until the buffer's metadata changes or the buffer is freed.
 * Everything else (attributes, masks, analytics results, user metadata, display elements) is in
 * the JSON records of ferrostream_batch_frame_json / ferrostream_batch_object_json, in the
 * schema that rsmetaexport writes.
 */
#ifndef FERROSTREAM_META_H
#define FERROSTREAM_META_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header describes; compare with ferrostream_abi_version (). */
#define FERROSTREAM_ABI_VERSION 1

/* object_id of an object no tracker has given an id. */
#define FERROSTREAM_UNTRACKED UINT64_MAX
/* A timestamp that is not known (GST_CLOCK_TIME_NONE). */
#define FERROSTREAM_TIME_NONE UINT64_MAX

/* Results of the functions that can fail. */
typedef enum {
  FERROSTREAM_OK = 0,
  FERROSTREAM_NO_META = 1,
  FERROSTREAM_NOT_WRITABLE = 2,
  FERROSTREAM_STALE = 3,
  FERROSTREAM_BAD_INDEX = 4,
  FERROSTREAM_INVALID = 5,
  FERROSTREAM_UNSUPPORTED = 6,
  FERROSTREAM_NOT_A_BUFFER = 7,
  FERROSTREAM_FOREIGN_META = 8,
  FERROSTREAM_MAP_FAILED = 9
} FerrostreamStatus;

/* A buffer's batch metadata (opaque). */
typedef struct _FerrostreamBatch FerrostreamBatch;

/* A rectangle in pixels of the frame (FerrostreamFrame.width x height). */
typedef struct {
  float left, top, width, height;
} FerrostreamBox;

typedef struct {
  uint32_t source_id;
  uint32_t pad_index;
  uint64_t frame_num;
  uint64_t pts;                 /* FERROSTREAM_TIME_NONE when unknown */
  uint32_t width, height;       /* the size the boxes refer to */
  uint32_t source_width, source_height;
  uint32_t n_objects;
  uint32_t n_components_run;
  const int32_t *components_run;        /* gie-unique-ids of the inference that ran */
  uint32_t n_terminated_ids;
  const uint64_t *terminated_ids;       /* tracks that ended in this frame */
  uint32_t n_display;                   /* display elements for rsosd */
  uint8_t has_analytics, has_segmentation, has_user_meta, reserved;
} FerrostreamFrame;

typedef struct {
  uint64_t object_id;           /* FERROSTREAM_UNTRACKED until a tracker gives one */
  int32_t class_id;
  int32_t component_id;         /* gie-unique-id of the component that found it */
  const char *label;
  size_t label_len;
  float confidence;
  FerrostreamBox bbox;          /* the box to show: the tracker's, else the detector's */
  FerrostreamBox detector_bbox;
  FerrostreamBox tracker_bbox;  /* valid when has_tracker_bbox */
  uint8_t has_tracker_bbox, has_tracker_confidence, has_tracker_age, has_parent;
  float tracker_confidence;
  uint32_t tracker_age;
  uint32_t parent;              /* index in the frame's objects, when has_parent */
  uint32_t n_classifications;
  uint32_t n_attributes;
  /* has_keypoints: a pose model's keypoints, in the object's JSON record
   * (ferrostream_batch_object_json) */
  uint8_t has_mask, has_analytics, has_user_meta, has_keypoints;
} FerrostreamObject;

/* An object's orientation: an oriented box (a rotated-box model's detection, DeepStream 9's
 * rotation_angle) is its box turned about the box's centre. */
typedef struct {
  uint8_t has_angle;            /* 1 for an oriented box, 0 for an axis-aligned one */
  uint8_t reserved[3];
  float angle;                  /* radians, clockwise on the screen; 0 without an angle */
  /* The corners of the box to show (bbox) turned by angle, as x, y pairs: the box's own
   * top-left, top-right, bottom-right and bottom-left. */
  float corners[8];
} FerrostreamOrientation;

typedef struct {
  int32_t component_id;
  int32_t class_id;
  const char *label;
  size_t label_len;
  float prob;
} FerrostreamClassification;

/* Kinds of an attribute's value. */
typedef enum {
  FERROSTREAM_ATTRIBUTE_BOOL = 0,       /* int_value, 0 or 1 */
  FERROSTREAM_ATTRIBUTE_INT = 1,        /* int_value */
  FERROSTREAM_ATTRIBUTE_FLOAT = 2,      /* float_value */
  FERROSTREAM_ATTRIBUTE_TEXT = 3,       /* text, text_len */
  FERROSTREAM_ATTRIBUTE_FLOATS = 4      /* floats, n_floats */
} FerrostreamAttributeKind;

/* A free-form attribute of an object (landmarks, a speed, a plate's text, ...). */
typedef struct {
  const char *key;
  size_t key_len;
  uint32_t kind;                /* a FerrostreamAttributeKind */
  uint32_t reserved;
  int64_t int_value;
  double float_value;
  const char *text;
  size_t text_len;
  const float *floats;
  size_t n_floats;
} FerrostreamAttribute;

/* The layout above is the library's (plugins/abi/src/lib.rs, `#[repr(C)]`) on 64-bit targets,
 * checked here so that a compiler that lays it out differently refuses to build against it. */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define FERROSTREAM_ASSERT_(cond, msg) static_assert (cond, msg)
#elif !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define FERROSTREAM_ASSERT_(cond, msg) _Static_assert (cond, msg)
#endif
#if defined(FERROSTREAM_ASSERT_) && UINTPTR_MAX == UINT64_MAX && SIZE_MAX == UINT64_MAX
#define FERROSTREAM_CHECK_OFFSET_(type, field, offset) \
  FERROSTREAM_ASSERT_ (offsetof (type, field) == (offset), \
      "ferrostream/meta.h: offset of " #type "." #field " does not match libgstferrostream")
#define FERROSTREAM_CHECK_SIZE_(type, size) \
  FERROSTREAM_ASSERT_ (sizeof (type) == (size), \
      "ferrostream/meta.h: size of " #type " does not match libgstferrostream")
FERROSTREAM_CHECK_SIZE_ (FerrostreamBox, 16);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamBox, left, 0);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamBox, top, 4);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamBox, width, 8);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamBox, height, 12);

FERROSTREAM_CHECK_SIZE_ (FerrostreamFrame, 80);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamFrame, source_id, 0);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamFrame, pad_index, 4);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamFrame, frame_num, 8);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamFrame, pts, 16);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamFrame, width, 24);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamFrame, height, 28);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamFrame, source_width, 32);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamFrame, source_height, 36);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamFrame, n_objects, 40);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamFrame, n_components_run, 44);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamFrame, components_run, 48);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamFrame, n_terminated_ids, 56);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamFrame, terminated_ids, 64);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamFrame, n_display, 72);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamFrame, has_analytics, 76);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamFrame, has_segmentation, 77);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamFrame, has_user_meta, 78);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamFrame, reserved, 79);

FERROSTREAM_CHECK_SIZE_ (FerrostreamObject, 112);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, object_id, 0);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, class_id, 8);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, component_id, 12);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, label, 16);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, label_len, 24);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, confidence, 32);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, bbox, 36);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, detector_bbox, 52);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, tracker_bbox, 68);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, has_tracker_bbox, 84);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, has_tracker_confidence, 85);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, has_tracker_age, 86);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, has_parent, 87);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, tracker_confidence, 88);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, tracker_age, 92);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, parent, 96);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, n_classifications, 100);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, n_attributes, 104);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, has_mask, 108);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, has_analytics, 109);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, has_user_meta, 110);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamObject, has_keypoints, 111);

FERROSTREAM_CHECK_SIZE_ (FerrostreamClassification, 32);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamClassification, component_id, 0);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamClassification, class_id, 4);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamClassification, label, 8);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamClassification, label_len, 16);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamClassification, prob, 24);
FERROSTREAM_CHECK_SIZE_ (FerrostreamOrientation, 40);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamOrientation, angle, 4);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamOrientation, corners, 8);
FERROSTREAM_CHECK_SIZE_ (FerrostreamAttribute, 72);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamAttribute, kind, 16);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamAttribute, int_value, 24);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamAttribute, float_value, 32);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamAttribute, text, 40);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamAttribute, floats, 56);
FERROSTREAM_CHECK_OFFSET_ (FerrostreamAttribute, n_floats, 64);
#undef FERROSTREAM_CHECK_OFFSET_
#undef FERROSTREAM_CHECK_SIZE_
#endif
#undef FERROSTREAM_ASSERT_

/* The ABI version of the loaded library. */
uint32_t ferrostream_abi_version (void);

/* The buffer's batch metadata (a GstBuffer *), or NULL when it has none. Valid while the buffer
 * lives and its metadata is not changed. NULL too when the metadata was made by another copy of
 * the library than the one the program is linked with: GStreamer must load the plugin from the
 * file that `pkg-config --libs ferrostream` links (its plugindir). */
const FerrostreamBatch *ferrostream_batch_get (void *buffer);

uint32_t ferrostream_batch_n_frames (const FerrostreamBatch *batch);

/* Which state of the metadata this is: unique in the process, changed by every application edit
 * (Python, for instance). */
uint64_t ferrostream_batch_revision (const FerrostreamBatch *batch);

/* Fill *out; FERROSTREAM_BAD_INDEX for an index out of range. */
int ferrostream_batch_frame (const FerrostreamBatch *batch, uint32_t frame, FerrostreamFrame *out);
int ferrostream_batch_object (const FerrostreamBatch *batch, uint32_t frame, uint32_t object,
    FerrostreamObject *out);
int ferrostream_batch_classification (const FerrostreamBatch *batch, uint32_t frame,
    uint32_t object, uint32_t index, FerrostreamClassification *out);
/* Attribute `index` (0 .. n_attributes - 1, in key order) of an object. */
int ferrostream_batch_attribute (const FerrostreamBatch *batch, uint32_t frame, uint32_t object,
    uint32_t index, FerrostreamAttribute *out);

/* An object's orientation (its angle and the corners of its box to show). */
int ferrostream_batch_object_orientation (const FerrostreamBatch *batch, uint32_t frame,
    uint32_t object, FerrostreamOrientation *out);

/* The record of a frame or an object as JSON (rsmetaexport's schema); free with g_free.
 * NULL for an index out of range. */
char *ferrostream_batch_frame_json (const FerrostreamBatch *batch, uint32_t frame);
char *ferrostream_batch_object_json (const FerrostreamBatch *batch, uint32_t frame,
    uint32_t object);

#ifdef __cplusplus
}
#endif

#endif /* FERROSTREAM_META_H */
