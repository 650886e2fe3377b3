"""Work a compile skips without changing its output (issue 18): LLVM's level on large modules."""

from __future__ import annotations

import os

from support import DATA, needs_gpu_nvvm, run_cli

from tilecore.core_plugin import LARGE_MODULE_OPS, llvm_opt_level, module_ops
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
