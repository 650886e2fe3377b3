"""Matmul-like cuTile kernels on the tensor-core targets: tilecore against tileiras on the same bytecode.

    python bench/mma_kernels.py [--gpu-name sm_90a | sm_100a] [-n 3] [--json bench/results/mma-kernels-SM-DATE.json]

Issue 15's figures (sm_90a, the default) and issue 16's (sm_100a). For each kernel: the TileIR bytecode is
exported once with cuTile; ``tilecore compile --gpu-name SM`` and ``tileiras --gpu-name SM'`` (SM' from
``bench/compare.py``'s ``TILEIRAS_GPU``: tileiras has no "a" spelling and emits the "a" code for sm_90 / sm_100)
each compile it in a fresh process (wall seconds, median of N); the cubins' SASS is counted with cuobjdump
(``bench/sass.py``): instructions, HGMMA (warpgroup MMA), UTC*MMA (tcgen05), HMMA (mma.sync), UTMALDG / UTMASTG
(TMA), SYNCS (mbarrier), LDGSTS (cp.async), registers, shared memory (static, plus tilecore's dynamic shared
memory from ``--emit metadata``) and local memory (spills). Ratios are tilecore / tileiras. On sm_100a the
block-scaled kernels are added: the MXFP8 ``mma_scaled_f8`` (64 x 64 x 64 tiles) and an NVFP4 loop
(128 x 32 x 64, e4m3 scales per 16).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "bench"), os.path.join(ROOT, "plugins", "tileas", "tests")]

CORPUS = os.path.join(os.path.dirname(ROOT), "shared", "corpus", "visible")
# name -> cuTile kernel (cutile_kernels) and its specialisation; "corpus:NAME" is a corpus file
KERNELS = {
    "mm_f16_128x128x64_aligned": ("matmul_f32acc", ["f16[2]/16", "f16[2]/16", "f16[2]/16", 128, 128, 64]),
    "mm_bf16_128x64x32_aligned": ("matmul_f32acc", ["bf16[2]/16", "bf16[2]/16", "f32[2]/16", 128, 64, 32]),
    "mm_f16_64x128x64_aligned": ("matmul_f32acc", ["f16[2]/16", "f16[2]/16", "f32[2]/16", 64, 128, 64]),
    "mm_f16_128x128x64": ("matmul_f32acc", ["f16[2]", "f16[2]", "f16[2]", 128, 128, 64]),
    "corpus:matmul_f16": None,
    "attention_f16_64x64x64_aligned": ("attention", ["f16[2]/16", "f16[2]/16", "f16[2]/16", "f32[2]/16", 64, 64, 64]),
}
# added on sm_100 targets: the block-scaled kernels ("bs:NAME" is a kernel of
# plugins/sm100/tests/test_tcgen05_block_scaled.py)
BLOCK_SCALED = {
    "mma_scaled_f8_64x64x64": ("mma_scaled", ["f8e4m3[2]", "f8e8m0[2]", "f8e4m3[2]", "f8e8m0[2]", "f32[2]", 64, 64, 64,
                                              32]),
    "bs:f4_nvfp4_loop": None,
}
COUNTS = {"HGMMA": "gmma", "UTCMMA": "utcmma", "HMMA": "hmma", "TMA": "tma", "SYNCS": "syncs", "LDGSTS": "ldgsts"}


def _export(name: str, spec, tmp: str) -> str:
    import cutile_kernels as ck

    path = os.path.join(tmp, f"{name.replace(':', '_')}.tileirbc")
    if name.startswith("corpus:"):
        return os.path.join(CORPUS, name.split(":")[1] + ".tileirbc")
    if name.startswith("bs:"):
        sys.path.insert(0, os.path.join(ROOT, "plugins", "sm100", "tests"))
        import test_tcgen05_block_scaled as bs

        kernel, params = bs.KERNELS[name.split(":")[1]]
        ck.export_spec(kernel, params, name.split(":")[1], path)
        return path
    ck.export_spec(getattr(ck, spec[0]), spec[1], name.replace(":", "_"), path)
    return path


def _timed(cmd: list[str], n: int) -> tuple[float, subprocess.CompletedProcess]:
    times, proc = [], None
    for _ in range(n):
        t = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times), proc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("-n", type=int, default=3, help="compiles per side (median)")
    ap.add_argument("--gpu-name", default="sm_90a", help="target (default sm_90a)")
    args = ap.parse_args()
    from compare import TILEIRAS_GPU
    from sass import sass_stats

    from tilecore.serialize import find_nvidia_tool

    tileiras = find_nvidia_tool("tileiras") or shutil.which("tileiras")
    tilecore = os.path.join(os.path.dirname(sys.executable), "tilecore")
    sm = args.gpu_name
    ti_gpu = TILEIRAS_GPU.get(sm, sm.rstrip("af"))
    kernels = dict(KERNELS, **(BLOCK_SCALED if sm.startswith("sm_10") else {}))
    rows = []
    with tempfile.TemporaryDirectory(prefix="mma-kernels-") as tmp:
        for name, spec in kernels.items():
            src = _export(name, spec, tmp)
            ours, meta = os.path.join(tmp, f"{name}.tc.cubin"), os.path.join(tmp, f"{name}.json")
            t_ours, p = _timed([tilecore, "compile", src, "--gpu-name", sm, "--no-cache", "-o", ours], args.n)
            row = {"kernel": name, "tilecore_s": round(t_ours, 3)}
            if p.returncode:
                row["tilecore_error"] = p.stderr.strip()[-300:]
            else:
                subprocess.run([tilecore, "compile", src, "--gpu-name", sm, "--emit", "metadata", "-o", meta],
                               check=True, capture_output=True)
                k = json.load(open(meta))["kernels"][0]
                row["tilecore"] = sass_stats(ours)
                row["tilecore"]["dynamic_shared_bytes"] = k["dynamic_shared_bytes"]
                row["tilecore"]["tensor_maps"] = len(k["tensor_maps"])
            if tileiras:
                theirs = os.path.join(tmp, f"{name}.ti.cubin")
                t_ti, p = _timed([tileiras, f"--gpu-name={ti_gpu}", "--opt-level=3", f"--output-file={theirs}", src],
                                 args.n)
                row["tileiras_s"] = round(t_ti, 3)
                row["tileiras"] = sass_stats(theirs) if p.returncode == 0 else {"error": p.stderr.strip()[-300:]}
            rows.append(row)
    hdr = f"{'kernel':28s} {'side':8s} {'compile s':>9s} {'instr':>6s} " + " ".join(f"{c:>6s}" for c in COUNTS) + \
        f" {'regs':>5s} {'smem':>7s} {'dyn':>7s} {'spill':>5s}"
    print(hdr)
    for r in rows:
        for side in ("tilecore", "tileiras"):
            st = r.get(side)
            if not st or "error" in st:
                print(f"{r['kernel']:28s} {side:8s} {'-':>9s} {(st or {}).get('error', r.get(side + '_error', ''))[:80]}")
                continue
            cls = st["classes"]
            print(f"{r['kernel']:28s} {side:8s} {r[side + '_s']:9.3f} {st['instructions']:6d} "
                  + " ".join(f"{cls.get(c, 0):6d}" for c in COUNTS.values())
                  + f" {st['registers'] or 0:5d} {st['shared_bytes'] or 0:7d} {st.get('dynamic_shared_bytes', 0):7d}"
                  f" {st['local_bytes'] or 0:5d}")
        if r.get("tilecore") and r.get("tileiras") and "error" not in r["tilecore"] and "error" not in r["tileiras"]:
            print(f"{'':28s} {'ratio':8s} {r['tilecore_s'] / r['tileiras_s']:9.2f} "
                  f"{r['tilecore']['instructions'] / r['tileiras']['instructions']:6.2f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"date": time.strftime("%Y-%m-%d"), "gpu_name": sm, "tileiras_gpu_name": ti_gpu, "rows": rows},
                      fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
