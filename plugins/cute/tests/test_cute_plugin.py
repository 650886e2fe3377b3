"""The cute plugin: dialects load, stage 5 is declared, its first patterns emit NVVM, atoms register."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tilecore_cute.mma_sm80 import ATOMS, DoubleMma
from tilecore_cute.mma_sm90 import ATOMS as WG_ATOMS

from tilecore.atoms import select_atom
from tilecore.compiler import compile_module
from tilecore.conversion import ConversionError
from tilecore.mlir import ir
from tilecore.mma import G2S_INTERFACE, MMA_INTERFACE, MmaRequest
from tilecore.options import CompileOptions
from tilecore.plugins import PluginManager
from tilecore.targets import resolve_target

KERNEL = """
module attributes {gpu.container_module} {
  gpu.module @m {
    llvm.func @k(%out: !llvm.ptr<1>) attributes {nvvm.kernel} {
      %t = "cute.thread_idx"() : () -> i32
      "cute_nvgpu.fence_view_async_shared"() : () -> ()
      llvm.store %t, %out : i32, !llvm.ptr<1>
      llvm.return
    }
  }
}
"""


@pytest.fixture(scope="module")
def pm():
    return PluginManager()


def lower(pm, text, gpu="sm_90a", stages=("convert-cute-to-llvm",)):
    with pm.make_context():
        m = ir.Module.parse(text)
    res = compile_module(m, resolve_target(gpu, pm.targets()), CompileOptions(emit="ptx"), pm,
                         stages=list(stages))
    return m, res


def op_list(m):
    out = []
    m.operation.walk(lambda op: out.append(op) or ir.WalkResult.ADVANCE, ir.WalkOrder.PRE_ORDER)
    return out


def test_registrations(pm):
    assert {"cute", "cute_nvgpu"} <= set(pm.dialects())
    assert pm.stages()["convert-cute-to-llvm"].plugin == "cute"
    atoms = {n: a for n, a in pm.atoms(resolve_target("sm_80", pm.targets())).items() if a.plugin == "cute"}
    # every atom cute lists has a lowering
    assert set(atoms) == set(ATOMS) | set(WG_ATOMS) | {DoubleMma.name, "copy.sm80.cp_async", "copy.sm90.tma.tile"}
    mma = [a for n, a in atoms.items() if n in ATOMS or n == DoubleMma.name]
    assert all(a.kind == "mma" and a.lower is not None and a.data["interface"] == MMA_INTERFACE for a in mma)
    cp = atoms["copy.sm80.cp_async"]
    assert cp.kind == "copy" and cp.data == {"interface": G2S_INTERFACE, "chunk_bytes": 16}


@pytest.mark.parametrize("req, sm, want", [
    (MmaRequest(128, 128, 64, "f16", "f16", "f32"), "sm_80", "mma.sm80.m16n8k16.f16.f32"),
    (MmaRequest(64, 64, 32, "f16", "f16", "f16"), "sm_80", "mma.sm80.m16n8k16.f16.f16"),
    (MmaRequest(64, 32, 16, "bf16", "bf16", "f32"), "sm_90a", "mma.sm80.m16n8k16.bf16.f32"),
    (MmaRequest(32, 32, 8, "tf32", "tf32", "f32"), "sm_100a", "mma.sm80.m16n8k8.tf32.f32"),
    (MmaRequest(32, 16, 64, "i8", "i8", "i32", a_signed=False), "sm_80", "mma.sm80.m16n8k32.i8.i32"),
    (MmaRequest(64, 64, 64, "f8E4M3FN", "f8E5M2", "f32"), "sm_89", "mma.sm89.m16n8k32.f8.f32"),
    (MmaRequest(64, 64, 64, "f8E4M3FN", "f8E4M3FN", "f32"), "sm_80", None),  # f8 needs sm_89
    (MmaRequest(64, 64, 24, "f16", "f16", "f32"), "sm_80", "mma.sm80.m16n8k8.f16.f32"),  # K not a multiple of 16
    (MmaRequest(64, 64, 12, "f16", "f16", "f32"), "sm_80", None),  # K not a multiple of 8
    (MmaRequest(64, 32, 8, "bf16", "bf16", "f32", arch="sm_90a"), "sm_90a", "mma.sm80.m16n8k8.bf16.f32"),  # K = 8
    (MmaRequest(64, 32, 8, "f16", "f16", "f16", arch="sm_100a"), "sm_100a", "mma.sm80.m16n8k8.f16.f16"),
    (MmaRequest(64, 32, 16, "f8E4M3FN", "f8E4M3FN", "f32", arch="sm_90a"), "sm_90a",
     "mma.sm90a.m64nNk32.f8.f32"),  # K = 16 laid out as 32 (zeros)
    (MmaRequest(64, 32, 16, "i8", "i8", "i32", arch="sm_90a"), "sm_90a", "mma.sm90a.m64nNk32.i8.i32"),
    (MmaRequest(8, 64, 16, "f16", "f16", "f32"), "sm_80", None),  # M not a multiple of 16
    (MmaRequest(256, 256, 64, "f16", "f16", "f32"), "sm_80", None),  # operands exceed the smem budget
    (MmaRequest(64, 64, 16, "f64", "f64", "f64"), "sm_80", "mma.sm80.m8n8k4.f64"),  # DMMA, as tileiras
    (MmaRequest(64, 32, 8, "f64", "f64", "f64", arch="sm_90a"), "sm_90a", "mma.sm80.m8n8k4.f64"),
    (MmaRequest(64, 32, 8, "f64", "f64", "f64", arch="sm_100a"), "sm_100a", "mma.sm80.m8n8k4.f64"),
    (MmaRequest(8, 64, 16, "f64", "f64", "f64"), "sm_80", None),  # M not a multiple of 16
    (MmaRequest(64, 64, 6, "f64", "f64", "f64"), "sm_80", None),  # K not a multiple of 4
    (MmaRequest(64, 64, 16, "f32", "f32", "f64"), "sm_80", None),  # f32 operands: no atom
    (MmaRequest(128, 128, 64, "f16", "f16", "f32", arch="sm_90a"), "sm_90a", "mma.sm90a.m64nNk16.f16.f32"),
    (MmaRequest(64, 64, 32, "bf16", "bf16", "f32", arch="sm_90a"), "sm_90a", "mma.sm90a.m64nNk16.bf16.f32"),
    (MmaRequest(32, 64, 32, "f16", "f16", "f32", arch="sm_90a"), "sm_90a", "mma.sm80.m16n8k16.f16.f32"),  # M < 64
    (MmaRequest(128, 128, 64, "f16", "f16", "f32", arch="sm_90"), "sm_90", "mma.sm80.m16n8k16.f16.f32"),  # not 90a
    (MmaRequest(128, 128, 64, "i8", "i8", "i32", arch="sm_90a"), "sm_90a", "mma.sm90a.m64nNk32.i8.i32"),  # K-major B
    (MmaRequest(128, 128, 64, "f16", "f16", "f32", arch="sm_100a"), "sm_100a", "mma.sm80.m16n8k16.f16.f32"),
])
def test_atom_selection_per_request(pm, req, sm, want):
    if sm not in pm.targets():  # sm_100a comes with the sm100 plugin (not installed with cute alone)
        pytest.skip(f"{sm} needs the plugin that provides it")
    target = resolve_target(sm, pm.targets())
    atoms = {n: a for n, a in pm.atoms(target).items() if a.plugin == "cute"}
    got = select_atom(atoms, "mma", target, replace(req, cc=target.cc))
    assert (got.name if got else None) == want


MMA_KERNEL = """
module attributes {{gpu.container_module}} {{
  gpu.module @m {{
    llvm.func @k(%out: !llvm.ptr<1>, %w: i32, %c: {acc}) attributes {{nvvm.kernel}} {{
      %smem = llvm.mlir.addressof @buf : !llvm.ptr<3>
      %a:4 = "cute_nvgpu.ldmatrix"(%smem) {{num = 4 : i32}} : (!llvm.ptr<3>) -> (i32, i32, i32, i32)
      %b:2 = "cute_nvgpu.ldmatrix"(%smem) {{num = 2 : i32, trans}} : (!llvm.ptr<3>) -> (i32, i32)
      %d:4 = "cute_nvgpu.mma_sync"(%a#0, %a#1, %a#2, %a#3, %b#0, %w, %c, %c, %c, %c) {{atom = "x",
          shape = array<i32: 16, 8, {k}>, a_type = "{at}", b_type = "{bt}", acc_type = "{acc}", num_a = 4 : i32,
          num_b = 2 : i32, operandSegmentSizes = array<i32: 4, 2, 4>}}
          : (i32, i32, i32, i32, i32, i32, {acc}, {acc}, {acc}, {acc}) -> ({acc}, {acc}, {acc}, {acc})
      llvm.store %d#3, %out : {acc}, !llvm.ptr<1>
      llvm.return
    }}
    llvm.mlir.global internal @buf() {{addr_space = 3 : i32, alignment = 16 : i64}} : !llvm.array<4096 x i8>
  }}
}}
"""


@pytest.mark.parametrize("k, at, bt, acc, sm, ptx", [
    (16, "f16", "f16", "f32", "sm_80", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
    (16, "f16", "f16", "f16", "sm_80", "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"),
    (16, "bf16", "bf16", "f32", "sm_80", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
    (8, "tf32", "tf32", "f32", "sm_80", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
    (32, "s8", "u8", "i32", "sm_80", "mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32"),
    (32, "e4m3", "e5m2", "f32", "sm_89", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32"),
])
def test_mma_atom_ops_lower_to_nvvm_and_ptxas_accepts(pm, k, at, bt, acc, sm, ptx):
    """Stage 5 turns cute_nvgpu.ldmatrix / mma_sync into nvvm.ldmatrix / nvvm.mma.sync (inline PTX for the 8-bit
    float types, which MLIR 22's op lacks); the PTX names the instruction and ptxas accepts it."""
    text = MMA_KERNEL.format(k=k, at=at, bt=bt, acc=acc)
    m, _ = lower(pm, text, gpu=sm)
    names = [o.name for o in op_list(m)]
    assert not [n for n in names if n.startswith("cute_nvgpu.")]
    lds = [o for o in op_list(m) if o.name == "nvvm.ldmatrix"]
    assert [str(o.attributes["layout"]) for o in lds] == ["#nvvm.mma_layout<row>", "#nvvm.mma_layout<col>"]
    if at.startswith("e"):
        asm = next(o for o in op_list(m) if o.name == "llvm.inline_asm")
        assert ir.StringAttr(asm.attributes["asm_string"]).value.startswith(ptx + " {$0,$1,$2,$3}")
        assert ir.StringAttr(asm.attributes["constraints"]).value == "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f"
    else:
        mma = next(o for o in op_list(m) if o.name == "nvvm.mma.sync")
        assert str(mma.attributes["shape"]) == f"#nvvm.shape<m = 16, n = 8, k = {k}>"
        assert str(mma.attributes["multiplicandAPtxType"]) == f"#nvvm.mma_type<{at}>"
        assert str(mma.attributes["multiplicandBPtxType"]) == f"#nvvm.mma_type<{bt}>"
        assert ("intOverflowBehavior" in mma.attributes) == (acc == "i32")
    stages = ["convert-cute-to-llvm", "convert-nvgpu-and-gpu-to-nvvm", "attach-nvvm-target", "translate-debug-info",
              "serialize"]
    _, res = lower(pm, text, gpu=sm, stages=stages)
    text_ptx = res.artifacts["ptx"]["m"]
    assert ptx in text_ptx and "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in text_ptx
    assert "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16" in text_ptx
    from tilecore.serialize import ptx_to_cubin

    assert ptx_to_cubin(text_ptx, sm)[:4] == b"\x7fELF"


F64_KERNEL = """
module attributes {gpu.container_module} {
  gpu.module @m {
    llvm.func @k(%out: !llvm.ptr<1>, %a: f64, %b: f64, %c: f64) attributes {nvvm.kernel} {
      %d:2 = "cute_nvgpu.mma_sync"(%a, %b, %c, %c) {atom = "mma.sm80.m8n8k4.f64", shape = array<i32: 8, 8, 4>,
          a_type = "f64", b_type = "f64", acc_type = "f64", num_a = 1 : i32, num_b = 1 : i32,
          operandSegmentSizes = array<i32: 1, 1, 2>} : (f64, f64, f64, f64) -> (f64, f64)
      %s = llvm.fadd %d#0, %d#1 : f64
      llvm.store %s, %out : f64, !llvm.ptr<1>
      llvm.return
    }
  }
}
"""


@pytest.mark.parametrize("sm", ["sm_80", "sm_90a", "sm_100a"])
def test_f64_mma_lowers_to_m8n8k4_and_ptxas_accepts(pm, sm):
    """The f64 atom's half-block op (A, B one f64, C two) becomes nvvm.mma.sync m8n8k4 with f64 operands and a
    two-f64 result; ptxas takes it for every target (DMMA)."""
    if sm not in pm.targets():
        pytest.skip(f"{sm} needs the plugin that provides it")
    m, _ = lower(pm, F64_KERNEL, gpu=sm)
    mma = next(o for o in op_list(m) if o.name == "nvvm.mma.sync")
    assert str(mma.attributes["shape"]) == "#nvvm.shape<m = 8, n = 8, k = 4>"
    assert [str(v.type) for v in mma.operands] == ["f64"] * 4
    assert str(mma.results[0].type) == "!llvm.struct<(f64, f64)>"
    stages = ["convert-cute-to-llvm", "convert-nvgpu-and-gpu-to-nvvm", "attach-nvvm-target", "translate-debug-info",
              "serialize"]
    _, res = lower(pm, F64_KERNEL, gpu=sm, stages=stages)
    assert "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64" in res.artifacts["ptx"]["m"]
    from tilecore.serialize import ptx_to_cubin

    assert ptx_to_cubin(res.artifacts["ptx"]["m"], sm)[:4] == b"\x7fELF"


def test_fence_and_thread_idx_lower_to_nvvm(pm):
    m, _ = lower(pm, KERNEL)
    ops = op_list(m)
    names = [o.name for o in ops]
    assert "cute.thread_idx" not in names and "cute_nvgpu.fence_view_async_shared" not in names
    fence = next(o for o in ops if o.name == "nvvm.fence.proxy")
    assert str(fence.attributes["kind"]) == "#nvvm.proxy_kind<async.shared>"
    assert str(fence.attributes["space"]) == "#nvvm.shared_space<cta>"
    assert "nvvm.read.ptx.sreg.tid.x" in names


def test_through_serialize_ptxas_accepts(pm):
    stages = ["convert-cute-to-llvm", "convert-nvgpu-and-gpu-to-nvvm", "attach-nvvm-target",
              "translate-debug-info", "serialize"]
    _, res = lower(pm, KERNEL, stages=stages)
    ptx = res.artifacts["ptx"]["m"]
    assert "fence.proxy.async.shared::cta" in ptx
    from tilecore.serialize import ptx_to_cubin

    assert ptx_to_cubin(ptx, "sm_90a")[:4] == b"\x7fELF"


def test_surviving_cute_op_fails_stage(pm):
    text = KERNEL.replace('"cute_nvgpu.fence_view_async_shared"() : () -> ()',
                          '%e = "cute_nvgpu.elect_one"() : () -> i1\n      %z = llvm.zext %e : i1 to i32\n'
                          '      llvm.store %z, %out : i32, !llvm.ptr<1>')
    with pytest.raises(ConversionError) as ei:
        lower(pm, text)
    assert "failed to legalize operation 'cute_nvgpu.elect_one' in stage 'convert-cute-to-llvm'" in ei.value.message


CP_ASYNC_KERNEL = """
module attributes {gpu.container_module} {
  gpu.module @m {
    llvm.func @k(%src: !llvm.ptr<1>, %n: i32) attributes {nvvm.kernel} {
      %smem = llvm.mlir.addressof @buf : !llvm.ptr<3>
      "cute_nvgpu.cp_async"(%smem, %src, %n) {size = 16 : i32} : (!llvm.ptr<3>, !llvm.ptr<1>, i32) -> ()
      "cute_nvgpu.cp_async_commit"() : () -> ()
      "cute_nvgpu.cp_async_wait"() {n = 1 : i32} : () -> ()
      llvm.return
    }
    llvm.mlir.global internal @buf() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x i8>
  }
}
"""


def test_cp_async_atom_ops_lower_to_nvvm_and_ptxas_accepts(pm):
    """copy.sm80.cp_async's ops: cp.async.cg 16 bytes with a source size (zero-fill), commit, wait_group."""
    m, _ = lower(pm, CP_ASYNC_KERNEL, gpu="sm_80")
    ops = op_list(m)
    cp = next(o for o in ops if o.name == "nvvm.cp.async.shared.global")
    assert ir.IntegerAttr(cp.attributes["size"]).value == 16 and "cg" in str(cp.attributes["modifier"])
    assert len(cp.operands) == 3  # dst, src, src-size
    assert any(o.name == "nvvm.cp.async.commit.group" for o in ops)
    assert ir.IntegerAttr(next(o for o in ops if o.name == "nvvm.cp.async.wait.group").attributes["n"]).value == 1
    stages = ["convert-cute-to-llvm", "convert-nvgpu-and-gpu-to-nvvm", "attach-nvvm-target", "translate-debug-info",
              "serialize"]
    _, res = lower(pm, CP_ASYNC_KERNEL, gpu="sm_80", stages=stages)
    ptx = res.artifacts["ptx"]["m"]
    assert "cp.async.cg.shared.global" in ptx and "cp.async.commit_group" in ptx and "cp.async.wait_group \t1;" in ptx
    from tilecore.serialize import ptx_to_cubin

    assert ptx_to_cubin(ptx, "sm_80")[:4] == b"\x7fELF"


WGMMA_KERNEL = """
module attributes {gpu.container_module} {
  gpu.module @m {
    llvm.func @k(%out: !llvm.ptr<1>, %da: i64, %db: i64, %x: f32) attributes {nvvm.kernel} {
      %p = llvm.mlir.poison : !llvm.struct<(f32, f32, f32, f32)>
      %c0 = llvm.insertvalue %x, %p[0] : !llvm.struct<(f32, f32, f32, f32)>
      %c1 = llvm.insertvalue %x, %c0[1] : !llvm.struct<(f32, f32, f32, f32)>
      %c2 = llvm.insertvalue %x, %c1[2] : !llvm.struct<(f32, f32, f32, f32)>
      %c = llvm.insertvalue %x, %c2[3] : !llvm.struct<(f32, f32, f32, f32)>
      "cute_nvgpu.wgmma_fence"() : () -> ()
      %d = "cute_nvgpu.wgmma"(%da, %db, %c) {shape = array<i32: 64, 8, 16>, a_type = "f16", b_type = "f16",
          acc_type = "f32"} : (i64, i64, !llvm.struct<(f32, f32, f32, f32)>) -> !llvm.struct<(f32, f32, f32, f32)>
      "cute_nvgpu.wgmma_commit"() : () -> ()
      "cute_nvgpu.wgmma_wait"() {n = 0 : i32} : () -> ()
      %v = llvm.extractvalue %d[3] : !llvm.struct<(f32, f32, f32, f32)>
      llvm.store %v, %out : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
"""


def test_wgmma_atom_ops_lower_to_nvvm_and_ptxas_accepts(pm):
    """The sm_90a warpgroup atom's ops: wgmma.mma_async with A K-major / B N-major (layout row / row), f16 -> f32,
    fence, commit, wait 0."""
    m, _ = lower(pm, WGMMA_KERNEL, gpu="sm_90a")
    ops = op_list(m)
    assert not [o for o in ops if o.name.startswith("cute_nvgpu.")]
    mma = next(o for o in ops if o.name == "nvvm.wgmma.mma_async")
    assert str(mma.attributes["shape"]) == "#nvvm.shape<m = 64, n = 8, k = 16>"
    assert str(mma.attributes["layoutA"]) == str(mma.attributes["layoutB"]) == "#nvvm.mma_layout<row>"
    assert [o.name for o in ops if o.name.startswith("nvvm.wgmma")] == [
        "nvvm.wgmma.fence.aligned", "nvvm.wgmma.mma_async", "nvvm.wgmma.commit.group.sync.aligned",
        "nvvm.wgmma.wait.group.sync.aligned"]
    stages = ["convert-cute-to-llvm", "convert-nvgpu-and-gpu-to-nvvm", "attach-nvvm-target", "translate-debug-info",
              "serialize"]
    _, res = lower(pm, WGMMA_KERNEL, gpu="sm_90a", stages=stages)
    ptx = res.artifacts["ptx"]["m"]
    assert "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16" in ptx and "wgmma.wait_group.sync.aligned \t0;" in ptx
    from tilecore.serialize import ptx_to_cubin

    assert ptx_to_cubin(ptx, "sm_90a")[:4] == b"\x7fELF"


TMA_KERNEL = """
module attributes {gpu.container_module} {
  gpu.module @m {
    llvm.func @k(%tm: !llvm.ptr {llvm.byval = !llvm.array<128 x i8>, llvm.align = 64 : i64, nvvm.grid_constant},
                 %x: i32, %y: i32, %p: i32) attributes {nvvm.kernel} {
      %smem = llvm.mlir.addressof @buf : !llvm.ptr<3>
      %bar = llvm.mlir.addressof @bar : !llvm.ptr<3>
      %n = llvm.mlir.constant(4096 : i32) : i32
      "cute_nvgpu.mbarrier_init"(%bar) : (!llvm.ptr<3>) -> ()
      "cute_nvgpu.mbarrier_arrive_expect_tx"(%bar, %n) : (!llvm.ptr<3>, i32) -> ()
      "cute_nvgpu.fence_view_async_shared"() : () -> ()
      "cute_nvgpu.tma_load"(%smem, %tm, %bar, %x, %y) : (!llvm.ptr<3>, !llvm.ptr, !llvm.ptr<3>, i32, i32) -> ()
      "cute_nvgpu.mbarrier_try_wait_parity"(%bar, %p) : (!llvm.ptr<3>, i32) -> ()
      "cute_nvgpu.mbarrier_inval"(%bar) : (!llvm.ptr<3>) -> ()
      llvm.return
    }
    llvm.mlir.global internal @buf() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<4096 x i8>
    llvm.mlir.global internal @bar() {addr_space = 3 : i32, alignment = 8 : i64} : i64
  }
}
"""


def test_tma_atom_ops_lower_to_nvvm_and_ptxas_accepts(pm):
    """copy.sm90.tma.tile's ops: mbarrier init (one arrival) + its fence, arrive.expect_tx, a 2-D tile-mode
    cp.async.bulk.tensor on the mbarrier, try_wait.parity, inval; the tensor map a grid-constant parameter."""
    m, _ = lower(pm, TMA_KERNEL, gpu="sm_90a")
    names = [o.name for o in op_list(m)]
    for op in ("nvvm.mbarrier.init", "nvvm.fence.mbarrier.init", "nvvm.mbarrier.arrive.expect_tx",
               "nvvm.cp.async.bulk.tensor.shared.cluster.global", "nvvm.mbarrier.try_wait.parity",
               "nvvm.mbarrier.inval", "nvvm.fence.proxy"):
        assert op in names, op
    assert not any(n.startswith("cute_nvgpu.") for n in names)
    stages = ["convert-cute-to-llvm", "convert-nvgpu-and-gpu-to-nvvm", "attach-nvvm-target", "translate-debug-info",
              "serialize"]
    _, res = lower(pm, TMA_KERNEL, gpu="sm_90a", stages=stages)
    ptx = res.artifacts["ptx"]["m"]
    assert ".param .align 64 .b8 k_param_0[128]" in ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" in ptx
    assert "mbarrier.try_wait.parity" in ptx and "fence.proxy.async.shared::cta" in ptx
    from tilecore.serialize import ptx_to_cubin

    assert ptx_to_cubin(ptx, "sm_90a")[:4] == b"\x7fELF"


TMA_STORE_KERNEL = TMA_KERNEL.replace(
    '"cute_nvgpu.mbarrier_inval"(%bar) : (!llvm.ptr<3>) -> ()',
    '"cute_nvgpu.mbarrier_inval"(%bar) : (!llvm.ptr<3>) -> ()\n'
    '      "cute_nvgpu.tma_store"(%tm, %smem, %x, %y, %p) : (!llvm.ptr, !llvm.ptr<3>, i32, i32, i32) -> ()\n'
    '      "cute_nvgpu.bulk_commit_group"() : () -> ()\n'
    '      "cute_nvgpu.bulk_wait_group_read"() {n = 0 : i32} : () -> ()')


def test_tma_store_ops_lower_to_nvvm_and_ptxas_accepts(pm):
    """copy.sm90.tma.tile's store actions: a 3-D tile-mode ``cp.async.bulk.tensor`` shared -> global in a bulk
    group, its commit and its ``.read`` wait (n = 0); ptxas accepts them for sm_90a."""
    from tilecore_cute import copy_sm90

    assert copy_sm90.atoms()[0].data["stores"]
    m, _ = lower(pm, TMA_STORE_KERNEL, gpu="sm_90a")
    ops = {o.name: o for o in op_list(m)}
    for name in ("nvvm.cp.async.bulk.tensor.global.shared.cta", "nvvm.cp.async.bulk.commit.group",
                 "nvvm.cp.async.bulk.wait_group"):
        assert name in ops, name
    assert len(list(ops["nvvm.cp.async.bulk.tensor.global.shared.cta"].operands)) == 2 + 3
    assert "read" in ops["nvvm.cp.async.bulk.wait_group"].attributes
    assert ir_int(ops["nvvm.cp.async.bulk.wait_group"].attributes["group"]) == 0
    stages = ["convert-cute-to-llvm", "convert-nvgpu-and-gpu-to-nvvm", "attach-nvvm-target", "translate-debug-info",
              "serialize"]
    _, res = lower(pm, TMA_STORE_KERNEL, gpu="sm_90a", stages=stages)
    ptx = res.artifacts["ptx"]["m"]
    assert "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group" in ptx
    assert "cp.async.bulk.commit_group" in ptx and "cp.async.bulk.wait_group.read" in ptx
    from tilecore.serialize import ptx_to_cubin

    assert ptx_to_cubin(ptx, "sm_90a")[:4] == b"\x7fELF"


def ir_int(attr) -> int:
    from tilecore.mlir import ir

    return ir.IntegerAttr(attr).value
