"""tilecore against NVIDIA's tileiras on the same TileIR bytecode, side by side.

Usage:
    python bench/compare.py [--corpus DIR ...] [--no-generated] [--sm sm_80,sm_90a,sm_100a]
                            [-n 5] [--kernel NAME ...] [--out PATH]

For every kernel (default: ../shared/corpus/visible plus the cuTile kernels the tests
generate, plugins/tileas/tests/cutile_kernels.py) and every SM, both compilers run as
whole processes, alternately, N times each after one warm-up. Recorded per side:
success or the first error line, median / min wall time, peak memory of the child
(ru_maxrss from wait4), and the cubin's SASS statistics (bench/sass.py: instruction
count, registers, shared memory, instruction classes). tilecore's per-stage breakdown
(``--timing-json``) is stored too, so the slowest stage per kernel is visible.

Output: a table on stdout, JSON in bench/results/<date>-<git sha>.json (or --out), and
the geometric means of the time ratio and the SASS-instruction ratio (tilecore /
tileiras) over the kernels both compile. Kernels tilecore cannot compile are listed.
These are whole-process times on a shared machine: compare ratios, not absolutes.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from sass import sass_stats  # noqa: E402

from tilecore.serialize import find_nvidia_tool  # noqa: E402

DEFAULT_CORPUS = os.path.join(os.path.dirname(ROOT), "shared", "corpus", "visible")
DEFAULT_SMS = "sm_80,sm_90a,sm_100a"

# tilecore target -> tileiras --gpu-name (tileiras has no "a" spelling).
TILEIRAS_GPU = {
    "sm_80": "sm_80",
    "sm_86": "sm_86",
    "sm_89": "sm_89",
    "sm_90": "sm_90",
    "sm_90a": "sm_90",
    "sm_100": "sm_100",
    "sm_100a": "sm_100",
    "sm_103a": "sm_103",
    "sm_120": "sm_120",
    "sm_120a": "sm_120",
}


def run_measured(cmd: list[str]) -> tuple[float, int, int, str]:
    """(wall seconds, exit status, peak RSS in KiB, stderr) of one child process."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return wall, proc.returncode, usage.ru_maxrss, err.read().decode(errors="replace")


def first_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.startswith("warning:")]
    return next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else "failed")


def kernels(corpora: list[str], generated: bool, names: list[str]) -> list[tuple[str, str]]:
    """(name, path) of every kernel to measure."""
    out = []
    for d in corpora:
        for p in sorted(glob.glob(os.path.join(d, "*.tileirbc"))):
            out.append((os.path.basename(p)[: -len(".tileirbc")], p))
    if generated:
        sys.path.insert(0, os.path.join(ROOT, "plugins", "tileas", "tests"))
        try:
            import cutile_kernels
        except ImportError as e:
            print(f"note: generated kernels skipped ({e})", file=sys.stderr)
        else:
            seen = {n for n, _ in out}
            for n in sorted(cutile_kernels.KERNELS):
                if n not in seen:
                    out.append((n, cutile_kernels.kernel_path(n)))
    if names:
        out = [(n, p) for n, p in out if any(f in n for f in names)]
    return out


class Side:
    """One compiler's command line for a kernel and SM."""

    def __init__(self, name: str, cmd: list[str], output: str):
        self.name, self.cmd, self.output = name, cmd, output
        self.times: list[float] = []
        self.rss: list[int] = []
        self.error: str | None = None

    def run(self, record: bool) -> None:
        if self.error:
            return
        wall, rc, rss, stderr = run_measured(self.cmd)
        if rc != 0:
            self.error = first_error(stderr)
            return
        if record:
            self.times.append(wall)
            self.rss.append(rss)

    def summary(self) -> dict:
        if self.error:
            return {"ok": False, "error": self.error}
        out = {"ok": True, "median_s": statistics.median(self.times), "min_s": min(self.times),
               "runs": len(self.times), "peak_rss_kib": max(self.rss)}
        out["sass"] = sass_stats(self.output)
        return out


def compare_one(path: str, sm: str, n: int, tmp: str, tilecore: str, tileiras: str) -> dict:
    tag = os.path.basename(path) + "." + sm
    tc_out, ti_out = os.path.join(tmp, tag + ".tc.cubin"), os.path.join(tmp, tag + ".ti.cubin")
    timing = os.path.join(tmp, tag + ".timing.json")
    tc = Side("tilecore", [tilecore, "compile", path, "--gpu-name", sm, "-O3", "-o", tc_out,
                           "--timing-json", timing], tc_out)
    ti = Side("tileiras", [tileiras, f"--gpu-name={TILEIRAS_GPU.get(sm, sm.rstrip('a'))}", "--opt-level=3",
                           f"--output-file={ti_out}", path], ti_out)
    for side in (tc, ti):
        side.run(record=False)  # warm-up (also finds failures once)
    for _ in range(n):  # alternate so both see the same machine load
        tc.run(record=True)
        ti.run(record=True)
    row = {"tilecore": tc.summary(), "tileiras": ti.summary()}
    if row["tilecore"]["ok"] and os.path.exists(timing):
        with open(timing) as fh:
            stages = json.load(fh)["stages"]
        row["tilecore"]["stages"] = {s["stage"]: round(s["seconds"], 5) for s in stages}
        slowest = max(stages, key=lambda s: s["seconds"])
        row["tilecore"]["slowest_stage"] = slowest["stage"]
    a, b = row["tilecore"], row["tileiras"]
    if a["ok"] and b["ok"]:
        row["time_ratio"] = a["median_s"] / b["median_s"]
        ia, ib = a["sass"].get("instructions"), b["sass"].get("instructions")
        row["sass_ratio"] = ia / ib if ia and ib else None
    return row


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def git_sha() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip() or "nogit"
    except OSError:
        return "nogit"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="tilecore vs tileiras on the same TileIR bytecode")
    ap.add_argument("--corpus", action="append", help=f"folder of *.tileirbc (default {DEFAULT_CORPUS})")
    ap.add_argument("--no-generated", action="store_true", help="skip the kernels generated with cuda-tile")
    ap.add_argument("--sm", default=DEFAULT_SMS, help=f"comma-separated targets (default {DEFAULT_SMS})")
    ap.add_argument("-n", type=int, default=5, help="measured runs per compiler (after one warm-up)")
    ap.add_argument("--kernel", action="append", default=[], help="only kernels whose name contains this")
    ap.add_argument("--out", help="JSON path (default bench/results/<date>-<sha>.json)")
    a = ap.parse_args(argv)
    tileiras = find_nvidia_tool("tileiras")
    if not tileiras:
        print("error: tileiras not found (pip install nvidia-cuda-tileiras)", file=sys.stderr)
        return 1
    tilecore = os.path.join(os.path.dirname(sys.executable), "tilecore")
    ks = kernels(a.corpus or [DEFAULT_CORPUS], not a.no_generated, a.kernel)
    sms = [s.strip() for s in a.sm.split(",") if s.strip()]
    results = []
    hdr = (f"{'kernel':26} {'sm':8} {'tilecore s':>10} {'tileiras s':>10} {'t ratio':>7} {'sass tc':>7} "
           f"{'sass ti':>7} {'s ratio':>7} {'reg tc/ti':>9} {'MiB tc/ti':>9}  slowest tilecore stage")
    print(hdr)
    print("-" * len(hdr))
    with tempfile.TemporaryDirectory(prefix="tilecore-compare-") as tmp:
        for name, path in ks:
            for sm in sms:
                row = compare_one(path, sm, a.n, tmp, tilecore, tileiras)
                row.update(kernel=name, sm=sm, path=os.path.relpath(path, ROOT))
                results.append(row)
                print(format_row(row), flush=True)
    both = [r for r in results if "time_ratio" in r]
    summary = {
        "kernels_compared": len(both),
        "geomean_time_ratio": geomean([r["time_ratio"] for r in both]),
        "geomean_sass_ratio": geomean([r.get("sass_ratio") for r in both]),
        "tilecore_failures": [f"{r['kernel']}@{r['sm']}: {r['tilecore']['error']}" for r in results
                              if not r["tilecore"]["ok"]],
        "tileiras_failures": [f"{r['kernel']}@{r['sm']}: {r['tileiras']['error']}" for r in results
                              if not r["tileiras"]["ok"]],
    }
    print()
    gt, gs = summary["geomean_time_ratio"], summary["geomean_sass_ratio"]
    print(f"both compile: {len(both)} of {len(results)} kernel x SM pairs")
    print(f"geomean time ratio tilecore/tileiras: {gt:.3f}" if gt else "geomean time ratio: n/a")
    print(f"geomean SASS instruction ratio tilecore/tileiras: {gs:.3f}" if gs else "geomean SASS ratio: n/a")
    for f in summary["tilecore_failures"]:
        print(f"tilecore cannot compile: {f}")
    for f in summary["tileiras_failures"]:
        print(f"tileiras cannot compile: {f}")
    out = a.out or os.path.join(HERE, "results", f"{datetime.date.today().isoformat()}-{git_sha()}.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "git": git_sha(), "n": a.n,
            "sms": sms, "machine": f"{os.cpu_count()} cores, {sys.platform}", "python": sys.version.split()[0]}
    with open(out, "w") as fh:
        json.dump({"meta": meta, "summary": summary, "results": results}, fh, indent=1)
    print(f"wrote {os.path.relpath(out)}")
    return 0


def format_row(r: dict) -> str:
    a, b = r["tilecore"], r["tileiras"]

    def t(s):
        return f"{s['median_s']:10.3f}" if s["ok"] else f"{'FAIL':>10}"

    def ins(s):
        return f"{s['sass'].get('instructions', '-'):>7}" if s["ok"] else f"{'-':>7}"

    reg = f"{a['sass'].get('registers') if a['ok'] else '-'}/{b['sass'].get('registers') if b['ok'] else '-'}"
    mem = f"{a['peak_rss_kib'] // 1024 if a['ok'] else '-'}/{b['peak_rss_kib'] // 1024 if b['ok'] else '-'}"
    tr = f"{r['time_ratio']:7.2f}" if "time_ratio" in r else f"{'-':>7}"
    sr = f"{r['sass_ratio']:7.2f}" if r.get("sass_ratio") else f"{'-':>7}"
    line = (f"{r['kernel'][:26]:26} {r['sm']:8} {t(a)} {t(b)} {tr} {ins(a)} {ins(b)} {sr} {reg:>9} {mem:>9}  "
            f"{a.get('slowest_stage', '')}")
    if not a["ok"]:
        line += f"\n    tilecore: {a['error'][:150]}"
    if not b["ok"]:
        line += f"\n    tileiras: {b['error'][:150]}"
    return line


if __name__ == "__main__":
    sys.exit(main())
