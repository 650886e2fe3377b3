"""TMA stores of dot epilogues on sm_90+ (tileas' ``tma_store.py``, cute's ``copy.sm90.tma.tile`` ``store``):
the stage-4 ops, the tensor-map recipe, the PTX / SASS, and the numbers in the emulator on partial tiles (the
hardware's clipping, not masks, keeps the box inside the tensor)."""

from __future__ import annotations

import json
import re

import cutile_kernels as ck
import numpy as np
import pytest
from test_tma_pipeline import _attn_path, _path, _sass_counts

from tilecore import emulate
from tilecore.compiler import compile_file
from tilecore.options import CompileOptions

ct = pytest.importorskip("cuda.tile")


def _stage4(name: str, sm: str = "sm_90a", **options) -> str:
    return str(compile_file(_path(name), sm, CompileOptions(emit="mlir", extra=options),
                            stop_after="convert-tileas-to-llvm").module)


def _recipes(text: str) -> list:
    return json.loads(re.search(r'tilecore.tensor_maps = "(.*?)"', text).group(1).replace("\\22", '"'))


def _global_stores(text: str) -> int:
    return len(re.findall(r"llvm\.store .*!llvm\.ptr<1>", text))


def test_epilogue_store_ops():
    """bf16 128 x 64 x 32 with an f32 C (32 KiB): the accumulator's fragment is written to shared memory
    (row-major, no swizzle), every thread fences the generic proxy, a barrier, thread 0 issues one TMA store of
    the 64 x 128 box at (column, row) = (tile j * 64, tile i * 128), commits and waits for the box to be read,
    a barrier. No global store instruction is left; the map is over C (params 10-14, f32, rows of p13 x 4
    bytes), box [64, 128], no swizzle."""
    text = _stage4("tma_bf16")
    assert text.count('"cute_nvgpu.tma_store"') == 1 and text.count('"cute_nvgpu.bulk_commit_group"') == 1
    assert text.count('"cute_nvgpu.bulk_wait_group_read"() {n = 0 : i32}') == 1
    assert text.count('"cute_nvgpu.fence_view_async_shared"') == 1 + 1  # the load ring's refill, the store
    assert _global_stores(text) == 0
    store = _recipes(text)[-1]
    assert store == {"param": 17, "tensor": 10, "data_type": 7, "global_dim": [{"param": 12}, {"param": 11}],
                     "global_strides": [{"param": 13, "scale": 4}], "box_dim": [64, 128], "element_strides": [1, 1],
                     "swizzle": 0, "interleave": 0, "l2_promotion": 0, "oob_fill": 0, "optional": False}


def test_large_tile_goes_in_bands_and_the_option_turns_it_off():
    """f16 128 x 128 x 64 with an f32 C: 64 KiB is over the 32 KiB exchange budget, so two boxes of 64 rows;
    ``--option tileas.tma_store=off`` (or ``tileas.tma=off``) keeps the plain st.global epilogue and no map
    for C."""
    text = _stage4("tma_f16")
    assert text.count('"cute_nvgpu.tma_store"') == 2 and _recipes(text)[-1]["box_dim"] == [128, 64]
    for opt in ("tileas.tma_store", "tileas.tma"):
        off = _stage4("tma_f16", **{opt: "off"})
        assert "tma_store" not in off and _global_stores(off) > 0
        assert all(r["tensor"] != 10 for r in _recipes(off)) if "tensor_maps" in off else True


def test_no_tma_store_where_it_does_not_win_or_cannot_run():
    """No TMA store for a tile in the blocked layout (an element-wise kernel), nor on sm_80 (no TMA atom: a
    batched matmul's fragment, reshaped to (1, M, N) for its store, is converted there); a batched matmul on
    sm_90a stores its (1, M, N) tile as a 3-D box."""
    bmm = _stage4("tma_bmm")
    assert bmm.count('"cute_nvgpu.tma_store"') == 1 and _global_stores(bmm) == 0
    assert "tma_store" not in _stage4("tma_bmm", "sm_80") and _global_stores(_stage4("tma_bmm", "sm_80")) > 0
    assert "tma_store" not in _stage4("tma_bf16", "sm_80")
    path = _path("tma_bf16").replace("tma_bf16", "relu")
    ck.export_spec(ck.relu_f16, ["f16[2]/16", "f16[2]/16", 16, 64], "relu", path)
    relu = str(compile_file(path, "sm_90a", stop_after="convert-tileas-to-llvm").module)
    assert "tma_store" not in relu


def test_ptx_and_sass():
    """The PTX has the store, the bulk group's commit and its ``.read`` wait (ptxas accepts it); the SASS has
    UTMASTG and no STG. Instruction counts against the st.global epilogue (the README's "where they win")."""
    res = compile_file(_path("tma_bf16"), "sm_90a", CompileOptions(emit="ptx"))
    ptx = "\n".join(res.artifacts["ptx"].values())
    assert "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group" in ptx
    assert "cp.async.bulk.commit_group" in ptx and re.search(r"cp\.async\.bulk\.wait_group\.read\s+0;", ptx)


@pytest.mark.parametrize("kernel", ["tma_bf16", "tma_f16", "attention"])
def test_sass_utmastg_instead_of_stg(kernel, tmp_path):
    path = _attn_path() if kernel == "attention" else _path(kernel)
    c = _sass_counts(compile_file(path, "sm_90a").artifacts["cubin"], tmp_path)
    off = _sass_counts(compile_file(path, "sm_90a", CompileOptions(extra={"tileas.tma_store": "off"})).artifacts["cubin"],
                       tmp_path)
    bands = 2 if kernel == "tma_f16" else 1
    assert c["UTMASTG"] == bands and c["STG"] == 0 and off["UTMASTG"] == 0 and off["STG"] > 0, (c, off)


@pytest.mark.parametrize("name, sm, mnk", [("tma_bf16", "sm_90a", (130, 72, 40)), ("tma_f16", "sm_90a", (200, 136, 72)),
                                           ("tma_bf16", "sm_90", (70, 104, 40)), ("tma_bf16", "sm_100a", (130, 72, 40))])
def test_partial_tiles_are_clipped_by_the_hardware(name, sm, mnk):
    """C = A @ B into the first n columns of a wider array (row pitch n + 12: the map's row stride, the box of
    the last column tile reaching past column n): the elements of C are A @ B and the 12 padding columns (and
    nothing else) keep their sentinel, though the kernel stores whole boxes without masks (wgmma on sm_90a,
    mma.sync on sm_90, tcgen05 on sm_100a: each fragment layout goes through the same box)."""
    from test_mma_atoms import _operand

    m, n, k = mnk
    rng = np.random.default_rng(8)
    el = "bf16" if "bf16" in name else "f16"
    (a, av), (b, bv) = _operand(rng, (m, k), el), _operand(rng, (k, n), el)
    ld = n + 12
    big = np.full((m, ld), -3.0, np.float32)
    tm, tn = (128, 64) if name == "tma_bf16" else (128, 128)

    def arr(x):
        return [x, *[np.int32(d) for d in x.shape], *[np.int32(s // x.itemsize) for s in x.strides]]

    args = arr(a) + arr(b) + [big, np.int32(m), np.int32(n), np.int32(ld), np.int32(1)]
    module = compile_file(_path(name), sm).module
    emulate.launch(module, name, (-(-m // tm), -(-n // tn), 1), (128, 1, 1), args)
    want = av @ bv
    np.testing.assert_allclose(big[:, :n], want, atol=1e-4 * np.abs(want).max(), rtol=0)
    assert (big[:, n:] == -3.0).all()
