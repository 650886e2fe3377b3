#!/usr/bin/env bash
# Build wheels of the core and the five plugins into dist/wheels (the local "registry"
# that makes `pip install --find-links dist/wheels 'tilecore[sm100]'` work from a checkout).
# Usage: scripts/build_wheels.sh [--if-missing]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/dist/wheels"
PY="${PYTHON:-python3}"
if [ "${1:-}" = "--if-missing" ] && [ "$(ls "$OUT"/*.whl 2>/dev/null | wc -l)" -ge 6 ]; then
  exit 0
fi
mkdir -p "$OUT"
rm -f "$OUT"/tilecore*.whl
"$PY" -m pip wheel -q --no-deps -w "$OUT" "$ROOT" "$ROOT"/plugins/gpu_nvvm "$ROOT"/plugins/nvgpu_nvvm \
  "$ROOT"/plugins/cute "$ROOT"/plugins/tileas "$ROOT"/plugins/sm100 >&2
ls "$OUT"/*.whl
