# SPDX-License-Identifier: MIT OR Apache-2.0
"""Shared set-up of the Python tests: GStreamer with the Ferrostream plugin, the project's
models and footage, pipelines run to their end under a watchdog, and probes whose failures fail
the test (PyGObject only prints an exception raised in a probe, and drops the buffer)."""

import faulthandler
import json
import os
import pathlib
import threading

import gi
import pytest

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

Gst.init(None)

REPO = pathlib.Path(__file__).resolve().parents[2]
PIPELINES = REPO / "pipelines"
# The longest a pipeline of these tests may take to run, to give a frame or to stop, however
# loaded the machine (the plugin is a debug build): a hang fails the test, not the suite.
PIPELINE_TIMEOUT_S = 300

_probe_errors = []


def shared_dir(variable, name, probe):
    """Models or footage: $variable, else the directory beside the checkout (as scripts/env.sh),
    else the cache scripts/fetch-models.sh fills."""
    cache = pathlib.Path(
        os.environ.get("FERROSTREAM_CACHE_DIR")
        or pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "ferrostream"
    )
    for d in (os.environ.get(variable), REPO.parent / "shared" / name, cache / name):
        if d and (pathlib.Path(d) / probe).is_file():
            return pathlib.Path(d)
    pytest.fail(f"{probe} not found: source scripts/env.sh or run scripts/fetch-models.sh ({variable})")



def media(name):
    """A file of the project's footage."""
    return str(shared_dir("FERROSTREAM_MEDIA_DIR", "media", name) / name)


@pytest.fixture(scope="session", autouse=True)
def plugin():
    """The Ferrostream plugin must be on GST_PLUGIN_PATH: a missing plugin fails every test."""
    if Gst.ElementFactory.find("rstrtinfer") is None:
        pytest.fail("the Ferrostream plugin is not on GST_PLUGIN_PATH (cargo build -p gst-ferrostream)")


@pytest.fixture(autouse=True)
def probes_did_not_fail():
    """Fails the test when a probe wrapped by `checked` raised."""
    _probe_errors.clear()
    yield
    if _probe_errors:
        raise _probe_errors[0]


def checked(probe):
    """`probe`, with what it raises recorded for the test (and the buffer dropped)."""

    def wrapper(pad, info, *args):
        try:
            return probe(pad, info, *args)
        except BaseException as e:  # noqa: BLE001 - re-raised by the fixture above
            _probe_errors.append(e)
            return Gst.PadProbeReturn.DROP

    return wrapper


def stop(pipeline):
    """Sets `pipeline` to NULL; a stop that never returns ends the process with the threads'
    stacks instead of stalling the suite."""
    watchdog = threading.Timer(PIPELINE_TIMEOUT_S, lambda: (faulthandler.dump_traceback(), os._exit(1)))
    watchdog.daemon = True
    watchdog.start()
    try:
        pipeline.set_state(Gst.State.NULL)
    finally:
        watchdog.cancel()


def run(pipeline, timeout=PIPELINE_TIMEOUT_S):
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
        stop(pipeline)


def pull(pipeline, sink="sink"):
    """The first sample of appsink `sink` of the playing `pipeline`; fails with the pipeline's
    error, or when none comes within the timeout."""
    sample = pipeline.get_by_name(sink).emit("try-pull-sample", PIPELINE_TIMEOUT_S * Gst.SECOND)
    if sample is None:
        msg = pipeline.get_bus().pop_filtered(Gst.MessageType.ERROR)
        why = msg.parse_error()[0].message if msg else f"nothing within {PIPELINE_TIMEOUT_S} s"
        pytest.fail(f"no frame from {sink}: {why}")
    return sample


def read_jsonl(path):
    """The records of a JSON-lines file (rsmetaexport's output)."""
    path = pathlib.Path(path)
    assert path.is_file(), f"{path} was not written"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def rss_bytes():
    """The process's resident memory."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")
