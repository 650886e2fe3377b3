"""Device functions whose signatures or bodies carry nvgpu values (issue 15): stage 6 lowers them to
``llvm.func`` with the LLVM types of ``types.py``, calls and returns included, and ptxas accepts the
kernels that call them (sm_90a).

One test per type family (tensor map, mbarrier group + token, warpgroup descriptor + accumulator,
memrefs in global / workgroup memory with a device async token), then values carried by loops and
branches, then bad input (a located error, the module untouched).
"""

from __future__ import annotations

import pytest
from support import compile_text, walk_ops
from tilecore_nvgpu_nvvm import types as nvgpu_types

from tilecore.errors import TilecoreError
from tilecore.mlir import ir
from tilecore.plugins import PluginManager
from tilecore.serialize import ptx_to_cubin

STAGE = "convert-nvgpu-and-gpu-to-nvvm"
FULL = [STAGE, "attach-nvvm-target", "translate-debug-info", "serialize"]
WG = "#gpu.address_space<workgroup>"
GL = "#gpu.address_space<global>"

ALIASES = f"""!tm = !nvgpu.tensormap.descriptor<tensor = memref<8x32xf32, 3>, swizzle = none, l2promo = none, oob = zero, interleave = none>
!bar = !nvgpu.mbarrier.group<memorySpace = {WG}>
!bars = !nvgpu.mbarrier.group<memorySpace = {WG}, num_barriers = 4>
!tok = !nvgpu.mbarrier.token
!tmA = !nvgpu.tensormap.descriptor<tensor = memref<64x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!tmB = !nvgpu.tensormap.descriptor<tensor = memref<8x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!dA = !nvgpu.warpgroup.descriptor<tensor = memref<64x16xf16, 3>>
!dB = !nvgpu.warpgroup.descriptor<tensor = memref<16x8xf16, 3>>
!acc = !nvgpu.warpgroup.accumulator<fragmented = vector<64x8xf32>>
"""
ACC_STRUCT = "!llvm.struct<(struct<(f32, f32, f32, f32)>)>"


@pytest.fixture(scope="module")
def pm():
    mp = pytest.MonkeyPatch()
    mp.setenv("TILECORE_DISABLED_PLUGINS", "thirdparty")
    yield PluginManager()
    mp.undo()


def module(body: str) -> str:
    return f"{ALIASES}\nmodule attributes {{gpu.container_module}} {{\n  gpu.module @m {{\n{body}\n  }}\n}}\n"


def lower(pm, text, stages=(STAGE,), emit="mlir"):
    return compile_text(pm, text, "sm_90a", stages, emit)


def llvm_func(m, name):
    return next(o for o in walk_ops(m, "llvm.func") if ir.StringAttr(o.attributes["sym_name"]).value == name)


def signature(m, name) -> tuple[list[str], str]:
    """(argument types, result type or "void") of the defined ``llvm.func @name``."""
    fn = llvm_func(m, name)
    args = [str(a.type) for a in fn.regions[0].blocks[0].arguments]
    returns = [o for o in walk_ops(fn) if o.name == "llvm.return"]
    return args, str(returns[0].operands[0].type) if len(returns[0].operands) else "void"


def calls(m, callee) -> list:
    """The ``llvm.call @callee`` ops outside the C wrappers (upstream's convert-gpu-to-nvvm adds a
    ``_mlir_ciface_`` wrapper per func.func, which calls it too)."""
    out = []
    for fn in walk_ops(m, "llvm.func"):
        if ir.StringAttr(fn.attributes["sym_name"]).value.startswith("_mlir_ciface_"):
            continue
        out += [o for o in walk_ops(fn, "llvm.call")
                if "callee" in o.attributes and str(o.attributes["callee"]) == f"@{callee}"]
    return out


def only_llvm_nvvm(m) -> list[str]:
    return [o.name for o in walk_ops(m) if not o.name.startswith(("llvm.", "nvvm."))
            and o.name not in ("builtin.module", "gpu.module")]


def ptxas_accepts(pm, text, needles):
    _, res = lower(pm, text, stages=FULL, emit="ptx")
    ptx = res.artifacts["ptx"]["m"]
    flat = " ".join(ptx.split())
    for needle in needles:
        assert needle in flat, needle
    assert ptx_to_cubin(ptx, "sm_90a")[:4] == b"\x7fELF"
    return ptx


def memref_fields(space: str, rank: int) -> list[str]:
    """Upstream's calling convention for a memref argument: its descriptor's fields, one argument each."""
    p = f"!llvm.ptr<{space}>" if space else "!llvm.ptr"
    return [p, p, "i64"] + ["i64"] * (2 * rank)


# -- tensor map ------------------------------------------------------------------------------------

TMA = module(f"""    func.func @load_tile(%tm: !tm, %bar: !bar, %buf: memref<8x32xf32, {WG}>) {{
      %c0 = arith.constant 0 : index
      nvgpu.tma.async.load %tm[%c0, %c0], %bar[%c0] to %buf : !tm, !bar -> memref<8x32xf32, {WG}>
      return
    }}
    func.func @prefetch(%tm: !tm) -> !tm {{
      nvgpu.tma.prefetch.descriptor %tm : !tm
      return %tm : !tm
    }}
    gpu.func @k(%tm: !tm) workgroup(%buf : memref<8x32xf32, {WG}>) kernel {{
      %c0 = arith.constant 0 : index
      %n = arith.constant 1 : index
      %bar = nvgpu.mbarrier.create -> !bar
      nvgpu.mbarrier.init %bar[%c0], %n : !bar
      %t2 = func.call @prefetch(%tm) : (!tm) -> !tm
      func.call @load_tile(%t2, %bar, %buf) : (!tm, !bar, memref<8x32xf32, {WG}>) -> ()
      gpu.return
    }}""")


def test_tensor_map_argument_feeds_a_tma_load(pm):
    m, _ = lower(pm, TMA)
    assert only_llvm_nvvm(m) == []
    args, result = signature(m, "load_tile")
    assert args == ["!llvm.ptr", "!llvm.ptr<3>", *memref_fields("3", 2)] and result == "void"
    assert signature(m, "prefetch") == (["!llvm.ptr"], "!llvm.ptr")  # a tensor map returned too
    assert signature(m, "k") == (["!llvm.ptr"], "void")
    (call,) = calls(m, "load_tile")
    assert [str(v.type) for v in call.operands] == args
    (load,) = walk_ops(m, "nvvm.cp.async.bulk.tensor.shared.cluster.global")
    assert str(load.operands[1].type) == "!llvm.ptr"  # the tensor map slot: the function's argument
    ptxas_accepts(pm, TMA, ["cp.async.bulk.tensor.2d.shared::cluster.global", "prefetch.tensormap",
                            ".func load_tile"])


# -- mbarrier group and token ------------------------------------------------------------------------

MBAR = module("""    func.func @arrive(%bars: !bars, %i: index) -> !tok {
      %t = nvgpu.mbarrier.arrive %bars[%i] : !bars -> !tok
      return %t : !tok
    }
    func.func @done(%bars: !bars, %i: index, %t: !tok) -> i1 {
      %d = nvgpu.mbarrier.test.wait %bars[%i], %t : !bars, !tok
      return %d : i1
    }
    gpu.func @k(%out: !llvm.ptr<1>) kernel {
      %c2 = arith.constant 2 : index
      %n = arith.constant 128 : index
      %bars = nvgpu.mbarrier.create -> !bars
      nvgpu.mbarrier.init %bars[%c2], %n : !bars
      %t = func.call @arrive(%bars, %c2) : (!bars, index) -> !tok
      %d = func.call @done(%bars, %c2, %t) : (!bars, index, !tok) -> i1
      llvm.store volatile %d, %out : i1, !llvm.ptr<1>
      gpu.return
    }""")


def test_mbarrier_group_and_token_cross_calls(pm):
    m, _ = lower(pm, MBAR)
    assert only_llvm_nvvm(m) == []
    assert signature(m, "arrive") == (["!llvm.ptr<3>", "i64"], "i64")  # group: its first word; token: i64
    assert signature(m, "done") == (["!llvm.ptr<3>", "i64", "i64"], "i1")
    (done,) = calls(m, "done")
    assert str(done.operands[2].owner.results[0].type) == "i64"  # the token flows as i64, no cast left
    assert walk_ops(m, "nvvm.mbarrier.arrive") and walk_ops(m, "nvvm.mbarrier.test.wait")
    ptxas_accepts(pm, MBAR, ["mbarrier.arrive.shared", "mbarrier.test_wait.shared", ".func (.param .b64 func_retval0) "
                             "arrive"])


# -- warpgroup descriptor and accumulator ------------------------------------------------------------

WGMMA = module(f"""    func.func @mma(%a: !dA, %b: !dB) -> !acc {{
      %z = nvgpu.warpgroup.mma.init.accumulator -> !acc
      %r = nvgpu.warpgroup.mma %a, %b, %z : !dA, !dB, !acc -> !acc
      return %r : !acc
    }}
    func.func @store(%acc: !acc, %d: memref<64x8xf32, {WG}>) {{
      nvgpu.warpgroup.mma.store %acc, %d : !acc to memref<64x8xf32, {WG}>
      return
    }}
    gpu.func @k(%tA: !tmA, %tB: !tmB) workgroup(%a : memref<64x64xf16, 3>, %b: memref<8x64xf16, 3>,
                                                %d: memref<64x8xf32, {WG}>) kernel {{
      %dA = nvgpu.warpgroup.generate.descriptor %a, %tA : memref<64x64xf16, 3>, !tmA -> !dA
      %dB = nvgpu.warpgroup.generate.descriptor %b, %tB : memref<8x64xf16, 3>, !tmB -> !dB
      %acc = func.call @mma(%dA, %dB) : (!dA, !dB) -> !acc
      func.call @store(%acc, %d) : (!acc, memref<64x8xf32, {WG}>) -> ()
      gpu.return
    }}""")


def test_warpgroup_accumulator_result_and_descriptor_arguments(pm):
    m, _ = lower(pm, WGMMA)
    assert only_llvm_nvvm(m) == []
    assert signature(m, "mma") == (["i64", "i64"], ACC_STRUCT)
    assert signature(m, "store") == ([ACC_STRUCT, *memref_fields("3", 2)], "void")
    (mma,) = calls(m, "mma")
    assert str(mma.results[0].type) == ACC_STRUCT
    assert [str(v.type) for v in calls(m, "store")[0].operands][0] == ACC_STRUCT
    ptxas_accepts(pm, WGMMA, ["wgmma.fence.sync.aligned", "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16",
                              "wgmma.commit_group.sync.aligned"])


# -- memrefs in global and workgroup memory, device async token -------------------------------------

COPY = module(f"""    func.func @issue(%g: memref<64x64xf32, {GL}>, %s: memref<8x64xf32, {WG}>, %i: index)
        -> !nvgpu.device.async.token {{
      %c0 = arith.constant 0 : index
      %t = nvgpu.device_async_copy %g[%i, %c0], %s[%c0, %c0], 4 : memref<64x64xf32, {GL}> to memref<8x64xf32, {WG}>
      return %t : !nvgpu.device.async.token
    }}
    func.func @wait(%t: !nvgpu.device.async.token) {{
      %g = nvgpu.device_async_create_group %t
      nvgpu.device_async_wait %g {{numGroups = 0 : i32}}
      return
    }}
    gpu.func @k(%g: memref<64x64xf32, {GL}>) workgroup(%s : memref<8x64xf32, {WG}>) kernel {{
      %i = gpu.thread_id x
      %t = func.call @issue(%g, %s, %i) : (memref<64x64xf32, {GL}>, memref<8x64xf32, {WG}>, index)
          -> !nvgpu.device.async.token
      func.call @wait(%t) : (!nvgpu.device.async.token) -> ()
      gpu.return
    }}""")


def test_memref_arguments_in_global_and_workgroup_memory_and_a_device_async_token(pm):
    m, _ = lower(pm, COPY)
    assert only_llvm_nvvm(m) == []
    assert signature(m, "issue") == ([*memref_fields("1", 2), *memref_fields("3", 2), "i64"], "i32")
    assert signature(m, "wait") == (["i32"], "void")  # a device async token is i32
    (cp,) = walk_ops(m, "nvvm.cp.async.shared.global")
    assert [str(v.type) for v in cp.operands[:2]] == ["!llvm.ptr<3>", "!llvm.ptr<1>"]
    ptxas_accepts(pm, COPY, ["cp.async.ca.shared.global", "cp.async.commit_group", "cp.async.wait_group 0"])


def test_llvm_func_body_with_nvgpu_values(pm):
    """An llvm.func cannot have nvgpu types in its signature (its parser wants LLVM types), only in its body."""
    text = module("""    llvm.func @g(%n: i64) -> i1 {
      %c0 = arith.constant 0 : index
      %ni = arith.index_cast %n : i64 to index
      %bar = nvgpu.mbarrier.create -> !bar
      nvgpu.mbarrier.init %bar[%c0], %ni : !bar
      %t = nvgpu.mbarrier.arrive %bar[%c0] : !bar -> !tok
      %d = nvgpu.mbarrier.test.wait %bar[%c0], %t : !bar, !tok
      llvm.return %d : i1
    }""")
    m, _ = lower(pm, text)
    assert only_llvm_nvvm(m) == []
    assert signature(m, "g") == (["i64"], "i1")


# -- values carried by loops and branches ------------------------------------------------------------

LOOP = module("""    func.func @mainloop(%a: !dA, %b: !dB, %n: index, %c: i1, %tm: !tm, %tm2: !tm) -> (!acc, !tm) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %z = nvgpu.warpgroup.mma.init.accumulator -> !acc
      %r = scf.for %i = %c0 to %n step %c1 iter_args(%x = %z) -> (!acc) {
        %d = nvgpu.warpgroup.mma %a, %b, %x : !dA, !dB, !acc -> !acc
        scf.yield %d : !acc
      }
      %t = scf.if %c -> (!tm) {
        scf.yield %tm : !tm
      } else {
        scf.yield %tm2 : !tm
      }
      %u = arith.select %c, %t, %tm : !tm
      nvgpu.tma.prefetch.descriptor %u : !tm
      return %r, %u : !acc, !tm
    }""")


def test_loop_carried_accumulator_and_branch_carried_tensor_map(pm):
    m, _ = lower(pm, LOOP)
    assert only_llvm_nvvm(m) == []
    args, result = signature(m, "mainloop")
    assert args == ["i64", "i64", "i64", "i1", "!llvm.ptr", "!llvm.ptr"]
    assert result == f"!llvm.struct<({ACC_STRUCT[len('!llvm.'):]}, ptr)>"  # two results: one struct
    fn = llvm_func(m, "mainloop")
    carried = [str(a.type) for b in list(fn.regions[0].blocks)[1:] for a in b.arguments]
    assert ACC_STRUCT in carried and "!llvm.ptr" in carried  # loop header and if-join block arguments
    assert len(walk_ops(m, "llvm.inline_asm")) == 1  # the one wgmma.mma_async, inside the loop


def native_passes_run(pm, text) -> str:
    """The upstream pipelines stage 6 ran on ``text`` (its Python patterns and native passes, as the stage does)."""
    from tilecore.conversion import apply_conversion
    from tilecore.options import CompileOptions
    from tilecore.targets import resolve_target

    target, opts = resolve_target("sm_90a", pm.targets()), CompileOptions()
    with pm.make_context():
        m = ir.Module.parse(text)
    stats = apply_conversion(m, None, pm.patterns(STAGE, target, opts), pm.type_converter(opts),
                             native_passes=pm.native_passes(STAGE, target, opts), stage=STAGE,
                             compile_target=target, options=opts)
    return " ".join(stats.native_passes)


def test_structured_lowerings_run_only_where_needed(pm):
    """convert-scf-to-cf / expand-strided-metadata cost ~0.1-0.4 s on a 100k-op module: only run with such ops."""
    ran = native_passes_run(pm, MBAR)
    assert "convert-gpu-to-nvvm" in ran
    assert "convert-scf-to-cf" not in ran and "expand-strided-metadata" not in ran
    ran = native_passes_run(pm, LOOP)
    assert "convert-scf-to-cf" in ran and "expand-strided-metadata" not in ran


def test_memref_views_of_arguments(pm):
    text = module(f"""    func.func @load_half(%tm: !tm, %bar: !bar, %buf: memref<16x32xf32, {WG}>) {{
      %c0 = arith.constant 0 : index
      %v = memref.subview %buf[8, 0] [8, 32] [1, 1] : memref<16x32xf32, {WG}> to
          memref<8x32xf32, strided<[32, 1], offset: 256>, {WG}>
      nvgpu.tma.async.load %tm[%c0, %c0], %bar[%c0] to %v : !tm, !bar -> memref<8x32xf32, strided<[32, 1], offset: 256>, {WG}>
      return
    }}""")
    m, _ = lower(pm, text)
    assert only_llvm_nvvm(m) == []
    (load,) = walk_ops(m, "nvvm.cp.async.bulk.tensor.shared.cluster.global")
    # the destination: the argument's aligned pointer advanced by the view's offset (256 floats)
    consts = [ir.IntegerAttr(o.attributes["value"]).value for o in walk_ops(m, "llvm.mlir.constant")
              if isinstance(o.results[0].type, ir.IntegerType)]
    assert 256 in consts


# -- bad input: a located error, the module untouched ------------------------------------------------

def _fails(pm, text):
    with pm.make_context():
        m = ir.Module.parse(text)
    before = str(m)
    from tilecore.compiler import compile_module
    from tilecore.options import CompileOptions
    from tilecore.targets import resolve_target

    with pytest.raises(TilecoreError) as ei:
        compile_module(m, resolve_target("sm_90a", pm.targets()), CompileOptions(), pm, stages=[STAGE])
    assert str(m) == before
    return ei.value


def test_accumulator_without_an_llvm_form_is_a_located_error(pm):
    bad = "!nvgpu.warpgroup.accumulator<fragmented = vector<32x8xf32>>"
    e = _fails(pm, module(f"    func.func @f(%x: i32, %a: {bad}) {{\n      return\n    }}"))
    assert e.location == "-:13:5"
    assert e.message.startswith(f"argument #1 of 'func.func' has type {bad} without an LLVM form")
    assert "M a multiple of 64" in e.message


def test_carried_value_without_an_llvm_form_is_a_located_error(pm):
    bad = "!nvgpu.warpgroup.accumulator<fragmented = vector<64x12xf32>>"
    e = _fails(pm, module(f"""    func.func @f(%n: index, %i: i64, %p: !llvm.ptr) {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %a = builtin.unrealized_conversion_cast %i : i64 to {bad}
      %r = scf.for %k = %c0 to %n step %c1 iter_args(%x = %a) -> ({bad}) {{
        llvm.store %i, %p : i64, !llvm.ptr
        scf.yield %x : {bad}
      }}
      return
    }}"""))
    assert e.location == "-:17:12"
    assert e.message.startswith(f"operand #3 of 'scf.for' has type {bad} without an LLVM form")
    assert "N a multiple of 8" in e.message


def test_nvgpu_type_without_a_row_is_a_located_error(pm, monkeypatch):
    monkeypatch.setattr(nvgpu_types, "TYPE_ROWS", tuple(r for r in nvgpu_types.TYPE_ROWS
                                                         if r[0] != "!nvgpu.tensormap.descriptor"))
    e = _fails(pm, module("    func.func private @ext(!tm)"))
    assert e.location == "-:13:5"
    assert "argument #0 of 'func.func' has type !nvgpu.tensormap.descriptor" in e.message
    assert e.message.endswith("without an LLVM form: no LLVM type for " + e.message.split("has type ", 1)[1]
                              .split(" without", 1)[0])


def test_integer_memory_space_barrier_group(pm):
    text = module("""    func.func @f(%b: !nvgpu.mbarrier.group<memorySpace = 3 : i64, num_barriers = 2>, %n: index) {
      %c1 = arith.constant 1 : index
      nvgpu.mbarrier.init %b[%c1], %n : !nvgpu.mbarrier.group<memorySpace = 3 : i64, num_barriers = 2>
      return
    }""")
    m, _ = lower(pm, text)
    assert signature(m, "f") == (["!llvm.ptr<3>", "i64"], "void")


def test_init_accumulator_without_an_llvm_form_is_a_located_error(pm):
    bad = "!nvgpu.warpgroup.accumulator<fragmented = vector<64x16xbf16>>"
    e = _fails(pm, module(f"""    func.func @f(%c: i1, %p: !llvm.ptr) {{
      %z = nvgpu.warpgroup.mma.init.accumulator -> {bad}
      %s = arith.select %c, %z, %z : {bad}
      llvm.store %c, %p : i1, !llvm.ptr
      return
    }}"""))
    assert e.location == "-:14:12"
    assert e.message.startswith("'nvgpu.warpgroup.mma.init.accumulator': a warpgroup accumulator holds")
