"""Fuzz the TileIR bytecode reader with mutated real kernels.

Usage: python bench/fuzz_bytecode.py [-n 10000] [--seed 0] [--batch 1000] [--cutile]

Each case mutates one corpus file (bit flips, byte sets, insertions, deletions,
truncation; 1-3 of them; half the cases only flip / set bytes, which keeps the
container intact and reaches the op decoder) and reads it in-process with the tileas reader (decode,
build, verify). Cases run in batches in worker subprocesses: a worker that dies
(an MLIR abort, a segfault) marks its in-flight case as crashed and a new worker
resumes after it. Prints how many cases were rejected cleanly (a TilecoreError with a
location), accepted, or crashed (anything else, an error without location included); the target is zero crashes.
``--cutile`` adds the kernels of plugins/tileas/tests/cutile_kernels.py to the seeds.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import subprocess
import sys
import time

VISIBLE_CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "shared", "corpus", "visible")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VISIBLE = VISIBLE_CORPUS


def seeds(with_cutile: bool) -> list[str]:
    paths = sorted(glob.glob(os.path.join(VISIBLE, "*.tileirbc")))
    if with_cutile:
        sys.path.insert(0, os.path.join(ROOT, "plugins", "tileas", "tests"))
        import cutile_kernels

        paths += [cutile_kernels.kernel_path(n) for n in sorted(cutile_kernels.KERNELS)]
    return paths


def mutate(data: bytes, rng: random.Random) -> bytes:
    d = bytearray(data)
    in_place = rng.random() < 0.5  # half the cases keep every length intact and reach the op decoder
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(2 if in_place else 5)
        pos = rng.randrange(len(d)) if d else 0
        if kind == 0 and d:
            d[pos] ^= 1 << rng.randrange(8)
        elif kind == 1 and d:
            d[pos] = rng.randrange(256)
        elif kind == 2:
            d[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif kind == 3:
            del d[pos:pos + rng.randint(1, 8)]
        else:
            del d[pos:]
    return bytes(d)


def case(files: list[bytes], seed: int, i: int) -> bytes:
    rng = random.Random(seed * 1_000_003 + i)
    return mutate(rng.choice(files), rng)


def worker(paths: list[str], seed: int, start: int, stop: int) -> None:
    """Run cases [start, stop) in this process, one JSON line per finished case."""
    from tilecore_tileas.bytecode import read_tileir

    from tilecore.errors import TilecoreError
    from tilecore.plugins import get_plugin_manager

    files = [open(p, "rb").read() for p in paths]
    ctx = get_plugin_manager().make_context()
    for i in range(start, stop):
        data = case(files, seed, i)
        try:
            read_tileir(data, "fuzz.tileirbc", ctx)
            outcome, detail = "accepted", ""
        except TilecoreError as e:  # clean only with a location (file:offset or the op's)
            located = e.location and e.location != "unknown"
            outcome, detail = ("rejected", e.message[:60]) if located else ("crashed", f"no location: {e.message}")
        except Exception as e:  # noqa: BLE001 - the point: anything but TilecoreError is a crash
            outcome, detail = "crashed", f"{type(e).__name__}: {str(e)[:120]}"
        print(json.dumps([i, outcome, detail]), flush=True)


def run(paths: list[str], n: int, seed: int, batch: int) -> dict:
    counts = {"rejected": 0, "accepted": 0, "crashed": 0}
    crashes, reasons = [], {}
    i = 0
    while i < n:
        stop = min(n, i + batch)
        cmd = [sys.executable, __file__, "--worker", json.dumps([paths, seed, i, stop])]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        done = i
        for line in proc.stdout.splitlines():
            idx, outcome, detail = json.loads(line)
            counts[outcome] += 1
            if outcome == "crashed":
                crashes.append((idx, detail))
            elif outcome == "rejected":
                key = detail.split(" ")[0:3]
                reasons[" ".join(key)] = reasons.get(" ".join(key), 0) + 1
            done = idx + 1
        if done < stop:  # the worker died on case `done`
            counts["crashed"] += 1
            crashes.append((done, f"worker died (exit {proc.returncode}): {proc.stderr.strip()[-200:]}"))
            done += 1
        i = done
    return {"counts": counts, "crashes": crashes, "reasons": reasons}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--cutile", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        paths, seed, start, stop = json.loads(a.worker)
        worker(paths, seed, start, stop)
        return
    paths = seeds(a.cutile)
    t0 = time.perf_counter()
    res = run(paths, a.n, a.seed, a.batch)
    dt = time.perf_counter() - t0
    c = res["counts"]
    print(f"fuzzed {a.n} mutations of {len(paths)} kernels (seed {a.seed}) in {dt:.1f} s "
          f"({a.n / dt:.0f} cases/s)")
    print(f"  rejected cleanly: {c['rejected']}")
    print(f"  accepted:         {c['accepted']}")
    print(f"  crashed:          {c['crashed']}  (target 0)")
    for idx, detail in res["crashes"][:20]:
        print(f"    case {idx}: {detail}")
    top = sorted(res["reasons"].items(), key=lambda kv: -kv[1])[:8]
    print("  most common rejections: " + "; ".join(f"{k}... x{v}" for k, v in top))
    sys.exit(1 if c["crashed"] else 0)


if __name__ == "__main__":
    main()
