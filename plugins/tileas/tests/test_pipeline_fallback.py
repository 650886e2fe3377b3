"""The un-aligned form of a pipelined K loop (``pipeline.pipelined_for`` with ``elements``): tensors whose rows are
not 16-byte multiples fail the kernel's run-time alignment check and take a loop of one stage that every thread
fills element by element (zero past the array's edge), then the same dots as the pipelined loop. The copy keeps
no tile in registers and goes by the pipelined loop's 16-byte chunks (``_copy_chunk_elements``: one global and
one stage address per chunk, its elements at constant offsets from them). Numbers on odd strides in the
emulator, for the three atom families."""

from __future__ import annotations

import re

import cutile_kernels as ck
import numpy as np
import pytest
from emulated_kernels import KernelSet, arr, cdiv
from test_mma_atoms import _operand

from tilecore.compiler import compile_file

pytest.importorskip("cuda.tile")

_K = KernelSet({
    # no stride facts: the alignment is known at run time only; 128 x 128 x 64 f16 tiles
    "mm": (ck.matmul_f32acc, ["f16[2]", "f16[2]", "f32[2]", 128, 128, 64]),
    # K tile of 256 halves: A's lines (512 bytes) are longer than the CTA's 128 threads cover at once
    "mm_long_k": (ck.matmul_f32acc, ["f16[2]", "f16[2]", "f32[2]", 64, 64, 256]),
    "mm_i8": (ck.matmul_i8, ["i8[2]", "i8[2]", "i32[2]", 64, 64, 32]),
}, "tileas-fallback-")


def _lowered(name: str, sm: str) -> str:
    _K.compiled(name, "sm_80")  # exports the bytecode
    return str(compile_file(f"{_K._dir}/{name}.tileirbc", sm, stop_after="convert-tileas-to-llvm").module)


@pytest.mark.parametrize("sm", ["sm_80", "sm_90a", "sm_100a"])
def test_fallback_copies_elements_into_one_stage(sm):
    """128 x 64 A and 64 x 128 B halves over 128 threads: 64 + 64 element loads from global memory per thread,
    each stored into the stage (no registers hold a tile, nothing is written through a tile's registers), by a
    loop over the thread's 8 chunks of each (its body one chunk: 8 element loads), and the fallback's dots are
    the pipelined loop's: as many MMA ops in both loops."""
    text = _lowered("mm", sm)
    # the only loads from global memory of halves: the fallback's (the pipelined loop copies by cp.async / TMA),
    # one chunk's 8 per operand: the 8 chunks of a thread are a loop (cid = tid + iv, iv += 128 up to 1024)
    assert len(re.findall(r"llvm\.load %\S+ : !llvm\.ptr<1> -> f16", text)) == 8 + 8
    # each chunk's 8 halves go into the stage as one 16-byte store (pipeline._copy_chunk_elements)
    assert len(re.findall(r"llvm\.store %\S+, %\S+ {alignment = 16 : i64} : vector<8xf16>, !llvm\.ptr<3>", text)) == 2
    assert not re.findall(r"llvm\.store %\S+, %\S+ : f16, !llvm\.ptr<3>", text)
    # the two loops' exit tests (scf.for lowered to blocks): the induction variable against 1024 chunks
    assert len(re.findall(r"arith\.cmpi slt, %\S+, %c1024_i32\S* : i32", text)) == 2
    # per loop body: sm_80 32 m16n8k16 per warp (64 x 64) in a loop over K; sm_90a 2 m64n128k16 (128 rows) for
    # each of the 4 K steps of 16; sm_100a one m128n128k16 per K step (thread 0 issues them)
    per_loop = {"sm_80": 32, "sm_90a": 4 * 2, "sm_100a": 4}[sm]
    mma = {"sm_80": '"cute_nvgpu.mma_sync"', "sm_90a": '"cute_nvgpu.wgmma"', "sm_100a": '"sm100.umma"'}[sm]
    assert text.count(mma) == 2 * per_loop

@pytest.mark.parametrize("sm", ["sm_80", "sm_90a", "sm_100a"])
@pytest.mark.parametrize("name, mnk, el", [
    ("mm", (133, 70, 67), "f16"), ("mm_long_k", (70, 33, 301), "f16"), ("mm_i8", (67, 45, 37), "s8")])
def test_fallback_numbers_on_odd_strides(sm, name, mnk, el):
    """Rows of odd lengths (not 16-byte multiples): the kernel runs the fallback loop; partial tiles in M, N and
    K read zeros past the edges."""
    m, n, k = mnk
    rng = np.random.default_rng(11)
    (a, av), (b, bv) = _operand(rng, (m, k), el), _operand(rng, (k, n), el)
    c = np.zeros((m, n), np.int32 if el == "s8" else np.float32)
    tm, tn = _K.table[name][1][3:5]
    _K.run(name, sm, (cdiv(m, tm), cdiv(n, tn), 1), arr(a) + arr(b) + arr(c))
    want = av @ bv
    if el == "s8":
        np.testing.assert_array_equal(c, want)
    else:
        np.testing.assert_allclose(c, want, atol=1e-4 * np.abs(want).max(), rtol=0)


def test_scalar_epilogue_stores_share_the_first_offset():
    """The f32 result's 128 registers per thread (sm_80, stored element by element under bounds checks): every
    store's address is one offset, the thread's first element's (built once, before the branches), plus a
    constant or a multiple of the row stride: no register rebuilds its coordinates and offset in its branch."""
    text = _lowered("mm", "sm_80")
    defs = dict(re.findall(r"^\s*(%\S+) = (.*)$", text, re.M))
    geps = re.findall(r"(%\S+) = llvm\.getelementptr %\S+\[(%\S+)\] : \(!llvm\.ptr<1>, i64\) -> !llvm\.ptr<1>, f32",
                      text)
    index_of = dict(geps)
    stores = re.findall(r"llvm\.store %\S+, (%\S+) : f32, !llvm\.ptr<1>", text)
    assert len(stores) == 128

    def root(v):
        # offset + constant: arith.addi %root, %cN_i64 (or %root, arith.muli %stride, %cN_i64)
        while (m := re.match(r"arith\.addi (%\S+), (%\S+) : i64", defs.get(v, ""))) and \
                (m.group(2).startswith("%c") or defs.get(m.group(2), "").startswith("arith.muli")):
            v = m.group(1)
        return v

    roots = {root(index_of[p]) for p in stores}
    assert len(roots) == 1
    # the root is built once, outside every store's branch: the first store's branch comes after it
    first_store = re.search(r"llvm\.store %\S+, %\S+ : f32, !llvm\.ptr<1>", text).start()
    assert "cf.cond_br" in text[text.index(f"{roots.pop()} = "):first_store]
