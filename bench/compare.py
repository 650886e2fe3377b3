"""tilecore against NVIDIA's tileiras on the same TileIR bytecode, side by side.

Usage:
    python bench/compare.py [--corpus DIR ...] [--no-generated] [--sm sm_80,sm_90a,sm_100a]
                            [-n 5] [--kernel NAME ...] [--out PATH] [--markdown] [--timeout S]
    python bench/compare.py --show bench/results/<file>.json [--markdown]

For every kernel (default: ../shared/corpus/visible plus the cuTile kernels the tests
export, plugins/tileas/tests/cutile_kernels.py) and every SM, both compilers run as whole
processes, alternately, N times each after one warm-up:

    tilecore compile K --gpu-name SM -O3 -o tc.cubin --timing-json t.json
    tileiras --gpu-name=SM' --opt-level=3 --output-file=ti.cubin K     (SM' from TILEIRAS_GPU)

Recorded per side: success or the first error line; median / min wall time and CPU time;
peak memory of the child (ru_maxrss from wait4, which covers the child's own children too,
e.g. ptxas); the cubin's SASS statistics (bench/sass.py: instruction count, registers,
shared memory, instruction classes). tilecore's per-stage breakdown (``--timing-json``,
median per stage over the runs, plus the process start-up outside the stages) is stored
too, so the slowest stage per kernel is visible.

Output: tables on stdout (``--markdown`` for GitHub tables), JSON in
bench/results/<date>-<git sha>.json (or --out), and the geometric means of the time
ratio and the SASS-instruction ratio (tilecore / tileiras) over the kernels both compile.
Kernels tilecore cannot compile are listed with their error, never dropped.
These are whole-process times on a shared machine: compare ratios, not absolutes.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from sass import class_names, sass_stats  # noqa: E402

from tilecore.serialize import find_nvidia_tool  # noqa: E402

DEFAULT_CORPUS = os.path.join(os.path.dirname(ROOT), "shared", "corpus", "visible")
GENERATED_MODULE_DIR = os.path.join(ROOT, "plugins", "tileas", "tests")  # cutile_kernels.py
DEFAULT_SMS = "sm_80,sm_90a,sm_100a"

# tilecore target -> tileiras --gpu-name. tileiras has no arch-specific ("a") spelling:
# it always compiles for the full feature set of the SM.
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

# Targets of issue 7, reported (never asserted): geomean tilecore / tileiras ratios.
TARGETS = {"geomean_time_ratio": 1.0, "geomean_sass_ratio_no_mma": 1.1}


# ------------------------------------------------------------------------------ kernels

@dataclass
class Kernel:
    """One TileIR bytecode file to compile."""

    name: str
    path: str
    origin: str  # "corpus" or "generated"


def find_kernels(corpora: list[str], generated: bool, filters: list[str], tmp: str) -> tuple[list[Kernel], list[str]]:
    """The kernels to measure, and the notes about generated kernels that could not be exported.

    Corpus kernels come first; a generated kernel named like a corpus kernel is the same kernel
    (the corpus was exported from the same cuTile code) and is skipped. ``filters`` keep kernels whose name contains one of them.
    """
    def wanted(name: str) -> bool:
        return not filters or any(f in name for f in filters)

    out = [Kernel(os.path.basename(p)[: -len(".tileirbc")], p, "corpus")
           for d in corpora for p in sorted(glob.glob(os.path.join(d, "*.tileirbc")))]
    out = [k for k in out if wanted(k.name)]
    notes: list[str] = []
    if generated:
        sys.path.insert(0, GENERATED_MODULE_DIR)
        try:
            import cutile_kernels
        except ImportError as e:
            notes.append(f"generated kernels skipped: {e}")
            return out, notes
        seen = {k.name for k in out}
        os.makedirs(os.path.join(tmp, "generated"), exist_ok=True)
        for name in sorted(cutile_kernels.KERNELS):
            if name in seen or not wanted(name):
                continue
            path = os.path.join(tmp, "generated", f"{name}.tileirbc")
            try:
                cutile_kernels.export(name, path)
            except Exception as e:  # a cuTile export failure is a note, not a crash of the harness
                notes.append(f"{name}: cuTile export failed: {type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
                continue
            out.append(Kernel(name, path, "generated"))
    return out, notes


# ------------------------------------------------------------------------ measurement

@dataclass
class Run:
    """What the OS accounted for one compiler process."""

    wall_s: float
    cpu_s: float
    peak_rss_kib: int
    returncode: int
    stderr: str


# A user's Python caches compiled byte code: the warm-up run writes it. (Some shells set
# PYTHONDONTWRITEBYTECODE, which would recompile every module without a cache entry on every run.)
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_measured(cmd: list[str], timeout: float) -> Run:
    """Run ``cmd`` once; wall time, CPU time and peak RSS from the OS accounting of the child."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=CHILD_ENV)
        killer = threading.Timer(timeout, proc.kill)
        killer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    if proc.returncode == -9 and wall >= timeout:
        stderr += f"\nerror: timed out after {timeout:g} s"
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, proc.returncode, stderr)


_TILEIRAS_LOC = re.compile(r'^#cuda_tile\.di_loc<loc\("([^"]*)":(\d+):(\d+)\).*?>>: (error|warning):')


def first_error(run: Run) -> str:
    """The first error line of a failed run (warnings skipped), or how it ended."""
    lines = [ln.strip() for ln in run.stderr.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.lower().startswith("warning")]
    line = next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else "")
    # tileiras prefixes its diagnostics with the whole debug-info attribute; keep file:line:col
    line = _TILEIRAS_LOC.sub(r"\1:\2:\3: \4:", line)
    if run.returncode < 0 and "timed out" not in line:
        line = (line + "; " if line else "") + f"killed by signal {-run.returncode}"
    return line or f"exit status {run.returncode}, no message"


@dataclass
class Side:
    """One compiler on one kernel and SM: its command line and the runs recorded so far."""

    compiler: str
    cmd: list[str]
    output: str
    timing_json: str | None = None  # tilecore only
    runs: list[Run] = field(default_factory=list)
    stage_runs: list[dict] = field(default_factory=list)
    error: str | None = None

    def run(self, timeout: float, record: bool) -> None:
        if self.error:
            return
        if self.timing_json and os.path.exists(self.timing_json):
            os.remove(self.timing_json)
        r = run_measured(self.cmd, timeout)
        if r.returncode != 0:
            self.error = first_error(r)
        elif record:
            self.runs.append(r)
            if self.timing_json and os.path.exists(self.timing_json):
                with open(self.timing_json) as fh:
                    self.stage_runs.append(json.load(fh))

    def summary(self) -> dict:
        if self.error:
            return {"ok": False, "error": self.error}
        walls = [r.wall_s for r in self.runs]
        out = {"ok": True, "runs": len(walls), "wall_s": [round(w, 4) for w in walls],
               "median_s": statistics.median(walls), "min_s": min(walls),
               "cpu_median_s": statistics.median(r.cpu_s for r in self.runs),
               "peak_rss_kib": max(r.peak_rss_kib for r in self.runs),
               "cubin_bytes": os.path.getsize(self.output), "sass": sass_stats(self.output)}
        if self.stage_runs:
            out.update(stage_breakdown(self.stage_runs, out["median_s"]))
        return out


def stage_breakdown(stage_runs: list[dict], wall_median: float) -> dict:
    """Median seconds per tilecore stage over the runs, the start-up outside them, the slowest stage."""
    names = [s["stage"] for s in stage_runs[0]["stages"]]
    per = {n: statistics.median(next(s["seconds"] for s in r["stages"] if s["stage"] == n) for r in stage_runs)
           for n in names}
    in_process = statistics.median(r["total_seconds"] for r in stage_runs)
    slowest = max(per, key=per.get)
    return {"stages": {n: round(v, 5) for n, v in per.items()},
            "in_process_s": round(in_process, 5),
            # interpreter start, imports, plugin loading, writing the cubin
            "startup_s": round(max(wall_median - in_process, 0.0), 5),
            "slowest_stage": slowest, "slowest_stage_s": round(per[slowest], 5)}


def compare_one(k: Kernel, sm: str, n: int, tmp: str, tilecore: list[str], tileiras: str, timeout: float) -> dict:
    """Measure both compilers on kernel ``k`` for ``sm``; one result row (see bench/README.md)."""
    tag = os.path.join(tmp, f"{k.origin}.{k.name}.{sm}")
    ti_gpu = TILEIRAS_GPU.get(sm, sm.rstrip("af"))
    tc = Side("tilecore", [*tilecore, "compile", k.path, "--gpu-name", sm, "-O3", "-o", tag + ".tc.cubin",
                           "--timing-json", tag + ".timing.json"], tag + ".tc.cubin", tag + ".timing.json")
    ti = Side("tileiras", [tileiras, f"--gpu-name={ti_gpu}", "--opt-level=3", f"--output-file={tag}.ti.cubin",
                           k.path], tag + ".ti.cubin")
    for side in (tc, ti):
        side.run(timeout, record=False)  # warm-up (file cache, and a failure shows here once)
    for _ in range(n):  # alternate, so that both see the same load of the shared machine
        tc.run(timeout, record=True)
        ti.run(timeout, record=True)
    row = {"kernel": k.name, "origin": k.origin, "sm": sm, "tileiras_gpu": ti_gpu,
           "path": k.path if k.origin == "generated" else os.path.relpath(k.path, ROOT),
           "tilecore": tc.summary(), "tileiras": ti.summary()}
    a, b = row["tilecore"], row["tileiras"]
    if a["ok"] and b["ok"]:
        row["time_ratio"] = a["median_s"] / b["median_s"]
        row["time_ratio_min"] = a["min_s"] / b["min_s"]
        row["cpu_ratio"] = a["cpu_median_s"] / b["cpu_median_s"] if b["cpu_median_s"] else None
        ia, ib = a["sass"].get("instructions"), b["sass"].get("instructions")
        row["sass_ratio"] = ia / ib if ia and ib else None
        row["uses_mma"] = bool(a["sass"].get("uses_mma") or b["sass"].get("uses_mma"))
    return row


# ---------------------------------------------------------------------------- summary

def geomean(xs) -> float | None:
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize(results: list[dict], notes: list[str]) -> dict:
    """Geometric means over the pairs both compile, per SM too, and every failure."""
    def means(rows):
        return {"both_compile": len(rows),
                "geomean_time_ratio": geomean(r["time_ratio"] for r in rows),
                "geomean_time_ratio_min": geomean(r["time_ratio_min"] for r in rows),
                "geomean_cpu_ratio": geomean(r["cpu_ratio"] for r in rows),
                "geomean_sass_ratio": geomean(r["sass_ratio"] for r in rows),
                "geomean_sass_ratio_no_mma": geomean(r["sass_ratio"] for r in rows if not r["uses_mma"])}

    both = [r for r in results if "time_ratio" in r]
    out = {"pairs": len(results), **means(both)}
    out["per_sm"] = {sm: means([r for r in both if r["sm"] == sm]) for sm in dict.fromkeys(r["sm"] for r in results)}
    out["tilecore_failures"] = [{"kernel": r["kernel"], "sm": r["sm"], "error": r["tilecore"]["error"]}
                                for r in results if not r["tilecore"]["ok"]]
    out["tileiras_failures"] = [{"kernel": r["kernel"], "sm": r["sm"], "error": r["tileiras"]["error"]}
                                for r in results if not r["tileiras"]["ok"]]
    out["notes"] = notes
    out["targets"] = TARGETS
    return out


# ----------------------------------------------------------------------------- output

def table(headers: list[str], rows: list[list], markdown: bool) -> str:
    """Rows as an aligned text table, or as a GitHub markdown table."""
    cells = [[str(c) for c in r] for r in rows]
    if markdown:
        lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in cells])
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:<{w}}}" if i < 2 else f"{{:>{w}}}" for i, w in enumerate(widths))
    lines = [fmt.format(*headers), "-" * (sum(widths) + 2 * (len(widths) - 1))]
    return "\n".join(lines + [fmt.format(*r).rstrip() for r in cells])


def _pair(a: dict, b: dict, get) -> str:
    def one(s):
        v = get(s) if s["ok"] else None
        return "-" if v is None else str(v)
    return f"{one(a)}/{one(b)}"


def _f(x, spec=".2f") -> str:
    return "-" if x is None else format(x, spec)


def _share(seconds: float, side: dict) -> str:
    return f"{100 * seconds / side['median_s']:.0f}%"


def main_table(results: list[dict], markdown: bool) -> str:
    headers = ["kernel", "sm", "tilecore s", "tileiras s", "time ratio", "min ratio", "SASS tc", "SASS ti",
               "SASS ratio", "regs tc/ti", "smem tc/ti", "MiB tc/ti", "tc start-up", "slowest tc stage"]
    rows = []
    for r in results:
        a, b = r["tilecore"], r["tileiras"]
        slow = f"{a['slowest_stage']} {_share(a['slowest_stage_s'], a)}" if a.get("slowest_stage") else ""
        startup = _share(a["startup_s"], a) if "startup_s" in a else ""
        rows.append([r["kernel"], r["sm"],
                     _f(a.get("median_s"), ".3f") if a["ok"] else "FAIL",
                     _f(b.get("median_s"), ".3f") if b["ok"] else "FAIL",
                     _f(r.get("time_ratio")), _f(r.get("time_ratio_min")),
                     a["sass"].get("instructions", "-") if a["ok"] else "-",
                     b["sass"].get("instructions", "-") if b["ok"] else "-",
                     _f(r.get("sass_ratio")),
                     _pair(a, b, lambda s: s["sass"].get("registers")),
                     _pair(a, b, lambda s: s["sass"].get("shared_bytes")),
                     _pair(a, b, lambda s: s["peak_rss_kib"] // 1024), startup, slow])
    return table(headers, rows, markdown)


def class_table(results: list[dict], markdown: bool) -> str:
    """tilecore/tileiras counts of every instruction class that is non-zero somewhere."""
    ok = [r for r in results if r["tilecore"]["ok"] or r["tileiras"]["ok"]]

    def count(s, c):
        return s["sass"].get("classes", {}).get(c) if s["ok"] else None

    used = [c for c in class_names() if any(count(r[s], c) for r in ok for s in ("tilecore", "tileiras"))]
    if not used:
        return ""
    rows = [[r["kernel"], r["sm"], *(_pair(r["tilecore"], r["tileiras"], lambda s, c=c: count(s, c)) for c in used)]
            for r in ok]
    return table(["kernel", "sm", *used], rows, markdown)


def report(results: list[dict], summary: dict, markdown: bool) -> str:
    """Main table, instruction-class table and summary, as printed on stdout."""
    parts = [main_table(results, markdown), class_table(results, markdown), summary_text(summary)]
    return "\n\n".join(p for p in parts if p)


def summary_text(s: dict) -> str:
    def target(key):
        v, t = s[key], TARGETS[key]
        return f"{v:.3f} (target <= {t}: {'met' if v <= t else 'not met'})" if v else "-"

    lines = [f"both compile: {s['both_compile']} of {s['pairs']} kernel x SM pairs",
             f"geomean time ratio tilecore/tileiras (median wall): {target('geomean_time_ratio')}",
             f"geomean time ratio tilecore/tileiras (min wall): {_f(s['geomean_time_ratio_min'], '.3f')}",
             f"geomean CPU-time ratio tilecore/tileiras: {_f(s['geomean_cpu_ratio'], '.3f')}",
             f"geomean SASS instruction ratio tilecore/tileiras: {_f(s['geomean_sass_ratio'], '.3f')}",
             f"geomean SASS instruction ratio, kernels without MMA: {target('geomean_sass_ratio_no_mma')}"]
    for sm, m in s["per_sm"].items():
        lines.append(f"  {sm}: {m['both_compile']} pairs both compile, time ratio {_f(m['geomean_time_ratio'], '.3f')}, "
                     f"SASS ratio {_f(m['geomean_sass_ratio'], '.3f')}")
    lines += [f"tilecore cannot compile: {f['kernel']} @ {f['sm']}: {f['error']}" for f in s["tilecore_failures"]]
    lines += [f"tileiras cannot compile: {f['kernel']} @ {f['sm']}: {f['error']}" for f in s["tileiras_failures"]]
    lines += [f"note: {n}" for n in s["notes"]]
    return "\n".join(lines)


# ------------------------------------------------------------------------------- main

def git_sha() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        return out.stdout.strip() or "nogit"
    except OSError:
        return "nogit"


def tool_version(cmd: list[str]) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True)
    lines = [ln.strip() for ln in (out.stdout + out.stderr).splitlines() if ln.strip()]
    return next((ln for ln in lines if "release" in ln or "version" in ln.lower()), lines[0] if lines else "?")


def tilecore_command() -> list[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "tilecore")
    return [exe] if os.path.exists(exe) else [sys.executable, "-m", "tilecore"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="tilecore vs tileiras on the same TileIR bytecode",
                                 epilog="Whole-process times on this machine: compare ratios, not absolutes.")
    ap.add_argument("--corpus", action="append", metavar="DIR", help=f"folder of *.tileirbc, repeatable "
                    f"(default {os.path.relpath(DEFAULT_CORPUS)})")
    ap.add_argument("--no-generated", action="store_true", help="skip the cuTile kernels of cutile_kernels.py")
    ap.add_argument("--sm", default=DEFAULT_SMS, help=f"comma-separated tilecore targets (default {DEFAULT_SMS})")
    ap.add_argument("-n", type=int, default=5, help="measured runs per compiler after one warm-up (default 5)")
    ap.add_argument("--kernel", action="append", default=[], metavar="NAME",
                    help="only kernels whose name contains NAME (repeatable)")
    ap.add_argument("--out", help="JSON path (default bench/results/<date>-<git sha>.json)")
    ap.add_argument("--markdown", action="store_true", help="print the tables as GitHub markdown")
    ap.add_argument("--timeout", type=float, default=600, help="seconds before one compile is killed (default 600)")
    ap.add_argument("--show", metavar="JSON", help="print the tables of a stored result instead of measuring")
    a = ap.parse_args(argv)
    if a.show:
        try:
            with open(a.show) as fh:
                data = json.load(fh)
            text = report(data["results"], data["summary"], a.markdown)
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"error: {a.show}: not a compare.py result ({type(e).__name__}: {e})", file=sys.stderr)
            return 1
        print(text)
        m = data.get("meta", {})
        print(f"(measured {m.get('date')} at {m.get('git')}, N={m.get('n')}, {m.get('machine')})")
        return 0
    if a.n < 1:
        ap.error("-n must be at least 1")
    corpora = a.corpus or [DEFAULT_CORPUS]
    for d in corpora:
        if not os.path.isdir(d):
            print(f"error: {d}: corpus folder not found", file=sys.stderr)
            return 1
    tileiras = find_nvidia_tool("tileiras")
    if not tileiras:
        print("error: tileiras not found (pip install nvidia-cuda-tileiras)", file=sys.stderr)
        return 1
    tilecore = tilecore_command()
    sha = git_sha()  # the commit measured (others may commit during a long run)
    sms = [s.strip() for s in a.sm.split(",") if s.strip()]
    results = []
    with tempfile.TemporaryDirectory(prefix="tilecore-compare-") as tmp:
        ks, notes = find_kernels(corpora, not a.no_generated, a.kernel, tmp)
        if not ks:
            print(f"error: no kernel (*.tileirbc) in {', '.join(corpora)} matches", file=sys.stderr)
            return 1
        print(f"{len(ks)} kernels x {len(sms)} SMs, {a.n} runs each after a warm-up", file=sys.stderr)
        for k in ks:
            for sm in sms:
                results.append(compare_one(k, sm, a.n, tmp, tilecore, tileiras, a.timeout))
                r = results[-1]
                print(f"  {k.name} @ {sm}: tilecore {'ok' if r['tilecore']['ok'] else 'FAIL'}, "
                      f"tileiras {'ok' if r['tileiras']['ok'] else 'FAIL'}", file=sys.stderr, flush=True)
    summary = summarize(results, notes)
    print(report(results, summary, a.markdown))
    cuobjdump = find_nvidia_tool("cuobjdump")
    now = datetime.datetime.now(datetime.timezone.utc)
    out = a.out or os.path.join(HERE, "results", f"{now.date().isoformat()}-{sha}.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    meta = {"date": now.isoformat(timespec="seconds"), "git": sha,
            "n": a.n, "sms": sms, "corpora": corpora, "generated": not a.no_generated, "kernel_filter": a.kernel,
            "machine": f"{os.cpu_count()} cores, {sys.platform}, no GPU needed", "python": sys.version.split()[0],
            "tilecore": tool_version([*tilecore, "--version"]), "tileiras": tool_version([tileiras, "--version"]),
            "cuobjdump": tool_version([cuobjdump, "--version"]) if cuobjdump else None}
    with open(out + ".part", "w") as fh:
        json.dump({"meta": meta, "summary": summary, "results": results}, fh, indent=1)
    os.replace(out + ".part", out)
    print(f"wrote {os.path.relpath(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
