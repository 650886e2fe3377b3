"""Which mma / mma_scaled kernels take the Blackwell tensor cores (issue 16's survey).

    python bench/sm100_mma_survey.py [--gpu-name sm_100a] [--seeds 1-40] [--template mma_scaled] [--generated-only]

Compiles, with tilecore for ``--gpu-name``, every corpus kernel (/work/shared/corpus/visible), the matmul-like
kernels of plugins/tileas/tests/cutile_kernels.py, the block-scaled kernels of
plugins/sm100/tests/test_tcgen05_block_scaled.py and the generated programs of tests/fuzz (``--template``:
``mma`` or ``mma_scaled``; the given seeds; ``--generated-only`` skips the fixed kernels), and prints one line per kernel with the SASS counts (``bench/sass.py``) that tell
where its dots ran: UTC*MMA (tcgen05), UTMALDG / UTMASTG (TMA; UTMALDG alone last), HMMA / IMMA (mma.sync), LDGSTS
(cp.async). A
compile error prints ``ERR`` and the message. Numbers are not checked here (bench/fuzz_programs.py does that).
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "plugins", "tileas", "tests"),
                os.path.join(ROOT, "plugins", "sm100", "tests"), os.path.join(ROOT, "tests")]
CORPUS = os.path.join(os.path.dirname(ROOT), "shared", "corpus", "visible")
CUTILE = ["matmul_f16", "matmul_i8", "matmul_f16_aligned", "matmul_bf16_aligned", "mma_scaled_f8"]
COLUMNS = (("utcmma", "UTC*MMA"), ("tma", "TMA"), ("hmma", "HMMA"), ("imma", "IMMA"), ("ldgsts", "LDGSTS"))


def counts(path: str, gpu: str) -> str:
    from sass import _cuobjdump, parse_sass, sass_stats

    from tilecore.assembler import find_nvidia_tool
    from tilecore.compiler import compile_file

    try:
        cubin = compile_file(path, gpu).artifacts["cubin"]
    except Exception as e:  # noqa: BLE001 - reported, the survey goes on
        return f"ERR {type(e).__name__}: {str(e).splitlines()[0][:120]}"
    cubin = cubin if isinstance(cubin, bytes) else next(iter(cubin.values()))
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        stats = sass_stats(f.name)
        if "error" in stats:
            return f"ERR {stats['error']}"
        mnemonics = [m for ms in parse_sass(_cuobjdump(find_nvidia_tool("cuobjdump"), "-sass", f.name).stdout).values()
                     for m in ms]
    ldg = sum(m.startswith("UTMALDG") for m in mnemonics)
    return "  ".join(f"{label} {stats['classes'][key]}" for key, label in COLUMNS) + f"  UTMALDG {ldg}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu-name", default="sm_100a")
    ap.add_argument("--seeds", default="1-40", help="generated programs: FIRST-LAST")
    ap.add_argument("--template", default="mma", help="the generated programs' template (mma, mma_scaled)")
    ap.add_argument("--generated-only", action="store_true", help="only the generated programs")
    a = ap.parse_args(argv)
    import cutile_kernels as ck
    import test_tcgen05_block_scaled as bs
    from fuzz import generator, runner

    if not a.generated_only:
        for p in sorted(glob.glob(os.path.join(CORPUS, "*.tileirbc"))):
            print(f"corpus {os.path.basename(p)}: {counts(p, a.gpu_name)}", flush=True)
        for n in CUTILE:
            print(f"cutile_kernels {n}: {counts(ck.kernel_path(n), a.gpu_name)}", flush=True)
        for n in bs.KERNELS:
            print(f"block_scaled {n}: {counts(bs._export(n), a.gpu_name)}", flush=True)
    first, last = (int(x) for x in a.seeds.split("-"))
    with tempfile.TemporaryDirectory() as d:
        for seed in range(first, last + 1):
            p = generator.generate(seed, a.template)
            _src, bc, err = runner.prepare(p, d, tag=f"s{seed}")
            kind = ",".join(sorted(f for f in p.features if f.startswith("mma") or "e2m1" in f or "scale" in f))
            print(f"generated {seed} tile {p.tile} {kind}: {err or counts(bc, a.gpu_name)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
