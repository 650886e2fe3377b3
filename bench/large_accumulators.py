"""Kernels with large accumulators: compile time, memory and spills, tilecore against NVIDIA's tileiras.

TileGym's MLA decode (``mla_decode`` of tests/test_thirdparty_mma2.py: ``acc`` is TD x TH f32, two products into one
TN x TH score tile, ``occupancy=2``) is exported to TileIR bytecode, specialised on numpy arrays as a launch does it
(B = 2, 128 heads, 1024 keys), and compiled by both for one SM with ``/usr/bin/time``: wall and CPU seconds (user +
system, the compiler's children included: ptxas) and peak RSS. Per cubin: its bytes and the figures of
``bench/large_dots.py`` (threads per CTA, SASS instructions, HGMMA / UTC*MMA, registers, stack bytes a thread,
LDL / STL, shared memory).

    python bench/large_accumulators.py [--sm sm_90a] [--configs 512x64x64x64,512x16x128x64] [--occupancy]
                                       [--threads]

``--configs``: TD x TH x TN x TPE. ``--occupancy``: also how tileiras reads cuTile's ``occupancy`` hint on a
matmul of 128 threads (its register cap, ``EIATTR_MAXREG_COUNT``, per accumulator shape), which
``kernel_spec.min_ctas_per_sm`` follows; ``--threads``: the threads per CTA tileiras gives f16 matmuls with large
operands (``kernel_spec.LARGE_OPERAND_WORDS``). The machine's load moves wall times; CPU seconds are steadier.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "tests")]

import numpy as np  # noqa: E402

TILEIRAS_GPU = {"sm_80": "sm_80", "sm_90a": "sm_90", "sm_100a": "sm_100"}
TIME = "%e %U %S %M"  # wall s, user s, system s, peak RSS KB


def mla_bytecode(td: int, th: int, tn: int, tpe: int) -> bytes:
    """TileIR bytecode of test_thirdparty_mma2's ``mla_decode`` for one configuration."""
    import test_thirdparty_mma2 as t

    from tilecore.cutile.kernel import export_bytecode
    from tilecore.cutile.specialize import specs_of

    b, heads, s = 2, 128, 1024
    z = lambda *shape: np.zeros(shape, np.float16)  # noqa: E731
    args = [z(b, heads, td), z(b, heads, tpe), z(b, s, td), z(b, s, tpe), z(b, heads, td), 0.1, s, td, th, tn, tpe,
            True]
    return export_bytecode(t.mla_decode, specs_of(t.mla_decode, args), "mla_decode")


def timed(cmd: list) -> dict:
    """Run ``cmd`` under /usr/bin/time: wall / cpu seconds, peak RSS (MB), or the error."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        r = subprocess.run(["/usr/bin/time", "-f", TIME, "-o", tf.name, *cmd], capture_output=True, text=True)
        fields = tf.read().split()
    if r.returncode != 0 or len(fields) < 4:
        return {"error": (r.stderr.strip().splitlines() or ["failed"])[-1][:160]}
    wall, user, system, rss = (float(x) for x in fields[-4:])
    dynamic = re.search(r"(\d+) bytes of dynamic shared memory", r.stdout)  # tilecore's summary line
    return {"wall": wall, "cpu": user + system, "rss": rss / 1024, "dynamic": int(dynamic.group(1)) if dynamic else 0}


def report(who: str, t: dict, cubin: str) -> None:
    from large_dots import cubin_figures, row

    if "error" in t:
        print(f"  {who:9s} ERR {t['error']}", flush=True)
        return
    print(f"  {who:9s} wall {t['wall']:6.1f} s  cpu {t['cpu']:6.1f} s  peak RSS {t['rss']:7.0f} MB  "
          f"cubin {os.path.getsize(cubin):7d} B", flush=True)
    f = cubin_figures(cubin)
    if "error" not in f:
        f["shared"] += t["dynamic"]  # tilecore's scratch buffer is dynamic shared memory (its launch contract)
    print(row("", f), flush=True)


def _tileiras_matmul(d: str, kernel, tm: int, tn: int, tk: int) -> tuple[str, str]:
    """Compile ``kernel`` (large_dots' f16 matmul, maybe with other hints) for a tile with tileiras for sm_90; returns
    the cubin's ``cuobjdump -elf`` and ``-res-usage`` texts."""
    from tilecore.cutile.kernel import export_bytecode
    from tilecore.cutile.specialize import specs_of
    from tilecore.serialize import find_nvidia_tool

    tileiras, cuobjdump = find_nvidia_tool("tileiras"), find_nvidia_tool("cuobjdump")
    src, out = os.path.join(d, "probe.tileirbc"), os.path.join(d, "probe.cubin")
    with open(src, "wb") as fh:
        fh.write(export_bytecode(kernel, specs_of(kernel, ["f16[2]", "f16[2]", "f32[2]", tm, tn, tk]), "matmul"))
    subprocess.run([tileiras, "--gpu-name", "sm_90", src, "-o", out], check=True, capture_output=True)
    elf = subprocess.run([cuobjdump, "-elf", out], capture_output=True, text=True).stdout
    res = subprocess.run([cuobjdump, "-res-usage", out], capture_output=True, text=True).stdout
    return elf, res


def occupancy_probe(d: str) -> None:
    """tileiras' register cap for cuTile's occupancy hint on 128-thread matmuls of several accumulator shapes."""
    from large_dots import matmul

    print("tileiras, sm_90, f16 matmul, TK = 32: occupancy, accumulator -> register cap (EIATTR_MAXREG_COUNT), "
          "registers, stack")
    for occ in (2, 3, 4, 8):
        kernel = matmul.replace_hints(occupancy=occ)
        for tm, tn in ((128, 128), (128, 64), (64, 64), (64, 32)):
            elf, res = _tileiras_matmul(d, kernel, tm, tn, 32)
            cap = re.search(r"EIATTR_MAXREG_COUNT\s+Format:\s+\S+\s+Value:\s+(\S+)", elf)
            regs = re.search(r"REG:(\d+) STACK:(\d+)", res)
            print(f"  occupancy {occ}  {tm:3d} x {tn:3d} f32 ({tm * tn // 128:3d} a thread)  cap "
                  f"{int(cap.group(1), 16) if cap else '-':>3}  registers {regs.group(1):>3}  stack {regs.group(2)} B",
                  flush=True)


def threads_probe(d: str) -> None:
    """Threads per CTA tileiras gives f16 matmuls (f32 accumulator) by tile shape: large operands take 256 threads
    (``kernel_spec.LARGE_OPERAND_WORDS``)."""
    from large_dots import matmul

    print("tileiras, sm_90, f16 matmul: TM x TN x TK, A / B words -> threads per CTA, registers, stack")
    for tm, tn, tk in ((64, 64, 512), (64, 64, 1024), (128, 16, 512), (128, 16, 1024), (64, 16, 1024),
                       (128, 64, 256), (128, 64, 512), (128, 128, 128)):
        elf, res = _tileiras_matmul(d, matmul, tm, tn, tk)
        ntid = re.search(r"EIATTR_REQNTID\s+Format:\s+\S+\s+Value:\s+(\S+)", elf)
        regs = re.search(r"REG:(\d+) STACK:(\d+)", res)
        print(f"  {tm:3d} x {tn:3d} x {tk:4d}  A {tm * tk // 2:5d} / B {tk * tn // 2:5d} words  threads "
              f"{int(ntid.group(1), 16) if ntid else 0:3d}  registers {regs.group(1):>3}  stack {regs.group(2)} B",
              flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sm", default="sm_90a")
    ap.add_argument("--configs", default="512x64x64x64,512x16x128x64", help="TD x TH x TN x TPE, comma-separated")
    ap.add_argument("--occupancy", action="store_true")
    ap.add_argument("--threads", action="store_true")
    ap.add_argument("--no-tileiras", action="store_true")
    a = ap.parse_args(argv)
    from tilecore.serialize import find_nvidia_tool

    tilecore = shutil.which("tilecore", path=os.path.dirname(sys.executable)) or "tilecore"
    tileiras = None if a.no_tileiras else find_nvidia_tool("tileiras")
    with tempfile.TemporaryDirectory() as d:
        if a.occupancy:
            occupancy_probe(d)
        if a.threads:
            threads_probe(d)
        for cfg in a.configs.split(","):
            td, th, tn, tpe = (int(x) for x in cfg.split("x"))
            src = os.path.join(d, "mla.tileirbc")
            with open(src, "wb") as fh:
                fh.write(mla_bytecode(td, th, tn, tpe))
            for sm in a.sm.split(","):
                print(f"mla_decode TD={td} TH={th} TN={tn} TPE={tpe} {sm}", flush=True)
                ours = os.path.join(d, "ours.cubin")
                report("tilecore", timed([tilecore, "compile", src, "--gpu-name", sm, "--no-cache", "-o", ours]), ours)
                if tileiras:
                    theirs = os.path.join(d, "tileiras.cubin")
                    report("tileiras", timed([tileiras, "--gpu-name", TILEIRAS_GPU[sm], src, "-o", theirs]), theirs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
