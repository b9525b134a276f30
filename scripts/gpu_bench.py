#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""The GPU benchmark driver; scripts/gpu-check.sh bench runs it on the GPU machine, in the
bundle's environment (GStreamer, the plugin, ONNX Runtime's GPU build on PYTHONPATH).

For each model (a configuration pipelines/NAME.txt), stream count N and precision P (fp32, fp16)
it measures:
  element   N x "filesrc location=CLIP ! qtdemux ! h264parse ! DECODER ! queue ! mux.sink_i" into
            "rsstreammux name=mux batch-size=N batched-push-timeout=40000 ! rstrtinfer
            config-file-path=CFG device=DEVICE batch-size=N network-mode=P ! rstracker ! rsosd
            ! fakesink sync=false": frames/s = N x frames in the clip / gst-launch's "Execution
            ended after" (PLAYING to EOS); SM and NVDEC busy: nvidia-smi dmon -s u -d 1 averaged
            over that time; bytes to host / to device per batch and the latency from
            rstrtinfer's "summary:" line (GST_DEBUG=rstrtinfer:4)
  bare      scripts/bench/bare_session.py: the same model in a bare ONNX Runtime session, input
            on the device, I/O binding (the element's ceiling); for fp16 the FP16 model the
            element converted (float16 input); both with the CUDA provider settings the element
            chose for that model, precision and N, where it recorded them
  DIY       scripts/bench/diy_peer.py: Python with gst-launch-1.0 subprocesses (for --diy-streams
            and --diy-models only, fp32)
and once a baseline: --baseline streams decoded and batched by rsstreammux, no inference.
Models whose ONNX file is missing are exported with --export-script when it exists, else skipped.
No run starts after --deadline; the table so far is rewritten after every run.

The element runs keep their files in --engine-cache (FERROSTREAM_ENGINE_CACHE): the FP16
conversion STEM-fp16-HEX.onnx (STEM: the model file's stem, characters other than letters,
digits and '_' as '-') and, per precision and batch size, the CUDA provider settings it chose at
start, STEM-P-bN-HEX.cuda.txt ("key=value" lines: prefer_nhwc, cudnn_conv_algo_search,
enable_cuda_graph, use_tf32; '#' lines are comments). The default cache, OUT/engine-cache, is
emptied first and removed at the end; its text records go into bench-logs.tar.gz.

Output (in --out): bench.md (the tables, also printed last), bench.json, bench-logs.tar.gz.
Helpers: --count-frames FILE prints the video frames of an MP4; --parse-log FILE prints what a
gst-launch log yields (JSON).
"""

import argparse
import json
import math
import os
import re
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_DIR = os.path.join(REPO, "scripts", "bench")

EXEC_RE = re.compile(r"Execution ended after (\d+):(\d+):(\d+(?:\.\d+)?)")
SUMMARY_RE = re.compile(
    r"summary: frames=(?P<frames>\d+) batches=(?P<batches>\d+) engine-calls=(?P<engine_calls>\d+) "
    r"to-host-bytes=(?P<to_host>\d+) to-device-bytes=(?P<to_device>\d+) "
    r"device-copy-bytes=(?P<device_copy>\d+) latency-ms-p50=(?P<p50>[-+\w.]+) "
    r"latency-ms-p95=(?P<p95>[-+\w.]+) steady-fps=(?P<steady>[-+\w.]+) steady-seconds=(?P<steady_s>[-+\w.]+)")
KV_RE = re.compile(r"(\S+?)=(\S+)")
ERROR_RE = re.compile(r"^(ERROR:.*|.*\bERROR\b.*)$", re.M)
# gst-launch's own report of the error that stopped the pipeline (debug lines say ERROR too).
LAUNCH_ERROR_RE = re.compile(r"^(ERROR: .*)$", re.M)
PRECISIONS = ("fp32", "fp16")
# How the tables abbreviate the CUDA provider settings of a .cuda.txt record.
SETTING_NAMES = {"prefer_nhwc": "nhwc", "cudnn_conv_algo_search": "algo", "enable_cuda_graph": "graph",
                 "use_tf32": "tf32"}
SETTING_VALUES = {"EXHAUSTIVE": "EXH", "HEURISTIC": "HEUR", "DEFAULT": "DEF"}


# ---- Parsing -----------------------------------------------------------------------------------

def parse_exec_seconds(text):
    """Seconds of gst-launch's last 'Execution ended after H:MM:SS.nnnnnnnnn', or None."""
    found = EXEC_RE.findall(text)
    if not found:
        return None
    h, m, s = found[-1]
    return int(h) * 3600 + int(m) * 60 + float(s)


def parse_summary(text):
    """rstrtinfer's last 'summary:' line as numbers (latencies may be NaN), or None."""
    found = list(SUMMARY_RE.finditer(text))
    if not found:
        return None
    g = found[-1].groupdict()
    out = {k: int(v) for k, v in g.items() if k not in ("p50", "p95", "steady", "steady_s")}
    for k in ("p50", "p95", "steady", "steady_s"):
        try:
            out[k] = float(g[k])
        except ValueError:
            out[k] = None
        if out[k] is not None and not math.isfinite(out[k]):
            out[k] = None
    return out


def parse_kv_line(text, prefix):
    """The key=value pairs of each line starting with PREFIX (e.g. 'BARE ')."""
    rows = []
    for line in text.splitlines():
        if line.startswith(prefix):
            rest = line[len(prefix):]
            row = {}
            if " error=" in rest:
                rest, err = rest.split(" error=", 1)
                row["error"] = err.strip()
            for k, v in KV_RE.findall(rest):
                try:
                    row[k] = int(v)
                except ValueError:
                    try:
                        row[k] = float(v)
                    except ValueError:
                        row[k] = v
            rows.append(row)
    return rows


def parse_dmon(lines):
    """nvidia-smi dmon lines [(time, text)] -> [(time, {column: value or None})] of GPU 0."""
    cols, samples = None, []
    for t, line in lines:
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            names = s[1:].split()
            if cols is None and "sm" in names:
                cols = names
            continue
        if cols is None:
            continue
        parts = s.split()
        if len(parts) != len(cols):
            continue
        row = {}
        for c, v in zip(cols, parts):
            try:
                row[c] = float(v)
            except ValueError:
                row[c] = None
        if row.get("gpu") not in (None, 0.0):
            continue
        samples.append((t, row))
    return samples


def average_util(samples, start, end, cols=("sm", "dec")):
    """Mean of each column over [start, end]: a sample read at t covers the second before it and
    counts with the part of that second inside the window."""
    weighted = [(min(t, end) - max(t - 1.0, start), row) for t, row in samples]
    weighted = [(w, row) for w, row in weighted if w > 0]
    out = {"samples": len(weighted)}
    for c in cols:
        vals = [(w, row[c]) for w, row in weighted if row.get(c) is not None]
        total = sum(w for w, _ in vals)
        out[c] = sum(w * v for w, v in vals) / total if total > 0 else None
    return out


def mp4_video_frames(path):
    """The sample count of the first video track of an MP4 (moov/trak/mdia/minf/stbl/stsz)."""
    with open(path, "rb") as f:
        data = f.read()

    def boxes(start, end):
        i = start
        while i + 8 <= end:
            size, kind = struct.unpack(">I4s", data[i:i + 8])
            head = 8
            if size == 1:
                size = struct.unpack(">Q", data[i + 8:i + 16])[0]
                head = 16
            elif size == 0:
                size = end - i
            if size < head or i + size > end:
                return
            yield kind.decode("latin-1"), i + head, i + size
            i += size

    def child(start, end, kind):
        return next(((s, e) for k, s, e in boxes(start, end) if k == kind), None)

    moov = child(0, len(data), "moov")
    if moov is None:
        raise ValueError(f"{path}: no moov box")
    for kind, s, e in boxes(*moov):
        if kind != "trak":
            continue
        mdia = child(s, e, "mdia")
        hdlr = mdia and child(*mdia, "hdlr")
        if not hdlr or data[hdlr[0] + 8:hdlr[0] + 12] != b"vide":
            continue
        minf = child(*mdia, "minf")
        stbl = minf and child(*minf, "stbl")
        stsz = stbl and child(*stbl, "stsz")
        if stsz:
            return struct.unpack(">I", data[stsz[0] + 8:stsz[0] + 12])[0]
    raise ValueError(f"{path}: no video track with a sample table")


# ---- The element's engine cache ----------------------------------------------------------------

def cache_stem(model_path):
    """The model file's stem as the element names its cache files: characters other than ASCII
    letters, digits and '_' become '-'."""
    stem = os.path.splitext(os.path.basename(model_path))[0]
    return re.sub(r"[^A-Za-z0-9_]", "-", stem)


def newest_match(directory, pattern):
    """The newest file in DIRECTORY whose whole name matches the regular expression PATTERN."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return None
    rx = re.compile(pattern)
    paths = [os.path.join(directory, n) for n in names if rx.fullmatch(n)]
    paths = [p for p in paths if os.path.isfile(p)]
    return max(paths, key=os.path.getmtime) if paths else None


def find_fp16_model(cache, model_path):
    """The newest FP16 conversion of MODEL_PATH the element wrote into CACHE, or None."""
    return newest_match(cache, re.escape(cache_stem(model_path)) + r"-fp16-[0-9a-f]{16}\.onnx")


def find_cuda_record(cache, model_path, precision, batch):
    """The newest record of the CUDA provider settings the element chose in CACHE for MODEL_PATH at
    PRECISION and BATCH, or None."""
    name = rf"{re.escape(cache_stem(model_path))}-{re.escape(precision)}-b{int(batch)}-[0-9a-f]{{16}}\.cuda\.txt"
    return newest_match(cache, name)


def read_cuda_record(path):
    """A .cuda.txt record as {provider option: value}; blank lines and '#' lines are skipped."""
    options = {}
    with open(path, errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            k, v = line.split("=", 1)
            if k.strip():
                options[k.strip()] = v.strip()
    return options


def settings_text(options):
    """CUDA provider settings for a table cell: 'nhwc=1 algo=HEUR graph=0 tf32=1'."""
    if not options:
        return "ORT defaults"
    return " ".join(f"{SETTING_NAMES.get(k, k)}={SETTING_VALUES.get(v, v)}" for k, v in options.items())


# ---- Configurations and models -----------------------------------------------------------------

def read_config(path):
    """An nvinfer-style configuration: {section: {key: value}}."""
    sections, cur = {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith(("#", ";")):
                continue
            if line.startswith("[") and line.endswith("]"):
                cur = sections.setdefault(line[1:-1].strip(), {})
            elif "=" in line and cur is not None:
                k, v = line.split("=", 1)
                cur[k.strip()] = v.split("#", 1)[0].strip()
    return sections


class Model:
    def __init__(self, name, pipelines_dir, model_dirs):
        self.name = name
        self.config = os.path.join(pipelines_dir, f"{name}.txt")
        self.onnx_name = self.onnx = None
        self.infer_dims = self.order = self.parser = None
        self.threshold, self.iou, self.scale = 0.25, 0.5, None
        self.cuda_graph = None
        self.problem = None
        if not os.path.isfile(self.config):
            self.problem = f"no configuration {shown(self.config)}"
            return
        cfg = read_config(self.config)
        prop = cfg.get("property", {})
        attrs = cfg.get("class-attrs-all", {})
        self.onnx_name = prop.get("onnx-file") or prop.get("model-engine-file")
        dims = prop.get("infer-dims") or prop.get("input-dims")
        if dims:
            try:
                self.infer_dims = tuple(int(v) for v in dims.replace(",", ";").split(";") if v.strip())[-3:]
            except ValueError:
                self.infer_dims = None
        order = prop.get("network-input-order")
        self.order = {"0": "nchw", "1": "nhwc"}.get(order)
        parser = (prop.get("output-parser") or "").lower()
        self.parser = {"ssd": "ssd", "tf-od-api": "ssd", "yolov8": "yolov8", "detr": "detr",
                       "rtdetr": "detr"}.get(parser)
        self.cuda_graph = prop.get("cuda-graph")
        try:
            self.threshold = float(attrs.get("pre-cluster-threshold", self.threshold))
            self.iou = float(attrs.get("nms-iou-threshold", self.iou))
            if "net-scale-factor" in prop:
                self.scale = float(prop["net-scale-factor"])
        except ValueError:
            pass
        self.resolve(model_dirs)

    def resolve(self, model_dirs):
        if not self.onnx_name:
            self.problem = f"{os.path.basename(self.config)} names no onnx-file"
            return
        if os.path.isabs(self.onnx_name):
            cands = [self.onnx_name]
        else:
            cands = [os.path.join(os.path.dirname(self.config), self.onnx_name)]
            cands += [os.path.join(d, self.onnx_name) for d in model_dirs if d]
        self.onnx = next((c for c in cands if os.path.isfile(c)), None)
        self.problem = None if self.onnx else f"{self.onnx_name} not found (looked in {', '.join(sorted(set(os.path.dirname(c) for c in cands)))})"

    def export_name(self):
        """The export script's name for this model: yolov8s_640.onnx -> yolov8s, rtdetr_l_640.onnx -> rtdetr-l."""
        m = re.match(r"^(.*?)(?:_\d+)?\.onnx$", os.path.basename(self.onnx_name or ""))
        return m.group(1).replace("_", "-") if m else None

    def dims_arg(self):
        return ",".join(map(str, self.infer_dims)) if self.infer_dims else None

    def graph_configured(self):
        """Whether the configuration itself asks for a CUDA graph (cuda-graph=on or auto)."""
        return (self.cuda_graph or "off").strip().lower() not in ("off", "0", "false", "no")


# ---- Running -----------------------------------------------------------------------------------

class Bench:
    def __init__(self, args):
        self.args = args
        self.t_start = time.time()
        self.raw = tempfile.mkdtemp(prefix="gpu-bench-")
        self.notes = []
        self.results = {"baseline": None, "models": {}}
        self.models = []
        self.gpu = ""

    # Time ---------------------------------------------------------------------------------------
    def remaining(self):
        return self.args.deadline - time.time() if self.args.deadline else math.inf

    def limit(self, want, what):
        """The time limit for a run that wants WANT seconds, or None (noted) when too little is left."""
        left = self.remaining() - 15
        if left < 20:
            self.note(f"{what}: skipped, the bench's time (BENCH_TOTAL_S) is used up")
            return None
        return min(want, left)

    def note(self, text):
        self.notes.append(text)
        self.say(f"note: {text}")

    def say(self, text):
        print(f"[{time.time() - self.t_start:6.1f}s] {text}", flush=True)

    # Processes ----------------------------------------------------------------------------------
    def run_process(self, tag, cmd, timeout, env=None, dmon=False):
        """Runs CMD, each output line timestamped and logged to raw/TAG.log; returns a dict with rc,
        timed_out, lines [(t, text)], dmon samples, start/exit times."""
        log_path = os.path.join(self.raw, f"{tag}.log")
        lines, samples = [], []
        mon = mon_thread = None
        with open(log_path, "w", errors="replace") as log:
            log.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n")
            log.flush()
            if dmon and shutil.which("nvidia-smi"):
                mon = subprocess.Popen(["nvidia-smi", "dmon", "-s", "u", "-d", "1"], stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, text=True, errors="replace")
                mon_lines = []

                def read_mon():
                    for line in mon.stdout:
                        mon_lines.append((time.monotonic(), line))

                mon_thread = threading.Thread(target=read_mon, daemon=True)
                mon_thread.start()
            t_launch = time.monotonic()
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                 stdin=subprocess.DEVNULL, start_new_session=True)

            def read_out():
                for raw in p.stdout:
                    s = raw.decode("utf-8", "replace")
                    lines.append((time.monotonic(), s))
                    log.write(s)

            reader = threading.Thread(target=read_out, daemon=True)
            reader.start()
            timed_out = False
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                for sig, wait in ((signal.SIGINT, 5), (signal.SIGKILL, 5)):
                    try:
                        os.killpg(p.pid, sig)
                    except ProcessLookupError:
                        break
                    try:
                        p.wait(timeout=wait)
                        break
                    except subprocess.TimeoutExpired:
                        continue
            reader.join(10)
            t_exit = time.monotonic()
            if mon:
                mon.terminate()
                try:
                    mon.wait(5)
                except subprocess.TimeoutExpired:
                    mon.kill()
                mon_thread.join(5)
                samples = parse_dmon(mon_lines)
                with open(os.path.join(self.raw, f"{tag}.dmon.log"), "w") as f:
                    f.writelines(f"{t - t_launch:8.2f} {line}" for t, line in mon_lines)
            if timed_out:
                log.write(f"\n(stopped after {timeout:.0f} s)\n")
        return {"rc": p.returncode, "timed_out": timed_out, "lines": lines, "samples": samples,
                "t_launch": t_launch, "t_exit": t_exit, "log": os.path.basename(log_path)}

    def gst_env(self):
        env = dict(os.environ)
        env["GST_DEBUG"] = "*:1,rstrtinfer:4"
        # rstrtinfer looks for onnx-file next to the configuration, then in FERROSTREAM_MODEL_DIR.
        dirs = [self.args.model_dir] + [d for d in env.get("FERROSTREAM_MODEL_DIR", "").split(":") if d]
        env["FERROSTREAM_MODEL_DIR"] = ":".join(dict.fromkeys(dirs))
        env["GST_DEBUG_NO_COLOR"] = "1"
        # Where the element writes its FP16 conversions and CUDA settings, so the bare session finds them.
        env["FERROSTREAM_ENGINE_CACHE"] = self.args.engine_cache
        return env

    def pipeline(self, n, cfg=None, extra=()):
        t = ["rsstreammux", "name=mux", f"batch-size={n}", "batched-push-timeout=40000", "!"]
        if cfg:
            t += ["rstrtinfer", f"config-file-path={cfg}", f"device={self.args.device}", f"batch-size={n}",
                  *extra, "!", "rstracker", "!", "rsosd", "!"]
        t += ["fakesink", "sync=false"]
        for i in range(n):
            t += ["filesrc", f"location={self.args.clip}", "!", "qtdemux", "!", "h264parse", "!",
                  *shlex.split(self.args.decoder), "!", "queue", "!", f"mux.sink_{i}"]
        return t

    def run_gst(self, tag, n, cfg, what, extra=()):
        timeout = self.limit(self.args.run_timeout, what)
        if timeout is None:
            return None
        cmd = ["gst-launch-1.0"] + self.pipeline(n, cfg, extra)
        if shutil.which("stdbuf"):
            cmd = ["stdbuf", "-oL", "-eL"] + cmd  # timestamps of gst-launch's own lines
        r = self.run_process(tag, cmd, timeout, env=self.gst_env(), dmon=not self.args.no_dmon)
        return self.digest_gst(r, n, what)

    def digest_gst(self, r, n, what):
        text = "".join(s for _, s in r["lines"])
        out = {"log": r["log"], "rc": r["rc"], "timed_out": r["timed_out"], "wall_s": r["t_exit"] - r["t_launch"]}
        secs = parse_exec_seconds(text)
        t_end = next((t for t, s in reversed(r["lines"]) if EXEC_RE.search(s)), None)
        if secs and t_end is None:
            t_end = r["t_exit"]
        summary = parse_summary(text)
        frames = n * self.args.clip_frames
        out.update({"seconds": secs, "frames": frames, "summary": summary})
        if secs:
            out["fps"] = frames / secs
            out["streams30"] = out["fps"] / 30.0
            window = (t_end - secs, t_end)
            # SM and NVDEC busy over the steady part of the run when it is long enough for
            # nvidia-smi's one-second samples.
            if summary and summary.get("steady_s") and summary["steady_s"] >= 2.0:
                window = (t_end - summary["steady_s"], t_end)
        else:
            window = (r["t_launch"], r["t_exit"])
        if r["samples"]:
            util = average_util(r["samples"], *window)
            out.update({"sm": util["sm"], "dec": util["dec"], "dmon_samples": util["samples"]})
        if summary:
            b = max(summary["batches"], 1)
            out.update({"to_host_per_batch": summary["to_host"] / b, "to_device_per_batch": summary["to_device"] / b,
                        "device_copy_per_batch": summary["device_copy"] / b,
                        "p50": summary["p50"], "p95": summary["p95"]})
            # The element's throughput is its steady rate: the first batches of each shape
            # spend seconds in cuDNN's algorithm search, which the bare session and the DIY
            # peer do before their clocks start.
            if summary.get("steady"):
                out["run_fps"] = out.get("fps")
                out["fps"] = summary["steady"]
                out["streams30"] = out["fps"] / 30.0
            if summary["frames"] != frames:
                self.note(f"{what}: rstrtinfer counted {summary['frames']} frames, not {frames}")
        if r["timed_out"] or r["rc"] != 0 or secs is None:
            found = LAUNCH_ERROR_RE.search(text) or ERROR_RE.search(text)
            err = found.group(1).strip() if found else None
            out["error"] = ("stopped at the time limit" if r["timed_out"] else f"exit status {r['rc']}") + \
                (f": {err[:200]}" if err else "")
            self.note(f"{what}: {out['error']} (log {r['log']})")
        return out

    # Steps --------------------------------------------------------------------------------------
    def export_missing(self):
        missing = [m for m in self.models if m.onnx is None and m.onnx_name]
        # Only what the export script makes (Ultralytics models); other missing models are skipped.
        names = sorted({m.export_name() for m in missing if re.match(r"^(yolo|rtdetr)", m.export_name() or "")})
        if not names:
            return
        script = self.args.export_script
        if not os.path.isfile(script):
            self.note(f"cannot export {', '.join(names)}: {shown(script)} is missing")
            return
        timeout = self.limit(self.args.export_timeout, f"exporting {', '.join(names)}")
        if timeout is None:
            return
        env = dict(os.environ)
        pp = [p for p in (self.args.export_pythonpath, env.get("PYTHONPATH")) if p]
        if pp:
            env["PYTHONPATH"] = ":".join(pp)
        os.makedirs(self.args.model_dir, exist_ok=True)
        cmd = [sys.executable, script, "--out", self.args.model_dir, "--models", ",".join(names)]
        self.say(f"exporting {', '.join(names)} into {self.args.model_dir} (at most {timeout:.0f} s)")
        r = self.run_process("export", cmd, timeout, env=env)
        if r["rc"] != 0:
            tail = "".join(s for _, s in r["lines"][-5:]).strip().replace("\n", " | ")
            self.note(f"exporting {', '.join(names)} failed ({'time limit' if r['timed_out'] else 'exit ' + str(r['rc'])}): {tail[-300:]}")
        for m in missing:
            m.resolve(self.model_dirs)

    def run_element(self, m, res, n, precision, graph=False):
        """One element run of model M at N streams and PRECISION (network-mode), with
        cuda-graph=auto when GRAPH; stored as runs[N][PRECISION]["element"] or ["graph"]."""
        what = f"{m.name} N={n} {precision}" + (" cuda-graph" if graph else "")
        tag = f"{m.name}-{n}" + ("" if precision == "fp32" else f"-{precision}") + ("-graph" if graph else "")
        extra = [f"network-mode={precision}"] + (["cuda-graph=auto"] if graph else [])
        r = self.run_gst(tag, n, m.config, what, extra)
        if r is None:
            return
        entry = res["runs"].setdefault(str(n), {}).setdefault(precision, {})
        if graph:
            entry["graph"] = r
            self.say(f"{what}: {fmt(r.get('fps'))} fps, SM {fmt(r.get('sm'), 0)} % ({fmt(r.get('wall_s'), 0)} s)")
        else:
            record = find_cuda_record(self.args.engine_cache, m.onnx, precision, n)
            r["cuda_record"] = {"file": os.path.basename(record), "options": read_cuda_record(record)} if record else None
            entry["element"] = r
            if precision == "fp16" and not res.get("fp16_onnx"):
                converted = find_fp16_model(self.args.engine_cache, m.onnx)
                res["fp16_onnx"] = os.path.basename(converted) if converted else None
            self.say(f"{what}: {fmt(r.get('fps'))} fps, SM {fmt(r.get('sm'), 0)} %, NVDEC {fmt(r.get('dec'), 0)} %, "
                     f"p50 {fmt(r.get('p50'), 2)} ms; CUDA settings: "
                     f"{settings_text(r['cuda_record']['options']) if record else 'none recorded'} "
                     f"({fmt(r.get('wall_s'), 0)} s)")
        self.write()

    def run_bare(self, m, res, precision):
        """The bare sessions of PRECISION for every N: the model itself (fp32) or the FP16 model
        the element converted (fp16), each N with the CUDA settings the element recorded for it.
        Returns {N: row}."""
        a = self.args
        model = m.onnx
        if precision == "fp16":
            model = find_fp16_model(a.engine_cache, m.onnx)
            if model is None:
                self.note(f"{m.name} fp16: no bare session: the element wrote no {cache_stem(m.onnx)}-fp16-*.onnx "
                          f"into {a.engine_cache} (where it cannot convert, it says why in its log and runs FP32)")
                return {}
            res["fp16_onnx"] = os.path.basename(model)
        # The element may choose other settings for each N: one bare session per set of them.
        groups = {}
        for n in a.streams:
            element = res["runs"].get(str(n), {}).get(precision, {}).get("element") or {}
            options = (element.get("cuda_record") or {}).get("options") or {}
            groups.setdefault(tuple(options.items()), []).append(n)
        if () in groups:
            self.note(f"{m.name} {precision}: the element recorded no CUDA settings for "
                      f"N={','.join(map(str, groups[()]))}: the bare session ran there with ONNX Runtime's defaults")
        tag = f"{m.name}-bare" if precision == "fp32" else f"{m.name}-{precision}-bare"
        rows = {}
        for i, (options, streams) in enumerate(groups.items()):
            rows.update(self.run_bare_session(m, model, streams, dict(options), f"{tag}-{i + 1}" if i else tag,
                                              f"{m.name} {precision} bare session"))
        return rows

    def run_bare_session(self, m, model, streams, options, tag, what):
        """One bare_session.py run of MODEL at the batch sizes STREAMS with CUDA provider OPTIONS."""
        graph = options.get("enable_cuda_graph", "0").strip().lower() in ("1", "true")
        want = 60 + (25 if graph else 15) * len(streams)  # a CUDA graph takes a session per batch size
        timeout = self.limit(want, what)
        if timeout is None:
            return {}
        cmd = [sys.executable, os.path.join(BENCH_DIR, "bare_session.py"), model, "--batch",
               ",".join(map(str, streams)), "--device", self.args.device, "--name", m.name,
               "--seconds", str(self.args.bare_seconds)]
        if m.dims_arg():
            cmd += ["--infer-dims", m.dims_arg()]
        if m.order:
            cmd += ["--order", m.order]
        if options:
            cmd += ["--provider-options", ",".join(f"{k}={v}" for k, v in options.items())]
        r = self.run_process(tag, cmd, timeout)
        text = "".join(s for _, s in r["lines"])
        rows = {row.get("batch"): row for row in parse_kv_line(text, "BARE ")}
        if r["timed_out"] or r["rc"] != 0:
            tail = "".join(s for _, s in r["lines"][-3:]).strip().replace("\n", " | ")
            self.note(f"{what}: {'time limit' if r['timed_out'] else 'exit ' + str(r['rc'])}: {tail[-300:]}")
        for n, row in rows.items():
            if "error" in row:
                self.note(f"{what}, batch {n}: {row['error']}")
        if r["timed_out"] or r["rc"] != 0:
            for n in streams:
                rows.setdefault(n, {"error": "the bare session failed"})
        for row in rows.values():
            row["provider_options"] = options
        return rows

    def run_diy(self, m, n):
        timeout = self.limit(self.args.run_timeout, f"{m.name} DIY N={n}")
        if timeout is None:
            return None
        cmd = [sys.executable, os.path.join(BENCH_DIR, "diy_peer.py"), m.onnx, "--clip", self.args.clip,
               "--streams", str(n), "--device", self.args.device, "--decode", self.args.diy_decode,
               "--name", m.name, "--threshold", str(m.threshold), "--iou", str(m.iou),
               "--timeout", str(max(timeout - 5, 10))]
        if m.dims_arg():
            cmd += ["--infer-dims", m.dims_arg()]
        if m.order:
            cmd += ["--order", m.order]
        if m.parser:
            cmd += ["--parser", m.parser]
        if m.scale is not None:
            cmd += ["--scale", str(m.scale)]
        env = dict(os.environ)
        env.pop("GST_DEBUG", None)
        r = self.run_process(f"{m.name}-diy-{n}", cmd, timeout, env=env)
        text = "".join(s for _, s in r["lines"])
        rows = parse_kv_line(text, "DIY ")
        row = rows[-1] if rows else {"error": "no result line"}
        if r["timed_out"]:
            row = {"error": "stopped at the time limit"}
        if "error" in row or row.get("errors"):
            self.note(f"{m.name} DIY N={n}: {row.get('error') or str(row.get('errors')) + ' stream(s) failed'} (log {r['log']})")
        return row

    def run(self):
        a = self.args
        self.model_dirs = [a.model_dir] + [d for d in os.environ.get("FERROSTREAM_MODEL_DIR", "").split(":") if d] + \
            [os.path.join(os.path.expanduser("~"), ".cache", "ferrostream", "models")]
        if shutil.which("nvidia-smi"):
            q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                               capture_output=True, text=True)
            self.gpu = q.stdout.strip().splitlines()[0] if q.returncode == 0 and q.stdout.strip() else ""
        self.models = [Model(name, a.pipelines_dir, self.model_dirs) for name in a.models]
        for m in self.models:
            if m.problem and not m.onnx_name:
                self.note(f"{m.name}: skipped: {m.problem}")
        self.export_missing()
        for m in self.models:
            if m.onnx_name and m.problem:
                self.note(f"{m.name}: skipped: {m.problem}")
        runnable = [m for m in self.models if m.onnx]
        self.say(f"models: {', '.join(m.name for m in runnable) or 'none'}; streams {a.streams}; "
                 f"precisions {', '.join(a.precisions)}; "
                 f"DIY {a.diy_streams} for {', '.join(m.name for m in runnable if m.name in a.diy_models) or 'none'}; "
                 f"engine cache {a.engine_cache}")

        if a.baseline:
            what = f"baseline ({a.baseline} streams, decode + rsstreammux)"
            r = self.run_gst(f"baseline-{a.baseline}", a.baseline, None, what)
            if r:
                r["streams"] = a.baseline
                self.results["baseline"] = r
                self.say(f"{what}: {fmt(r.get('fps'))} fps, NVDEC {fmt(r.get('dec'), 0)} %")
            self.write()

        for m in runnable:
            res = self.results["models"].setdefault(m.name, {"onnx": os.path.basename(m.onnx),
                                                             "infer_dims": m.infer_dims, "runs": {}})
            # Both precisions of each N together: a bench cut short by the deadline still pairs them.
            for n in a.streams:
                for p in a.precisions:
                    self.run_element(m, res, n, p)
            # The same runs with ONNX Runtime's CUDA graph (cuda-graph=auto), where asked and the
            # configuration does not already ask for it.
            if m.name in a.graph_models:
                if m.graph_configured():
                    self.note(f"{m.name}: no separate cuda-graph runs: its configuration sets "
                              f"cuda-graph={m.cuda_graph}, which its element rows run with")
                else:
                    for n in a.graph_streams:
                        for p in a.precisions:
                            self.run_element(m, res, n, p, graph=True)
            for p in a.precisions:
                rows = self.run_bare(m, res, p)
                for n in a.streams:
                    if n in rows:
                        res["runs"].setdefault(str(n), {}).setdefault(p, {})["bare"] = rows[n]
                if rows:
                    self.say(f"{m.name} {p} bare: " + ", ".join(f"N={n} {fmt(rows[n].get('fps'))}"
                                                                for n in a.streams if n in rows))
                self.write()
            # The DIY peer runs the model as it is: next to the FP32 rows.
            if m.name in a.diy_models and "fp32" in a.precisions:
                for n in a.diy_streams:
                    row = self.run_diy(m, n)
                    if row is None:
                        continue
                    res["runs"].setdefault(str(n), {}).setdefault("fp32", {})["diy"] = row
                    self.say(f"{m.name} DIY N={n}: {fmt(row.get('fps'))} fps")
                    self.write()
        self.write(final=True)
        print()
        print(self.markdown())
        return 0

    # Output -------------------------------------------------------------------------------------
    def markdown(self):
        a = self.args
        out = ["# Ferrostream GPU benchmark", ""]
        out.append(f"GPU: {self.gpu or 'not known (no nvidia-smi)'}. Clip: {os.path.basename(a.clip)} "
                   f"({a.clip_frames} frames a stream), decoder `{a.decoder}`, rstrtinfer device={a.device}; "
                   f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime(self.t_start))} UTC.")
        out.append("")
        out.append("Element: N x `filesrc ! qtdemux ! h264parse ! " + a.decoder + " ! queue ! mux.sink_i`, "
                   "`rsstreammux batch-size=N batched-push-timeout=40000 ! rstrtinfer device=" + a.device +
                   " batch-size=N network-mode=P ! rstracker ! rsosd ! fakesink sync=false` (other settings, "
                   "cuda-graph among them, from the model's configuration); fps = rstrtinfer's steady rate "
                   "(`steady-fps` of its summary: frames pushed after the first 8 batches over the time "
                   "they took; the bare session and the DIY peer also warm up before timing); SM and "
                   "NVDEC: `nvidia-smi dmon` over the run; bytes and latency: "
                   "rstrtinfer's summary. Bare: ONNX Runtime session, input on the device, I/O binding. "
                   "DIY: Python, a process per 8 streams, gst-launch subprocesses, numpy pre/post-processing "
                   "(FP32 only).")
        out.append("")
        out.append(f"Precision P: {', '.join(a.precisions)}. At fp16 the element converts the model to FP16 "
                   "at start (inputs and float outputs FLOAT16) into its engine cache; the bare FP16 session "
                   "runs that conversion with float16 input. CUDA settings: what the element chose at start "
                   "(cuda-tuning) and recorded for that model, precision and N (`STEM-P-bN-*.cuda.txt`): "
                   "nhwc = prefer_nhwc, algo = cudnn_conv_algo_search (EXH: exhaustive, HEUR: heuristic), "
                   "graph = enable_cuda_graph, tf32 = use_tf32; the bare session of that row ran with the same. "
                   "ORT defaults: the element recorded none, and the bare session ran with ONNX Runtime's "
                   "defaults.")
        out.append("")
        b = self.results["baseline"]
        if b:
            out.append(f"Baseline, {b['streams']} streams decoded and batched by rsstreammux (no inference): "
                       f"**{fmt(b.get('fps'))} fps** ({fmt(b.get('streams30'))} streams of 30 fps), "
                       f"NVDEC {fmt(b.get('dec'), 0)} %, SM {fmt(b.get('sm'), 0)} %"
                       + (f"; {b['error']}" if b.get("error") else "") + ".")
            out.append("")
        if "fp32" in a.precisions and "fp16" in a.precisions:
            out.extend(self.fp16_table())
        for name, res in self.results["models"].items():
            dims = "x".join(map(str, res["infer_dims"])) if res.get("infer_dims") else "?"
            out.append(f"## {name} ({res['onnx']}, {dims})")
            out.append("")
            if res.get("fp16_onnx"):
                out.append(f"FP16 model: the element's conversion `{res['fp16_onnx']}`.")
                out.append("")
            out.append("| N | precision | element fps | streams@30 | SM % | NVDEC % | to host / batch "
                       "| to device / batch | latency p50 / p95 ms | bare fps | element / bare | DIY fps "
                       "| element / DIY | cuda-graph fps | CUDA settings |")
            out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
            for n in sorted(res["runs"], key=int):
                for p in a.precisions:
                    r = res["runs"][n].get(p)
                    if r is None:
                        continue
                    e, bare, diy = r.get("element") or {}, r.get("bare") or {}, r.get("diy") or {}
                    efps, bfps, dfps = ok_fps(e), ok_fps(bare), ok_fps(diy)
                    if "provider_options" in bare:
                        settings = settings_text(bare["provider_options"])
                    elif e.get("cuda_record"):
                        settings = settings_text(e["cuda_record"]["options"])
                    else:
                        settings = "–"
                    out.append("| " + " | ".join([
                        n, p,
                        f"**{fmt(efps)}**" if efps else ("failed" if e else "–"),
                        fmt(e.get("streams30") if efps else None),
                        fmt(e.get("sm"), 0), fmt(e.get("dec"), 0),
                        fmt_bytes(e.get("to_host_per_batch")), fmt_bytes(e.get("to_device_per_batch")),
                        f"{fmt(e.get('p50'), 2)} / {fmt(e.get('p95'), 2)}",
                        fmt(bfps) if bfps else ("failed" if bare else "–"),
                        ratio(efps, bfps),
                        fmt(dfps) if dfps else ("failed" if diy else "–"),
                        ratio(efps, dfps),
                        (fmt(ok_fps(r["graph"])) if ok_fps(r["graph"]) else "failed") if r.get("graph") else "–",
                        settings,
                    ]) + " |")
            out.append("")
        if self.notes:
            out.append("Notes:")
            out.extend(f"- {n}" for n in self.notes)
            out.append("")
        return "\n".join(out)

    def fp16_table(self):
        """The summary of FP16 against FP32: element and bare rates for each model and N."""
        out = ["## FP16 vs FP32", "",
               "| model | N | element fps FP32 | element fps FP16 | FP16 / FP32 | bare FP16 / FP32 "
               "| streams of 1080p30 at FP16 |",
               "|---|---|---|---|---|---|---|"]
        for name, res in self.results["models"].items():
            for n in sorted(res["runs"], key=int):
                r32, r16 = res["runs"][n].get("fp32") or {}, res["runs"][n].get("fp16") or {}
                if not (r32.get("element") or r16.get("element")):
                    continue
                e32, e16 = ok_fps(r32.get("element")), ok_fps(r16.get("element"))
                b32, b16 = ok_fps(r32.get("bare")), ok_fps(r16.get("bare"))
                out.append("| " + " | ".join([
                    name, n, fmt(e32) if e32 else ("failed" if r32.get("element") else "–"),
                    f"**{fmt(e16)}**" if e16 else ("failed" if r16.get("element") else "–"),
                    ratio(e16, e32), ratio(b16, b32), fmt(e16 / 30.0 if e16 else None),
                ]) + " |")
        out.append("")
        return out

    def write(self, final=False):
        a = self.args
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "bench.md"), "w") as f:
            f.write(self.markdown() + "\n")
        with open(os.path.join(a.out, "bench.json"), "w") as f:
            json.dump({"gpu": self.gpu, "clip": os.path.basename(a.clip), "clip_frames": a.clip_frames,
                       "decoder": a.decoder, "device": a.device, "precisions": a.precisions,
                       "engine_cache": a.engine_cache, "notes": self.notes, **self.results},
                      f, indent=1, default=str)
        self.keep_records()
        # The raw logs as one archive: only a few files come back from the GPU machine.
        tmp = os.path.join(a.out, "bench-logs.tar.gz.partial")
        with tarfile.open(tmp, "w:gz") as t:
            t.add(self.raw, arcname="bench-logs")
        os.replace(tmp, os.path.join(a.out, "bench-logs.tar.gz"))
        if final:
            shutil.rmtree(self.raw, ignore_errors=True)

    def keep_records(self):
        """Copies the element's text records (FP16 conversions, CUDA settings) from the engine cache
        into the raw logs, so they outlive the cache."""
        cache = self.args.engine_cache
        try:
            names = os.listdir(cache)
        except FileNotFoundError:
            return
        dest = os.path.join(self.raw, "engine-cache")
        for name in names:
            path = os.path.join(cache, name)
            if name.endswith(".txt") and not name.startswith(".") and os.path.isfile(path):
                os.makedirs(dest, exist_ok=True)
                shutil.copy2(path, dest)

    def remove_engine_cache(self):
        """Removes the engine cache when it is the bench's own (OUT/engine-cache): its FP16 models
        are large, and only a few files come back from the GPU machine."""
        if self.args.own_engine_cache:
            shutil.rmtree(self.args.engine_cache, ignore_errors=True)


def shown(path):
    """PATH relative to the repository when inside it."""
    rel = os.path.relpath(path, REPO)
    return path if rel.startswith("..") else rel


def fmt(v, digits=1):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:,.{digits}f}"


def fmt_bytes(b):
    if b is None:
        return "–"
    if b < 1024:
        return f"{b:.0f} B"
    if b < 1048576:
        return f"{b / 1024:.1f} KiB"
    return f"{b / 1048576:.2f} MiB"


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "–"


def ok_fps(run):
    """The frames/s of a run (element, bare, DIY) that did not fail, else None."""
    return run.get("fps") if run and not run.get("error") else None


def int_list(text):
    text = (text or "").strip()
    if text in ("", "0", "none"):
        return []
    return [int(v) for v in text.replace(" ", ",").split(",") if v.strip()]


def name_list(text):
    return [v for v in (text or "").replace(" ", ",").split(",") if v.strip()]


def main(argv=None):
    env = os.environ.get
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count-frames", metavar="MP4", help="print the video frames of MP4 and stop")
    ap.add_argument("--parse-log", metavar="LOG", help="print what a gst-launch log yields (JSON) and stop")
    ap.add_argument("--clip", help="the H.264 MP4 clip every stream plays")
    ap.add_argument("--clip-frames", type=int, help="frames in the clip (default: counted)")
    ap.add_argument("--out", default=env("OUT") or "bench-out", help="where bench.md, bench.json and "
                    "bench-logs.tar.gz go (default $OUT)")
    ap.add_argument("--models", default=env("BENCH_MODELS", "coco_ssd,yolov8s,yolov8m,rtdetr_l"),
                    help="configurations pipelines/NAME.txt (BENCH_MODELS)")
    ap.add_argument("--streams", default=env("BENCH_STREAMS", "1,8,16,32,64"), help="stream counts N (BENCH_STREAMS)")
    ap.add_argument("--diy-streams", default=env("BENCH_DIY", "8,32"), help="DIY stream counts (BENCH_DIY; 0: none)")
    ap.add_argument("--diy-models", default=env("BENCH_DIY_MODELS", "coco_ssd,yolov8s"), help="BENCH_DIY_MODELS")
    ap.add_argument("--precisions", default=env("BENCH_PRECISIONS", "fp32,fp16"),
                    help="rstrtinfer network-mode values each model runs at, and the bare session with them: "
                         f"{', '.join(PRECISIONS)} (BENCH_PRECISIONS; default fp32,fp16)")
    ap.add_argument("--graph-models", default=env("BENCH_GRAPH_MODELS", "yolov8s,yolov8m"),
                    help="models also run with cuda-graph=auto, unless their configuration sets cuda-graph "
                         "(BENCH_GRAPH_MODELS)")
    ap.add_argument("--graph-streams", default=env("BENCH_GRAPH", "8,32"),
                    help="stream counts of the cuda-graph runs (BENCH_GRAPH; 0: none)")
    ap.add_argument("--baseline", type=int, default=int(env("BENCH_BASELINE", "16")),
                    help="streams of the decode + rsstreammux baseline (BENCH_BASELINE; 0: none)")
    ap.add_argument("--decoder", default=env("BENCH_DECODER", "nvh264dec"), help="the H.264 decoder (BENCH_DECODER)")
    ap.add_argument("--diy-decode", default=env("BENCH_DIY_DECODE"),
                    help="the DIY streams' decoder part (default: DECODER ! cudadownload for nvh264dec)")
    ap.add_argument("--device", default=env("BENCH_DEVICE", "cuda"), choices=("cuda", "cpu"))
    ap.add_argument("--run-timeout", type=float, default=float(env("BENCH_RUN_TIMEOUT", "150")))
    ap.add_argument("--export-timeout", type=float, default=float(env("BENCH_EXPORT_TIMEOUT", "240")))
    ap.add_argument("--bare-seconds", type=float, default=float(env("BENCH_BARE_SECONDS", "2")))
    ap.add_argument("--deadline", type=float, help="epoch seconds after which no run starts")
    ap.add_argument("--budget", type=float, default=float(env("BENCH_TOTAL_S", "540")),
                    help="seconds from now after which no run starts, without --deadline (BENCH_TOTAL_S)")
    ap.add_argument("--engine-cache", default=env("BENCH_ENGINE_CACHE"),
                    help="FERROSTREAM_ENGINE_CACHE of the element runs, where the bare sessions find the FP16 "
                         "models and CUDA settings the element wrote (BENCH_ENGINE_CACHE; default OUT/engine-cache, "
                         "emptied first and removed at the end)")
    ap.add_argument("--model-dir", default=env("BENCH_MODEL_DIR") or os.path.join(tempfile.gettempdir(), "ferrostream-bench-models"),
                    help="where exported models go and are looked for first")
    ap.add_argument("--export-script", default=os.path.join(REPO, "scripts", "models", "export_ultralytics.py"))
    ap.add_argument("--export-pythonpath", default=env("BENCH_EXPORT_PYTHONPATH"),
                    help="put before PYTHONPATH for the export script (the installed wheels)")
    ap.add_argument("--pipelines-dir", default=os.path.join(REPO, "pipelines"))
    ap.add_argument("--no-dmon", action="store_true", help="do not run nvidia-smi dmon")
    a = ap.parse_args(argv)

    if a.count_frames:
        print(mp4_video_frames(a.count_frames))
        return 0
    if a.parse_log:
        text = open(a.parse_log, errors="replace").read()
        print(json.dumps({"seconds": parse_exec_seconds(text), "summary": parse_summary(text),
                          "bare": parse_kv_line(text, "BARE "), "diy": parse_kv_line(text, "DIY "),
                          "dmon": average_util(parse_dmon([(float(i), l) for i, l in enumerate(text.splitlines())]),
                                               -1.0, 1e9)}, indent=1))
        return 0
    if not a.clip:
        ap.error("--clip is needed")
    a.clip = os.path.abspath(a.clip)
    a.out = os.path.abspath(a.out)
    if not a.clip_frames:
        a.clip_frames = mp4_video_frames(a.clip)
    a.models = name_list(a.models)
    a.streams = int_list(a.streams)
    a.diy_streams = int_list(a.diy_streams)
    a.diy_models = name_list(a.diy_models) if a.diy_streams else []
    a.graph_streams = int_list(a.graph_streams)
    a.graph_models = name_list(a.graph_models) if a.graph_streams else []
    a.precisions = list(dict.fromkeys(name_list(a.precisions.lower())))
    unknown = [p for p in a.precisions if p not in PRECISIONS]
    if unknown or not a.precisions:
        ap.error(f"--precisions: {', '.join(unknown) or 'none given'}: choose from {', '.join(PRECISIONS)}")
    a.own_engine_cache = not a.engine_cache
    a.engine_cache = os.path.abspath(a.engine_cache or os.path.join(a.out, "engine-cache"))
    if a.own_engine_cache:
        shutil.rmtree(a.engine_cache, ignore_errors=True)
    os.makedirs(a.engine_cache, exist_ok=True)
    if a.diy_decode is None:
        a.diy_decode = f"{a.decoder} ! cudadownload" if a.decoder.split()[0] == "nvh264dec" else a.decoder
    if a.deadline is None:
        a.deadline = time.time() + a.budget
    for f in ("bench.md", "bench.json", "bench-logs.tar.gz"):
        try:
            os.unlink(os.path.join(a.out, f))
        except FileNotFoundError:
            pass
    bench = Bench(a)
    try:
        return bench.run()
    finally:
        bench.remove_engine_cache()


if __name__ == "__main__":
    sys.exit(main())
