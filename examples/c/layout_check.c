/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Prints the layout of the structures of <ferrostream/meta.h> as this compiler sees it, one
 * `Type size N` or `Type.field offset N` line each, for comparison with the library's
 * (plugins/abi/src/lib.rs). The header also checks them itself with static assertions.
 */
#include <ferrostream/meta.h>

#include <stdio.h>

#define SIZE(type) printf ("%s size %zu\n", #type, sizeof (type))
#define OFFSET(type, field) printf ("%s.%s offset %zu\n", #type, #field, offsetof (type, field))

int
main (void)
{
  printf ("FERROSTREAM_ABI_VERSION %d\n", FERROSTREAM_ABI_VERSION);
  printf ("ferrostream_abi_version %u\n", ferrostream_abi_version ());

  SIZE (FerrostreamBox);
  OFFSET (FerrostreamBox, left);
  OFFSET (FerrostreamBox, top);
  OFFSET (FerrostreamBox, width);
  OFFSET (FerrostreamBox, height);

  SIZE (FerrostreamFrame);
  OFFSET (FerrostreamFrame, source_id);
  OFFSET (FerrostreamFrame, pad_index);
  OFFSET (FerrostreamFrame, frame_num);
  OFFSET (FerrostreamFrame, pts);
  OFFSET (FerrostreamFrame, width);
  OFFSET (FerrostreamFrame, height);
  OFFSET (FerrostreamFrame, source_width);
  OFFSET (FerrostreamFrame, source_height);
  OFFSET (FerrostreamFrame, n_objects);
  OFFSET (FerrostreamFrame, n_components_run);
  OFFSET (FerrostreamFrame, components_run);
  OFFSET (FerrostreamFrame, n_terminated_ids);
  OFFSET (FerrostreamFrame, terminated_ids);
  OFFSET (FerrostreamFrame, n_display);
  OFFSET (FerrostreamFrame, has_analytics);
  OFFSET (FerrostreamFrame, has_segmentation);
  OFFSET (FerrostreamFrame, has_user_meta);
  OFFSET (FerrostreamFrame, reserved);

  SIZE (FerrostreamObject);
  OFFSET (FerrostreamObject, object_id);
  OFFSET (FerrostreamObject, class_id);
  OFFSET (FerrostreamObject, component_id);
  OFFSET (FerrostreamObject, label);
  OFFSET (FerrostreamObject, label_len);
  OFFSET (FerrostreamObject, confidence);
  OFFSET (FerrostreamObject, bbox);
  OFFSET (FerrostreamObject, detector_bbox);
  OFFSET (FerrostreamObject, tracker_bbox);
  OFFSET (FerrostreamObject, has_tracker_bbox);
  OFFSET (FerrostreamObject, has_tracker_confidence);
  OFFSET (FerrostreamObject, has_tracker_age);
  OFFSET (FerrostreamObject, has_parent);
  OFFSET (FerrostreamObject, tracker_confidence);
  OFFSET (FerrostreamObject, tracker_age);
  OFFSET (FerrostreamObject, parent);
  OFFSET (FerrostreamObject, n_classifications);
  OFFSET (FerrostreamObject, n_attributes);
  OFFSET (FerrostreamObject, has_mask);
  OFFSET (FerrostreamObject, has_analytics);
  OFFSET (FerrostreamObject, has_user_meta);
  OFFSET (FerrostreamObject, has_keypoints);

  SIZE (FerrostreamOrientation);
  OFFSET (FerrostreamOrientation, has_angle);
  OFFSET (FerrostreamOrientation, angle);
  OFFSET (FerrostreamOrientation, corners);

  SIZE (FerrostreamClassification);
  OFFSET (FerrostreamClassification, component_id);
  OFFSET (FerrostreamClassification, class_id);
  OFFSET (FerrostreamClassification, label);
  OFFSET (FerrostreamClassification, label_len);
  OFFSET (FerrostreamClassification, prob);

  SIZE (FerrostreamAttribute);
  OFFSET (FerrostreamAttribute, key);
  OFFSET (FerrostreamAttribute, kind);
  OFFSET (FerrostreamAttribute, int_value);
  OFFSET (FerrostreamAttribute, float_value);
  OFFSET (FerrostreamAttribute, text);
  OFFSET (FerrostreamAttribute, floats);
  OFFSET (FerrostreamAttribute, n_floats);
  return 0;
}
