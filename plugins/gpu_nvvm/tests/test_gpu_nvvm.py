"""gpu_nvvm: one test per row of spec note 3's gpu tables, per diagnostic, and end to end through ptxas."""

from __future__ import annotations

import importlib.util

import pytest
from support import compile_text, walk_ops
from tilecore_gpu_nvvm.libdevice_math import FAST_F32, LIBDEVICE
from tilecore_gpu_nvvm.stage import STAGE

from tilecore.errors import TilecoreError
from tilecore.mlir import ir
from tilecore.plugins import PluginManager
from tilecore.serialize import ptx_to_cubin

FULL = [STAGE, "attach-nvvm-target", "translate-debug-info", "serialize"]


@pytest.fixture(scope="module")
def pm(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("TILECORE_DISABLED_PLUGINS", "thirdparty")
    yield PluginManager()
    mp.undo()


def kernel(body: str, args: str = "%out: !llvm.ptr<1>", attrs: str = "") -> str:
    return f"""module attributes {{gpu.container_module}} {{
  gpu.module @m {{
    gpu.func @k({args}) kernel {"attributes {" + attrs + "}" if attrs else ""} {{
{body}
      gpu.return
    }}
  }}
}}"""


def lower(pm, text, gpu="sm_80", stages=(STAGE,), emit="mlir"):
    return compile_text(pm, text, gpu, stages, emit)


ops = walk_ops


def names(m):
    return [o.name for o in ops(m)]


def callees(m):
    return [ir.FlatSymbolRefAttr(o.attributes["callee"]).value for o in ops(m, "llvm.call")]


def store(v, ty):
    return f"      llvm.store {v}, %out : {ty}, !llvm.ptr<1>"


# -- index queries ----------------------------------------------------------------------

INDEX_ROWS = [
    ("gpu.thread_id", "tid", True), ("gpu.block_id", "ctaid", True), ("gpu.block_dim", "ntid", True),
    ("gpu.grid_dim", "nctaid", True), ("gpu.cluster_id", "clusterid", True),
    ("gpu.cluster_dim", "nclusterid", True), ("gpu.cluster_block_id", "cluster.ctaid", True),
    ("gpu.subgroup_size", "warpsize", False), ("gpu.lane_id", "laneid", False),
]


@pytest.mark.parametrize("src,reg,per_axis", INDEX_ROWS)
def test_index_query_rows(pm, src, reg, per_axis):
    for axis in ("x", "y", "z") if per_axis else ("",):
        suffix = " : index" if src == "gpu.subgroup_size" else ""
        body = (f"      %i = {src} {axis}{suffix}\n      %v = arith.index_cast %i : index to i32\n" + store("%v", "i32"))
        m, _ = lower(pm, kernel(body), gpu="sm_90a")
        want = f"nvvm.read.ptx.sreg.{reg}" + (f".{axis}" if axis else "")
        reads = ops(m, want)
        assert len(reads) == 1, names(m)
        assert str(reads[0].results[0].type) == "i32"
        assert src not in names(m)


def test_index_query_range_from_known_sizes(pm):
    body = ("      %t = gpu.thread_id y\n      %b = gpu.block_dim x\n      %g = gpu.block_id z\n"
            "      %s = arith.addi %t, %b : index\n      %s2 = arith.addi %s, %g : index\n"
            "      %v = arith.index_cast %s2 : index to i32\n" + store("%v", "i32"))
    m, _ = lower(pm, kernel(body, attrs="known_block_size = array<i32: 128, 2, 1>, "
                                       "known_grid_size = array<i32: 8, 4, 3>"))
    rng = {o.name: str(o.attributes["range"]) for o in ops(m) if o.name.startswith("nvvm.read.ptx.sreg")}
    assert rng["nvvm.read.ptx.sreg.tid.y"] == "#llvm.constant_range<i32, 0, 2>"
    assert rng["nvvm.read.ptx.sreg.ntid.x"] == "#llvm.constant_range<i32, 128, 129>"
    assert rng["nvvm.read.ptx.sreg.ctaid.z"] == "#llvm.constant_range<i32, 0, 3>"


# -- barrier --------------------------------------------------------------------------------

def test_barrier_is_one_aligned_cta_barrier_without_control_flow(pm):
    body = "      %c = arith.constant 1 : i32\n" + store("%c", "i32") + "\n      gpu.barrier\n" + store("%c", "i32")
    m, _ = lower(pm, kernel(body))
    seq = [n for n in names(m) if n in ("llvm.store", "nvvm.barrier0", "llvm.br", "llvm.cond_br")]
    assert seq == ["llvm.store", "nvvm.barrier0", "llvm.store"]
    fn = ops(m, "llvm.func")[0]
    assert len(list(fn.regions[0].blocks)) == 1


# -- shuffles -----------------------------------------------------------------------------

@pytest.mark.parametrize("mode,kind", [("xor", "bfly"), ("up", "up"), ("down", "down"), ("idx", "idx")])
def test_shuffle_rows(pm, mode, kind):
    body = (f"      %o = arith.constant 1 : i32\n      %w = arith.constant 32 : i32\n      %x = arith.constant 2.0 : f32\n"
            f"      %r, %ok = gpu.shuffle {mode} %x, %o, %w : f32\n"
            "      %z = arith.uitofp %ok : i1 to f32\n      %s = arith.addf %r, %z : f32\n" + store("%s", "f32"))
    m, _ = lower(pm, kernel(body))
    (shfl,) = ops(m, "nvvm.shfl.sync")
    assert str(shfl.attributes["kind"]) == f"#nvvm<shfl_kind {kind}>"
    assert "return_value_and_is_valid" in shfl.attributes
    assert str(shfl.results[0].type) == "!llvm.struct<(f32, i1)>"
    assert len(ops(m, "llvm.extractvalue")) == 2
    assert "llvm.lshr" in names(m)  # member mask = -1 >> (32 - width)


def test_shuffle_without_used_validity_returns_value_only(pm):
    body = ("      %o = arith.constant 1 : i32\n      %w = arith.constant 16 : i32\n      %x = arith.constant 7 : i32\n"
            "      %r, %ok = gpu.shuffle down %x, %o, %w : i32\n" + store("%r", "i32"))
    m, _ = lower(pm, kernel(body))
    (shfl,) = ops(m, "nvvm.shfl.sync")
    assert "return_value_and_is_valid" not in shfl.attributes and str(shfl.results[0].type) == "i32"


# -- subgroup reduce ----------------------------------------------------------------------

def reduce_body(op, ty, value, extra=""):
    return (f"      %x = arith.constant {value} : {ty}\n      %r = gpu.subgroup_reduce {op} %x {extra}: ({ty}) -> {ty}\n"
            + store("%r", ty))


@pytest.mark.parametrize("op,kind", [("add", "add"), ("minsi", "min"), ("maxui", "umax"), ("xor", "xor")])
def test_subgroup_reduce_i32_uses_redux_on_sm80(pm, op, kind):
    m, _ = lower(pm, kernel(reduce_body(op, "i32", 3)))
    (r,) = ops(m, "nvvm.redux.sync")
    assert str(r.attributes["kind"]) == f"#nvvm<redux_kind {kind}>"
    assert not ops(m, "nvvm.shfl.sync")


def test_subgroup_reduce_f32_add_is_a_butterfly_tree(pm):
    m, _ = lower(pm, kernel(reduce_body("add", "f32", "1.0")))
    shfls = ops(m, "nvvm.shfl.sync")
    assert len(shfls) == 5 and all(str(s.attributes["kind"]) == "#nvvm<shfl_kind bfly>" for s in shfls)
    assert len(ops(m, "llvm.fadd")) == 5
    assert not ops(m, "nvvm.redux.sync")


def test_subgroup_reduce_cluster_size_limits_tree(pm):
    m, _ = lower(pm, kernel(reduce_body("add", "i32", 1, "cluster(size = 8) ")))
    assert len(ops(m, "nvvm.shfl.sync")) == 3 and not ops(m, "nvvm.redux.sync")


@pytest.mark.skipif(importlib.util.find_spec("tilecore_sm100") is None, reason="sm_100a needs the sm100 plugin")
def test_subgroup_reduce_f32_max_uses_redux_on_sm100a(pm):
    m, _ = lower(pm, kernel(reduce_body("maxnumf", "f32", "1.0")), gpu="sm_100a")
    (r,) = ops(m, "nvvm.redux.sync")
    assert str(r.attributes["kind"]) == "#nvvm<redux_kind fmax>"
    m80, _ = lower(pm, kernel(reduce_body("maxnumf", "f32", "1.0")), gpu="sm_80")
    assert not ops(m80, "nvvm.redux.sync") and len(ops(m80, "nvvm.shfl.sync")) == 5


# -- libdevice math ---------------------------------------------------------------------------

def math_body(op, ty, fast=False):
    kind = LIBDEVICE[op][0]
    fm = " fastmath<afn>" if fast else ""
    if kind == "predicate":
        return (f"      %x = arith.constant 1.5 : {ty}\n      %p = {op} %x : {ty}\n"
                "      %v = arith.extui %p : i1 to i32\n" + store("%v", "i32"))
    if kind == "powi":
        return (f"      %x = arith.constant 1.5 : {ty}\n      %n = arith.constant 3 : i32\n"
                f"      %r = {op} %x, %n : {ty}, i32\n" + store("%r", ty))
    operands = {"unary": "%x", "binary": "%x, %x", "ternary": "%x, %x, %x"}[kind]
    return f"      %x = arith.constant 1.5 : {ty}\n      %r = {op} {operands}{fm} : {ty}\n" + store("%r", ty)


@pytest.mark.parametrize("op", sorted(LIBDEVICE))
@pytest.mark.parametrize("ty,col", [("f32", 1), ("f64", 2)])
def test_libdevice_rows(pm, op, ty, col):
    m, _ = lower(pm, kernel(math_body(op, ty)))
    assert callees(m) == [LIBDEVICE[op][col]]
    decl = [o for o in ops(m, "llvm.func") if ir.StringAttr(o.attributes["sym_name"]).value == LIBDEVICE[op][col]]
    assert len(decl) == 1
    assert op not in names(m)


@pytest.mark.parametrize("op", ["math.sqrt", "math.exp", "math.atan2", "math.isnan"])
def test_libdevice_f16_is_promoted_to_f32_and_truncated_back(pm, op):
    m, _ = lower(pm, kernel(math_body(op, "f16")))
    assert callees(m) == [LIBDEVICE[op][1]]
    assert ops(m, "llvm.fpext")
    if LIBDEVICE[op][0] != "predicate":
        (t,) = ops(m, "llvm.fptrunc")
        assert str(t.results[0].type) == "f16"


@pytest.mark.parametrize("op", sorted(FAST_F32))
def test_libdevice_fastmath_selects_fast_variant(pm, op):
    m, _ = lower(pm, kernel(math_body(op, "f32", fast=True)))
    assert callees(m) == [FAST_F32[op]]


def test_vector_math_is_scalarised_before_dispatch(pm):
    body = ("      %x = arith.constant dense<[1.0, 4.0, 9.0, 16.0]> : vector<4xf32>\n"
            "      %r = math.sqrt %x : vector<4xf32>\n" + store("%r", "vector<4xf32>"))
    m, _ = lower(pm, kernel(body))
    assert callees(m) == ["__nv_sqrtf"] * 4
    assert len(ops(m, "llvm.extractelement")) == 4 or len(ops(m, "vector.extract")) == 4 or \
        len(ops(m, "llvm.insertelement")) == 4


def test_unscalarisable_vector_math_is_rejected_not_dispatched(pm):
    body = ("      %x = arith.constant 1.0 : f32\n      %v = vector.broadcast %x : f32 to vector<[4]xf32>\n"
            "      %r = math.sqrt %v : vector<[4]xf32>\n      %e = vector.extract %r[0] : f32 from vector<[4]xf32>\n"
            + store("%e", "f32"))
    with pytest.raises(TilecoreError) as ei:
        lower(pm, kernel(body))
    assert ei.value.message == ("'math.sqrt' on vector<[4]xf32> reaches libdevice dispatch unscalarised (only "
                                "fixed-size vectors are scalarised; libdevice functions are scalar)")
    assert ei.value.location == "-:6:12"


# -- rows lowered through upstream's convert-gpu-to-nvvm (run after our patterns) -----------

def test_assert_calls_assertfail_with_exact_signature(pm):
    body = "      %c = arith.constant true\n      cf.assert %c, \"boom\"\n"
    m, _ = lower(pm, kernel(body))
    fails = [o for o in ops(m, "llvm.func") if ir.StringAttr(o.attributes["sym_name"]).value == "__assertfail"]
    assert len(fails) == 1
    assert str(ir.TypeAttr(fails[0].attributes["function_type"]).value) == \
        "!llvm.func<void (ptr, ptr, i32, ptr, i64)>"
    assert "__assertfail" in callees(m)
    assert ops(m, "llvm.cond_br")
    globs = [ir.StringAttr(g.attributes["sym_name"]).value for g in ops(m, "llvm.mlir.global")]
    assert any("assert" in g for g in globs) and len(globs) >= 3


def test_printf_calls_vprintf_with_format_global_and_buffer(pm):
    body = "      %x = arith.constant 3 : i32\n      gpu.printf \"x=%d\\n\", %x : i32\n"
    m, _ = lower(pm, kernel(body))
    assert callees(m) == ["vprintf"]
    assert ops(m, "llvm.alloca")  # packed argument buffer
    assert any("printfFormat" in ir.StringAttr(g.attributes["sym_name"]).value for g in ops(m, "llvm.mlir.global"))


def test_dynamic_shared_memory_is_an_addrspace3_global(pm):
    body = ("      %s = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>\n"
            "      %c0 = arith.constant 0 : index\n      %v = memref.load %s[%c0] : memref<?xi8, #gpu.address_space<workgroup>>\n"
            + store("%v", "i8"))
    m, _ = lower(pm, kernel(body))
    shared = [g for g in ops(m, "llvm.mlir.global") if "addr_space" in g.attributes]
    assert shared and ir.IntegerAttr(shared[0].attributes["addr_space"]).value == 3


def test_gpu_func_becomes_llvm_func_with_kernel_attrs(pm):
    m, _ = lower(pm, kernel("", attrs="known_block_size = array<i32: 128, 1, 1>"))
    (fn,) = [f for f in ops(m, "llvm.func") if ir.StringAttr(f.attributes["sym_name"]).value == "k"]
    assert "nvvm.kernel" in fn.attributes
    assert str(fn.attributes["nvvm.maxntid"]) == "array<i32: 128, 1, 1>"  # launch bound from known_block_size
    assert "llvm.return" in names(m)
    assert [n for n in names(m) if n.startswith("gpu.")] == ["gpu.module"]


# -- strict target ----------------------------------------------------------------------------

def test_surviving_gpu_op_fails_with_location_and_plugins(pm):
    body = ("      %x = arith.constant 1.0 : f32\n      %r, %ok = gpu.rotate %x, 1, 32 : f32\n" + store("%r", "f32"))
    with pytest.raises(TilecoreError) as ei:
        lower(pm, kernel(body))
    assert ei.value.message == (
        "failed to legalize operation 'gpu.rotate' in stage 'convert-nvgpu-and-gpu-to-nvvm' (no Python pattern; "
        "native pass 'gpu.module(convert-gpu-to-nvvm{index-bitwidth=64})' from gpu_nvvm)")
    assert ei.value.location == "-:5:17"


def test_strict_target_rejects_any_gpu_op_but_gpu_module(pm):
    from tilecore_gpu_nvvm.stage import legality

    target = legality(None, None)
    with pm.make_context():
        m = ir.Module.parse(kernel("      gpu.barrier\n"))
    verdict = {o.name: target.is_legal(o) for o in ops(m)}
    assert verdict["gpu.module"] and not verdict["gpu.func"] and not verdict["gpu.barrier"]
    assert not verdict["gpu.return"]


# -- end to end: every family through ptxas ---------------------------------------------------

FAMILIES = {
    "index": "      %i = gpu.thread_id x\n      %v = arith.index_cast %i : index to i32\n" + store("%v", "i32"),
    "barrier": "      gpu.barrier\n",
    "shuffle": ("      %o = arith.constant 1 : i32\n      %w = arith.constant 32 : i32\n      %x = arith.constant 2.0 : f32\n"
                "      %r, %ok = gpu.shuffle xor %x, %o, %w : f32\n" + store("%r", "f32")),
    "reduce": reduce_body("add", "f32", "1.0"),
    "redux": reduce_body("add", "i32", 1),
    "math": math_body("math.exp", "f32") + "\n" + math_body("math.isnan", "f64").replace("%x", "%y").replace(
        "%p", "%q").replace("%v", "%w"),
    "assert": "      %c = arith.constant true\n      cf.assert %c, \"boom\"\n",
    "printf": "      %x = arith.constant 3 : i32\n      gpu.printf \"x=%d\\n\", %x : i32\n",
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_end_to_end_ptxas_accepts(pm, family):
    _, res = lower(pm, kernel(FAMILIES[family]), gpu="sm_80", stages=FULL, emit="ptx")
    ptx = res.artifacts["ptx"]["m"]
    assert ".entry k(" in ptx
    assert ptx_to_cubin(ptx, "sm_80")[:4] == b"\x7fELF"


def test_cluster_queries_end_to_end_on_sm90a(pm):
    body = "      %i = gpu.cluster_block_id x\n      %v = arith.index_cast %i : index to i32\n" + store("%v", "i32")
    _, res = lower(pm, kernel(body), gpu="sm_90a", stages=FULL, emit="ptx")
    ptx = res.artifacts["ptx"]["m"]
    assert "%cluster_ctaid.x" in ptx
    assert ptx_to_cubin(ptx, "sm_90a")[:4] == b"\x7fELF"
