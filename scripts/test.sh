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
# On every core (at most 4; TILECORE_TEST_WORKERS overrides, 0 = in this process), a test file per worker: files
# share their compiled kernels through module fixtures.
WORKERS="${TILECORE_TEST_WORKERS:-$(( $(nproc) < 4 ? $(nproc) : 4 ))}"
"$VENV/bin/python" -m pytest -p no:cacheprovider -n "$WORKERS" --dist loadfile --durations=30 tests plugins/*/tests "$@"
[ "$QUICK" = 1 ] && exit 0
echo "== wheels + extras"
PYTHON="$VENV/bin/python" bash scripts/build_wheels.sh >/dev/null
PYTHON="$VENV/bin/python" bash scripts/check_extras.sh sm100 all
echo "== tox (each plugin alone, core alone, lint)"
# Two environments at a time; each is ~1.4 GB (MLIR, LLVM, the CUDA tools), so an environment that passed is
# removed before the next pair is built: the run needs ~3 GB of free disk beside the dev venv, not ~10 GB.
for pair in tileas,core sm100,gpu_nvvm cute,nvgpu_nvvm lint; do
  "$VENV/bin/tox" run-parallel -p 2 -e "$pair"
  for env in ${pair//,/ }; do rm -rf "$ROOT/.tox/$env"; done
done
echo "== all tests passed"
