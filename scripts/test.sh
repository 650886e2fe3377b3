#!/usr/bin/env bash
# The project's test command (what CI runs):
#   1. bootstrap the dev venv (core + every plugin, editable) and run every test;
#   2. build the wheels and check that `tilecore[sm100]` / `tilecore[all]` install alone from them;
#   3. run the tox environments (each plugin installed alone from the wheels, core without plugins, lint).
# Usage: scripts/test.sh [--quick] [extra pytest args]     --quick: step 1 only.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
QUICK=0
if [ "${1:-}" = "--quick" ]; then QUICK=1; shift; fi
VENV="$(bash scripts/bootstrap.sh "${TILECORE_VENV:-$ROOT/.venv}")"
echo "== pytest (dev venv: $VENV)"
"$VENV/bin/python" -m pytest -p no:cacheprovider tests plugins/*/tests "$@"
[ "$QUICK" = 1 ] && exit 0
echo "== wheels + extras"
PYTHON="$VENV/bin/python" bash scripts/build_wheels.sh >/dev/null
PYTHON="$VENV/bin/python" bash scripts/check_extras.sh sm100 all
echo "== tox (each plugin alone, core alone, lint)"
"$VENV/bin/tox" run-parallel -p 2 -e core,gpu_nvvm,nvgpu_nvvm,cute,tileas,sm100,lint
echo "== all tests passed"
