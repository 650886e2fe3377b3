"""Index tiles recomputed where they are needed (stage 4 ``recompute``): ``ct.arange`` tiles, splats and the
integer / compare / select ops on them are emitted again at the coordinates of the layout that needs them, not
moved through shared memory: a broadcast row / column index, a permuted index tile, a causal mask meeting the
attention scores' MMA fragment. Numbers in the emulator against numpy on partial tiles."""

from __future__ import annotations

import math
import re

import cutile_kernels as ck
import numpy as np
import pytest
from emulated_kernels import KernelSet, arr, cdiv

from tilecore import emulate
from tilecore.compiler import compile_file
from tilecore.options import CompileOptions

ct = pytest.importorskip("cuda.tile")


@ct.kernel
def index_grid(y, TM: ct.Constant[int], TN: ct.Constant[int]):
    """y[r, c] = r * 1000 + c (global coordinates; the transpose of a column-index tile added)."""
    bm, bn = ct.bid(0), ct.bid(1)
    rows = ct.reshape(ct.arange(TM, dtype=ct.int32) + bm * TM, (TM, 1))
    cols = ct.reshape(ct.arange(TN, dtype=ct.int32) + bn * TN, (TN, 1))
    grid = ct.broadcast_to(rows * 1000, (TM, TN)) + ct.transpose(ct.broadcast_to(cols, (TN, TM)))
    ct.store(y, index=(bm, bn), tile=grid)


_K = KernelSet({
    "index_grid": (index_grid, ["i32[2]", 32, 64]),
    "causal": (ck.causal_attention, ["f16[2]/16", "f16[2]/16", "f16[2]/16", "f32[2]/16", 64, 64, 64]),
}, "tileas-recompute-")


def _lowered(name: str, sm: str, **extra) -> str:
    _K.compiled(name, "sm_80")  # exports the bytecode
    return str(compile_file(f"{_K._dir}/{name}.tileirbc", sm, CompileOptions(emit="mlir", extra=extra),
                            stop_after="convert-tileas-to-llvm").module)


def test_index_tiles_need_no_shared_memory():
    """The broadcast row index, the broadcast and transposed column index: all recomputed in the store's layout,
    so the kernel has no barrier and no shared memory."""
    text = _lowered("index_grid", "sm_80")
    assert "gpu.barrier" not in text
    assert not re.search(r"llvm\.(load|store) .*!llvm\.ptr<3>", text)


@pytest.mark.parametrize("sm", ["sm_80", "sm_90a"])
def test_index_grid_numbers(sm):
    m, n = 70, 150
    y = np.zeros((m, n), np.int32)
    _K.run("index_grid", sm, (cdiv(m, 32), cdiv(n, 64), 1), arr(y))
    r, c = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    np.testing.assert_array_equal(y, r * 1000 + c)


@pytest.mark.parametrize("sm, atom_op", [("sm_80", '"cute_nvgpu.mma_sync"'), ("sm_90a", '"cute_nvgpu.wgmma"'),
                                         ("sm_100a", '"sm100.umma"')])
def test_causal_mask_is_recomputed_in_the_fragment_layout(sm, atom_op):
    """The mask (row index >= column index) meets the scores in the MMA's accumulator layout: it is computed
    there (a compare per register at the fragment's coordinates), not written to shared memory and read back:
    the loop body has exactly as many barriers as the unmasked attention's."""
    masked = _lowered("causal", sm)
    plain = str(compile_file(_plain_attention(), sm, stop_after="convert-tileas-to-llvm").module)
    assert masked.count(atom_op) == plain.count(atom_op) > 0
    assert masked.count("gpu.barrier") == plain.count("gpu.barrier")
    assert "arith.cmpi sge" in masked


def _plain_attention() -> str:
    plain = KernelSet({"attn": (ck.attention, ["f16[2]/16", "f16[2]/16", "f16[2]/16", "f32[2]/16", 64, 64, 64])},
                      "tileas-recompute-plain-")
    plain.compiled("attn", "sm_80")
    return f"{plain._dir}/attn.tileirbc"


@pytest.mark.parametrize("sm", ["sm_80", "sm_90a", "sm_100a"])
def test_causal_attention_numbers(sm):
    """130 queries x 130 keys, d = 64 (partial last tiles): softmax over the keys j <= i."""
    rng = np.random.default_rng(3)
    n, d = 130, 64
    q = (rng.standard_normal((n, d)) * 0.3).astype(np.float16)
    k = (rng.standard_normal((n, d)) * 0.3).astype(np.float16)
    v = rng.standard_normal((n, d)).astype(np.float16)
    o = np.zeros((n, d), np.float32)
    _K.compiled("causal", "sm_80")
    module = compile_file(f"{_K._dir}/causal.tileirbc", sm, stop_after="convert-nvgpu-and-gpu-to-nvvm").module
    emulate.launch(module, "causal", (cdiv(n, 64), 1, 1), (128, 1, 1), arr(q) + arr(k) + arr(v) + arr(o))
    s = q.astype(np.float64) @ k.astype(np.float64).T
    s = np.where(np.tril(np.ones((n, n), bool)), s, -math.inf)
    p = np.exp(s - s.max(1, keepdims=True))
    np.testing.assert_allclose(o, (p / p.sum(1, keepdims=True)) @ v.astype(np.float64), atol=2e-3, rtol=0)
