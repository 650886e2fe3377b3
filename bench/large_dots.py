"""Dots whose operands exceed 48 KiB (issues 15 / 16): tilecore against NVIDIA's tileiras on the same bytecode.

A cuTile matmul (``acc = ct.mma(a, b, acc)`` over K tiles, f32 accumulator stored as f32) with large tiles is
compiled by both for each SM; the script prints, per compiler, the cubin's static SASS counts (``bench/sass.py``):
instructions, the tensor-core MMAs (HMMA: mma.sync, HGMMA: wgmma, UTC*MMA: tcgen05), TMA loads (UTMALDG),
cp.async (LDGSTS), local-memory accesses (LDL / STL: spills), and ``cuobjdump -res-usage``: registers, STACK (bytes of
local memory per thread, spills), shared memory (tilecore: the dynamic bytes its launch contract asks for; tileiras:
SHARED), threads per CTA (EIATTR_REQNTID).

    python bench/large_dots.py [--sm sm_90a,sm_100a] [--tiles 256x256x64,256x128x128,128x256x128] [--dtype f16]
                               [--warps 8] [--no-tileiras]

``--warps N``: the kernel with cuTile's hint ``num_worker_warps=N`` (tilecore: N warps per CTA; tileiras decides its
own CTA size).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "bench")]

import cuda.tile as ct  # noqa: E402

ConstInt = ct.Constant[int]
TILEIRAS_GPU = {"sm_80": "sm_80", "sm_90a": "sm_90", "sm_100a": "sm_100"}
SPELLING = {"f16": "f16", "bf16": "bf16", "s8": "i8", "e4m3": "f8e4m3"}


@ct.kernel
def matmul(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=C.dtype)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(i, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, j), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(i, j), tile=acc)


def cubin_figures(path: str) -> dict:
    """SASS and resource figures of one cubin (one kernel)."""
    from sass import _cuobjdump, parse_res_usage, sass_stats

    from tilecore.serialize import find_nvidia_tool

    tool = find_nvidia_tool("cuobjdump")
    stats = sass_stats(path)
    if "error" in stats:
        return {"error": stats["error"]}
    res = next(iter(parse_res_usage(_cuobjdump(tool, "-res-usage", path).stdout).values()), {})
    elf = _cuobjdump(tool, "-elf", path).stdout
    ntid = re.search(r"EIATTR_REQNTID\s+Format:\s+\S+\s+Value:\s+(\S+)\s+(\S+)\s+(\S+)", elf)
    sass = _cuobjdump(tool, "-sass", path).stdout
    c = stats["classes"]
    return {"insts": stats["instructions"], "regs": stats["registers"], "stack": res.get("STACK", 0),
            "shared": res.get("SHARED", 0), "threads": int(ntid.group(1), 16) * int(ntid.group(2), 16) *
            int(ntid.group(3), 16) if ntid else 0,
            "hmma": c["hmma"] + c["imma"], "hgmma": c["gmma"], "utcmma": c["utcmma"],
            "utmaldg": len(re.findall(r"\bUTMALDG\b", sass)), "ldgsts": c["ldgsts"], "ldl/stl": c["ldl/stl"]}


def row(who: str, f: dict) -> str:
    if "error" in f:
        return f"  {who:9s} ERR {f['error']}"
    return (f"  {who:9s} threads {f['threads']:4d}  insts {f['insts']:6d}  MMA {f['hmma']:4d} HMMA / {f['hgmma']:3d} HGMMA / "
            f"{f['utcmma']:3d} UTC*MMA  UTMALDG {f['utmaldg']:3d}  LDGSTS {f['ldgsts']:3d}  regs {f['regs']:3d}  "
            f"stack {f['stack']:5d} B  LDL/STL {f['ldl/stl']:5d}  shared {f['shared']:6d} B")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sm", default="sm_90a,sm_100a")
    ap.add_argument("--tiles", default="256x256x64,256x128x128,128x256x128")
    ap.add_argument("--dtype", default="f16", choices=sorted(SPELLING))
    ap.add_argument("--warps", type=int, default=0, help="cuTile's num_worker_warps hint (0: none)")
    ap.add_argument("--no-tileiras", action="store_true")
    a = ap.parse_args(argv)
    import tilecore.cutile as tc
    from tilecore.serialize import find_nvidia_tool

    tileiras = None if a.no_tileiras else find_nvidia_tool("tileiras")
    acc = "i32" if a.dtype == "s8" else "f32"
    kernel = matmul.replace_hints(num_worker_warps=a.warps) if a.warps else matmul
    with tempfile.TemporaryDirectory() as d:
        for tile in a.tiles.split(","):
            shape = tuple(int(x) for x in tile.split("x"))
            for sm in a.sm.split(","):
                el = SPELLING[a.dtype]
                print(f"{a.dtype} {tile} {sm}", flush=True)
                try:
                    kern = tc.compile(kernel, [f"{el}[2]", f"{el}[2]", f"{acc}[2]", *shape], gpu_name=sm)
                    path = os.path.join(d, f"ours.{sm}.cubin")
                    with open(path, "wb") as fh:
                        fh.write(kern.cubin)
                    f = cubin_figures(path)
                    if "error" not in f:
                        f["shared"] += kern.contract.shared_bytes
                    print(row("tilecore", f), flush=True)
                except Exception as e:  # noqa: BLE001 - reported, the survey goes on
                    print(f"  tilecore  ERR {type(e).__name__}: {str(e).splitlines()[0][:160]}", flush=True)
                    continue
                if tileiras:
                    src, out = os.path.join(d, "k.tileirbc"), os.path.join(d, f"tileiras.{sm}.cubin")
                    with open(src, "wb") as fh:
                        fh.write(kern.bytecode)
                    r = subprocess.run([tileiras, "--gpu-name", TILEIRAS_GPU[sm], src, "-o", out], capture_output=True,
                                       text=True)
                    print(row("tileiras", cubin_figures(out) if r.returncode == 0 else
                              {"error": (r.stderr.strip().splitlines() or ["failed"])[-1][:160]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
