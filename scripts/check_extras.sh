#!/usr/bin/env bash
# Install `tilecore[EXTRA]` from the locally built wheels into a fresh venv and check that
# exactly the expected distributions arrived (core + the plugin + what it depends on, nothing else),
# that the plugins load, and that a kernel compiles.
# Usage: scripts/check_extras.sh [EXTRA ...]     (default: sm100)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
bash "$ROOT/scripts/build_wheels.sh" --if-missing >/dev/null
# extra -> the tilecore distributions it must bring (sorted)
declare -A EXPECT=(
  [gpu_nvvm]="tilecore tilecore-gpu-nvvm"
  [nvgpu_nvvm]="tilecore tilecore-gpu-nvvm tilecore-nvgpu-nvvm"
  [cute]="tilecore tilecore-cute tilecore-gpu-nvvm tilecore-nvgpu-nvvm"
  [tileas]="tilecore tilecore-cute tilecore-gpu-nvvm tilecore-nvgpu-nvvm tilecore-sm100 tilecore-tileas"
  [sm100]="tilecore tilecore-cute tilecore-gpu-nvvm tilecore-nvgpu-nvvm tilecore-sm100"
  [all]="tilecore tilecore-cute tilecore-gpu-nvvm tilecore-nvgpu-nvvm tilecore-sm100 tilecore-tileas"
)
for extra in "${@:-sm100}"; do
  venv="$(mktemp -d)/venv"
  "$PY" -m venv "$venv"
  start=$(date +%s)
  "$venv/bin/pip" install -q --find-links "$ROOT/dist/wheels" "tilecore[$extra]==0.1.0"
  secs=$(( $(date +%s) - start ))
  got=$("$venv/bin/pip" list --format=freeze | sed 's/==.*//' | tr 'A-Z_' 'a-z-' | grep '^tilecore' | sort | tr '\n' ' ' | sed 's/ $//')
  if [ "$got" != "${EXPECT[$extra]}" ]; then
    echo "FAIL tilecore[$extra]: installed '$got', expected '${EXPECT[$extra]}'" >&2
    exit 1
  fi
  (cd "$venv" && "$venv/bin/tilecore" plugins >/dev/null)
  if [ -n "$("$venv/bin/tilecore" plugins --json | "$venv/bin/python" -c 'import json,sys; print(" ".join(p["plugin"]+":"+p["hook"] for p in json.load(sys.stdin)["problems"]))')" ]; then
    echo "FAIL tilecore[$extra]: plugin load problems" >&2; "$venv/bin/tilecore" plugins >&2; exit 1
  fi
  gpu=sm_80; [ "$extra" = sm100 ] && gpu=sm_100a
  out="$(dirname "$venv")/k.cubin"
  "$venv/bin/tilecore" compile "$ROOT/tilecore/data/vadd_gpu.mlir" --gpu-name "$gpu" -o "$out" >/dev/null
  if [ "$extra" = tileas ] || [ "$extra" = all ]; then
    "$venv/bin/tilecore" compile "$ROOT/examples/vadd_f32.tileirbc" --gpu-name "$gpu" -o "$out" >/dev/null
  fi
  size=$(du -sm "$venv" | cut -f1)
  echo "ok tilecore[$extra]: $got; install ${secs}s, ${size} MB; compiled for $gpu"
  rm -rf "$(dirname "$venv")"
done
