# SPDX-License-Identifier: MIT OR Apache-2.0
"""The C ABI as a C application uses it: meson installs the header and the pkg-config file (without
building the plugin again), examples/c builds against the installed files as a separate project,
and its `count` program, reading the metadata through <ferrostream/meta.h> only, prints what
rsmetaexport writes as JSON in the same run. The structure layouts the C compiler sees are those
the Rust side asserts (plugins/abi/src/lib.rs)."""

import collections
import glob
import json
import os
import pathlib
import re
import shlex
import shutil
import struct
import subprocess

import pytest
from conftest import REPO, shared_dir

TIMEOUT = 300  # seconds for each command: a hang fails the test instead of stalling the suite
FRAMES = 15

# A label as count.c prints it: bare, or double-quoted with \" \\ \xHH escapes.
TOKEN = r'(?:"(?:[^"\\]|\\.)*"|[^\s="\\]+)'
FRAME_LINE = re.compile(rf"^frame (\d+) objects=(\d+)((?: {TOKEN}=\d+)*)$")
COUNT = re.compile(rf" ({TOKEN})=(\d+)")
NUM = r"(-?\d+\.\d\d)"
OBJECT_LINE = re.compile(
    rf"^object frame=(\d+) id=(-|\d+) label=({TOKEN}) left={NUM} top={NUM} width={NUM} height={NUM}"
    r"(?: angle=(-?\d+\.\d{4}))?$"
)


def unquote(token):
    if not token.startswith('"'):
        return token
    return re.sub(
        r"\\(x[0-9a-fA-F]{2}|.)",
        lambda m: chr(int(m.group(1)[1:], 16)) if len(m.group(1)) == 3 else m.group(1),
        token[1:-1],
    )


def as_c_prints(value, digits=2):
    """`value` (a float32 written as JSON) as C's printf("%.2f") (`digits`) prints the float32."""
    return f"%.{digits}f" % struct.unpack("<f", struct.pack("<f", value))[0]


def required_tools():
    missing = [t for t in ("meson", "ninja", "pkg-config", "cc") if shutil.which(t) is None]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} not found on PATH: the C example test needs meson, ninja, "
            "pkg-config and a C compiler (scripts/setup.sh installs them)"
        )


def plugin_dir():
    """The directory of the built plugin: FERROSTREAM_PLUGIN_DIR, else GST_PLUGIN_PATH's first."""
    path = os.environ.get("FERROSTREAM_PLUGIN_DIR") or os.environ.get("GST_PLUGIN_PATH", "").split(os.pathsep)[0]
    if not path:
        pytest.fail("set FERROSTREAM_PLUGIN_DIR or GST_PLUGIN_PATH to the directory of libgstferrostream.so")
    path = pathlib.Path(path).resolve()
    if not (path / "libgstferrostream.so").is_file():
        pytest.fail(f"no libgstferrostream.so in {path} (cargo build -p gst-ferrostream)")
    return path


def run_command(cmd, env, cwd=None, check=True):
    """Runs `cmd`; fails the test with its output when it fails or runs past TIMEOUT."""
    shown = " ".join(shlex.quote(str(c)) for c in cmd)
    try:
        p = subprocess.run(
            [str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"`{shown}` did not finish within {TIMEOUT} s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
    if check and p.returncode != 0:
        pytest.fail(f"`{shown}` failed (exit status {p.returncode})\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def rust_layout():
    """The sizes and offsets plugins/abi/src/lib.rs asserts, by C name, and its ABI version."""
    text = (REPO / "plugins/abi/src/lib.rs").read_text()
    c_name = lambda rust: "Ferrostream" + rust[len("Fs"):]  # noqa: E731
    layout = {}
    for ty, size in re.findall(r"assert_eq!\(size_of::<(Fs\w+)>\(\),\s*(\d+)\)", text):
        layout[f"{c_name(ty)} size"] = int(size)
    for ty, field, offset in re.findall(r"assert_eq!\(offset_of!\((Fs\w+),\s*(\w+)\),\s*(\d+)\)", text):
        layout[f"{c_name(ty)}.{field} offset"] = int(offset)
    version = re.search(r"pub const ABI_VERSION: u32 = (\d+);", text)
    assert layout and version, "no layout assertions or ABI_VERSION found in plugins/abi/src/lib.rs"
    return layout, int(version.group(1))


def parse_count_output(stdout):
    """count's lines as [(frame_num, n_objects, {label: count}, [objects])]."""
    frames = []
    for line in stdout.splitlines():
        if m := FRAME_LINE.match(line):
            counts = {unquote(label): int(n) for label, n in COUNT.findall(m.group(3))}
            frames.append((int(m.group(1)), int(m.group(2)), counts, []))
        elif m := OBJECT_LINE.match(line):
            assert frames, f"an object line before any frame line: {line!r}"
            frame_num, object_id, label, *box, angle = m.groups()
            assert int(frame_num) == frames[-1][0], f"object of another frame: {line!r}"
            obj = {"object_id": None if object_id == "-" else int(object_id), "label": unquote(label), "bbox": box}
            if angle is not None:
                obj["angle"] = angle
            frames[-1][3].append(obj)
        else:
            pytest.fail(f"count printed a line of no known form: {line!r}")
    return frames


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Installs the header and ferrostream.pc into a temporary prefix (the plugin already built)
    and builds examples/c against them."""
    required_tools()
    tmp = tmp_path_factory.mktemp("c-example")
    plugins = plugin_dir()
    env = dict(os.environ)
    run_command(["meson", "setup", tmp / "build", REPO, "-Dplugin=false", f"-Dplugindir={plugins}",
         f"--prefix={tmp / 'prefix'}", "-Dwerror=true"], env)
    run_command(["ninja", "-C", tmp / "build", "install"], env)
    assert (tmp / "prefix/include/ferrostream/meta.h").read_bytes() == (REPO / "include/ferrostream/meta.h").read_bytes()
    pcs = glob.glob(str(tmp / "prefix/**/pkgconfig/ferrostream.pc"), recursive=True)
    assert len(pcs) == 1, f"expected one installed ferrostream.pc, found {pcs}"
    pc_dir = os.path.dirname(pcs[0])
    env["PKG_CONFIG_PATH"] = os.pathsep.join(filter(None, [pc_dir, os.environ.get("PKG_CONFIG_PATH")]))

    # What pkg-config tells applications.
    cflags = run_command(["pkg-config", "--cflags", "ferrostream"], env).stdout.split()
    libs = run_command(["pkg-config", "--libs", "ferrostream"], env).stdout.split()
    assert f"-I{tmp / 'prefix/include'}" in cflags, cflags
    for flag in (f"-L{plugins}", f"-Wl,-rpath,{plugins}", "-lgstferrostream", "-lgstreamer-1.0"):
        assert flag in libs, f"{flag} not in `pkg-config --libs ferrostream`: {libs}"

    run_command(["meson", "setup", tmp / "ex", REPO / "examples/c", "-Dwerror=true"], env)
    run_command(["ninja", "-C", tmp / "ex"], env)
    return tmp, env, plugins


def test_layout_matches_rust(built):
    tmp, env, _ = built
    out = run_command([tmp / "ex/layout_check"], env).stdout
    c = {}
    for line in out.splitlines():
        key, _, value = line.rpartition(" ")
        c[key] = int(value)
    rust, version = rust_layout()
    assert c["FERROSTREAM_ABI_VERSION"] == version, "the header's FERROSTREAM_ABI_VERSION is not the Rust ABI_VERSION"
    assert c["ferrostream_abi_version"] == version, "the loaded library reports another ABI version"
    # Every structure the header declares is compared (the frame map is not declared in it).
    declared = {k for k in rust if not k.startswith("FerrostreamFrameMap")}
    assert declared <= c.keys(), f"layout_check does not print {sorted(declared - c.keys())}"
    compared = {k: (c[k], rust[k]) for k in declared}
    assert {k: a for k, (a, b) in compared.items() if a != b} == {}, (
        f"C layout differs from the Rust assertions (C, Rust): {compared}"
    )


def test_plain_compiler_build(built):
    """`cc count.c $(pkg-config --cflags --libs ferrostream)` builds, and the program starts (the
    library found through the rpath)."""
    tmp, env, _ = built
    flags = run_command(["pkg-config", "--cflags", "--libs", "ferrostream"], env).stdout.split()
    run_command(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", REPO / "examples/c/count.c", *flags,
         "-o", tmp / "count-cc"], env)
    usage = run_command([tmp / "count-cc"], env, check=False)
    assert usage.returncode == 2 and "usage:" in usage.stderr, usage.stderr


def expected_object(record):
    """An object line's fields as count prints them for the object's JSON record."""
    expected = {
        "object_id": record["object_id"],
        "label": record["label"],
        "bbox": [as_c_prints(record["bbox"][k]) for k in ("left", "top", "width", "height")],
    }
    if "angle" in record:
        expected["angle"] = as_c_prints(record["angle"], 4)
    return expected


def test_count_prints_the_oriented_boxes_rsmetaexport_writes(built):
    """The C ABI's orientation of each object (an oriented-box model through rstracker) is the
    JSON record's angle."""
    tmp, env, _ = built
    image = shared_dir("FERROSTREAM_MEDIA_DIR", "media", "marina_obb.jpg") / "marina_obb.jpg"
    env = dict(env)
    env["FERROSTREAM_MODEL_DIR"] = str(shared_dir("FERROSTREAM_MODEL_DIR", "models", "yolov8n_obb_1024.onnx"))
    json_path = tmp / "ships.jsonl"
    p = run_command([tmp / "ex/count", image, REPO / "pipelines/yolov8_obb.txt", json_path, 1], env)
    [(frame_num, n_objects, counts, objects)] = parse_count_output(p.stdout)
    [record] = [json.loads(line) for line in json_path.read_text().splitlines() if line.strip()]
    assert n_objects == len(objects) == len(record["objects"]) >= 100
    assert counts["ship"] >= 100
    for i, (c, j) in enumerate(zip(objects, record["objects"])):
        assert "angle" in c, f"object {i} printed without an angle"
        assert c == expected_object(j), f"object {i}"


def test_count_prints_what_rsmetaexport_writes(built):
    tmp, env, _ = built
    video = shared_dir("FERROSTREAM_MEDIA_DIR", "media", "vtest.avi") / "vtest.avi"
    env = dict(env)
    env["FERROSTREAM_MODEL_DIR"] = str(shared_dir("FERROSTREAM_MODEL_DIR", "models", "coco_ssdlite_mobilenet_v2.onnx"))
    json_path = tmp / "count.jsonl"
    p = run_command([tmp / "ex/count", video, REPO / "pipelines/coco_ssd.txt", json_path, FRAMES], env)

    printed = parse_count_output(p.stdout)
    exported = [json.loads(line) for line in json_path.read_text().splitlines() if line.strip()]
    assert len(exported) == FRAMES, f"rsmetaexport wrote {len(exported)} frames, expected {FRAMES}"
    assert len(printed) == len(exported), f"count printed {len(printed)} frames, rsmetaexport wrote {len(exported)}"

    for (frame_num, n_objects, counts, objects), record in zip(printed, exported):
        where = f"frame {record['frame_num']}"
        assert frame_num == record["frame_num"], where
        assert n_objects == len(record["objects"]) == len(objects), where
        assert counts == dict(collections.Counter(o["label"] for o in record["objects"])), where
        for i, (c, j) in enumerate(zip(objects, record["objects"])):
            expected = expected_object(j)
            assert c == expected, f"{where}, object {i}"

    people = sum(counts.get("person", 0) for _, _, counts, _ in printed)
    tracked = sum(o["object_id"] is not None for *_, objects in printed for o in objects)
    assert people > 0, "no person found in vtest.avi"
    assert tracked > 0, "no object got a tracker id"
