"""What wgmma with A from registers and tf32 pipelining change in the SASS (issue 15; static counts, no GPU here).

    python bench/wgmma_a_registers.py            # flash attention on sm_90a: A from registers vs shared memory
    python bench/wgmma_a_registers.py --tf32     # mma_tf32_loop: the astype seen through by the pipeline, or not

Attention: plugins/tileas/tests/cutile_kernels.py ``attention`` (f16, 64 x 64 tiles, d = 64; and bf16 128 x 32,
d = 32) compiled for sm_90a with ``--option tileas.wgmma_a_registers=off`` and without. tf32: ``mma_tf32_loop``
(f32 inputs with stride facts, 128 x 64 x 32) on sm_90a and sm_80, the "before" column with the pipeline's
``_passes_stage`` narrowed back to reshapes only (what it saw before). Counts: instructions, register-A HGMMA
(``HGMMA ... R, R, gdesc``), and the classes of bench/sass.py.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "tests"), os.path.join(ROOT, "plugins", "tileas", "tests")]

from sass import sass_stats  # noqa: E402

from tilecore.compiler import compile_file  # noqa: E402
from tilecore.options import CompileOptions  # noqa: E402
from tilecore.serialize import find_nvidia_tool  # noqa: E402

CLASSES = ("gmma", "hmma", "tma", "ldgsts", "ldg", "lds", "sts", "bar", "syncs")


def _counts(path: str, sm: str, extra: dict) -> dict:
    cubin = compile_file(path, sm, CompileOptions(extra=extra)).artifacts["cubin"]
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin if isinstance(cubin, bytes) else next(iter(cubin.values())))
    try:
        st = sass_stats(f.name)
        sass = subprocess.run([find_nvidia_tool("cuobjdump"), "-sass", f.name], capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)
    rs = len(re.findall(r"HGMMA\.\S+ R\d+, R\d+, gdesc", sass))
    cls = st["classes"]  # memory classes are split by width (lds.16, lds.32, ...): summed here
    return {"instructions": st["instructions"], "hgmma_reg_a": rs,
            **{c: sum(v for k, v in cls.items() if k == c or k.startswith(c + ".")) for c in CLASSES}}


def _row(label: str, c: dict) -> str:
    return f"| {label} | " + " | ".join(str(c[k]) for k in ("instructions", "hgmma_reg_a", *CLASSES)) + " |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tf32", action="store_true", help="the tf32 pipelining comparison")
    args = ap.parse_args()
    import cutile_kernels as ck

    tmp = tempfile.mkdtemp(prefix="wgmma-rs-")
    print("| kernel | instructions | HGMMA reg-A | " + " | ".join(CLASSES) + " |")
    print("|---" * (3 + len(CLASSES)) + "|")
    if not args.tf32:
        for el, tm, tn, d in (("f16", 64, 64, 64), ("bf16", 128, 32, 32)):
            path = ck.export_spec(ck.attention, [f"{el}[2]/16"] * 3 + ["f32[2]/16", tm, tn, d], "attn",
                                  os.path.join(tmp, f"attn_{el}.tileirbc"))
            name = f"attention {el} {tm}x{tn} d={d} sm_90a"
            print(_row(f"{name}, A from smem", _counts(path, "sm_90a", {"tileas.wgmma_a_registers": "off"})))
            print(_row(f"{name}, A from registers", _counts(path, "sm_90a", {})))
        return
    from tilecore_tileas.stage4_tileas_to_llvm import pipeline

    path = ck.export_spec(ck.mma_tf32_loop, ["f32[2]/16"] * 3 + [128, 64, 32], "tf",
                          os.path.join(tmp, "tf32.tileirbc"))
    for sm in ("sm_90a", "sm_80", "sm_100a"):
        seen = pipeline._passes_stage
        pipeline._passes_stage = lambda op: op.name == "nv_tileas.reshape"
        try:
            before = _counts(path, sm, {})
        finally:
            pipeline._passes_stage = seen
        print(_row(f"mma_tf32_loop 128x64x32 {sm}, astype not seen through", before))
        print(_row(f"mma_tf32_loop 128x64x32 {sm}, pipelined", _counts(path, sm, {})))


if __name__ == "__main__":
    main()
