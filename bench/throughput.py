"""Compile throughput against NVIDIA's tileiras (issue 18): cold compiles, batch compiles, cache hits.

Usage:
    python bench/throughput.py [--corpus DIR ...] [--sm sm_80,sm_90a,sm_100a] [-n 3] [-j 2]
                               [--parts cold,batch,hit] [--python-m] [--tree DIR] [--out PATH] [--timeout S]

In one run, on the visible corpus (default ../shared/corpus/visible) x the SMs:

(a) cold: per (kernel, SM), both compilers as whole processes, alternately, N runs each after one
    warm-up, median wall time; tilecore with ``--no-cache`` and ``TILECORE_CACHE_DIR`` set to a
    fresh temporary folder (nothing is read from or written to a cache); the geometric mean of the
    ratio tilecore / tileiras. Target: <= 1.0.
(b) batch: the whole list of (kernel, SM) pairs, N times alternately:
        tilecore compile K1 ... Kn -j J --gpu-name SM1,SM2,... -o DIR --no-cache
    against tileiras run as J parallel processes over the same pairs (one process per pair).
    Reported: both wall times and tileiras / tilecore (how many times faster tilecore is; target >= 2),
    and tilecore's batch against the sum of its own cold medians. Target: >= 2x faster.
(c) cache hits, in a fresh cache folder filled by one batch compile: the wall time of a
    ``tilecore compile K --gpu-name SM -o OUT`` process answered by the cache (median over the pairs x N;
    target < 60 ms), and per job in a warm process through ``tilecore.compile_many`` over every pair
    (after one warm-up call; target < 1 ms per job).

(d) profile (``--parts profile``): a warm batch worker's jobs phase by phase (stages, LLVM + NVPTX, assembler).

The tileiras spelling of each SM comes from bench/compare.py (``TILEIRAS_GPU``); its process runner,
error extraction, kernel discovery and geometric mean are reused from there. ``--python-m`` runs
``python -m tilecore`` instead of the ``tilecore`` console script. ``--tree DIR`` (repeatable: BEFORE, AFTER, run in turn) runs the tilecore
checkout at DIR (``DIR`` and ``DIR/plugins/*/src`` first on ``PYTHONPATH``, as bench/coldstart.py
does; e.g. ``git archive <commit> | tar -x -C DIR``): a committed state, whatever the working tree
holds meanwhile. Output: the figures with their
targets on stdout, JSON in bench/results/throughput-<date>-<git sha>.json (or --out), with the
machine's load average before and after (this 2-core machine is shared: compare ratios from one run).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import compare  # noqa: E402  (bench/compare.py: runner, TILEIRAS_GPU, kernels, geomean)

TARGETS = {"cold_geomean_ratio": 1.0, "batch_speedup": 2.0, "hit_process_ms": 60.0, "hit_per_job_ms": 1.0}


def ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1000:.1f} ms"


def verdict(ok: bool) -> str:
    return "met" if ok else "not met"


class Bench:
    """The commands and the environment of one throughput run."""

    def __init__(self, tilecore: list[str], tileiras: str, tmp: str, timeout: float, trees: dict | None = None):
        self.tilecore = tilecore
        self.tileiras = tileiras
        self.tmp = tmp
        self.timeout = timeout
        self.nocache_dir = tempfile.mkdtemp(prefix="nocache-", dir=tmp)  # must stay empty
        # no cache for (a) and (b): --no-cache, and a fresh folder in case a path ignores the flag
        self.cold_env = {"TILECORE_CACHE_DIR": self.nocache_dir}
        # label -> environment of the tilecore runs of that checkout ({"tilecore": {}}: the installed one);
        # with several (--tree A --tree B) the cold and batch parts run each in turn, and the figures of the
        # last one are the run's ("tilecore"), the others' under "trees"
        self.trees = trees or {"tilecore": {}}
        self.last = list(self.trees)[-1]

    def run(self, cmd: list[str], env: dict | None = None) -> compare.Run:
        saved = dict(compare.CHILD_ENV)
        compare.CHILD_ENV.update(env or {})
        try:
            return compare.run_measured(cmd, self.timeout)
        finally:
            compare.CHILD_ENV.clear()
            compare.CHILD_ENV.update(saved)

    def tc_compile(self, kernel: str, sm: str, out: str) -> list[str]:
        return [*self.tilecore, "compile", kernel, "--gpu-name", sm, "-O3", "-o", out]

    def ti_compile(self, kernel: str, sm: str, out: str) -> list[str]:
        return [self.tileiras, f"--gpu-name={compare.TILEIRAS_GPU.get(sm, sm.rstrip('af'))}", "--opt-level=3",
                f"--output-file={out}", kernel]


# ----------------------------------------------------------------------------------- (a) cold

def cold(b: Bench, kernels, sms: list[str], n: int) -> dict:
    rows = []
    for k in kernels:
        for sm in sms:
            tag = os.path.join(b.tmp, f"cold.{k.name}.{sm}")
            sides = {label: (b.tc_compile(k.path, sm, tag + ".tc.cubin") + ["--no-cache"], {**b.cold_env, **env})
                     for label, env in b.trees.items()}
            sides["tileiras"] = (b.ti_compile(k.path, sm, tag + ".ti.cubin"), None)
            times: dict[str, list[float]] = {s: [] for s in sides}
            errors: dict[str, str] = {}
            for rep in range(n + 1):  # the first run of each is a warm-up
                for side, (cmd, env) in sides.items():
                    if side in errors:
                        continue
                    r = b.run(cmd, env)
                    if r.returncode != 0:
                        errors[side] = compare.first_error(r)
                    elif rep:
                        times[side].append(r.wall_s)
            row = {"kernel": k.name, "sm": sm}
            for side in sides:
                row[side] = ({"ok": False, "error": errors[side]} if side in errors else
                             {"ok": True, "median_s": statistics.median(times[side]), "min_s": min(times[side]),
                              "wall_s": [round(t, 4) for t in times[side]]})
            if len(b.trees) > 1:  # the last tree's figures are the row's "tilecore"; every tree's under "trees"
                row["trees"] = {label: row.pop(label) for label in b.trees}
                row["tilecore"] = row["trees"][b.last]
                row["ratio_by_tree"] = {label: r["median_s"] / row["tileiras"]["median_s"]
                                        for label, r in row["trees"].items() if r["ok"] and row["tileiras"]["ok"]}
            if row["tilecore"]["ok"] and row["tileiras"]["ok"]:
                row["ratio"] = row["tilecore"]["median_s"] / row["tileiras"]["median_s"]
            rows.append(row)
            print(f"  cold {k.name} @ {sm}: tilecore {ms(row['tilecore'].get('median_s'))}, "
                  f"tileiras {ms(row['tileiras'].get('median_s'))}", file=sys.stderr, flush=True)
    both = [r for r in rows if "ratio" in r]
    per_sm = {sm: compare.geomean(r["ratio"] for r in both if r["sm"] == sm) for sm in sms}
    extra = {}
    if len(b.trees) > 1:
        extra["geomean_ratio_by_tree"] = {label: compare.geomean(r["ratio_by_tree"][label] for r in rows
                                                                 if label in r.get("ratio_by_tree", {}))
                                          for label in b.trees}
    return {"rows": rows, "pairs": len(rows), "both_compile": len(both), **extra,
            "geomean_ratio": compare.geomean(r["ratio"] for r in both), "geomean_ratio_per_sm": per_sm,
            "tilecore_median_sum_s": sum(r["tilecore"]["median_s"] for r in rows if r["tilecore"]["ok"]),
            "tileiras_median_sum_s": sum(r["tileiras"]["median_s"] for r in rows if r["tileiras"]["ok"])}


# ---------------------------------------------------------------------------------- (b) batch

def tileiras_parallel(b: Bench, pairs, jobs: int, out_dir: str) -> tuple[float, list[str], float]:
    """Wall time of tileiras over every (kernel, SM) pair, ``jobs`` processes at a time; the failures; the
    processes' CPU time (user + sys) summed."""
    def one(pair):
        k, sm = pair
        r = b.run(b.ti_compile(k.path, sm, os.path.join(out_dir, f"{k.name}.{sm}.cubin")))
        return (None if r.returncode == 0 else f"{k.name} @ {sm}: {compare.first_error(r)}"), r.cpu_s

    t0 = time.perf_counter()
    with ThreadPoolExecutor(jobs) as pool:
        runs = list(pool.map(one, pairs))
    return time.perf_counter() - t0, [f for f, _ in runs if f], sum(c for _, c in runs)


def batch_output(folder: str, pairs) -> str:
    """``-o`` of a batch compile: the folder, or a file in it when there is one pair (no batch then)."""
    if len(pairs) == 1:
        k, sm = pairs[0]
        return os.path.join(folder, f"{k.name}.{sm}.cubin")
    return folder


def batch(b: Bench, kernels, sms: list[str], n: int, jobs: int, cold_sum: float | None) -> dict:
    pairs = [(k, sm) for k in kernels for sm in sms]
    tc_dir, ti_dir = (tempfile.mkdtemp(prefix=p, dir=b.tmp) for p in ("batch-tc-", "batch-ti-"))
    tc_cmd = [*b.tilecore, "compile", *[k.path for k in kernels], "-j", str(jobs), "--gpu-name", ",".join(sms),
              "-O3", "-o", batch_output(tc_dir, pairs), "--no-cache"]
    times: dict = {label: [] for label in b.trees}
    cpus: dict = {label: [] for label in b.trees}  # user + sys of the batch process and what it waited for
    errors: dict = {}
    ti_times, ti_cpus, ti_fails = [], [], []
    for rep in range(n + 1):  # the first round is a warm-up
        line = []
        for label, env in b.trees.items():  # each tree in turn, then tileiras
            r = b.run(tc_cmd, {**b.cold_env, **env})
            if r.returncode != 0:
                errors[label] = compare.first_error(r)
            elif rep:
                times[label].append(r.wall_s)
                cpus[label].append(r.cpu_s)
            line.append(f"{label} {ms(r.wall_s)}")
        wall, ti_fails, ti_cpu = tileiras_parallel(b, pairs, jobs, ti_dir)
        if rep:
            ti_times.append(wall)
            ti_cpus.append(ti_cpu)
        print(f"  batch round {rep}{' (warm-up)' if not rep else ''}: {', '.join(line)}, tileiras {ms(wall)}",
              file=sys.stderr, flush=True)
    outputs = len([f for f in os.listdir(tc_dir) if f.endswith(".cubin")])
    per_tree = {}
    for label in b.trees:
        tc_times = times[label]
        o = {"tilecore_error": errors.get(label), "tilecore_wall_s": [round(t, 3) for t in tc_times],
             "tilecore_cpu_s": [round(t, 3) for t in cpus[label]]}
        if tc_times and ti_times:
            tc, ti = statistics.median(tc_times), statistics.median(ti_times)
            o.update({"tilecore_median_s": tc, "speedup_vs_tileiras": ti / tc, "tilecore_per_pair_s": tc / len(pairs),
                      "tilecore_cpu_median_s": statistics.median(cpus[label]),
                      "cpu_ratio_tileiras_to_tilecore": statistics.median(ti_cpus) / statistics.median(cpus[label])})
        per_tree[label] = o
    out = {"pairs": len(pairs), "jobs": jobs, "command": " ".join(os.path.basename(c) if i == 0 else c
                                                                  for i, c in enumerate(tc_cmd)),
           "tilecore_outputs": outputs, "tileiras_failures": ti_fails, **per_tree[b.last],
           "tileiras_wall_s": [round(t, 3) for t in ti_times], "tileiras_cpu_s": [round(t, 3) for t in ti_cpus]}
    if len(b.trees) > 1:
        out["trees"] = per_tree
    if "tilecore_median_s" in out:
        ti = statistics.median(ti_times)
        out.update({"tileiras_median_s": ti, "tileiras_per_pair_s": ti / len(pairs),
                    "tileiras_cpu_median_s": statistics.median(ti_cpus)})
        if cold_sum:
            out["speedup_vs_tilecore_cold_sum"] = cold_sum / out["tilecore_median_s"]
    return out


# ------------------------------------------------------------------------------------ (c) hits

def hits(b: Bench, kernels, sms: list[str], n: int, jobs: int) -> dict:
    cache = tempfile.mkdtemp(prefix="cache-", dir=b.tmp)
    env = {"TILECORE_CACHE_DIR": cache}
    fill_dir = tempfile.mkdtemp(prefix="fill-", dir=b.tmp)
    fill = b.run([*b.tilecore, "compile", *[k.path for k in kernels], "-j", str(jobs), "--gpu-name", ",".join(sms),
                  "-O3", "-o", batch_output(fill_dir, [(k, sm) for k in kernels for sm in sms])], env)
    out: dict = {"cache_dir_entries": sum(len(fs) for _, _, fs in os.walk(cache))}
    if fill.returncode != 0:
        out["fill_error"] = compare.first_error(fill)
    times = []
    for k in kernels:
        for sm in sms:
            cmd = b.tc_compile(k.path, sm, os.path.join(b.tmp, f"hit.{k.name}.{sm}.cubin"))
            for _ in range(n):
                r = b.run(cmd, env)
                if r.returncode == 0:
                    times.append(r.wall_s)
    if times:
        out.update({"process_median_s": statistics.median(times), "process_min_s": min(times),
                    "process_runs": len(times)})
    # per job in a warm process: compile_many over every pair, twice (the first call warms imports)
    code = ("import json, sys, time\nimport tilecore\n"
            "jobs = [tilecore.CompileJob(p, sm) for p, sm in json.loads(sys.argv[1])]\n"
            "rounds = []\n"
            "for _ in range(int(sys.argv[2]) + 1):\n"
            "    t = time.perf_counter(); res = tilecore.compile_many(jobs, cache_dir=sys.argv[3])\n"
            "    rounds.append((time.perf_counter() - t, sum(r.cached for r in res), sum(r.ok for r in res)))\n"
            "print(json.dumps(rounds))\n")
    pairs = [[k.path, sm] for k in kernels for sm in sms]
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(pairs), str(max(n, 3)), cache],
                          capture_output=True, text=True, env={**compare.CHILD_ENV, **env}, timeout=b.timeout)
    if proc.returncode == 0:
        rounds = json.loads(proc.stdout.strip().splitlines()[-1])
        warm = [r for r in rounds[1:]]
        out.update({"compile_many_rounds": rounds, "compile_many_jobs": len(pairs),
                    "compile_many_cached": min(r[1] for r in warm),
                    "per_job_median_s": statistics.median(r[0] for r in warm) / len(pairs),
                    "first_call_s": rounds[0][0]})
    else:
        out["compile_many_error"] = (proc.stderr.strip().splitlines() or ["?"])[-1]
    return out


# ------------------------------------------------------------------------------- (d) profile

# Run in a child (the tree's environment): one warm batch worker (tilecore.batch.init_worker) compiles every pair
# n + 1 times as compile_many's own pool does (run_job, back end in-process); per job the wall time, each stage's
# time (its StageRecord), and inside serialize the LLVM translation + NVPTX (gpu-module-to-binary) and the
# assembler; the first round is a warm-up. Prints one JSON line.
PROFILE_CHILD = r"""
import json, sys, time
import tilecore.batch as B
import tilecore.assembler as A
import tilecore.compiler as C
import tilecore.serialize as S

pairs, n = json.loads(sys.argv[1]), int(sys.argv[2])
t0 = time.perf_counter()
B.init_worker(())
init_s = time.perf_counter() - t0
phase = {}

def timed(mod, name, key):
    fn = getattr(mod, name)
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            phase[key] = phase.get(key, 0.0) + time.perf_counter() - t
    setattr(mod, name, wrapper)

timed(A, "_ptxas_assemble", "ptxas")
timed(A, "_nvjitlink_assemble", "nvjitlink")
timed(S, "run_native_pipeline", "llvm")  # serialize's only native pipeline: gpu-module-to-binary
timed(C, "read_input", "read")
records = []
compile_module = C.compile_module
def keep_records(*a, **k):
    res = compile_module(*a, **k)
    records.append(res.records)
    return res
C.compile_module = keep_records
rows = []
for rnd in range(n + 1):
    for path, sm in pairs:
        payload = {"data": open(path, "rb").read(), "path": path, "gpu_name": sm, "emit": "cubin", "opt_level": 3,
                   "debug": False, "lineinfo": False, "options": {}, "load": (), "isolate": False}
        phase.clear()
        records.clear()
        t = time.perf_counter()
        out = B.run_job(payload)
        wall = time.perf_counter() - t
        row = {"path": path, "sm": sm, "round": rnd, "wall_s": wall, "error": out.get("error"), **phase,
               "stages": {r.name: r.seconds for r in (records[0] if records else [])}}
        if rnd == 0 and not rows:
            row["first_job"] = True
        rows.append(row)
print(json.dumps({"init_s": init_s, "rows": rows}))
"""


def profile(b: Bench, kernels, sms: list[str], n: int) -> dict:
    """Phases of a warm batch worker's jobs (``PROFILE_CHILD``): median per (kernel, SM) over n rounds."""
    pairs = [[k.path, sm] for k in kernels for sm in sms]
    saved = dict(compare.CHILD_ENV)
    compare.CHILD_ENV.update(b.trees[b.last])
    try:
        proc = subprocess.run([sys.executable, "-c", PROFILE_CHILD, json.dumps(pairs), str(n)], capture_output=True,
                              text=True, env={**compare.CHILD_ENV, **b.cold_env}, timeout=b.timeout)
    finally:
        compare.CHILD_ENV.clear()
        compare.CHILD_ENV.update(saved)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    name = {k.path: k.name for k in kernels}
    out_rows, totals = [], {}
    for path, sm in pairs:
        runs = [r for r in data["rows"] if r["path"] == path and r["sm"] == sm and r["round"] > 0]
        if not runs or any(r["error"] for r in runs):
            out_rows.append({"kernel": name[path], "sm": sm, "error": next((r["error"] for r in runs if r["error"]), "?")})
            continue

        def med(get, runs=runs):
            return statistics.median(get(r) for r in runs)

        stages = {st: med(lambda r, st=st: r["stages"].get(st, 0.0)) for st in runs[0]["stages"]}
        row = {"kernel": name[path], "sm": sm, "wall_s": med(lambda r: r["wall_s"]),
               "read_s": med(lambda r: r.get("read", 0.0)),
               "stages_s": sum(v for st, v in stages.items() if st != "serialize"),
               "llvm_s": med(lambda r: r.get("llvm", 0.0)),
               "assembler_s": med(lambda r: r.get("ptxas", 0.0) + r.get("nvjitlink", 0.0)),
               "stage_s": stages}
        row["other_s"] = row["wall_s"] - row["read_s"] - row["stages_s"] - stages.get("serialize", 0.0)
        out_rows.append(row)
        for key in ("wall_s", "read_s", "stages_s", "llvm_s", "assembler_s", "other_s"):
            totals[key] = totals.get(key, 0.0) + row[key]
        for st, v in stages.items():
            totals[f"stage:{st}"] = totals.get(f"stage:{st}", 0.0) + v
    first = next((r for r in data["rows"] if r.get("first_job")), None)
    return {"rows": out_rows, "totals_s": totals, "worker_init_s": data["init_s"],
            "first_job_s": first["wall_s"] if first else None, "rounds": n}


# ----------------------------------------------------------------------------------- report

def report(res: dict) -> str:
    lines = []
    c = res.get("cold")
    if c:
        lines.append(compare.table(
            ["kernel", "sm", "tilecore", "tileiras", "ratio"],
            [[r["kernel"], r["sm"], ms(r["tilecore"].get("median_s")) if r["tilecore"]["ok"] else "FAIL",
              ms(r["tileiras"].get("median_s")) if r["tileiras"]["ok"] else "FAIL",
              f"{r['ratio']:.2f}" if "ratio" in r else "-"] for r in c["rows"]], False))
        for label, g in (c.get("geomean_ratio_by_tree") or {}).items():
            lines.append(f"    cold geomean tilecore / tileiras, {label}: {g:.3f}")
        g = c["geomean_ratio"]
        lines.append(f"(a) cold: geomean tilecore / tileiras over {c['both_compile']} of {c['pairs']} pairs: "
                     f"{g:.3f} (target <= {TARGETS['cold_geomean_ratio']}: "
                     f"{verdict(g is not None and g <= TARGETS['cold_geomean_ratio'])}); per SM "
                     + ", ".join(f"{sm} {v:.3f}" for sm, v in c["geomean_ratio_per_sm"].items() if v))
        for r in c["rows"]:
            for side in ("tilecore", "tileiras"):
                if not r[side]["ok"]:
                    lines.append(f"    {side} cannot compile {r['kernel']} @ {r['sm']}: {r[side]['error']}")
    bt = res.get("batch")
    if bt:
        if "speedup_vs_tileiras" in bt:
            s = bt["speedup_vs_tileiras"]
            lines.append(f"(b) batch, {bt['pairs']} pairs, {bt['jobs']} processes: tilecore {ms(bt['tilecore_median_s'])} "
                         f"({ms(bt['tilecore_per_pair_s'])} per pair), tileiras {ms(bt['tileiras_median_s'])} "
                         f"({ms(bt['tileiras_per_pair_s'])} per pair): tilecore {s:.2f}x as fast "
                         f"(target >= {TARGETS['batch_speedup']}x: {verdict(s >= TARGETS['batch_speedup'])})"
                         + (f"; {bt['speedup_vs_tilecore_cold_sum']:.2f}x its own cold compiles one by one"
                            if "speedup_vs_tilecore_cold_sum" in bt else ""))
        for label, t in (bt.get("trees") or {}).items():
            if "speedup_vs_tileiras" in t:
                lines.append(f"    batch {label}: {ms(t['tilecore_median_s'])}, {t['speedup_vs_tileiras']:.2f}x tileiras "
                             f"(rounds: {', '.join(f'{x * 1000:.0f}' for x in t['tilecore_wall_s'])} ms); CPU "
                             f"{t['tilecore_cpu_median_s']:.2f} s, tileiras' {t['cpu_ratio_tileiras_to_tilecore']:.2f}x")
            if t.get("tilecore_error"):
                lines.append(f"    tilecore batch ({label}) failed: {t['tilecore_error']}")
        if "tilecore_cpu_median_s" in bt:
            lines.append(f"    CPU time (user + sys, median): tilecore {bt['tilecore_cpu_median_s']:.2f} s, tileiras "
                         f"{bt['tileiras_cpu_median_s']:.2f} s ({bt['cpu_ratio_tileiras_to_tilecore']:.2f}x): less "
                         "sensitive to the shared machine's load than the wall times")
        if bt.get("tilecore_error") and not bt.get("trees"):
            lines.append(f"    tilecore batch failed: {bt['tilecore_error']}")
        lines += [f"    tileiras cannot compile {f}" for f in bt.get("tileiras_failures", [])]
    pr = res.get("profile")
    if pr:
        if "error" in pr:
            lines.append(f"(d) profile failed: {pr['error']}")
        else:
            lines.append(compare.table(
                ["kernel", "sm", "job", "stages", "LLVM + NVPTX", "assembler", "other"],
                [[r["kernel"], r["sm"], "FAIL", r["error"], "", "", ""] if "error" in r else
                 [r["kernel"], r["sm"], ms(r["wall_s"]), ms(r["stages_s"]), ms(r["llvm_s"]), ms(r["assembler_s"]),
                  ms(r["wall_s"] - r["stages_s"] - r["llvm_s"] - r["assembler_s"])] for r in pr["rows"]], False))
            t = pr["totals_s"]
            top = sorted(((k[6:], v) for k, v in t.items() if k.startswith("stage:") and k != "stage:serialize"),
                         key=lambda kv: -kv[1])[:5]
            lines.append(f"(d) warm worker, sum over the pairs (median of {pr['rounds']} rounds): jobs {ms(t['wall_s'])}: "
                         f"stages before serialize {ms(t['stages_s'])}, LLVM + NVPTX {ms(t['llvm_s'])}, assembler "
                         f"{ms(t['assembler_s'])}, rest {ms(t['wall_s'] - t['stages_s'] - t['llvm_s'] - t['assembler_s'])}"
                         f"; worker start-up {ms(pr['worker_init_s'])}, its first job {ms(pr['first_job_s'])}")
            lines.append("    slowest stages: " + ", ".join(f"{k} {ms(v)}" for k, v in top))
    h = res.get("hit")
    if h:
        if "process_median_s" in h:
            v = h["process_median_s"] * 1000
            lines.append(f"(c) cache hit, whole tilecore compile process: median {v:.1f} ms over {h['process_runs']} runs "
                         f"(target < {TARGETS['hit_process_ms']:.0f} ms: {verdict(v < TARGETS['hit_process_ms'])})")
        if "per_job_median_s" in h:
            v = h["per_job_median_s"] * 1000
            lines.append(f"    warm process, tilecore.compile_many: {v:.3f} ms per job ({h['compile_many_cached']} of "
                         f"{h['compile_many_jobs']} from the cache; target < {TARGETS['hit_per_job_ms']:.0f} ms: "
                         f"{verdict(v < TARGETS['hit_per_job_ms'])}; first call {ms(h['first_call_s'])})")
        for key in ("fill_error", "compile_many_error"):
            if h.get(key):
                lines.append(f"    {key.replace('_', ' ')}: {h[key]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="tilecore compile throughput against tileiras: cold, batch, cache hits",
                                 epilog="Whole-process times on a shared machine: compare ratios from one run.")
    ap.add_argument("--corpus", action="append", metavar="DIR",
                    help=f"folder of *.tileirbc, repeatable (default {os.path.relpath(compare.DEFAULT_CORPUS)})")
    ap.add_argument("--sm", default=compare.DEFAULT_SMS, help=f"comma-separated targets (default {compare.DEFAULT_SMS})")
    ap.add_argument("-n", type=int, default=3, help="measured runs / rounds per part after one warm-up (default 3)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="processes for the batch part, both sides (default 2)")
    ap.add_argument("--parts", default="cold,batch,hit",
                    help="which parts to run (default cold,batch,hit; also profile: a warm batch worker's phases per job)")
    ap.add_argument("--kernel", action="append", default=[], metavar="NAME", help="only kernels whose name contains NAME")
    ap.add_argument("--python-m", action="store_true", help="run 'python -m tilecore' instead of the console script")
    ap.add_argument("--tree", metavar="DIR", action="append",
                    help="run the tilecore checkout at DIR (first on PYTHONPATH); repeatable (--tree BEFORE --tree "
                         "AFTER): the cold and batch parts run each checkout in turn, the last one's figures are the "
                         "run's, the hit part runs the last one")
    ap.add_argument("--out", help="JSON path (default bench/results/throughput-<date>-<git sha>.json)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds before one command is killed (default 900)")
    a = ap.parse_args(argv)
    parts = [p.strip() for p in a.parts.split(",") if p.strip()]
    bad = [p for p in parts if p not in ("cold", "batch", "hit", "profile")]
    if bad or a.n < 1:
        ap.error(f"unknown part {bad[0]!r}" if bad else "-n must be at least 1")
    corpora = a.corpus or [compare.DEFAULT_CORPUS]
    for d in corpora:
        if not os.path.isdir(d):
            print(f"error: {d}: corpus folder not found", file=sys.stderr)
            return 1
    tileiras = compare.find_nvidia_tool("tileiras")
    if not tileiras:
        print("error: tileiras not found (pip install nvidia-cuda-tileiras)", file=sys.stderr)
        return 1
    tilecore = [sys.executable, "-m", "tilecore"] if a.python_m else compare.tilecore_command()
    trees = None
    if a.tree:
        from coldstart import tree_pythonpath

        for t in a.tree:
            if not os.path.isdir(os.path.join(t, "tilecore")):
                print(f"error: {t}: not a tilecore checkout (no tilecore/ folder)", file=sys.stderr)
                return 1
        a.tree = [os.path.abspath(t) for t in a.tree]
        if len(set(a.tree)) != len(a.tree):
            print("error: --tree: the same checkout twice", file=sys.stderr)
            return 1
        trees = {t: {"PYTHONPATH": tree_pythonpath(t, compare.CHILD_ENV)} for t in a.tree}
    sms = [s.strip() for s in a.sm.split(",") if s.strip()]
    sha = compare.git_sha()
    load_before = os.getloadavg()
    tmp = tempfile.mkdtemp(prefix="tilecore-throughput-")
    try:
        kernels, _ = compare.find_kernels(corpora, False, a.kernel, tmp)
        if not kernels:
            print(f"error: no kernel (*.tileirbc) in {', '.join(corpora)} matches", file=sys.stderr)
            return 1
        b = Bench(tilecore, tileiras, tmp, a.timeout, trees)
        print(f"{len(kernels)} kernels x {len(sms)} SMs, parts {', '.join(parts)}, n={a.n}", file=sys.stderr)
        res: dict = {}
        if "cold" in parts:
            res["cold"] = cold(b, kernels, sms, a.n)
        if "batch" in parts:
            res["batch"] = batch(b, kernels, sms, a.n, a.jobs, (res.get("cold") or {}).get("tilecore_median_sum_s"))
        if "hit" in parts:
            if trees:  # the last checkout
                compare.CHILD_ENV.update(trees[a.tree[-1]])
            res["hit"] = hits(b, kernels, sms, a.n, a.jobs)
        if "profile" in parts:
            res["profile"] = profile(b, kernels, sms, a.n)
        if os.listdir(b.nocache_dir):
            res["warning"] = f"the cold / batch runs wrote into their cache folder: {os.listdir(b.nocache_dir)}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(report(res))
    if res.get("warning"):
        print(f"warning: {res['warning']}")
    now = datetime.datetime.now(datetime.timezone.utc)
    out = a.out or os.path.join(HERE, "results", f"throughput-{now.date().isoformat()}-{sha}.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    meta = {"date": now.isoformat(timespec="seconds"), "git": sha, "n": a.n, "jobs": a.jobs, "sms": sms,
            "corpora": corpora, "kernels": [k.name for k in kernels], "parts": parts,
            "tilecore_command": " ".join(tilecore),
            "tree": a.tree[-1] if a.tree else None, "trees": a.tree, "machine": f"{os.cpu_count()} cores, {sys.platform}",
            "load_average_before": load_before, "load_average_after": os.getloadavg(),
            "python": sys.version.split()[0], "tilecore": compare.tool_version([*tilecore, "--version"]),
            "tileiras": compare.tool_version([tileiras, "--version"]),
            "assembler": os.environ.get("TILECORE_ASSEMBLER", "") or "default"}
    with open(out + ".part", "w") as fh:
        json.dump({"meta": meta, "targets": TARGETS, **res}, fh, indent=1)
    os.replace(out + ".part", out)
    print(f"wrote {os.path.relpath(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
