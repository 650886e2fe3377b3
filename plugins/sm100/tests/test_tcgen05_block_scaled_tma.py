"""Block-scaled K loops (cuTile ``mma_scaled``, MXFP8: e4m3 / e5m2 with e8m0 scale factors per 32) pipelined on
sm_100a: A and B come by TMA into the S-stage ring of tileas' pipelined loops (``pipeline.plan`` takes
``nv_tileas.block_scaled_mma`` dots; ``_tma_pipelined_for``), the scale tiles stay loaded in the body and go
through shared memory to tensor memory (``tcgen05.cp``), the atom reads A / B in their stage (a 64-row A is
copied into its layout-F image first). Checked: the stage-4 ops (TMA boxes per stage, the ring's mbarriers, the
scale-factor copies), ptxas + cuobjdump (UTMALDG with the block-scaled UTC*MMA), and numbers in the CPU emulator
against numpy on sizes that are not tile multiples (partial M / N / K tiles: TMA's zero fill is the loads'
padding) with every A / B tile counted as a TMA box; the cp.async form (``--option tileas.tma=off``) too."""

from __future__ import annotations

import os
import re
import sys

import numpy as np
import pytest

from tilecore.compiler import CompileOptions, compile_file

pytest.importorskip("cuda.tile")
pytest.importorskip("tilecore_tileas")
sys.path.insert(0, os.path.dirname(__file__))

import test_tcgen05_block_scaled as bs  # noqa: E402
from emulated_kernels import cdiv  # noqa: E402

# kernel of test_tcgen05_block_scaled -> TMA boxes per stage (A, B: one per swizzle column of K / of N)
PIPED = {"bs_e4m3_loop": 2, "bs_e5m2_loop": 2, "bs_e4m3_m256": 2, "bs_m64_loop": 2, "bs_e4m3_loop_bt": 2,
         "bs_e5m2_loop_tb": 2}
STAGES = 3


def _stage4(name: str, **extra) -> str:
    options = CompileOptions(extra=extra) if extra else None
    return str(compile_file(bs._export(name), "sm_100a", stop_after="convert-tileas-to-llvm", options=options).module)


@pytest.mark.parametrize("name", list(PIPED))
def test_block_scaled_loop_tma_ring(name):
    """The K loop is pipelined: A and B by TMA (one box each per stage: S - 1 stages in the prologue, one per
    iteration), a ring of S mbarriers plus the MMA's; the scale tiles still written per dot and copied to tensor
    memory (``tcgen05.cp``) in both forms of the loop (the TMA ring, and the element-copy form behind the run-time
    alignment check)."""
    text = _stage4(name)
    assert text.count('"cute_nvgpu.tma_load"') == STAGES * PIPED[name]
    assert text.count('"cute_nvgpu.mbarrier_init"') == 1 + STAGES
    dots = text.count('"sm100.umma_commit"')
    assert dots == 2
    per_dot = text.count('"sm100.tmem_cp"') // dots
    assert per_dot >= 2 and text.count('"sm100.tmem_cp"') == dots * per_dot
    assert 'kind = "mxf8f6f4"' in text


def test_block_scaled_m64_copies_its_stage_to_layout_f():
    """A 64-row A: the stage holds the tile (64 rows, TMA-written); the atom reads 128 rows in layout F (each row
    twice), so the dot copies the stage there (a 16-byte unit per thread and step, stored twice) before its MMA;
    B is read in its stage."""
    text = _stage4("bs_m64_loop")
    assert text.count('"cute_nvgpu.tma_load"') == STAGES * 2
    # per dot (both forms of the loop) one 16-byte unit of the stage loaded, stored at its two layout-F rows
    units = re.findall(r"(%\S+) = llvm\.load %\S+ \{alignment = 16 : i64\} : !llvm\.ptr<3> -> vector<4xi32>", text)
    assert len(units) == 2
    for u in units:
        assert len(re.findall(rf"llvm\.store {u}, %\S+ \{{alignment = 16 : i64\}} : vector<4xi32>, !llvm\.ptr<3>",
                              text)) == 2


def _has_constant(text: str, d: int) -> bool:
    return f"arith.constant {d} : i32" in text or f"arith.constant {d - (1 << 32)} : i32" in text


@pytest.mark.parametrize("name, el, n, blocks", [("bs_e4m3_loop_bt", "f8E4M3FN", 64, 4),
                                                 ("bs_e5m2_loop_tb", "f8E5M2", 64, 4)])
def test_block_scaled_k_major_b_stage(name, el, n, blocks):
    """B from a transposed view (``order=(1, 0)``: K contiguous in memory) or transposed after its load
    (``ct.transpose`` of an N x K tile) is staged K-major (TMA boxes of its N x K transpose) and read as it is:
    the instruction descriptors' transpose-B bit (16) is 0 (Table 44: .kind::mxf8f6f4 takes either major), every
    K step's; the MN-major kernel's are 1."""
    text = _stage4(name)
    assert text.count('"cute_nvgpu.tma_load"') == STAGES * 2
    for sid in range(blocks):
        d = bs.instr_desc_bs(el, el, n, sid, sid, b_mn_major=False)
        assert (d >> 16) & 1 == 0 and _has_constant(text, d)
        assert not _has_constant(text, d | 1 << 16)

def test_block_scaled_mn_major_b_descriptors():
    """B loaded as it lies (K x N, N contiguous) is staged MN-major: transpose-B bit 1 in every K step's descriptor."""
    text = _stage4("bs_e4m3_loop")
    assert all(_has_constant(text, bs.instr_desc_bs("f8E4M3FN", "f8E4M3FN", 64, sid, sid)) for sid in range(4))


def test_block_scaled_tma_off_takes_cp_async():
    """``--option tileas.tma=off``: the same ring filled by cp.async (no TMA box)."""
    text = _stage4("bs_e4m3_loop", **{"tileas.tma": "off"})
    assert '"cute_nvgpu.tma_load"' not in text and text.count('"sm100.umma_commit"') == 2
    # A (128 x 128 bytes) and B (128 x 64) in 16-byte chunks, 128 threads: 8 + 4 copies an issue, 3 issues
    assert text.count('"cute_nvgpu.cp_async"') == STAGES * (8 + 4)
    assert text.count('"cute_nvgpu.cp_async_commit"') == STAGES


def test_block_scaled_allow_tma_false_takes_cp_async():
    """cuTile's load hint ``allow_tma=False`` (on B's load; cuTile: "If False, the load will not use TMA"): the
    loop is pipelined by cp.async instead, no TMA box."""
    text = _stage4("bs_e4m3_loop_notma")
    assert '"cute_nvgpu.tma_load"' not in text and text.count('"cute_nvgpu.cp_async"') == STAGES * (8 + 4)
    # the hint as the bytecode reader gives it: a boolean of the op's optimization_hints (per target or default)
    from tilecore_tileas.stage2_tileaa_to_tileas.kernel_spec import hints_for

    from tilecore.mlir import ir
    from tilecore.plugins import get_plugin_manager
    from tilecore.targets import resolve_target

    targets = get_plugin_manager().targets()
    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = True
        attr = ir.Attribute.parse("{default = {allow_tma = false, latency = 3 : i32}, sm_90 = {allow_tma = true}}")
    assert hints_for(attr, resolve_target("sm_100a", targets)) == {"allow_tma": 0, "latency": 3}
    assert hints_for(attr, resolve_target("sm_90a", targets))["allow_tma"] == 1


# e2m1 (MXFP4 / NVFP4 / e2m1 with UE8M0 per 16) kernel -> TMA boxes per stage: A (M x K / 2 bytes, one swizzle
# column: K = 128 is 64 bytes) and, given as its N x K transpose, B; a K x N B is packed along N and stays staged
# piped tiles a stage: A, and B (transposed; or K x N with rows of 32 bytes or more: its bytes, packed along N)
F4_PIPED = {"f4_mxfp4_loop": 2, "f4_mxfp4_loop_bt": 2, "f4_nvfp4_loop_tb": 2, "f4_e8x16_loop_bt": 2}


@pytest.mark.parametrize("name", list(F4_PIPED))
def test_e2m1_loop_tma_ring(name):
    """e2m1 K loops are pipelined: A (row-major M x K: packed along K in memory, as the mxf4 kinds read it) and a
    B given transposed (N x K, by an ``order=(1, 0)`` view or ``ct.transpose``) come by TMA, boxes of the tensor's
    bytes; so does a K x N B (packed along N: ``f4_mxfp4_loop``, N = 64, rows of 32 bytes), which the atom repacks
    along K per dot (every thread a share of the bytes: two nibbles selected by ``n % 2``). The MMA reads the
    stages: its A descriptor's start is in the ring (below the scratch region's shifted base)."""
    text = _stage4(name)
    assert text.count('"cute_nvgpu.tma_load"') == STAGES * F4_PIPED[name]
    assert text.count('"cute_nvgpu.mbarrier_init"') == 1 + STAGES
    assert text.count('"sm100.umma_commit"') == 2 and text.count('"sm100.tmem_cp"') >= 4
    assert re.search(r'kind = "mxf4(nvf4)?"', text)


def test_e2m1_tensor_map_recipe():
    """The tensor maps of packed operands are over the tensor's bytes: UINT8 (0), the innermost extent and the row
    stride the kernel's element counts halved (``"div": 2``), boxes of one swizzle column (64 bytes: K = 128) by the
    tile's rows; a launcher passes zeros for a tensor whose halves are not exact (odd K: the kernel checks and takes
    its element copies)."""
    from tilecore.tensormaps import kernel_recipes, unaligned

    res = compile_file(bs._export("f4_mxfp4_loop_bt"), "sm_100a", stop_after="convert-tileas-to-llvm")
    (recipes,) = kernel_recipes(res.module).values()
    recipes = [r for r in recipes if r.data_type == 0]  # (the other: C's, the epilogue's TMA store)
    assert len(recipes) == 2 and all(r.optional for r in recipes)
    for r, rows in zip(recipes, (128, 64)):  # A: 128 rows, B (N x K): 64
        assert r.box_dim == (64, rows) and r.swizzle == 2
        assert r.global_dim[0].get("div") == 2 and r.global_strides[0].get("div") == 2
        assert "/ 2" in r.describe()
    a = recipes[0]
    params = [0] * (max(x["param"] for x in (*a.global_dim, *a.global_strides)) + 1)
    params[a.global_dim[0]["param"]], params[a.global_dim[1]["param"]], params[a.global_strides[0]["param"]] = 320, 9, 320
    assert a.resolve(params)["global_dim"] == [160, 9] and a.resolve(params)["global_strides"] == [160]
    assert not unaligned(a, params)
    params[a.global_dim[0]["param"]], params[a.global_strides[0]["param"]] = 321, 352
    assert unaligned(a, params)  # 321 elements: half a byte past the last one


@pytest.mark.skipif(not bs.CUOBJDUMP, reason="cuobjdump (nvidia-cuda-cuobjdump) not installed")
@pytest.mark.parametrize("name, kind, boxes", [("f4_mxfp4_loop_bt", "mxf4.block_scale", 2),
                                               ("f4_nvfp4_loop_tb", "mxf4nvf4.block_scale.block16", 2),
                                               ("f4_e8x16_loop_bt", "mxf4nvf4.block_scale.block16", 2),
                                               ("f4_mxfp4_loop", "mxf4.block_scale", 2),
                                               ("f4_nvfp4_single_tb", "mxf4nvf4.block_scale.block16", 2),
                                               ("mma_scaled_f8", "mxf8f6f4.block_scale", 2)])
def test_e2m1_and_single_dot_sass_has_utmaldg(name, kind, boxes, tmp_path):
    """ptxas takes the sm_100a PTX with the TMA loads (``cp.async.bulk.tensor.2d.shared::cluster.global``) of the
    e2m1 operands and of a single dot's (the corpus ``mma_scaled_f8``: no K loop); the SASS has UTMALDG (a K loop:
    the S - 1 prologue stages' and the loop's, per box; a single dot: one per box) and the block-scaled UTC*MMA with UTCCP."""
    import cutile_kernels as ck

    res = compile_file(ck.kernel_path(name) if name == "mma_scaled_f8" else bs._export(name), "sm_100a")
    ptx = res.artifacts["ptx"]
    ptx = ptx if isinstance(ptx, str) else "".join(ptx.values())
    assert f"tcgen05.mma.cta_group::1.kind::{kind}" in ptx
    loop = "loop" in name
    assert len(re.findall(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global", ptx)) == boxes * (STAGES if loop else 1)
    cubin = res.artifacts["cubin"]
    sass = bs._sass(cubin if isinstance(cubin, bytes) else next(iter(cubin.values())), tmp_path)
    assert len(re.findall(r"\bUTMALDG\b", sass)) == boxes * (STAGES if loop else 1)
    mmas = [ln for ln in sass.splitlines() if re.search(r"\bUTC\w*MMA\b", ln)]
    assert mmas and all(re.search(r"UTC\w*MMA\S* .*idesc\[\w+\], tmem\[\w+\]", ln) for ln in mmas), mmas
    assert re.search(r"\bUTCCP\S* tmem\[", sass)


@pytest.mark.skipif(not bs.CUOBJDUMP, reason="cuobjdump (nvidia-cuda-cuobjdump) not installed")
@pytest.mark.parametrize("name", ["bs_e4m3_loop", "bs_m64_loop"])
def test_block_scaled_loop_sass_has_utmaldg(name, tmp_path):
    """ptxas takes the sm_100a PTX; the SASS loads by TMA (UTMALDG: the prologue's and the loop's boxes) and has
    the block-scaled UTC*MMA (scale-factor tensor-memory operand) and UTCCP."""
    res = compile_file(bs._export(name), "sm_100a")
    ptx = res.artifacts["ptx"]
    ptx = ptx if isinstance(ptx, str) else "".join(ptx.values())
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in ptx
    assert "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale" in ptx
    cubin = res.artifacts["cubin"]
    sass = bs._sass(cubin if isinstance(cubin, bytes) else next(iter(cubin.values())), tmp_path)
    assert len(re.findall(r"\bUTMALDG\b", sass)) >= 2
    mmas = [ln for ln in sass.splitlines() if re.search(r"\bUTC\w*MMA\b", ln)]
    assert mmas and all(re.search(r"UTC\w*MMA .*idesc\[\w+\], tmem\[\w+\]", ln) for ln in mmas), mmas
    assert re.search(r"\bUTCCP\S* tmem\[", sass)


@pytest.fixture
def copies(monkeypatch):
    """Counts of the emulator's TMA boxes and cp.async copies during the test."""
    from tilecore.emulate.runtime import DeviceRuntime

    seen = {"tma": 0, "cp_async": 0}
    tma, cp_async = DeviceRuntime.tma, DeviceRuntime.cp_async

    def count_tma(self, ctx, dst, tmap, coords, mbar, flags):
        if flags & 0x100:  # the predicate: a box is copied
            seen["tma"] += 1
        return tma(self, ctx, dst, tmap, coords, mbar, flags)

    def count_cp_async(self, *args):
        seen["cp_async"] += 1
        return cp_async(self, *args)

    monkeypatch.setattr(DeviceRuntime, "tma", count_tma)
    monkeypatch.setattr(DeviceRuntime, "cp_async", count_cp_async)
    return seen


@bs.NUMERIC_SKIP
@pytest.mark.parametrize("name, mnk", [
    ("bs_e4m3_loop", (150, 80, 320)),  # 128 x 64 x 128 tiles: K 2.5 tiles (the last one's scale blocks partial)
    ("bs_e5m2_loop", (200, 48, 208)),
    ("bs_m64_loop", (100, 48, 304)),  # 64-row tiles: the stage copied into layout F per dot
    ("bs_e4m3_m256", (250, 144, 112)),  # one partial 256-row block (six cost 70-120 s of CI)
    ("bs_e4m3_loop_bt", (140, 96, 288)),  # B K-major: its N x K transpose in memory
    ("bs_e5m2_loop_tb", (90, 80, 272)),  # the same, transposed after the load (64-row tiles: layout F too)
])
def test_block_scaled_tma_numbers(name, mnk, copies):
    """Rows of 16-byte multiples (TMA's alignment) on sizes that are not tile multiples: every A / B tile of every
    CTA and K step is one TMA box, and (A * scale_A) @ (B * scale_B) matches numpy within the f32 sum's error."""
    m, n, k = mnk
    tm, tn, tk = bs.KERNELS[name][1][-4:-1]
    c, av, bv = bs._run(name, m, n, k, seed=sum(mnk))
    bs._check(c.astype(np.float64), av, bv)
    assert copies["tma"] == cdiv(m, tm) * cdiv(n, tn) * cdiv(k, tk) * PIPED[name]


@bs.NUMERIC_SKIP
@pytest.mark.parametrize("name, mnk", [("bs_e4m3_loop", (150, 80, 320)), ("bs_m64_loop", (70, 32, 200))])
def test_block_scaled_cp_async_numbers(name, mnk, copies):
    """``--option tileas.tma=off``: the ring is filled by cp.async (16-byte chunks, zero-filled past the edge);
    the same numbers."""
    m, n, k = mnk
    c, av, bv = bs._run(name, m, n, k, seed=sum(mnk), options=CompileOptions(extra={"tileas.tma": "off"}))
    bs._check(c.astype(np.float64), av, bv)
    assert copies["tma"] == 0 and copies["cp_async"] > 0


@bs.NUMERIC_SKIP
@pytest.mark.parametrize("name, mnk", [
    # A by TMA (320 elements: 160-byte rows), B (K x N, packed along N: 48-byte rows) too, repacked along K per dot
    ("f4_mxfp4_loop", (150, 96, 320)),
    ("f4_mxfp4_loop_bt", (140, 100, 288)),  # A and B (N x K) by TMA; K 2.25 tiles
    ("f4_nvfp4_loop_tb", (130, 80, 224)),
    ("f4_e8x16_loop_bt", (70, 40, 352)),  # 64-row tiles: the packed A stage copied into layout F per dot
])
def test_e2m1_tma_numbers(name, mnk, copies):
    """MXFP4 / NVFP4 / UE8M0-per-16 K loops with packed operands by TMA, on sizes that are not tile multiples (rows
    of 32-element multiples: 16-byte aligned bytes): every piped tile of every CTA and K step is one TMA box, and
    (A * scale_A) @ (B * scale_B) matches numpy."""
    m, n, k = mnk
    tm, tn, tk = bs.KERNELS[name][1][-4:-1]
    c, av, bv = bs._f4_run(name, m, n, k, seed=sum(mnk))
    bs._check(c.astype(np.float64), av, bv)
    assert copies["tma"] == cdiv(m, tm) * cdiv(n, tn) * cdiv(k, tk) * F4_PIPED[name]


@bs.NUMERIC_SKIP
@pytest.mark.parametrize("name, mnk", [("f4_mxfp4_loop_bt", (140, 100, 300)), ("f4_e8x16_loop_bt", (70, 40, 333))])
def test_e2m1_unaligned_takes_element_copies(name, mnk, copies):
    """Rows of 150 bytes (K = 300) / of an odd element count (K = 333: a row's last byte holds half an element of
    the next one) fail the run-time check: the loop's element-copy form (nibbles read one by one, zero past the
    edge), no TMA box; the same numbers."""
    c, av, bv = bs._f4_run(name, *mnk, seed=sum(mnk))
    bs._check(c.astype(np.float64), av, bv)
    assert copies["tma"] == 0


@bs.NUMERIC_SKIP
@pytest.mark.parametrize("name, mnk, boxes", [("bs_e4m3_single", (130, 48, 224), 3),  # A: 2 swizzle columns
                                              # A by TMA, B (K x N, 48-byte rows packed along N) too
                                              ("f4_nvfp4_single", (140, 96, 128), 2),
                                              ("f4_nvfp4_single_tb", (140, 100, 96), 2),
                                              ("bs_m64", (100, 80, 64), 2)])  # layout-F copy of the A stage
def test_single_dot_tma_numbers(name, mnk, boxes, copies):
    """A single block-scaled dot (no K loop) takes its tiles by TMA into one stage: a box per swizzle column of every
    piped tile of every CTA; numbers against numpy on sizes that are not tile multiples (TMA's zero fill past the
    tensor's edges)."""
    m, n, k = mnk
    tm, tn = bs.KERNELS[name][1][-4:-2]
    if name.startswith("f4"):
        c, av, bv = bs._f4_run(name, m, n, k, seed=sum(mnk))
    else:
        c, av, bv = bs._run(name, m, n, k, seed=sum(mnk))
    bs._check(c.astype(np.float64), av, bv)
    assert copies["tma"] == cdiv(m, tm) * cdiv(n, tn) * boxes


@bs.NUMERIC_SKIP
def test_single_dot_unaligned_takes_thread_copies(copies):
    """K = 200 with 200-byte rows fails TMA's 16-byte stride alignment at run time: the dot's thread-copy form."""
    c, av, bv = bs._run("bs_m64", 70, 40, 50, seed=3)
    bs._check(c.astype(np.float64), av, bv)
    assert copies["tma"] == 0


@bs.NUMERIC_SKIP
def test_e2m1_cp_async_numbers(copies):
    """``--option tileas.tma=off``: the packed tiles' bytes come by cp.async (16-byte chunks of 32 e2m1, zero-filled
    past the edge); the same numbers, no TMA box."""
    c, av, bv = bs._f4_run("f4_mxfp4_loop_bt", 140, 100, 288, seed=9,
                           options=CompileOptions(extra={"tileas.tma": "off"}))
    bs._check(c.astype(np.float64), av, bv)
    assert copies["tma"] == 0 and copies["cp_async"] > 0
