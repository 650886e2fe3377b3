"""Random cuTile programs through tilecore and the CPU emulator, checked against numpy (issue 13).

    python bench/fuzz_programs.py --n 100 --seed 1                  # sm_80, sm_90a, sm_100a
    python bench/fuzz_programs.py --n 20 --seed 7 --gpu-name sm_90a --jobs 2
    python bench/fuzz_programs.py --template idioms --n 40 --seed 1 --jobs 1 --no-tileiras   # third-party idioms
    python bench/fuzz_programs.py --replay bench/results/fuzz/sm_80-1-17/kernel.py --gpu-name sm_80

Program ``i`` of a run has seed ``SEED + i`` (``tests/fuzz/generator.py``: the seed reproduces it).
Each is exported once with cuTile and, per SM, compiled by tilecore and run in the emulator in a
child process (``tests/fuzz/runner.py``). Printed: programs generated, per-SM outcomes (ok /
rejected / mismatched / emu_error / crashed / skipped), rejections grouped by message (locations
and numbers stripped) with whether ``tileiras`` compiles the same bytecode (a *gap*), every failure
class with its reproducer, the median seconds per program and the cuda_tile ops covered (read from
the exported bytecode). A failure is minimised (statements dropped, extents shrunk while it fails
the same way) and written to ``bench/results/fuzz/<sm>-<seed>-<i>/`` (kernel.py, original.py,
kernel.tileirbc, inputs.npz, README with the rerun command); at most ``--repro-per-class``
reproducers per failure class. A JSON summary goes to ``bench/results/fuzz/summary-<seed>-<n>.json``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from fuzz import runner  # noqa: E402

DEFAULT_SMS = ["sm_80", "sm_90a", "sm_100a"]
OUT = os.path.join(ROOT, "bench", "results", "fuzz")


def _check(seed: int, sms: list[str], work: str, use_tileiras: bool, template: str | None = None) \
        -> runner.ProgramResult:
    d = os.path.join(work, str(seed))
    try:
        return runner.check_program(seed, sms, d, use_tileiras, template=template)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _repro(seed: int, sm: str, outcome: runner.Outcome, out: str, run_seed: int, index: int, work: str,
           minimise: bool, template: str | None = None) -> str:
    d = os.path.join(work, f"repro-{seed}-{sm}")
    try:
        return runner.write_reproducer(seed, sm, outcome, out, run_seed, index, d, minimise, template)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def run(n: int, seed: int, sms: list[str], jobs: int, use_tileiras: bool = True, minimise: bool = True,
        out: str = OUT, repro_per_class: int = 2, log=print, template: str | None = None) -> dict:
    """Check programs ``seed .. seed + n - 1`` (all of ``template`` when given); returns the summary (also
    what is printed)."""
    work = tempfile.mkdtemp(prefix="fuzz-programs-")
    t0 = time.monotonic()
    results: list[runner.ProgramResult] = []
    try:
        with ProcessPoolExecutor(max_workers=jobs, initializer=runner.warm_up, initargs=(sms,)) as pool:
            futs = [pool.submit(_check, seed + i, sms, work, use_tileiras, template) for i in range(n)]
            for f in as_completed(futs):
                results.append(f.result())
        results.sort(key=lambda r: r.seed)
        # reproducers: failures, and rejections tileiras compiles (gaps)
        per_class: dict[str, list] = collections.defaultdict(list)
        for r in results:
            for sm, o in r.outcomes.items():
                if o.status in runner.FAILURES or (o.status == "rejected" and o.gap) \
                        or o.status in ("export_failed", "model_error"):
                    per_class[o.key + (" [gap]" if o.gap else "")].append((r.seed, sm, o))
        repro: dict[str, list[str]] = {}
        if out:
            os.makedirs(out, exist_ok=True)
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                futs = {}
                for key, items in per_class.items():
                    if items[0][2].status in ("export_failed", "model_error"):
                        continue
                    for s, sm, o in items[:repro_per_class]:
                        futs[pool.submit(_repro, s, sm, o, out, seed, s - seed, work, minimise, template)] = key
                for f in as_completed(futs):
                    repro.setdefault(futs[f], []).append(os.path.relpath(f.result(), ROOT))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = summarise(results, sms, per_class, repro, time.monotonic() - t0, seed, n)
    for line in report(summary):
        log(line)
    if out:
        with open(os.path.join(out, f"summary-{seed}-{n}.json"), "w") as fh:
            json.dump(summary, fh, indent=1)
    return summary


def summarise(results, sms, per_class, repro, wall, seed, n) -> dict:
    counts = {sm: collections.Counter(r.outcomes[sm].status for r in results) for sm in sms}
    gaps = {sm: sum(1 for r in results if r.outcomes[sm].status == "rejected" and r.outcomes[sm].gap) for sm in sms}
    rejected = collections.defaultdict(lambda: {"count": 0, "sms": set(), "gap": 0, "seeds": []})
    for r in results:
        for sm, o in r.outcomes.items():
            if o.status == "rejected":
                g = rejected[runner.normalize(o.message)]
                g["count"] += 1
                g["sms"].add(sm)
                g["gap"] += o.gap
                if len(g["seeds"]) < 5:
                    g["seeds"].append(r.seed)
    ops = sorted({op for r in results for op in r.ops})
    features = collections.Counter(f for r in results for f in r.features)
    failures = {key: {"count": len(items), "seeds": sorted({s for s, _, _ in items})[:10],
                      "sms": sorted({sm for _, sm, _ in items}), "reproducers": sorted(repro.get(key, [])),
                      "features": _common_features(results, items)}
                for key, items in per_class.items()}
    return {
        "seed": seed, "n": n, "sms": sms, "wall_s": round(wall, 1),
        "generated": len(results),
        "templates": dict(collections.Counter(r.template for r in results)),
        "per_sm": {sm: dict(counts[sm]) | {"gaps": gaps[sm]} for sm in sms},
        "compiled": {sm: counts[sm]["ok"] + counts[sm]["mismatched"] + counts[sm]["emu_error"] for sm in sms},
        "rejected": {k: {"count": v["count"], "sms": sorted(v["sms"]), "gap": v["gap"], "seeds": v["seeds"]}
                     for k, v in sorted(rejected.items(), key=lambda kv: -kv[1]["count"])},
        "failures": failures,
        "median_s_per_program": round(statistics.median(r.seconds for r in results), 2) if results else 0.0,
        "ops": ops,
        "features": dict(sorted(features.items())),
    }


def _common_features(results, items) -> list[str]:
    """Features every failing program of a class has (a hint at the cause)."""
    by_seed = {r.seed: set(r.features) for r in results}
    sets = [by_seed[s] for s, _, _ in items if s in by_seed]
    common = set.intersection(*sets) if sets else set()
    return sorted(f for f in common if not f.startswith(("rank:", "grid:")) and f != "store")


def report(s: dict) -> list[str]:
    lines = [f"fuzz_programs: seeds {s['seed']}..{s['seed'] + s['n'] - 1}, SMs {', '.join(s['sms'])}, "
             f"{s['wall_s']} s wall",
             f"generated: {s['generated']} ({', '.join(f'{k} {v}' for k, v in sorted(s['templates'].items()))})"]
    for sm in s["sms"]:
        c = s["per_sm"][sm]
        lines.append(f"  {sm}: compiled {s['compiled'][sm]} (ok {c.get('ok', 0)}, mismatched {c.get('mismatched', 0)}, "
                     f"emu_error {c.get('emu_error', 0)}), rejected {c.get('rejected', 0)} (gaps vs tileiras "
                     f"{c['gaps']}), crashed {c.get('crashed', 0)}, skipped {c.get('skipped', 0)}"
                     + (f", export_failed {c['export_failed']}" if c.get("export_failed") else "")
                     + (f", model_error {c['model_error']}" if c.get("model_error") else ""))
    totals = collections.Counter()
    for sm in s["sms"]:
        totals.update(s["per_sm"][sm])
    lines.append(f"totals: mismatched {totals['mismatched']}, crashed {totals['crashed']}, "
                 f"emu_error {totals['emu_error']}, rejected {totals['rejected']} (gaps {totals['gaps']})")
    lines.append("rejected, by message:")
    for msg, g in s["rejected"].items():
        lines.append(f"  {g['count']:4d}  [{','.join(g['sms'])}] {'GAP (tileiras compiles) ' if g['gap'] else ''}"
                     f"{msg}  seeds {g['seeds']}")
    lines.append("failures (mismatched / emu_error / crashed / gaps), by class:")
    for key, f in sorted(s["failures"].items(), key=lambda kv: -kv[1]["count"]):
        lines.append(f"  {f['count']:4d}  [{','.join(f['sms'])}] {key[:200]}")
        lines.append(f"        seeds {f['seeds']}; common features {f['features'][:12]}")
        for d in f["reproducers"]:
            lines.append(f"        reproducer {d}")
    lines.append(f"median seconds per program (all SMs): {s['median_s_per_program']}")
    lines.append(f"cuda_tile ops covered ({len(s['ops'])}): {' '.join(o.split('.', 1)[1] for o in s['ops'])}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100, help="programs (default 100)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the first program (default 1)")
    ap.add_argument("--gpu-name", action="append", help="SM (repeatable or comma list; default all three)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPUs)")
    ap.add_argument("--no-tileiras", action="store_true", help="do not ask tileiras about rejections")
    ap.add_argument("--no-minimise", action="store_true", help="write failing programs as generated")
    ap.add_argument("--repro-per-class", type=int, default=2, help="reproducers per failure class (default 2)")
    ap.add_argument("--out", default=OUT, help="reproducer / summary folder (default bench/results/fuzz)")
    ap.add_argument("--replay", metavar="KERNEL_PY", help="run a written program (a reproducer's kernel.py)")
    ap.add_argument("--template", help="draw every program from this template (tiles, loop, mma, attn, ...; "
                                          "idioms: only drawn this way)")
    a = ap.parse_args(argv)
    sms = [s for g in (a.gpu_name or [",".join(DEFAULT_SMS)]) for s in g.split(",") if s]
    if a.replay:
        bad = 0
        for sm, o in runner.replay(a.replay, sms).items():
            print(f"{sm}: {o.status}{' ' + o.message.strip() if o.message.strip() else ''}")
            bad += o.status in runner.FAILURES
        return 1 if bad else 0
    run(a.n, a.seed, sms, a.jobs, not a.no_tileiras, not a.no_minimise, a.out, a.repro_per_class,
        template=a.template)
    return 0


if __name__ == "__main__":
    sys.exit(main())
