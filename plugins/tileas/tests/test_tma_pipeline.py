"""TMA-fed K loops on sm_90 / sm_90a (cute's ``copy.sm90.tma.tile``): the stage-4 ops, the kernel's tensor-map
parameters and recipes, the SASS, and the numbers in the emulator on partial tiles."""

from __future__ import annotations

import json
import os
import re
import subprocess

import cutile_kernels as ck
import numpy as np
import pytest
from emulated_kernels import KernelSet, arr, cdiv

from tilecore.compiler import compile_file
from tilecore.options import CompileOptions

ct = pytest.importorskip("cuda.tile")

KERNELS = {
    # f16 128 x 128 x 64: A rows of 128 bytes (128B swizzle), B two 128B-swizzle columns of 64 elements
    "tma_f16": (ck.matmul_f32acc, ["f16[2]/16", "f16[2]/16", "f32[2]/16", 128, 128, 64]),
    # bf16 128 x 64 x 32: A rows of 64 bytes (64B swizzle), B one 128B column
    "tma_bf16": (ck.matmul_f32acc, ["bf16[2]/16", "bf16[2]/16", "f32[2]/16", 128, 64, 32]),
    # no stride facts: the alignment is only known at run time, so no TMA
    "no_facts": (ck.matmul_f32acc, ["f16[2]", "f16[2]", "f32[2]", 128, 128, 64]),
    # batched: (1, 64, 32) / (1, 32, 64) slices of rank-3 tensors: 3-D boxes (A 64B swizzle, B 128B)
    "tma_bmm": (ck.batched_matmul, ["f16[3]/16", "f16[3]/16", "f32[3]/16", 64, 64, 32]),
    "bmm_no_facts": (ck.batched_matmul, ["bf16[3]", "bf16[3]", "f32[3]", 64, 64, 32]),
}
_K = KernelSet(KERNELS, "tileas-tma-")


def _path(name: str) -> str:
    path = os.path.join(_K._dir, f"{name}.tileirbc")
    if not os.path.exists(path):
        kernel, params = KERNELS[name]
        ck.export_spec(kernel, params, name, path)
    return path


def _kernel_func(text: str) -> str:
    return next(ln for ln in text.splitlines() if "llvm.func @" in ln and "nvvm.kernel" in ln)


def test_tma_k_loop_ops_and_tensor_map_parameters():
    """sm_90a, bf16 128 x 64 x 32 (12 KiB a stage: 3 stages): thread 0 initialises and invalidates 3 mbarriers
    and issues one box for A and one for B per stage (2 stages in the prologue, 1 per iteration, each after a
    proxy fence); every thread waits on the stage's phase; no cp.async. Three tensor-map parameters follow the
    15 cuTile ones (byval 128 bytes, grid constant: A's and B's, and C's for the epilogue's TMA store), their
    recipes in the kernel's tilecore.tensor_maps attribute."""
    text = str(compile_file(_path("tma_bf16"), "sm_90a", stop_after="convert-tileas-to-llvm").module)
    assert text.count('"cute_nvgpu.tma_load"') == 2 * 2 + 2
    assert text.count('"cute_nvgpu.mbarrier_init"') == 3 and text.count('"cute_nvgpu.mbarrier_inval"') == 3
    assert text.count('"cute_nvgpu.mbarrier_try_wait_parity"') == 1
    assert text.count('"cute_nvgpu.mbarrier_arrive_expect_tx"') == 2 + 1
    assert text.count('"cute_nvgpu.fence_view_async_shared"') == 1 + 1  # before a refill; before the TMA store
    assert "cute_nvgpu.cp_async" not in text and text.count('"cute_nvgpu.wgmma"') == 4  # one loop, no fallback
    assert "arith.constant 12288 : i32" in text  # the bytes a stage expects
    sig = _kernel_func(text)
    assert sig.count("nvvm.grid_constant") == 3 and sig.count("llvm.byval = !llvm.array<128 x i8>") == 3
    recipes = json.loads(re.search(r'tilecore.tensor_maps = "(.*?)"', text).group(1).replace("\\22", '"'))
    assert recipes == [
        {"param": 15, "tensor": 0, "data_type": 9, "global_dim": [{"param": 2}, {"param": 1}],
         "global_strides": [{"param": 3, "scale": 2}], "box_dim": [32, 128], "element_strides": [1, 1],
         "swizzle": 2, "interleave": 0, "l2_promotion": 0, "oob_fill": 0, "optional": False},
        {"param": 16, "tensor": 5, "data_type": 9, "global_dim": [{"param": 7}, {"param": 6}],
         "global_strides": [{"param": 8, "scale": 2}], "box_dim": [64, 32], "element_strides": [1, 1],
         "swizzle": 3, "interleave": 0, "l2_promotion": 0, "oob_fill": 0, "optional": False},
        {"param": 17, "tensor": 10, "data_type": 7, "global_dim": [{"param": 12}, {"param": 11}],
         "global_strides": [{"param": 13, "scale": 4}], "box_dim": [64, 128], "element_strides": [1, 1],
         "swizzle": 0, "interleave": 0, "l2_promotion": 0, "oob_fill": 0, "optional": False}]


def test_tma_stages_beyond_48_kib_and_two_boxes_per_tile():
    """f16 128 x 128 x 64 (32 KiB a stage): 3 stages in dynamic shared memory (96 KiB + the mbarriers, over PTX's
    48 KiB of static shared memory: the kernel says how much in tilecore.dynamic_shared_bytes, the emulator
    and the launchers give it); each stage loads A (one 128B-swizzle box of 64 x 128) and B (two boxes of
    64 x 64, one per 128-byte column)."""
    res = compile_file(_path("tma_f16"), "sm_90a", CompileOptions(emit="ptx"))
    text = str(compile_file(_path("tma_f16"), "sm_90a", stop_after="convert-tileas-to-llvm").module)
    assert text.count('"cute_nvgpu.tma_load"') == 3 * 3 and text.count('"cute_nvgpu.mbarrier_init"') == 3
    assert text.count('"cute_nvgpu.mbarrier_arrive_expect_tx"') == 3 and "arith.constant 32768 : i32" in text
    assert "tilecore.dynamic_shared_bytes = 98336 : i32" in _kernel_func(text)
    assert ".extern .shared .align 1024 .b8 __tileas_smem[];" in "\n".join(res.artifacts["ptx"].values())
    from tilecore.batch import kernel_metadata

    (k,) = kernel_metadata(res)["kernels"]
    assert k["dynamic_shared_bytes"] == 98336 and len(k["tensor_maps"]) == 2 + 1  # + C's (the TMA store)


def test_tma_stage5_forms_and_ptx():
    """Stage 5 lowers the atom's ops to nvvm (cp.async.bulk.tensor tile mode on an mbarrier); the PTX takes the
    maps as ``.param .align 64 .b8 ..[128]`` and ptxas accepts it."""
    res = compile_file(_path("tma_f16"), "sm_90a", CompileOptions(emit="ptx"))
    ptx = "\n".join(res.artifacts["ptx"].values())
    assert len(re.findall(r"\.param \.align 64 \.b8 \w+_param_1[56]\[128\]", ptx)) == 2
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" in ptx
    assert "mbarrier.try_wait.parity" in ptx and "fence.proxy.async.shared::cta" in ptx
    assert "mbarrier.inval" in ptx and "cp.async.cg" not in ptx


def _sass_counts(cubin: bytes, tmp) -> dict:
    from tilecore.serialize import find_nvidia_tool

    tool = find_nvidia_tool("cuobjdump")
    if not tool:
        pytest.skip("needs cuobjdump")
    path = tmp / "k.cubin"
    path.write_bytes(cubin)
    sass = subprocess.run([tool, "-sass", str(path)], capture_output=True, text=True, check=True).stdout
    ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", sass)
    return {k: ops.count(k) for k in ("UTMALDG", "UTMASTG", "STG", "HGMMA", "SYNCS", "LDGSTS", "HMMA")}


@pytest.mark.parametrize("kernel, sm, mma", [("tma_f16", "sm_90a", "HGMMA"), ("tma_f16", "sm_90", "HMMA"),
                                             ("corpus", "sm_90a", "HGMMA"), ("attention", "sm_90a", "HGMMA")])
def test_tma_sass(kernel, sm, mma, tmp_path):
    """The cubin loads tiles with UTMALDG on SYNCS (mbarrier) and no LDGSTS: wgmma (HGMMA) on sm_90a, mma.sync
    (HMMA) reading the same swizzled stages on sm_90; the corpus matmul_f16 (no stride facts: TMA behind the
    run-time check) and flash attention too."""
    from tileas_test_paths import VISIBLE_CORPUS

    path = {"tma_f16": _path("tma_f16"), "corpus": os.path.join(VISIBLE_CORPUS, "matmul_f16.tileirbc"),
            "attention": _attn_path()}[kernel]
    c = _sass_counts(compile_file(path, sm).artifacts["cubin"], tmp_path)
    assert c["UTMALDG"] >= 3 and c["SYNCS"] > 0 and c["LDGSTS"] == 0 and c[mma] > 0, c


@pytest.mark.parametrize("name, sm, mnk", [("tma_f16", "sm_90a", (200, 136, 136)), ("tma_bf16", "sm_90a", (130, 72, 40)),
                                           ("tma_f16", "sm_90", (136, 136, 72)), ("tma_bf16", "sm_90a", (64, 8, 8))])
def test_tma_k_loop_numbers(name, sm, mnk):
    """Partial tiles in M, N and K (TMA's zero fill is the loads' zero padding), rings that wrap (phases flip),
    and a K loop shorter than the prologue: C = A @ B."""
    m, n, k = mnk
    rng = np.random.default_rng(3)
    el = "bf16" if "bf16" in name else "f16"
    from test_mma_atoms import _operand

    (a, av), (b, bv) = _operand(rng, (m, k), el), _operand(rng, (k, n), el)
    c = np.zeros((m, n), np.float32)
    tm, tn = KERNELS[name][1][3:5]
    _K.run(name, sm, (cdiv(m, tm), cdiv(n, tn), 1), arr(a) + arr(b) + arr(c))
    want = av @ bv
    np.testing.assert_allclose(c, want, atol=1e-4 * np.abs(want).max(), rtol=0)


def test_tma_off_keeps_cp_async():
    """``--option tileas.tma=off`` keeps the cp.async pipeline and the cuTile parameters."""
    text = str(compile_file(_path("tma_f16"), "sm_90a", CompileOptions(emit="mlir", extra={"tileas.tma": "off"}),
                            stop_after="convert-tileas-to-llvm").module)
    assert "tma_load" not in text and "tilecore.tensor_maps" not in text and "cute_nvgpu.cp_async" in text
    assert "grid_constant" not in _kernel_func(text)


@pytest.mark.parametrize("mnk", [(136, 136, 72), (130, 67, 45)])
def test_tma_behind_the_run_time_alignment_check(mnk):
    """Without stride facts the TMA loop runs behind the kernel's alignment check: its maps are optional (the
    emulator, like a GPU launcher, passes zeros for a tensor whose rows are not 16-byte multiples, and the
    kernel then takes the plain loop). Aligned and odd extents both give A @ B."""
    text = str(compile_file(_path("no_facts"), "sm_90a", stop_after="convert-tileas-to-llvm").module)
    assert text.count('"cute_nvgpu.tma_load"') == 3 * 3 and "cute_nvgpu.cp_async" not in text
    recipes = json.loads(re.search(r'tilecore.tensor_maps = "(.*?)"', text).group(1).replace("\\22", '"'))
    assert [r["optional"] for r in recipes] == [True, True, True]  # A, B and C (the TMA store)
    m, n, k = mnk
    rng = np.random.default_rng(4)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    _K.run("no_facts", "sm_90a", (cdiv(m, 128), cdiv(n, 128), 1), arr(a) + arr(b) + arr(c))
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, atol=1e-4 * np.abs(want).max(), rtol=0)


def test_tma_kernel_through_the_cutile_front_door():
    """tilecore.cutile on the CPU: the contract lists the two tensor maps after the cuTile parameters, the
    emulator encodes them from the arguments, the numbers are A @ B."""
    import tilecore.cutile as tc

    m, n, k = 136, 72, 72
    rng = np.random.default_rng(5)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    kern = tc.compile(ck.matmul_f32acc, (a, b, c, 128, 128, 64), gpu_name="sm_90a")
    desc = kern.contract.describe()
    assert "15 parameters and 3 tensor maps" in desc and "param 15: tensor map of param 0 (f16" in desc
    kern.launch(None, (cdiv(m, 128), cdiv(n, 128)), (a, b, c, 128, 128, 64))
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, atol=1e-4 * np.abs(want).max(), rtol=0)


_ATTN = KernelSet({"attn": (ck.attention, ["f16[2]/16", "f16[2]/16", "f16[2]/16", "f32[2]/16", 64, 64, 64])}, "tileas-attn-")


def _attn_path() -> str:
    path = os.path.join(_ATTN._dir, "attn.tileirbc")
    if not os.path.exists(path):
        ck.export_spec(*_ATTN.table["attn"], "attn", path)
    return path


def test_attention_loop_pipelines_what_it_loads_for_a_dot():
    """A flash-attention loop (reductions, an exchange, Q from before the loop): the tiles it loads for its
    dots come by TMA into a ring, V in row order and K through its transposed view (``order=(1, 0)``): the
    memory's rows are the K-major B wgmma reads (``b_major = "k"``); the body's own shared memory (Q and the
    probabilities written for the dots, the row reductions) lies past the ring. P @ V reads P from registers
    (``wgmma_rs``: tests/test_wgmma_a_registers.py)."""
    text = str(compile_file(_attn_path(), "sm_90a", stop_after="convert-tileas-to-llvm").module)
    assert text.count('"cute_nvgpu.tma_load"') == 2 * 3 and text.count('"cute_nvgpu.wgmma"') == 4
    assert text.count('"cute_nvgpu.wgmma_rs"') == 4
    assert text.count('b_major = "k"') == 4 and text.count('b_major = "n"') == 4
    recipes = json.loads(re.search(r'tilecore.tensor_maps = "(.*?)"', text).group(1).replace("\\22", '"'))
    # K's map is over K as it is in memory (keys x d: Q: params 0-4, K: 5-9, V: 10-14), boxes of 64 keys; Out's
    # (params 15-19) for the TMA store of acc / den (the accumulator's fragment layout)
    assert [(r["tensor"], r["global_dim"], r["box_dim"]) for r in recipes] == [
        (5, [{"param": 7}, {"param": 6}], [64, 64]), (10, [{"param": 12}, {"param": 11}], [64, 64]),
        (15, [{"param": 17}, {"param": 16}], [64, 64])]
    off = str(compile_file(_attn_path(), "sm_90a", CompileOptions(emit="mlir", extra={"tileas.tma": "off"}),
                           stop_after="convert-tileas-to-llvm").module)
    assert off.count('"cute_nvgpu.cp_async"') > 0 and "tma_load" not in off


@pytest.mark.parametrize("sm, options", [("sm_80", {}), ("sm_90a", {}), ("sm_90a", {"tileas.tma": "off"}),
                                         ("sm_100a", {})])
def test_attention_numbers(sm, options):
    """Softmax(Q K^T) V on 130 queries x 200 keys (partial tiles; the kernel does not mask the zero-padded
    keys, so the reference pads them too), d = 64; the transposed K by TMA, and by cp.async."""
    _attn_path()
    rng = np.random.default_rng(6)
    m, n, d = 130, 200, 64
    q = (rng.standard_normal((m, d)) * 0.3).astype(np.float16)
    k = (rng.standard_normal((n, d)) * 0.3).astype(np.float16)
    v = rng.standard_normal((n, d)).astype(np.float16)
    o = np.zeros((m, d), np.float32)
    from tilecore import emulate

    module = compile_file(_attn_path(), sm, CompileOptions(emit="mlir", extra=options),
                          stop_after="convert-nvgpu-and-gpu-to-nvvm").module
    emulate.launch(module, "attn", (cdiv(m, 64), 1, 1), (128, 1, 1), arr(q) + arr(k) + arr(v) + arr(o))
    pad = -n % 64
    kp = np.concatenate([k, np.zeros((pad, d), k.dtype)]).astype(np.float64)
    vp = np.concatenate([v, np.zeros((pad, d), v.dtype)]).astype(np.float64)
    s = q.astype(np.float64) @ kp.T
    p = np.exp(s - s.max(1, keepdims=True))
    np.testing.assert_allclose(o, (p / p.sum(1, keepdims=True)) @ vp, atol=2e-3, rtol=0)


def test_kernel_over_the_targets_shared_memory_is_a_located_error(tmp_path):
    """256 x 256 f32 scans need 256 KiB of shared memory (a scan exchanges the whole tile in one pass; a transpose
    goes in passes since 2026-11-24): more than a CTA may have on sm_86 (99 KiB). ``tilecore compile`` says so at
    the kernel's location, exits 1 and writes no output."""
    from support import run_cli

    src = str(tmp_path / "big.tileirbc")
    ck.export_spec(ck.cumsum_scan_f32, ["f32[2]", "f32[2]", 256, 256], "big", src)
    out = tmp_path / "big.cubin"
    r = run_cli("compile", src, "--gpu-name", "sm_86", "--no-cache", "-o", str(out))
    assert r.returncode == 1 and "Traceback" not in r.stderr and not out.exists()
    assert "cutile_kernels.py:" in r.stderr
    assert "kernel 'big' needs 262144 bytes of shared memory; a CTA on sm_86 has at most 101376" in r.stderr


def test_batched_matmul_loads_3d_boxes():
    """A batched matmul's (1, 64, 32) / (1, 32, 64) slices of rank-3 tensors (reshaped to the dot's 2-D tiles)
    are pipelined by TMA with rank-3 maps: dims and byte strides innermost first (the batch outermost), box
    (inner, rows, 1), three coordinates per ``cp.async.bulk.tensor.3d`` (PTX ISA §9.7.9.25, ``.dim`` .3d);
    ``--emit metadata`` carries the rank-3 recipes; ptxas makes UTMALDG and HGMMA of it, no LDGSTS."""
    text = str(compile_file(_path("tma_bmm"), "sm_90a", stop_after="convert-tileas-to-llvm").module)
    assert text.count('"cute_nvgpu.tma_load"') == 2 * 2 + 2 and "cute_nvgpu.cp_async" not in text
    loads = re.findall(r'"cute_nvgpu.tma_load"\(([^)]*)\)', text)
    assert all(len(x.split(",")) == 3 + 3 for x in loads)  # dst, map, mbarrier, 3 coordinates
    recipes = json.loads(re.search(r'tilecore.tensor_maps = "(.*?)"', text).group(1).replace("\\22", '"'))
    # A: params 0 (base), 1-3 (extents: batch, rows, K), 4-6 (strides); B: 7, 8-10, 11-13; C: 14-20
    assert [(r["tensor"], r["global_dim"], r["global_strides"], r["box_dim"], r["element_strides"], r["swizzle"])
            for r in recipes] == [
        (0, [{"param": 3}, {"param": 2}, {"param": 1}], [{"param": 5, "scale": 2}, {"param": 4, "scale": 2}],
         [32, 64, 1], [1, 1, 1], 2),
        (7, [{"param": 10}, {"param": 9}, {"param": 8}], [{"param": 12, "scale": 2}, {"param": 11, "scale": 2}],
         [64, 32, 1], [1, 1, 1], 3),
        # C's, for the epilogue's TMA store (the accumulator reshaped to (1, 64, 64): a 3-D box, no swizzle)
        (14, [{"param": 17}, {"param": 16}, {"param": 15}], [{"param": 19, "scale": 4}, {"param": 18, "scale": 4}],
         [64, 64, 1], [1, 1, 1], 0)]
    res = compile_file(_path("tma_bmm"), "sm_90a", CompileOptions(emit="ptx"))
    ptx = "\n".join(res.artifacts["ptx"].values())
    assert "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" in ptx
    from tilecore.batch import kernel_metadata

    (k,) = kernel_metadata(res)["kernels"]
    assert [len(r["global_dim"]) for r in k["tensor_maps"]] == [3, 3, 3] and k["tensor_maps"][0]["param"] == 21
    assert "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group" in ptx


def test_batched_matmul_sass(tmp_path):
    c = _sass_counts(compile_file(_path("tma_bmm"), "sm_90a").artifacts["cubin"], tmp_path)
    assert c["UTMALDG"] >= 2 and c["HGMMA"] > 0 and c["SYNCS"] > 0 and c["LDGSTS"] == 0, c
    assert c["UTMASTG"] == 1 and c["STG"] == 0, c


@pytest.mark.parametrize("name, sm, options, bmnk", [
    ("tma_bmm", "sm_90a", {}, (3, 100, 72, 40)), ("tma_bmm", "sm_90a", {"tileas.tma": "off"}, (2, 70, 136, 72)),
    ("tma_bmm", "sm_80", {}, (2, 70, 72, 40)), ("bmm_no_facts", "sm_90a", {}, (2, 100, 72, 104)),
    ("bmm_no_facts", "sm_90a", {}, (2, 65, 33, 45))])
def test_batched_matmul_numbers(name, sm, options, bmnk):
    """C[b] = A[b] @ B[b] on sizes that are not tile multiples in M, N and K (TMA's zero fill of the 3-D box,
    or cp.async's), batches read through the map's third dimension; without stride facts the maps are
    optional (odd extents: the launcher passes zeros and the kernel takes its plain loop). C is stored by a 3-D
    TMA box (clipped) on sm_90a, by st.global from the fragment reshaped to (1, M, N) on sm_80."""
    from test_mma_atoms import _operand

    from tilecore import emulate

    bt, m, n, k = bmnk
    el = "bf16" if "no_facts" in name else "f16"
    rng = np.random.default_rng(7)
    (a, av), (b, bv) = _operand(rng, (bt, m, k), el), _operand(rng, (bt, k, n), el)
    c = np.zeros((bt, m, n), np.float32)
    _path(name)
    module = compile_file(_path(name), sm, CompileOptions(emit="mlir", extra=options),
                          stop_after="convert-nvgpu-and-gpu-to-nvvm").module
    emulate.launch(module, name, (cdiv(m, 64), cdiv(n, 64), bt), (128, 1, 1), arr(a) + arr(b) + arr(c))
    want = av @ bv
    np.testing.assert_allclose(c, want, atol=1e-4 * np.abs(want).max(), rtol=0)


@ct.kernel
def matmul_counted(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """A K loop over element offsets whose loads are indexed by a counter the loop carries (TileGym's ``tile += 1``)."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0.0, dtype=ct.float32)
    kt = 0
    for _k0 in range(0, A.shape[1], TK):
        a = ct.load(A, index=(i, kt), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(kt, j), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
        kt += 1
    ct.store(C, index=(i, j), tile=acc)


def test_loads_indexed_by_a_loop_carried_counter_are_pipelined():
    """Loads indexed by an iteration argument the body yields as ``arg + 1`` are piped as the induction variable's
    (the counter at iteration n is init + n): TMA boxes for A and B, the numbers on partial tiles. They were
    loaded into registers every iteration (MLA decode TD = 512 on sm_90a: 4688 -> 3640 bytes of stack a thread)."""
    import tilecore.cutile as tc

    rng = np.random.default_rng(5)
    a = rng.standard_normal((70, 104)).astype(np.float16)  # K = 104: 3 tiles of 32 and a partial one
    b = rng.standard_normal((104, 40)).astype(np.float16)
    c = np.zeros((70, 40), np.float32)
    args = (a, b, c, 64, 32, 32)
    tc.launch(None, (2, 2), matmul_counted, args, gpu_name="sm_90a")
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=2e-3, atol=2e-3)
    k = tc.compile(matmul_counted, args, gpu_name="sm_90a")
    assert sorted(m.tensor for m in k.contract.tensor_maps) == [0, 5, 10]  # A, B (the loop) and C (the store)
