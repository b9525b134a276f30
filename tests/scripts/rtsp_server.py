#!/usr/bin/env python3
"""A local RTSP server for the tests: GStreamer's RTSP server library (Debian's
gir1.2-gst-rtsp-server-1.0) serving a live test pattern as RTP/JPEG on 127.0.0.1.

Usage: rtsp_server.py PORT [MOUNT] [FPS]
Prints "ready rtsp://127.0.0.1:PORT/MOUNT" once it listens, then serves until killed.
"""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402


def main():
    port = sys.argv[1]
    mount = sys.argv[2] if len(sys.argv) > 2 else "test"
    fps = sys.argv[3] if len(sys.argv) > 3 else "15"
    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(port)
    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_launch(
        f"( videotestsrc is-live=true pattern=ball ! video/x-raw,format=I420,width=320,height=240,"
        f"framerate={fps}/1 ! jpegenc quality=60 ! rtpjpegpay name=pay0 pt=96 )"
    )
    factory.set_shared(True)
    server.get_mount_points().add_factory(f"/{mount}", factory)
    if server.attach(None) == 0:
        print(f"cannot listen on 127.0.0.1:{port}", flush=True)
        sys.exit(1)
    print(f"ready rtsp://127.0.0.1:{port}/{mount}", flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
