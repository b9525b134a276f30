# SPDX-License-Identifier: MIT OR Apache-2.0
"""Shared set-up of the Python tests: GStreamer with the Ferrostream plugin, the project's
models and footage, and pipelines run to their end under a watchdog."""

import os
import pathlib

import gi
import pytest

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

Gst.init(None)

REPO = pathlib.Path(__file__).resolve().parents[2]
PIPELINES = REPO / "pipelines"


def media(name):
    """A file of the project's footage (FERROSTREAM_MEDIA_DIR, set by scripts/env.sh)."""
    root = os.environ.get("FERROSTREAM_MEDIA_DIR")
    if not root or not (pathlib.Path(root) / name).is_file():
        pytest.fail(f"footage {name} not found: source scripts/env.sh (FERROSTREAM_MEDIA_DIR={root})")
    return str(pathlib.Path(root) / name)


@pytest.fixture(scope="session", autouse=True)
def plugin():
    """The Ferrostream plugin must be on GST_PLUGIN_PATH: a missing plugin fails every test."""
    if Gst.ElementFactory.find("rstrtinfer") is None:
        pytest.fail("the Ferrostream plugin is not on GST_PLUGIN_PATH (cargo build -p gst-ferrostream)")


def run(pipeline, timeout=120):
    """Plays `pipeline` (a Gst.Pipeline) to EOS; fails on an error or after `timeout` seconds."""
    bus = pipeline.get_bus()
    pipeline.set_state(Gst.State.PLAYING)
    try:
        msg = bus.timed_pop_filtered(timeout * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
        if msg is None:
            pytest.fail(f"the pipeline did not finish within {timeout} s")
        if msg.type == Gst.MessageType.ERROR:
            err, dbg = msg.parse_error()
            pytest.fail(f"pipeline error: {err.message} ({dbg})")
    finally:
        pipeline.set_state(Gst.State.NULL)


def rss_bytes():
    """The process's resident memory."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")
