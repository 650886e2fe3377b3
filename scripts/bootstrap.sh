#!/usr/bin/env bash
# Create or update a venv (default .venv) with the tilecore core, every plugin in
# editable mode, the third-party test plugin, the test dependencies and the dask extra.
# Usage: scripts/bootstrap.sh [VENV_DIR]      Prints the venv path at the end.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV" >&2
fi
"$VENV/bin/python" -m pip install -q --upgrade pip >&2
"$VENV/bin/python" -m pip install -q \
  -e "$ROOT[test,dask]" \
  -e "$ROOT/plugins/gpu_nvvm" \
  -e "$ROOT/plugins/nvgpu_nvvm" \
  -e "$ROOT/plugins/cute" \
  -e "$ROOT/plugins/tileas" \
  -e "$ROOT/plugins/sm100" >&2
# Editable installs get no bytecode at install time (a wheel install does); write it now, since
# environments with PYTHONDONTWRITEBYTECODE=1 would otherwise recompile ~90 modules on every run (~80 ms).
"$VENV/bin/python" -m compileall -q "$ROOT/tilecore" "$ROOT"/plugins/*/src >/dev/null
echo "$(cd "$VENV" && pwd)"
