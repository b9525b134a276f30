/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Counts the objects Ferrostream finds in a video, reading the metadata with the C ABI only
 * (<ferrostream/meta.h>), in the manner of DeepStream's deepstream-test1:
 *
 *   filesrc ! decodebin ! videoconvert ! identity eos-after=N+1 ! rstrtinfer ! rstracker
 *     ! rsmetaexport ! fakesink
 *
 * (GStreamer 1.22's identity may let one frame less or a few more through than eos-after says,
 * depending on timing: it ends the stream one frame late, and a probe on its src pad lets
 * exactly N frames through.)
 *
 * A pad probe on rstracker's src pad prints, for each frame,
 *
 *   frame <frame_num> objects=<n> <label>=<count> ...
 *   object frame=<frame_num> id=<object_id, - when untracked> label=<label> left=.. top=.. width=.. height=..
 *
 * the object line ending in ` angle=..` (radians) for an oriented box, whose box is turned by it
 *
 * on standard output (labels sorted; a label that is empty or holds a space, '=', '"', '\\' or a
 * control character is written in double quotes, with '"' and '\\' escaped by '\\' and control
 * characters as \xHH). rsmetaexport writes the same metadata as JSON lines.
 *
 * Usage: count VIDEO NVINFER-CONFIG JSON-OUTPUT [FRAMES]
 * Exit status: 0 at the end of the stream, 1 on an error (the message on standard error) or when
 * the pipeline has not finished after 120 s, 2 for bad arguments.
 *
 * Build: cc count.c $(pkg-config --cflags --libs ferrostream) -o count
 */
#include <ferrostream/meta.h>
#include <gst/gst.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMEOUT_SECONDS 120

typedef struct {
  GMainLoop *loop;
  GstElement *pipeline;
  int exit_status;
  guint64 frames;               /* written by the streaming thread, read after it stopped */
  guint64 objects;
} App;

/* Writes a label as one token (see the comment at the top). */
static void
print_label (FILE * out, const char *label, size_t len)
{
  gboolean plain = len > 0;
  size_t i;

  for (i = 0; i < len && plain; i++) {
    unsigned char c = (unsigned char) label[i];
    plain = c > ' ' && c != 0x7f && c != '=' && c != '"' && c != '\\';
  }
  if (plain) {
    fwrite (label, 1, len, out);
    return;
  }
  fputc ('"', out);
  for (i = 0; i < len; i++) {
    unsigned char c = (unsigned char) label[i];
    if (c == '"' || c == '\\')
      fprintf (out, "\\%c", c);
    else if (c < ' ' || c == 0x7f)
      fprintf (out, "\\x%02x", c);
    else
      fputc (c, out);
  }
  fputc ('"', out);
}

/* Fails the run from the streaming thread: the bus handler prints the message and quits. */
static void
post_error (GstPad * pad, App * app, const char *format, ...) G_GNUC_PRINTF (3, 4);

static void
post_error (GstPad * pad, App * app, const char *format, ...)
{
  va_list args;
  char *text;
  GError *error;
  GstObject *src = gst_pad_get_parent (pad);

  va_start (args, format);
  text = g_strdup_vprintf (format, args);
  va_end (args);
  error = g_error_new_literal (GST_CORE_ERROR, GST_CORE_ERROR_FAILED, text);
  gst_element_post_message (app->pipeline,
      gst_message_new_error (src ? src : GST_OBJECT (pad), error, NULL));
  g_error_free (error);
  g_free (text);
  if (src)
    gst_object_unref (src);
}

static gint
compare_strings (gconstpointer a, gconstpointer b)
{
  return strcmp ((const char *) a, (const char *) b);
}

/* Lets the first *limit buffers through and drops the ones after them. */
static GstPadProbeReturn
on_limited_buffer (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  gint64 *left = user_data;
  (void) pad;
  (void) info;
  if (*left <= 0)
    return GST_PAD_PROBE_DROP;
  *left -= 1;
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
on_buffer (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  App *app = (App *) user_data;
  GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER (info);
  const FerrostreamBatch *batch;
  uint32_t n_frames, f;

  if (buffer == NULL)
    return GST_PAD_PROBE_OK;
  batch = ferrostream_batch_get (buffer);
  if (batch == NULL) {
    post_error (pad, app, "a buffer without Ferrostream metadata (or metadata of another copy of "
        "libgstferrostream.so than the one this program is linked with)");
    return GST_PAD_PROBE_OK;
  }

  n_frames = ferrostream_batch_n_frames (batch);
  for (f = 0; f < n_frames; f++) {
    FerrostreamFrame frame;
    GHashTable *counts;
    GList *labels, *l;
    uint32_t o;
    int status = ferrostream_batch_frame (batch, f, &frame);

    if (status != FERROSTREAM_OK) {
      post_error (pad, app, "ferrostream_batch_frame (%u) failed: status %d", f, status);
      return GST_PAD_PROBE_OK;
    }

    /* Objects per label: label -> count (the keys are copies, NUL-terminated). */
    counts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
    for (o = 0; o < frame.n_objects; o++) {
      FerrostreamObject obj;
      char *label;

      status = ferrostream_batch_object (batch, f, o, &obj);
      if (status != FERROSTREAM_OK) {
        post_error (pad, app, "ferrostream_batch_object (%u, %u) failed: status %d", f, o, status);
        g_hash_table_destroy (counts);
        return GST_PAD_PROBE_OK;
      }
      label = g_strndup (obj.label, obj.label_len);
      g_hash_table_insert (counts, label,
          GUINT_TO_POINTER (GPOINTER_TO_UINT (g_hash_table_lookup (counts, label)) + 1));
    }

    printf ("frame %" G_GUINT64_FORMAT " objects=%u", (guint64) frame.frame_num, frame.n_objects);
    labels = g_list_sort (g_hash_table_get_keys (counts), compare_strings);
    for (l = labels; l != NULL; l = l->next) {
      const char *label = (const char *) l->data;
      putchar (' ');
      print_label (stdout, label, strlen (label));
      printf ("=%u", GPOINTER_TO_UINT (g_hash_table_lookup (counts, label)));
    }
    putchar ('\n');
    g_list_free (labels);
    g_hash_table_destroy (counts);

    for (o = 0; o < frame.n_objects; o++) {
      FerrostreamObject obj;
      FerrostreamOrientation orientation;

      if (ferrostream_batch_object (batch, f, o, &obj) != FERROSTREAM_OK
          || ferrostream_batch_object_orientation (batch, f, o, &orientation) != FERROSTREAM_OK)
        continue;               /* cannot happen: read above, and the buffer is ours */
      printf ("object frame=%" G_GUINT64_FORMAT " id=", (guint64) frame.frame_num);
      if (obj.object_id == FERROSTREAM_UNTRACKED)
        putchar ('-');
      else
        printf ("%" G_GUINT64_FORMAT, (guint64) obj.object_id);
      fputs (" label=", stdout);
      print_label (stdout, obj.label, obj.label_len);
      printf (" left=%.2f top=%.2f width=%.2f height=%.2f", obj.bbox.left, obj.bbox.top,
          obj.bbox.width, obj.bbox.height);
      if (orientation.has_angle)
        printf (" angle=%.4f", orientation.angle);
      putchar ('\n');
    }
    app->frames++;
    app->objects += frame.n_objects;
  }
  return GST_PAD_PROBE_OK;
}

static gboolean
on_message (GstBus * bus, GstMessage * msg, gpointer user_data)
{
  App *app = (App *) user_data;
  GError *error = NULL;
  char *debug = NULL;

  (void) bus;
  switch (GST_MESSAGE_TYPE (msg)) {
    case GST_MESSAGE_EOS:
      app->exit_status = 0;
      g_main_loop_quit (app->loop);
      break;
    case GST_MESSAGE_ERROR:
      gst_message_parse_error (msg, &error, &debug);
      fprintf (stderr, "error from %s: %s\n", GST_OBJECT_NAME (GST_MESSAGE_SRC (msg)),
          error->message);
      if (debug != NULL)
        fprintf (stderr, "  %s\n", debug);
      g_clear_error (&error);
      g_free (debug);
      app->exit_status = 1;
      g_main_loop_quit (app->loop);
      break;
    case GST_MESSAGE_WARNING:
      gst_message_parse_warning (msg, &error, &debug);
      fprintf (stderr, "warning from %s: %s\n", GST_OBJECT_NAME (GST_MESSAGE_SRC (msg)),
          error->message);
      g_clear_error (&error);
      g_free (debug);
      break;
    default:
      break;
  }
  return G_SOURCE_CONTINUE;
}

static gboolean
on_timeout (gpointer user_data)
{
  App *app = (App *) user_data;

  fprintf (stderr, "error: the pipeline did not finish within %d s\n", TIMEOUT_SECONDS);
  app->exit_status = 1;
  g_main_loop_quit (app->loop);
  return G_SOURCE_REMOVE;
}

static gboolean
quit_idle (gpointer user_data)
{
  g_main_loop_quit (((App *) user_data)->loop);
  return G_SOURCE_REMOVE;
}

static GstElement *
make (GstElement * pipeline, const char *factory, const char *name)
{
  GstElement *element = gst_element_factory_make (factory, name);

  if (element == NULL) {
    fprintf (stderr, "error: no element %s (is the Ferrostream plugin on GST_PLUGIN_PATH or "
        "installed?)\n", factory);
    exit (1);
  }
  gst_bin_add (GST_BIN (pipeline), element);
  return element;
}

/* decodebin's pads appear once it knows the stream: link the video one. */
static void
on_pad_added (GstElement * decodebin, GstPad * pad, gpointer user_data)
{
  GstElement *convert = GST_ELEMENT (user_data);
  GstPad *sink = gst_element_get_static_pad (convert, "sink");
  GstCaps *caps = gst_pad_get_current_caps (pad);
  const char *media = "";

  (void) decodebin;
  if (caps == NULL)
    caps = gst_pad_query_caps (pad, NULL);
  if (caps != NULL && gst_caps_get_size (caps) > 0)
    media = gst_structure_get_name (gst_caps_get_structure (caps, 0));
  if (g_str_has_prefix (media, "video/") && !gst_pad_is_linked (sink)
      && gst_pad_link (pad, sink) != GST_PAD_LINK_OK)
    fprintf (stderr, "error: cannot link the decoder to videoconvert\n");
  if (caps != NULL)
    gst_caps_unref (caps);
  gst_object_unref (sink);
}

int
main (int argc, char **argv)
{
  App app = { NULL, NULL, 1, 0, 0 };
  GstElement *src, *decode, *convert, *limit, *infer, *tracker, *export_, *sink;
  GstPad *tracker_src;
  GstBus *bus;
  gint64 frames = -1, left = 0;

  if (argc < 4 || argc > 5) {
    fprintf (stderr, "usage: %s VIDEO NVINFER-CONFIG JSON-OUTPUT [FRAMES]\n", argv[0]);
    return 2;
  }
  if (argc == 5) {
    char *end;
    errno = 0;
    frames = g_ascii_strtoll (argv[4], &end, 10);
    if (errno != 0 || end == argv[4] || *end != '\0' || frames < 1 || frames >= G_MAXINT) {
      fprintf (stderr, "error: FRAMES must be a positive number, not '%s'\n", argv[4]);
      return 2;
    }
  }

  /* A program built against another version of the header must not read the structures. */
  if (ferrostream_abi_version () != FERROSTREAM_ABI_VERSION) {
    fprintf (stderr, "error: libgstferrostream.so has ABI version %u, this program was built "
        "for version %d\n", ferrostream_abi_version (), FERROSTREAM_ABI_VERSION);
    return 1;
  }

  gst_init (&argc, &argv);
  app.loop = g_main_loop_new (NULL, FALSE);
  app.pipeline = gst_pipeline_new ("count");
  src = make (app.pipeline, "filesrc", "source");
  decode = make (app.pipeline, "decodebin", "decode");
  convert = make (app.pipeline, "videoconvert", "convert");
  limit = make (app.pipeline, "identity", "limit");
  infer = make (app.pipeline, "rstrtinfer", "infer");
  tracker = make (app.pipeline, "rstracker", "tracker");
  export_ = make (app.pipeline, "rsmetaexport", "export");
  sink = make (app.pipeline, "fakesink", "sink");

  g_object_set (src, "location", argv[1], NULL);
  g_object_set (infer, "config-file-path", argv[2], NULL);
  g_object_set (export_, "location", argv[3], NULL);
  if (frames > 0) {
    GstPad *limit_src = gst_element_get_static_pad (limit, "src");
    /* frames <= G_MAXINT - 1 (checked above) */
    left = frames;
    g_object_set (limit, "eos-after", (gint) (frames + 1), NULL);
    gst_pad_add_probe (limit_src, GST_PAD_PROBE_TYPE_BUFFER, on_limited_buffer, &left, NULL);
    gst_object_unref (limit_src);
  }

  if (!gst_element_link (src, decode)
      || !gst_element_link_many (convert, limit, infer, tracker, export_, sink, NULL)) {
    fprintf (stderr, "error: cannot link the pipeline\n");
    return 1;
  }
  g_signal_connect (decode, "pad-added", G_CALLBACK (on_pad_added), convert);

  tracker_src = gst_element_get_static_pad (tracker, "src");
  gst_pad_add_probe (tracker_src, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, &app, NULL);
  gst_object_unref (tracker_src);

  bus = gst_element_get_bus (app.pipeline);
  gst_bus_add_watch (bus, on_message, &app);
  gst_object_unref (bus);
  g_timeout_add_seconds (TIMEOUT_SECONDS, on_timeout, &app);

  if (gst_element_set_state (app.pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    /* The reason is on the bus. */
    app.exit_status = 1;
    g_idle_add (quit_idle, &app);
  }
  g_main_loop_run (app.loop);

  gst_element_set_state (app.pipeline, GST_STATE_NULL);
  fflush (stdout);
  fprintf (stderr, "%" G_GUINT64_FORMAT " frames, %" G_GUINT64_FORMAT " objects\n", app.frames,
      app.objects);
  gst_object_unref (app.pipeline);
  g_main_loop_unref (app.loop);
  return app.exit_status;
}
