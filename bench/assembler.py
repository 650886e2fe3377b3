"""The PTX -> cubin step with each assembler: time per kernel and the SASS each produces.

Usage: python bench/assembler.py [--corpus DIR] [--sm sm_80,sm_90a,sm_100a] [-n 3] [--kernel NAME ...]

Every corpus kernel is compiled to PTX once (in this process), then assembled N times by ptxas
(a process per call) and N times by nvJitLink (loaded once, in this process, as in a warm batch
worker) through ``tilecore.assembler.ptx_to_cubin``; printed: the median time of each, and the SASS
instruction counts (``cuobjdump -sass``, NOPs dropped) of whole-program ptxas, relocatable ``ptxas -c``
and nvJitLink, and which of the two ptxas listings nvJitLink's equals instruction for instruction
(nvJitLink compiles PTX as relocatable code and links it). Nothing is written; the machine's load
average is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compare  # noqa: E402  (DEFAULT_CORPUS, DEFAULT_SMS, find_kernels)

from tilecore.assembler import find_nvidia_tool, nvjitlink, ptx_to_cubin  # noqa: E402

_INSN = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/")


def sass(cubin: bytes, tmp: str) -> list[str]:
    """Instruction lines of ``cuobjdump -sass`` (addresses and encodings dropped, NOPs kept)."""
    path = os.path.join(tmp, "k.cubin")
    with open(path, "wb") as fh:
        fh.write(cubin)
    out = subprocess.run([find_nvidia_tool("cuobjdump"), "-sass", path], capture_output=True, text=True).stdout
    return [re.sub(r"/\*[0-9a-fx ]*\*/", "", ln).strip() for ln in out.splitlines() if _INSN.match(ln)]


def count(lines: list[str]) -> int:
    return sum(1 for ln in lines if not ln.startswith("NOP"))


def timed(fn, n: int) -> tuple[float, bytes]:
    times, out = [], b""
    for _ in range(n):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=compare.DEFAULT_CORPUS)
    ap.add_argument("--sm", default=compare.DEFAULT_SMS)
    ap.add_argument("-n", type=int, default=3)
    ap.add_argument("--kernel", action="append", default=[])
    a = ap.parse_args(argv)
    if nvjitlink() is None:
        print("error: nvJitLink not found (pip install nvidia-nvjitlink)", file=sys.stderr)
        return 1
    from tilecore.compiler import compile_file
    from tilecore.options import CompileOptions

    sms = [s.strip() for s in a.sm.split(",") if s.strip()]
    totals = {"ptxas": [], "nvjitlink": []}
    print(f"{'kernel':20} {'sm':8} {'ptxas':>9} {'nvJitLink':>10}   SASS instructions ptxas / ptxas -c / nvJitLink   "
          "nvJitLink's SASS is")
    with tempfile.TemporaryDirectory() as tmp:
        kernels, _ = compare.find_kernels([a.corpus], False, a.kernel, tmp)
        for k in kernels:
            for sm in sms:
                (name, ptx), = compile_file(k.path, sm, CompileOptions(emit="ptx")).artifacts["ptx"].items()
                tp, whole = timed(lambda: ptx_to_cubin(ptx, sm, name=name, assembler="ptxas"), a.n)  # noqa: B023
                tj, linked = timed(lambda: ptx_to_cubin(ptx, sm, name=name, assembler="nvjitlink"), a.n)  # noqa: B023
                reloc = ptx_to_cubin(ptx, sm, name=name, assembler="ptxas", extra_args=["-c"])
                w, c, j = sass(whole, tmp), sass(reloc, tmp), sass(linked, tmp)
                same = "ptxas -c's" if j == c else "whole-program ptxas'" if j == w else "neither"
                totals["ptxas"].append(tp)
                totals["nvjitlink"].append(tj)
                print(f"{k.name:20} {sm:8} {tp * 1000:7.1f}ms {tj * 1000:8.1f}ms   "
                      f"{count(w):>18} / {count(c):>5} / {count(j):>5}              {same}", flush=True)
    p, j = totals["ptxas"], totals["nvjitlink"]
    print(f"median per pair: ptxas {statistics.median(p) * 1000:.1f} ms, nvJitLink {statistics.median(j) * 1000:.1f} ms; "
          f"sum: {sum(p):.2f} s / {sum(j):.2f} s (n={a.n}; load average {', '.join(f'{x:.1f}' for x in os.getloadavg())})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
