"""Work a compile skips without changing its output (issue 18): LLVM's level on large modules, stage-entry
checks done once per module."""

from __future__ import annotations

import os

import pytest
from support import CORPUS, DATA, has_plugin, needs_gpu_nvvm, run_cli

from tilecore.core_plugin import LARGE_MODULE_OPS, llvm_opt_level, module_ops
from tilecore.errors import TilecoreError
from tilecore.mlir import ir
from tilecore.options import CompileOptions

VADD = os.path.join(DATA, "vadd_gpu.mlir")


def _chain(n: int) -> str:
    """vadd with ``n`` dependent arith.addf between the loads and the store (each one llvm.fadd after stage 6)."""
    lines = [f"      %s{i + 1} = arith.addf %s{i}, %y : f32" for i in range(n)]
    text = open(VADD).read().replace("%s = arith.addf %x, %y : f32", "%s0 = arith.addf %x, %y : f32\n" + "\n".join(lines))
    return text.replace("llvm.store %s, %pc", f"llvm.store %s{n}, %pc")


def test_module_ops_counts_function_bodies():
    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = True
        m = ir.Module.parse('"x.module"() ({\n'
                            '  "x.func"() ({\n'
                            '  ^bb0:\n    "x.a"() : () -> ()\n    "x.b"() [^bb1] : () -> ()\n'
                            '  ^bb1:\n    "x.c"() : () -> ()\n  }) : () -> ()\n'
                            '  "x.func"() ({\n  ^bb0:\n    "x.d"() : () -> ()\n  }) : () -> ()\n'
                            '}) : () -> ()')
        gm = m.body.operations[0]
        assert module_ops(gm) == 4


def test_llvm_opt_level_of_a_large_module():
    big, small = LARGE_MODULE_OPS, LARGE_MODULE_OPS - 1
    assert llvm_opt_level(CompileOptions(), big) == 1
    assert llvm_opt_level(CompileOptions(), small) == 3
    assert llvm_opt_level(CompileOptions()) == 3  # size unknown: -O's level
    assert llvm_opt_level(CompileOptions(opt_level=2), big) == 2  # only -O3 is lowered
    assert llvm_opt_level(CompileOptions(extra={"llvm-opt-level": "3"}), big) == 3  # the option wins
    assert llvm_opt_level(CompileOptions(extra={"llvm-opt-level": "2"}), small) == 2


@needs_gpu_nvvm
def test_attach_nvvm_target_lowers_llvm_level_of_a_large_kernel_only(tmp_path):
    big = tmp_path / "big.mlir"
    big.write_text(_chain(LARGE_MODULE_OPS))
    small = tmp_path / "small.mlir"
    small.write_text(_chain(10))
    for src, args, level in ((big, [], 1), (small, [], 3), (big, ["--option", "llvm-opt-level=3"], 3),
                             (big, ["-O2"], 2)):
        out = tmp_path / "out.mlir"
        proc = run_cli("compile", str(src), "--gpu-name", "sm_90a", "--emit", "mlir", "-o", str(out), *args)
        assert proc.returncode == 0, proc.stderr
        want = '#nvvm.target<chip = "sm_90a"' if level == 2 else f'#nvvm.target<O = {level}, chip = "sm_90a"'
        assert want in out.read_text(), (src.name, args)  # (O = 2, the attribute's default, is not printed)
    # the large kernel compiles on to a cubin through LLVM O1 and ptxas
    cubin = tmp_path / "big.cubin"
    proc = run_cli("compile", str(big), "--gpu-name", "sm_90a", "--no-cache", "-o", str(cubin))
    assert proc.returncode == 0, proc.stderr
    assert cubin.read_bytes()[:4] == b"\x7fELF"


@pytest.mark.skipif(not has_plugin("tileas") or not os.path.isdir(CORPUS), reason="needs tileas and the corpus")
def test_stage_entry_checks_walk_a_module_once(monkeypatch, tmp_path):
    from tilecore_tileas import entry_check

    from tilecore.compiler import compile_file

    bc = os.path.join(CORPUS, "vadd_f32.tileirbc")
    stage1 = compile_file(bc, "sm_80", CompileOptions(stop_after="convert-cuda-tile-to-tileaa"))
    text = tmp_path / "vadd.tileaa.mlir"
    text.write_text(str(stage1.module))
    seen = []
    real = entry_check.check_op
    monkeypatch.setattr(entry_check, "check_op", lambda op: (seen.append(op.name), real(op))[1])
    # bytecode: verified by the reader (cuda_tile ops only), no stage entry walks it
    compile_file(bc, "sm_80", CompileOptions(emit="mlir"))
    assert seen == []
    # nv_tileaa text: walked at the first tileas stage entry only (every op once), not at the 5 later ones
    res = compile_file(str(text), "sm_80", CompileOptions(emit="mlir"))
    assert "llvm.func" in str(res.module)
    assert seen[0] == "builtin.module" and seen.count("builtin.module") == 1
    assert seen.count("nv_tileaa.func") == 1 and not any(n.startswith("llvm.") for n in seen)
    # the check itself still runs on such text: a tile with a zero extent is refused at its op
    bad = tmp_path / "bad.mlir"
    bad.write_text(str(stage1.module).replace("tensor<128xf32>", "tensor<0xf32>"))
    with pytest.raises(TilecoreError, match="zero extent"):
        compile_file(str(bad), "sm_80", CompileOptions(emit="mlir"))


def test_top_level_target_checks_only_the_body_of_the_root():
    from tilecore.conversion import ConversionError, ConversionTarget, check_legality, find_illegal

    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = True
        m = ir.Module.parse('"x.outer"() ({\n  "x.inner"() : () -> ()\n}) : () -> ()\n"x.inner"() : () -> ()')
        deep = ConversionTarget("t").add_illegal_op("x.inner")
        shallow = ConversionTarget("t", top_level=True).add_illegal_op("x.inner")
        assert len(find_illegal(m.operation, deep)) == 2
        assert [op.name for op in find_illegal(m.operation, shallow)] == ["x.inner"]
        with pytest.raises(ConversionError, match="-:4:1: failed to legalize operation 'x.inner' in stage 's'"):
            check_legality(m.operation, shallow, "s")


@needs_gpu_nvvm
def test_attach_and_debug_info_stages_skip_the_second_verification(tmp_path):
    from tilecore.compiler import compile_file

    res = compile_file(VADD, "sm_80", CompileOptions(emit="mlir"))
    assert [r.name for r in res.records][-3:] == ["attach-nvvm-target", "translate-debug-info", "serialize"]
    assert 'gpu.module @vadd_module [#nvvm.target<O = 3, chip = "sm_80"' in str(res.module)
    # with --lineinfo the debug-info pass runs (and its pass manager verifies): the PTX has .loc lines
    out = tmp_path / "k.ptx"
    proc = run_cli("compile", VADD, "--gpu-name", "sm_80", "--lineinfo", "--emit", "ptx", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert ".loc" in out.read_text()


@needs_gpu_nvvm
@pytest.mark.parametrize("fork", [True, False])
def test_back_end_leaves_the_callers_module_alone(monkeypatch, fork):
    """In run_isolated's forked child the back end rewrites the module in place (its own copy); in-process
    (TILECORE_NO_FORK) it works on a clone: either way the caller's module is unchanged."""
    from tilecore.compiler import compile_file
    from tilecore.serialize import module_to_llvm_ir, module_to_ptx

    if fork:
        monkeypatch.delenv("TILECORE_NO_FORK", raising=False)
    else:
        monkeypatch.setenv("TILECORE_NO_FORK", "1")
    res = compile_file(VADD, "sm_80", CompileOptions(emit="mlir"))
    before = str(res.module)
    ptx = module_to_ptx(res.module)
    assert ".entry vadd" in ptx["vadd_module"]
    assert "define ptx_kernel void @vadd" in module_to_llvm_ir(res.module)
    assert str(res.module) == before and "gpu.binary" not in before


@pytest.mark.skipif(not has_plugin("tileas") or not os.path.isdir(CORPUS), reason="needs tileas and the corpus")
@pytest.mark.parametrize("kernel", ["row_softmax_f16", "matmul_f16"])
def test_warm_compile_searches_no_module(monkeypatch, kernel):
    """The bindings try ``import mlir.dialects.<namespace>`` for an op of a dialect without a Python module
    every time such an op is handed to Python (a failed import is not cached): the IRDL dialects and their
    unregistered terminator namespaces (nv_tileaa_term, nv_tileas_term, cuda_tile_term) are marked as
    having none, so a warm compile searches sys.path for nothing (row_softmax: 46 searches a compile)."""
    import importlib.machinery

    from tilecore.compiler import compile_file

    path = os.path.join(CORPUS, f"{kernel}.tileirbc")
    compile_file(path, "sm_90a", CompileOptions(emit="ptx"))  # first compile: imports what it needs
    searched = []
    real = importlib.machinery.PathFinder.find_spec
    monkeypatch.setattr(importlib.machinery.PathFinder, "find_spec",
                        classmethod(lambda cls, name, path=None, target=None: (searched.append(name),
                                                                                real(name, path, target))[1]))
    compile_file(path, "sm_90a", CompileOptions(emit="ptx"))
    assert [n for n in searched if n.startswith("mlir.dialects.")] == []
