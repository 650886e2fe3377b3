"""LLVM (NVPTX back end) optimisation level against compile time and SASS, over the corpus x SMs.

Usage:
    python bench/llvm_opt_level.py [--corpus DIR] [--sm sm_80,sm_90a,sm_100a] [--levels 3,2,1] [-n 3]

Per (kernel, SM, level): ``tilecore`` in-process with ``--option llvm-opt-level=L`` (only the
``#nvvm.target``'s ``O``; ptxas stays at -O3), the median ``serialize`` time over N runs (levels
alternate within a run), and of the cubin (``cuobjdump``, bench/sass.py): SASS instructions,
registers, stack bytes and local-memory loads / stores (spills). Prints one table row per
(kernel, SM) and, per level, the serialize total and the rows with more / fewer instructions than
the first level. Compile times are wall times on a shared machine: compare within one run.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from sass import _cuobjdump, parse_res_usage, sass_stats  # noqa: E402

from tilecore.compiler import compile_file  # noqa: E402
from tilecore.options import CompileOptions  # noqa: E402
from tilecore.serialize import find_nvidia_tool  # noqa: E402

DEFAULT_CORPUS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared", "corpus", "visible")


def one(kernel: str, sm: str, level: int, tmp: str) -> tuple[float, dict]:
    res = compile_file(kernel, sm, CompileOptions(extra={"llvm-opt-level": str(level)}))
    seconds = next(r.seconds for r in res.records if r.name == "serialize")
    path = os.path.join(tmp, f"k.O{level}.cubin")
    with open(path, "wb") as fh:
        fh.write(res.artifacts["cubin"])
    st = sass_stats(path)
    usage = parse_res_usage(_cuobjdump(find_nvidia_tool("cuobjdump"), "-res-usage", path).stdout)
    return seconds, {"instructions": st["instructions"], "registers": st["registers"],
                     "stack": max((u.get("STACK", 0) for u in usage.values()), default=0),
                     "spills": st["classes"].get("ldl/stl", 0)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=DEFAULT_CORPUS)
    ap.add_argument("--sm", default="sm_80,sm_90a,sm_100a")
    ap.add_argument("--levels", default="3,2,1")
    ap.add_argument("-n", type=int, default=3)
    a = ap.parse_args(argv)
    levels = [int(x) for x in a.levels.split(",")]
    kernels = sorted(glob.glob(os.path.join(a.corpus, "*.tileirbc")))
    sms = a.sm.split(",")
    compile_file(kernels[0], sms[0], CompileOptions())  # imports, first-call set-up
    totals = {lv: 0.0 for lv in levels}
    worse = {lv: [] for lv in levels}
    better = {lv: [] for lv in levels}
    print(f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}; serialize = median of {a.n}; "
          "per level: serialize ms, SASS instructions, registers, stack bytes, ldl/stl")
    print("| kernel | SM | " + " | ".join(f"O{lv}" for lv in levels) + " |")
    print("|---|---|" + "---|" * len(levels))
    with tempfile.TemporaryDirectory(prefix="tilecore-llvm-opt-") as tmp:
        for k in kernels:
            name = os.path.basename(k)[: -len(".tileirbc")]
            for sm in sms:
                times = {lv: [] for lv in levels}
                stats = {}
                for _ in range(a.n):
                    for lv in levels:
                        s, stats[lv] = one(k, sm, lv, tmp)
                        times[lv].append(s)
                cells = []
                for lv in levels:
                    med = statistics.median(times[lv])
                    totals[lv] += med
                    st = stats[lv]
                    cells.append(f"{med * 1000:.0f} ms, {st['instructions']} ins, {st['registers']} reg, "
                                 f"{st['stack']} B stack, {st['spills']} ldl/stl")
                    d = st["instructions"] - stats[levels[0]]["instructions"]
                    if d:
                        (worse if d > 0 else better)[lv].append(f"{name} {sm} {d:+d}")
                print(f"| {name} | {sm} | " + " | ".join(cells) + " |", flush=True)
    for lv in levels:
        print(f"O{lv}: serialize total {totals[lv] * 1000:.0f} ms; more instructions than O{levels[0]}: "
              f"{', '.join(worse[lv]) or 'none'}; fewer: {', '.join(better[lv]) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
