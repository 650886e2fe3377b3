"""The conversion driver: dispatch order, type bridging, legality reports, failure atomicity."""

from __future__ import annotations

import pytest

from tilecore.conversion import (
    ConversionError,
    ConversionTarget,
    FunctionPattern,
    NativePass,
    Pattern,
    apply_conversion,
    order_patterns,
)
from tilecore.errors import LoweringError, TilecoreError
from tilecore.mlir import dialects, ir
from tilecore.typeconv import TypeConverter

KERNEL = """
gpu.module @m {
  gpu.func @k(%a: index) kernel {
    %t = gpu.thread_id x loc("k.py":3:5)
    %s = arith.addi %t, %a : index loc("k.py":4:7)
    gpu.printf "%d", %s : index
    gpu.return
  }
}
"""


def parse(text=KERNEL):
    ctx = ir.Context()
    with ctx:
        return ir.Module.parse(text)


def op_names(module):
    names = []

    def cb(op):
        names.append(op.name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(cb, ir.WalkOrder.PRE_ORDER)
    return names


def read_sreg(register):
    """A rewrite function: the root becomes ``nvvm.read.ptx.sreg.<register>`` cast to index."""

    def rewrite(op, rw):
        i32 = ir.IntegerType.get_signless(32)
        with rw.ip:
            r = ir.Operation.create(f"nvvm.read.ptx.sreg.{register}", results=[i32])
            c = dialects.arith.index_cast(ir.IndexType.get(), r.results[0])
        rw.replace(op, [c])

    return rewrite


tid_to_sreg = read_sreg("tid.x")
tid_to_laneid = read_sreg("laneid")


def no_thread_id():
    return ConversionTarget("t").add_illegal_op("gpu.thread_id")


def test_pattern_fires_and_is_counted():
    m = parse()
    p = FunctionPattern("gpu.thread_id", tid_to_sreg, name="Tid")
    p.plugin = "demo"
    stats = apply_conversion(m, no_thread_id(), [p])
    names = op_names(m)
    assert "gpu.thread_id" not in names
    assert "nvvm.read.ptx.sreg.tid.x" in names
    assert stats.fired == {"demo:Tid": 1}
    assert stats.applied == 1


def test_higher_benefit_wins_and_ties_break_by_plugin_name():
    low = FunctionPattern("gpu.thread_id", tid_to_sreg, benefit=1, name="Low")
    high = FunctionPattern("gpu.thread_id", tid_to_laneid, benefit=5, name="High")
    low.plugin, high.plugin = "a", "b"
    assert [p.name for p in order_patterns([low, high])["gpu.thread_id"]] == ["High", "Low"]
    m = parse()
    apply_conversion(m, no_thread_id(), [low, high])
    assert "nvvm.read.ptx.sreg.laneid" in op_names(m)

    x = FunctionPattern("gpu.thread_id", tid_to_laneid, name="X")
    y = FunctionPattern("gpu.thread_id", tid_to_sreg, name="Y")
    x.plugin, y.plugin = "zeta", "alpha"
    assert [p.plugin for p in order_patterns([x, y])["gpu.thread_id"]] == ["alpha", "zeta"]
    m = parse()
    apply_conversion(m, no_thread_id(), [x, y])
    assert "nvvm.read.ptx.sreg.tid.x" in op_names(m)


def test_match_false_falls_through_to_next_pattern():
    picky = FunctionPattern("gpu.thread_id", tid_to_laneid, match_fn=lambda op: False, benefit=9, name="Picky")
    other = FunctionPattern("gpu.thread_id", tid_to_sreg, name="Other")
    m = parse()
    stats = apply_conversion(m, no_thread_id(), [picky, other])
    assert stats.fired == {"Other": 1}


def test_failure_names_every_survivor_with_location_and_plugins_and_leaves_module_unchanged():
    m = parse()
    before = str(m)
    noop = FunctionPattern("arith.addi", tid_to_sreg, match_fn=lambda op: False, name="Never")
    noop.plugin = "arithplug"
    target = ConversionTarget("t").add_illegal_op("gpu.thread_id", "arith.addi")
    with pytest.raises(ConversionError) as ei:
        apply_conversion(m, target, [noop], stage="demo-stage")
    err = ei.value
    assert [s[0] for s in err.survivors] == ["gpu.thread_id", "arith.addi"]
    assert err.location == "k.py:3:5"
    assert "failed to legalize operation 'gpu.thread_id' in stage 'demo-stage'" in err.message
    assert "no plugin has a pattern for it" in err.message
    assert "k.py:4:7: illegal op 'arith.addi' survived stage 'demo-stage' (patterns from: arithplug)" in err.notes[0]
    assert str(m) == before


def test_lowering_error_stops_and_reports_op_location_without_mutating():
    m = parse()
    before = str(m)

    def refuse(op, rw):
        raise LoweringError("thread ids are not allowed here", op)

    with pytest.raises(TilecoreError) as ei:
        apply_conversion(m, no_thread_id(), [FunctionPattern("gpu.thread_id", refuse)])
    assert ei.value.location == "k.py:3:5"
    assert ei.value.message == "thread ids are not allowed here"
    assert str(m) == before


def test_plugin_bug_becomes_located_internal_error():
    m = parse()

    def buggy(op, rw):
        raise KeyError("oops")

    p = FunctionPattern("gpu.thread_id", buggy, name="Buggy")
    p.plugin = "bad"
    with pytest.raises(TilecoreError) as ei:
        apply_conversion(m, no_thread_id(), [p])
    assert "internal error in pattern bad:Buggy on 'gpu.thread_id': KeyError" in ei.value.message
    assert ei.value.location == "k.py:3:5"


def test_type_change_is_bridged_with_unrealized_casts_and_reconciled():
    """index -> i64 via the shared converter: producer and user converted separately, casts vanish."""
    text = """
    func.func @f(%a: i64, %b: i64) -> i64 {
      %x = arith.index_cast %a : i64 to index
      %y = arith.index_cast %b : i64 to index
      %s = arith.addi %x, %y : index
      %r = arith.index_cast %s : index to i64
      return %r : i64
    }"""
    m = parse(text)
    conv = TypeConverter()

    class AddToLLVM(Pattern):
        root = "arith.addi"

        def match(self, op):
            return isinstance(op.results[0].type, ir.IndexType)

        def rewrite(self, op, rw):
            a, b = rw.operands(op)
            assert a.type == ir.IntegerType.get_signless(64)
            with rw.ip:
                new = ir.Operation.create("llvm.add", results=[a.type], operands=[a, b])
            rw.replace(op, [new])

    class IndexCastToNothing(Pattern):
        root = "arith.index_cast"

        def rewrite(self, op, rw):
            (v,) = rw.operands(op)
            rw.replace(op, [rw.cast(v, rw.convert_type(op.results[0].type))])

    target = ConversionTarget("t").add_illegal_op("arith.addi", "arith.index_cast")
    apply_conversion(m, target, [AddToLLVM(), IndexCastToNothing()], conv)
    names = op_names(m)
    assert "llvm.add" in names
    assert "builtin.unrealized_conversion_cast" not in names
    assert "arith.index_cast" not in names


def test_unresolvable_cast_is_reported_when_target_forbids_it():
    m = parse()
    target = no_thread_id().add_illegal_op("builtin.unrealized_conversion_cast")

    def to_i32_only(op, rw):
        i32 = ir.IntegerType.get_signless(32)
        with rw.ip:
            r = ir.Operation.create("nvvm.read.ptx.sreg.tid.x", results=[i32])
        rw.replace(op, [r.results[0]])  # bridged back to index by a cast nobody removes

    with pytest.raises(ConversionError) as ei:
        apply_conversion(m, target, [FunctionPattern("gpu.thread_id", to_i32_only)])
    assert "builtin.unrealized_conversion_cast" in ei.value.message


def test_dynamic_legality_callbacks():
    m = parse()
    target = ConversionTarget("t").add_dynamically_legal_op(
        "arith.addi", lambda op: "keep" in op.attributes)
    with pytest.raises(ConversionError, match="arith.addi"):
        apply_conversion(m, target, [])
    dial = ConversionTarget("t").add_dynamically_legal_dialect("gpu", lambda op: op.name != "gpu.printf")
    with pytest.raises(ConversionError, match="gpu.printf"):
        apply_conversion(parse(), dial, [])
    strict = ConversionTarget("t", unknown_legal=False).add_legal_dialect("gpu", "arith")
    apply_conversion(parse(), strict, [])


def test_native_pass_runs_after_python_patterns():
    m = parse("""
    module attributes {gpu.container_module} {
      gpu.module @m {
        gpu.func @k() kernel {
          %t = gpu.thread_id x
          %b = gpu.block_id y
          gpu.printf "%d %d", %t, %b : index, index
          gpu.return
        }
      }
    }""")
    p = FunctionPattern("gpu.thread_id", tid_to_laneid, name="Lane")
    stats = apply_conversion(m, ConversionTarget("t").add_illegal_op("gpu.thread_id", "gpu.block_id"), [p],
                             TypeConverter(), native_passes=[NativePass("gpu.module(convert-gpu-to-nvvm)")])
    names = op_names(m)
    assert "nvvm.read.ptx.sreg.laneid" in names       # our pattern won over upstream's
    assert "nvvm.read.ptx.sreg.ctaid.y" in names      # upstream lowered the rest
    assert "nvvm.read.ptx.sreg.tid.x" not in names
    assert stats.native_passes == ["gpu.module(convert-gpu-to-nvvm)"]


SCF_KERNEL = """
gpu.module @m {
  gpu.func @k(%n: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
      gpu.printf "%d", %i : index
    }
    gpu.return
  }
}
"""


@pytest.mark.parametrize("with_patterns", [True, False])
def test_native_pass_with_needs_runs_only_when_such_an_op_is_left(with_patterns):
    """NativePass.needs: the driver notes the watched op names as it visits them (no extra walk)."""
    pats = [FunctionPattern("gpu.thread_id", tid_to_sreg, name="Tid")] if with_patterns else []
    cf = NativePass("gpu.module(convert-scf-to-cf)", needs=("scf.for", "scf.if"))
    m = parse()  # no scf op
    stats = apply_conversion(m, None, pats, TypeConverter(), native_passes=[cf])
    assert stats.native_passes == []
    m = parse(SCF_KERNEL)
    stats = apply_conversion(m, None, pats, TypeConverter(), native_passes=[cf])
    assert stats.native_passes == ["gpu.module(convert-scf-to-cf)"]
    assert "scf.for" not in op_names(m) and "cf.cond_br" in op_names(m)


def test_native_pass_needs_an_op_a_pattern_rewrites():
    """A watched op that a Python pattern also matches still counts (the pass may run for nothing, never skipped wrongly)."""
    m = parse(SCF_KERNEL)
    printf = FunctionPattern("gpu.printf", lambda op, rw: rw.erase(op), name="DropPrintf")
    stats = apply_conversion(m, None, [printf], TypeConverter(),
                             native_passes=[NativePass("gpu.module(canonicalize)", needs=("gpu.printf",))])
    assert stats.fired == {"DropPrintf": 1}
    assert stats.native_passes == ["gpu.module(canonicalize)"]


def test_native_pass_failure_is_a_located_error_and_module_unchanged():
    m = parse()
    before = str(m)
    with pytest.raises(TilecoreError, match="pass pipeline 'no-such-pass' failed|no-such-pass"):
        apply_conversion(m, None, [], native_passes=[NativePass("no-such-pass")])
    assert str(m) == before


def test_pattern_that_neither_replaces_nor_erases_is_an_error_not_a_loop():
    m = parse()
    before = str(m)

    def forgetful(op, rw):
        with rw.ip:
            ir.Operation.create("nvvm.read.ptx.sreg.tid.x", results=[ir.IntegerType.get_signless(32)])

    with pytest.raises(TilecoreError, match="rewrite of 'gpu.thread_id' neither replaced nor erased it"):
        apply_conversion(m, no_thread_id(), [FunctionPattern("gpu.thread_id", forgetful)])
    assert str(m) == before


def test_in_place_pattern_is_allowed():
    m = parse()

    class Tag(Pattern):
        root = "gpu.printf"
        modifies_in_place = True

        def match(self, op):
            return "tagged" not in op.attributes

        def rewrite(self, op, rw):
            op.attributes["tagged"] = ir.UnitAttr.get()

    stats = apply_conversion(m, None, [Tag()])
    assert stats.fired == {"Tag": 1}
    assert "tagged" in str(m)


def test_prepass_pattern_runs_once_per_container_before_the_greedy_driver():
    m = parse()
    seen = []

    class RetypeOnce(Pattern):
        root = "gpu.func"
        modifies_in_place = True
        prepass = True

        def match(self, op):
            return "retyped" not in op.attributes

        def rewrite(self, op, rw):
            seen.append([o.name for o in op.regions[0].blocks[0].operations][0])
            assert rw.target is None and rw.memo == {}
            op.attributes["retyped"] = ir.UnitAttr.get()

    tid = FunctionPattern("gpu.thread_id", tid_to_sreg, name="Tid")
    stats = apply_conversion(m, no_thread_id(), [RetypeOnce(), tid])
    # it ran before the thread_id rewrite (saw the source op) and exactly once
    assert seen == ["gpu.thread_id"]
    assert stats.fired == {"RetypeOnce": 1, "Tid": 1}
    assert "retyped" in str(m)


def test_rewriter_memo_and_attr_are_shared_by_one_conversion():
    m = parse(KERNEL.replace("    %s = arith.addi %t, %a : index loc(\"k.py\":4:7)\n",
                             "    %u = gpu.thread_id y\n    %s = arith.addi %t, %u : index\n"))
    attrs = []

    def rewrite(op, rw):
        attrs.append(rw.attr("#llvm.overflow<none>"))
        rw.memo["n"] = rw.memo.get("n", 0) + 1
        tid_to_sreg(op, rw)

    stats = apply_conversion(m, no_thread_id(), [FunctionPattern("gpu.thread_id", rewrite, name="Tid")])
    assert stats.fired == {"Tid": 2}
    assert len(attrs) == 2 and attrs[0] == attrs[1]


def test_result_verified_by_the_pass_manager_is_flagged():
    m = parse()
    stats = apply_conversion(m, no_thread_id(), [FunctionPattern("gpu.thread_id", tid_to_sreg)])
    assert stats.verified  # reconcile ran in a PassManager, which verifies; the stage skips its own verify
    assert not apply_conversion(parse(), None, [], reconcile=False).verified


def test_invalid_ir_from_a_pattern_is_reported_not_handed_on():
    m = parse()
    before = str(m)

    def bad(op, rw):
        with rw.ip:  # an i1 value where index is expected: the verifier must catch it
            c = ir.Operation.create("arith.constant", results=[ir.IndexType.get()],
                                    attributes={"value": ir.IntegerAttr.get(ir.IntegerType.get_signless(1), 1)})
        rw.replace(op, [c.results[0]])

    with pytest.raises(TilecoreError) as ei:
        apply_conversion(m, no_thread_id(), [FunctionPattern("gpu.thread_id", bad)], stage="demo")
    assert ei.value.message.startswith("stage 'demo' produced invalid IR: ") and "value" in ei.value.message
    assert str(m) == before
