"""Stage 4, convert-tileas-to-llvm: the code the atoms and exchanges emit (IR checks)."""

import os
import re

import pytest
from tileas_test_paths import VISIBLE_CORPUS

from tilecore.compiler import compile_file
from tilecore.errors import TilecoreError
from tilecore.options import CompileOptions

CORPUS = VISIBLE_CORPUS


def _stage4(name, sm="sm_80"):
    res = compile_file(os.path.join(CORPUS, f"{name}.tileirbc"), sm, stop_after="convert-tileas-to-llvm")
    return str(res.module)


def test_no_tile_dialect_survives_and_kernel_shape():
    text = _stage4("vadd_f32")
    assert not re.search(r'"?nv_tile(aa|as)(_term)?\.', text.split("llvm.func", 1)[1])
    assert "scf." not in text  # lowered to cf
    assert "gpu.thread_id  x" in text and "gpu.block_id  x" in text
    assert "llvm.mlir.global internal @__tileas_smem()" in text


def test_vector_copy_atom_for_aligned_1d_views():
    text = _stage4("vadd_f32")
    # 128 elements / 128 threads / vec 1 ... the 1-D tile of 128 uses groups of 4 over 32 owners
    assert len(re.findall(r"llvm\.load %\S+ \{alignment = 16 : i64\} : !llvm.ptr<1> -> vector<4xf32>", text)) == 2
    assert len(re.findall(r"llvm\.store %\S+, %\S+ \{alignment = 16 : i64\} : vector<4xf32>, !llvm.ptr<1>", text)) == 1
    # and the scalar fallback for a partial group at the end of the array
    assert "llvm.load %" in text and "-> f32" in text


def test_scalar_copy_for_dynamic_strides_with_bounds_masks():
    text = _stage4("relu_f16")
    assert "vector<" not in text
    assert text.count("arith.cmpi ult") >= 2  # row and column bounds
    assert "arith.maxnumf" in text


def test_transpose_goes_through_shared_memory():
    text = _stage4("transpose_f32")
    assert "gpu.barrier" in text
    assert re.search(r"llvm\.store %\S+, %\S+ : f32, !llvm.ptr<3>", text)
    # stored at the transposed position, read back as one 16-byte vector per group of 4
    assert re.search(r"llvm\.load %\S+ \{alignment = 16 : i64\} : !llvm.ptr<3> -> vector<4xf32>", text)
    # rows swizzled against bank conflicts: chunk XOR (row / 4) for the 16 stores and the 4 vector loads
    assert text.count("arith.xori") == 16 + 4


def test_row_reduction_uses_warp_shuffles():
    text = _stage4("rownorm_loop_if_f32")
    offsets = re.findall(r"gpu\.shuffle  xor %\S+, %(c\d+_i32)", text)
    assert len(offsets) == 5  # 16, 8, 4, 2, 1 within the 32 lanes of a 128-element row
    assert "math.sqrt" in text and "math.fma" in text


def test_mmaf_f16_runs_through_the_cute_mma_atom():
    """nv_tileas.dot f16 x f16 -> f32 on sm_80 goes through the atom registry: tileas-select-atoms picks the
    cute plugin's mma.sm80.m16n8k16.f16.f32 and stage 4 emits its cute_nvgpu ops. 128x128 over 4 warps:
    a 2 x 2 warp grid, 64 x 64 per warp = 4 x 8 blocks of 16 x 8; per K step 4 A fragments (ldmatrix x4),
    8 B fragments (ldmatrix x2 .trans) and 32 mma. The K loop is pipelined (3 stages of 32 KiB: A and B in
    the 128-byte XOR-swizzled layout, in dynamic shared memory) behind a run-time alignment check (the corpus kernel's strides carry no hints), so
    the loop exists twice: with cp.async copies, and with loads through registers. The accumulator is
    loop-carried in the fragment layout: no f32 goes through shared memory; the result is cast to f16 in
    the fragment layout and converted to the blocked layout once, for the store."""
    res = compile_file(os.path.join(CORPUS, "matmul_f16.tileirbc"), "sm_80", stop_after="tileas-select-atoms")
    assert '#nv_tileas.atom<"mma.sm80.m16n8k16.f16.f32">' in str(res.module)
    text = _stage4("matmul_f16")
    assert "nv_tileas.dot" not in text and "llvm.intr.fma" not in text and "nvvm.mma" not in text
    mmas = [line for line in text.splitlines() if "cute_nvgpu.mma_sync" in line]
    assert len(mmas) == 2 * 32
    for line in mmas:
        assert 'atom = "mma.sm80.m16n8k16.f16.f32"' in line and "shape = array<i32: 16, 8, 16>" in line
        assert 'a_type = "f16"' in line and 'b_type = "f16"' in line and 'acc_type = "f32"' in line
    lds = [line for line in text.splitlines() if "cute_nvgpu.ldmatrix" in line]
    assert sum("num = 4 : i32" in ln and "trans" not in ln for ln in lds) == 2 * 4
    assert sum("num = 2 : i32" in ln and "trans" in ln for ln in lds) == 2 * 8
    # pipelined loop: 128 x 64 and 64 x 128 halves = 1024 16-byte chunks each, 8 per thread per operand, in the
    # prologue's 2 stages and the loop
    copies = [line for line in text.splitlines() if '"cute_nvgpu.cp_async"' in line]
    assert len(copies) == 16 * 3 and all("size = 16 : i32" in ln for ln in copies)
    for n in (0, 1):  # the loop waits until at most S - 2 = 1 group is pending; all after it
        assert text.count(f'"cute_nvgpu.cp_async_wait"() <{{n = {n} : i32}}>') + \
            text.count(f'"cute_nvgpu.cp_async_wait"() {{n = {n} : i32}}') == 1
    assert "tilecore.dynamic_shared_bytes = 98304 : i32" in text
    # the K loops (cf after stage 4) carry the 128 f32 accumulators of the warp's 32 blocks
    heads = [line for line in text.splitlines() if re.match(r"\s*\^bb\d+\(", line)]
    assert any(line.count(": f32") == 128 for line in heads)
    assert not re.findall(r"llvm\.store %\S+, %\S+ : f32, !llvm\.ptr<3>", text)
    # f16 stores: the fallback loop's A and B (64 elements each, copied into its stage by a loop over the
    # thread's 8 chunks: one 16-byte store a chunk), the f16 result (128 registers)
    assert len(re.findall(r"llvm\.store %\S+, %\S+ {alignment = 16 : i64} : vector<8xf16>, !llvm\.ptr<3>", text)) == 2
    assert len(re.findall(r"llvm\.store %\S+, %\S+ : f16, !llvm\.ptr<3>", text)) == 128
    # operands in the 128-byte XOR-swizzled layout (16-byte units of 8-row groups permuted)
    assert "arith.xori" in text
    # barriers: pipelined loop 1 (3 stages) + after it 1; fallback (one stage): before and after the copy, after
    # the loop; conversion 2
    assert text.count("gpu.barrier") == 2 + 3 + 2
    # stage 5 (cute) lowers the atom ops to NVVM
    low = compile_file(os.path.join(CORPUS, "matmul_f16.tileirbc"), "sm_80", stop_after="convert-cute-to-llvm")
    low = str(low.module)
    assert "cute_nvgpu" not in low
    nv = [line for line in low.splitlines() if "nvvm.mma.sync" in line]
    assert len(nv) == 64
    for line in nv:
        assert "shape = #nvvm.shape<m = 16, n = 8, k = 16>" in line
        assert "layoutA = #nvvm.mma_layout<row>" in line and "layoutB = #nvvm.mma_layout<col>" in line
        assert "(vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>" in line
    assert low.count("nvvm.ldmatrix") == 24 and low.count("layout = #nvvm.mma_layout<col>") == 16
    assert low.count("nvvm.cp.async.shared.global") == 16 * 3


def test_mmaf_without_the_cute_plugin_runs_on_the_cuda_cores(monkeypatch):
    """The tensor-core atoms are the cute plugin's: with it disabled, the CUDA-core atom is the only one."""
    from tilecore.plugins import PluginManager

    monkeypatch.setenv("TILECORE_DISABLED_PLUGINS", "cute,thirdparty")
    res = compile_file(os.path.join(CORPUS, "matmul_f16.tileirbc"), "sm_80", plugins=PluginManager(),
                       stop_after="tileas-select-atoms")
    assert '#nv_tileas.atom<"mma.cuda_core.fma">' in str(res.module)


def test_mmaf_fma_option_keeps_the_cuda_cores():
    """``--option tileas.dot=fma``: one scf.for over K carrying the accumulator registers with one
    llvm.intr.fma each, then a barrier before the buffer is reused."""
    res = compile_file(os.path.join(CORPUS, "matmul_f16.tileirbc"), "sm_80",
                       CompileOptions(extra={"tileas.dot": "fma"}), stop_after="convert-tileas-to-llvm")
    text = str(res.module)
    assert "nv_tileas.dot" not in text and "nvvm.mma.sync" not in text
    # the K loop (lowered to cf): a block taking k and the 128 f32 accumulators of 128x128 over 128 threads
    heads = [line for line in text.splitlines() if re.match(r"\s*\^bb\d+\(", line)]
    assert any(line.count("%") == 129 and line.count(": f32") == 128 for line in heads)
    assert text.count("llvm.intr.fma") == 128
    assert text.count("gpu.barrier") == 2


def test_mmaf_bad_dot_option_is_a_located_error():
    with pytest.raises(TilecoreError, match=r"--option tileas.dot=wmma: expected one of mma, fma"):
        compile_file(os.path.join(CORPUS, "matmul_f16.tileirbc"), "sm_80", CompileOptions(extra={"tileas.dot": "wmma"}),
                     stop_after="convert-tileas-to-llvm")


def test_locations_survive_to_llvm():
    text = _stage4("vadd_f32")
    res = compile_file(os.path.join(CORPUS, "vadd_f32.tileirbc"), "sm_80", stop_after="convert-tileas-to-llvm")
    with_locs = res.module.operation.get_asm(enable_debug_info=True)
    assert 'loc("gen_corpus.py":290' in with_locs or "gen_corpus.py\":290" in with_locs
    assert text


def test_memory_ordering_and_scope_reach_the_ptx():
    """acquire / device loads and release / tile-block stores: scalar atomics with that order and scope."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "ordered_copy.cuda_tile.mlir")
    for sm in ("sm_80", "sm_90a", "sm_100a"):
        res = compile_file(src, sm)
        ptx = "\n".join(res.artifacts["ptx"].values()) if isinstance(res.artifacts["ptx"], dict) else \
            res.artifacts["ptx"]
        assert ptx.count("ld.acquire.gpu.global.b32") == 4
        assert ptx.count("st.release.cta.global.b32") == 4
        assert "ld.global.v4" not in ptx  # ordered accesses are never vectorised


def test_two_kernels_in_one_module_get_their_own_scratch():
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "two_kernels.cuda_tile.mlir")
    res = compile_file(src, "sm_80")
    mid = compile_file(src, "sm_80", stop_after="convert-tileas-to-llvm")
    text = str(mid.module)
    assert "@__tileas_smem_cst_global()" in text and "@__tileas_smem_ptr_casts()" in text
    assert res.artifacts["cubin"][:4] == b"\x7fELF"


def test_memory_fence_alias_is_a_full_fence():
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "fence.cuda_tile.mlir")
    for sm in ("sm_80", "sm_90a", "sm_100a"):
        ptx = compile_file(src, sm).artifacts["ptx"]
        ptx = "\n".join(ptx.values()) if isinstance(ptx, dict) else ptx
        assert "fence.sc.sys;" in ptx
