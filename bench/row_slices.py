"""What the row-slice layout changes in flash attention (issue 15; static counts, no GPU here).

    python bench/row_slices.py [--gpu-name sm_80,sm_90a,sm_100a]

plugins/tileas/tests/cutile_kernels.py ``attention`` and ``causal_attention`` (f16, 64 x 64 tiles, d = 64)
compiled with ``--option tileas.row_slices=off`` (the row max / sum of the scores' MMA fragment and their
broadcasts go through the blocked layout and shared memory) and without (row slices in registers: stage 4
``row_slice``). Counts: ``bar.sync`` in the PTX, and in the SASS (bench/sass.py) instructions, BAR, SHFL, STS,
LDS and registers.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "plugins", "tileas", "tests")]

from sass import sass_stats  # noqa: E402

from tilecore.compiler import compile_file  # noqa: E402
from tilecore.options import CompileOptions  # noqa: E402

PARAMS = ["f16[2]/16", "f16[2]/16", "f16[2]/16", "f32[2]/16", 64, 64, 64]
CLASSES = ("bar", "shfl", "sts", "lds")


def _counts(path: str, sm: str, extra: dict) -> dict:
    ptx = compile_file(path, sm, CompileOptions(emit="ptx", extra=extra)).artifacts["ptx"]
    ptx = "\n".join(ptx.values()) if isinstance(ptx, dict) else ptx
    cubin = compile_file(path, sm, CompileOptions(extra=extra)).artifacts["cubin"]
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin if isinstance(cubin, bytes) else next(iter(cubin.values())))
    try:
        st = sass_stats(f.name)
    finally:
        os.unlink(f.name)
    return {"ptx_bar": len(re.findall(r"\bbar(?:rier)?\.sync\b", ptx)), "instructions": st["instructions"],
            "registers": st["registers"],
            **{c: sum(n for k, n in st["classes"].items() if k.split(".")[0] == c) for c in CLASSES}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu-name", default="sm_80,sm_90a,sm_100a", help="targets, comma-separated")
    args = ap.parse_args()
    import cutile_kernels as ck

    print(f"{'kernel':8s} {'sm':8s} {'path':8s} {'PTX bar':>7s} {'instr':>6s} "
          + " ".join(f"{c.upper():>5s}" for c in CLASSES) + f" {'regs':>5s}")
    with tempfile.TemporaryDirectory(prefix="row-slices-") as tmp:
        for name, kernel in (("attn", ck.attention), ("causal", ck.causal_attention)):
            path = ck.export_spec(kernel, PARAMS, name, os.path.join(tmp, f"{name}.tileirbc"))
            for sm in args.gpu_name.split(","):
                for label, extra in (("blocked", {"tileas.row_slices": "off"}), ("rows", {})):
                    c = _counts(path, sm, extra)
                    print(f"{name:8s} {sm:8s} {label:8s} {c['ptx_bar']:7d} {c['instructions']:6d} "
                          + " ".join(f"{c[k]:5d}" for k in CLASSES) + f" {c['registers'] or 0:5d}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
