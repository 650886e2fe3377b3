"""Stage 6 against upstream's nvgpu-to-nvvm test functions (issue 15: Hopper code for Hopper).

    python bench/stage6_upstream.py PATH/nvgpu-to-nvvm.mlir [--gpu-name sm_90a] [-v]

PATH is a copy of llvm-project's ``mlir/test/Conversion/NVGPUToNVVM/nvgpu-to-nvvm.mlir`` (or any
file of ``func.func`` device functions; it is read, never stored here). Every ``func.func`` of the
file, at any nesting depth, is cloned alone into ``gpu.module @m`` (with the ``memref.global`` ops of
its symbol table) and lowered twice:

- by tilecore's stage 6, ``convert-nvgpu-and-gpu-to-nvvm`` (what
  ``tilecore opt IN.mlir --stages convert-nvgpu-and-gpu-to-nvvm --gpu-name sm_90a`` runs);
- by upstream's passes through the bindings (``UPSTREAM`` below: convert-nvgpu-to-nvvm, then the
  gpu / scf / memref / func / arith lowerings to LLVM, then reconcile-unrealized-casts).

A function "lowers" when the pipeline succeeds, the result verifies and only ``llvm.*`` /
``nvvm.*`` ops (and the ``gpu.module`` / ``builtin.module`` containers) remain. With ``--ptxas``
a function lowered by stage 6 must also go through the rest of tilecore's pipeline to PTX and be
accepted by ptxas for the target. Prints one row per function (``-v``: with the first line of
each error) and the summary ``N of M functions lower (upstream lowers K)``. Exit status 1 when a
function upstream lowers does not lower through stage 6.
"""

from __future__ import annotations

import argparse
import sys

STAGE = "convert-nvgpu-and-gpu-to-nvvm"
UPSTREAM = ("convert-nvgpu-to-nvvm,gpu.module(convert-gpu-to-nvvm),convert-scf-to-cf,expand-strided-metadata,"
            "finalize-memref-to-llvm,convert-func-to-llvm,convert-to-llvm,reconcile-unrealized-casts")
CONTAINERS = ("builtin.module", "gpu.module")


def functions(module) -> list:
    """(name, func op, memref.globals of its symbol table) for every func.func of ``module``, in order."""
    out = []

    def visit(block):
        globals_ = [op for op in block.operations if op.operation.name == "memref.global"]
        for op in block.operations:
            name = op.operation.name
            if name == "func.func":
                sym = str(op.operation.attributes["sym_name"]).strip('"')
                out.append((sym, op.operation, globals_))
            elif name == "builtin.module":
                visit(op.operation.regions[0].blocks[0])

    visit(module.body)
    return out


def wrap(ir, fn, globals_):
    """A new module ``module {gpu.module @m {globals; fn}}`` holding clones of ``fn`` and ``globals_``."""
    m = ir.Module.parse("module attributes {gpu.container_module} {\n  gpu.module @m {\n  }\n}")
    gm = m.body.operations[0]
    ip = ir.InsertionPoint(gm.regions[0].blocks[0])
    for g in globals_:
        ip.insert(g.operation.clone())
    ip.insert(fn.clone())
    return m


def only_llvm(module) -> str | None:
    """The name of the first op that is not llvm.* / nvvm.* / a container, or None."""
    from tilecore.mlir import ir

    bad = []

    def cb(op):
        n = op.name
        if not (n.startswith(("llvm.", "nvvm.")) or n in CONTAINERS):
            bad.append(n)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(cb, ir.WalkOrder.PRE_ORDER)
    return bad[0] if bad else None


def first_line(e: BaseException) -> str:
    text = getattr(e, "message", None) or str(e)
    loc = getattr(e, "location", None)
    line = text.strip().splitlines()[0] if text.strip() else type(e).__name__
    return f"{loc}: {line}" if loc else line


def check(run, module) -> str | None:
    """None when ``run(module)`` lowers ``module`` fully, else why not."""
    try:
        run(module)
        module.operation.verify()
    except Exception as e:  # noqa: BLE001 - every failure is a row in the table
        return first_line(e)
    bad = only_llvm(module)
    return f"'{bad}' survived" if bad else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", help="nvgpu-to-nvvm.mlir (a file of func.func device functions)")
    ap.add_argument("--gpu-name", default="sm_90a")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the first error line of each failure")
    ap.add_argument("--ptxas", action="store_true", help="also emit PTX and assemble it with ptxas")
    args = ap.parse_args(argv)

    from tilecore.compiler import compile_module
    from tilecore.conversion import run_native_pipeline
    from tilecore.mlir import ir
    from tilecore.options import CompileOptions
    from tilecore.plugins import PluginManager
    from tilecore.targets import resolve_target

    pm = PluginManager()
    target = resolve_target(args.gpu_name, pm.targets())
    try:
        with open(args.path) as f:
            text = f.read()
    except OSError as e:
        print(f"error: cannot read {args.path}: {e.strerror}", file=sys.stderr)
        return 2
    with pm.make_context():
        try:
            source = ir.Module.parse(text)
        except Exception as e:  # noqa: BLE001 - MLIRError: the file is not valid for this MLIR
            print(f"error: {args.path} does not parse with MLIR 22.1.8:\n{e}", file=sys.stderr)
            return 2
        fns = functions(source)

        def ours(m):
            compile_module(m, target, CompileOptions(), pm, stages=[STAGE])
            if args.ptxas:  # on a copy: the check below looks at stage 6's output
                from tilecore.serialize import ptx_to_cubin

                copy = ir.Module.parse(str(m))
                res = compile_module(copy, target, CompileOptions(emit="ptx"), pm,
                                     stages=["attach-nvvm-target", "translate-debug-info", "serialize"])
                for ptx in res.artifacts["ptx"].values():
                    ptx_to_cubin(ptx, args.gpu_name)

        def theirs(m):
            run_native_pipeline(m.operation, UPSTREAM)

        ok = up = 0
        missed = []
        for name, fn, globals_ in fns:
            mine = check(ours, wrap(ir, fn, globals_))
            other = check(theirs, wrap(ir, fn, globals_))
            ok += mine is None
            up += other is None
            if other is None and mine is not None:
                missed.append(name)
            row = f"{name:42s} stage6 {'ok' if mine is None else 'FAIL'}   upstream {'ok' if other is None else 'FAIL'}"
            print(row)
            if args.verbose:
                for who, why in (("stage6", mine), ("upstream", other)):
                    if why:
                        print(f"    {who}: {why[:300]}")
    through = " (stage 6 + PTX + ptxas)" if args.ptxas else ""
    print(f"{ok} of {len(fns)} functions lower{through} (upstream lowers {up})")
    if missed:
        print("upstream lowers, stage 6 does not: " + ", ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
