#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""A local RTSP server: GStreamer's RTSP server library (Debian/Ubuntu package
gir1.2-gst-rtsp-server-1.0, with python3-gi) serving video as RTP/JPEG on 127.0.0.1.

Usage: rtsp_server.py PORT NAME=PIPELINE [NAME=PIPELINE ...]
  PIPELINE is a gst-launch fragment that produces raw video, e.g.
  'videotestsrc is-live=true ! video/x-raw,width=320,height=240,framerate=15/1' or
  'filesrc location=vtest.avi ! decodebin'. Each is served at rtsp://127.0.0.1:PORT/NAME, shared
  by its clients. Prints "ready" once it listens, then serves until it is killed.
"""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402


def main():
    if len(sys.argv) < 3 or any("=" not in m for m in sys.argv[2:]):
        sys.exit(__doc__)
    port = sys.argv[1]
    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(port)
    for mount in sys.argv[2:]:
        name, pipeline = mount.split("=", 1)
        factory = GstRtspServer.RTSPMediaFactory()
        # RTP/JPEG needs 4:2:0 frames whose sides are multiples of 8.
        factory.set_launch(
            f"( {pipeline} ! videoconvert ! videoscale ! video/x-raw,format=I420 "
            f"! jpegenc quality=85 ! rtpjpegpay name=pay0 pt=96 )"
        )
        factory.set_shared(True)
        server.get_mount_points().add_factory(f"/{name}", factory)
    if server.attach(None) == 0:
        sys.exit(f"cannot listen on 127.0.0.1:{port}")
    print(f"ready rtsp://127.0.0.1:{port}/", flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
