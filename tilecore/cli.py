"""The ``tilecore`` command.

    tilecore compile IN --gpu-name sm_90a -O3 -o OUT.cubin [--emit mlir|llvm|ptx|cubin]
             [-g] [--lineinfo] [--print-ir-after-all] [--dump-dir DIR] [--timing] [--remarks]
    tilecore opt IN.mlir --stages S1,S2 [--gpu-name X] [-o OUT]
    tilecore disasm IN.tileirbc
    tilecore plugins [--json]
    tilecore pipeline --gpu-name sm_90a [--json]
    tilecore run FILE --kernel K --grid X[,Y,Z] --block X[,Y,Z] --arg a.npy --arg 3 ...
    tilecore run FILE.py::KERNEL --grid X[,Y,Z] --arg a.npy --const TILE=128 [--device cuda]

Errors are printed as ``error: <location>: <message>`` with exit status 1.
Heavy modules (MLIR) are imported only by the commands that need them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

EMIT_SUFFIX = {"cubin": ".cubin", "ptx": ".ptx", "llvm": ".ll", "mlir": ".mlir"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tilecore", description="Compile NVIDIA CUDA Tile IR (TileIR bytecode) "
                                "to NVVM, PTX and cubin, every stage inspectable.")
    p.add_argument("-p", dest="load", action="append", default=[], metavar="NAME",
                   help="load plugin NAME explicitly (entry point name or module); repeatable")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")

    c = sub.add_parser("compile", help="compile TileIR bytecode or MLIR to cubin / PTX / LLVM / MLIR")
    c.add_argument("input")
    _target_args(c)
    c.add_argument("-O", "--opt-level", type=int, default=3, choices=[0, 1, 2, 3], help="optimization level (default 3)")
    c.add_argument("-o", "--output-file", help="output path ('-' for stdout; default: input name with the emitted suffix)")
    c.add_argument("-g", dest="debug", action="store_true", help="full debug info (ptxas -g)")
    c.add_argument("--lineinfo", action="store_true", help="line tables only (.loc / .file in PTX)")
    c.add_argument("--emit", choices=list(EMIT_SUFFIX), default="cubin", help="what to write (default cubin)")
    c.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every stage to stderr")
    c.add_argument("--dump-dir", metavar="DIR", help="write NN-<stage>.mlir after every stage")
    c.add_argument("--timing", action="store_true", help="per-stage wall time and patterns applied (stderr)")
    c.add_argument("--timing-json", metavar="FILE", help="write the per-stage breakdown as JSON")
    c.add_argument("--remarks", action="store_true", help="print remarks from patterns")
    c.add_argument("--stop-after", metavar="STAGE", help="stop after this stage (implies --emit mlir)")
    c.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="plugin option")

    o = sub.add_parser("opt", help="run selected stages on an MLIR module and print the result")
    o.add_argument("input")
    o.add_argument("--stages", required=True, help="comma-separated stage names, run in pipeline order")
    _target_args(o)
    o.add_argument("-O", "--opt-level", type=int, default=3, choices=[0, 1, 2, 3])
    o.add_argument("-o", "--output-file")
    o.add_argument("--timing", action="store_true")

    d = sub.add_parser("disasm", help="print a TileIR bytecode file (or any readable input) as MLIR text")
    d.add_argument("input")
    d.add_argument("-o", "--output-file")

    pl = sub.add_parser("plugins", help="list plugins, versions and what each registers")
    pl.add_argument("--json", action="store_true")

    pp = sub.add_parser("pipeline", help="stages in order, patterns per root op, and which wins")
    _target_args(pp)
    pp.add_argument("--json", action="store_true")

    r = sub.add_parser("run", help="run a kernel in the CPU emulator (or a cuTile kernel on a GPU)")
    r.add_argument("input", help="lowered .mlir (llvm + nvvm), gpu-dialect .mlir or TileIR bytecode "
                   "(compiled for --gpu-name up to serialize), or FILE.py::KERNEL (a @ct.kernel: cuTile export, "
                   "tilecore.cutile.launch)")
    r.add_argument("--kernel", help="kernel (llvm.func) name (required unless the input is FILE.py::KERNEL)")
    r.add_argument("--grid", default="1", help="CTAs: X[,Y[,Z]] (default 1)")
    r.add_argument("--block", default="1", help="threads per CTA: X[,Y[,Z]] (default 1)")
    r.add_argument("--shared", type=int, default=0, help="dynamic shared memory bytes")
    r.add_argument("--arg", action="append", default=[], help="a .npy file or a scalar; repeatable, in order")
    r.add_argument("--const", action="append", default=[], metavar="NAME=VALUE",
                   help="FILE.py::KERNEL: the value of a ct.Constant parameter; repeatable")
    r.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="FILE.py::KERNEL: run in the CPU emulator (default) or on a GPU (cuda-core, CuPy / PyTorch)")
    r.add_argument("--out-dir", default=".", help="where outputs (.npy) are written (default: current folder; "
                   "an output that would overwrite its input is written as NAME.out.npy)")
    r.add_argument("--no-bounds-check", action="store_true",
                   help="do not check loads / stores / atomics against the buffers they may touch (faster)")
    r.add_argument("--no-isolate", action="store_true",
                   help="run the kernel in this process, not in a child one (saves about a second; a native "
                   "fault then kills tilecore instead of being reported as an error)")
    _target_args(r)
    r.set_defaults(gpu_name=None)  # sm_80, or the GPU's for a cuTile kernel with --device cuda
    return p


def _target_args(p) -> None:
    p.add_argument("--gpu-name", "--arch", dest="gpu_name", default="sm_80",
                   help="target GPU, e.g. sm_80, sm_90a, sm_100a (default sm_80)")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.version:
        from .entry_points import version

        print(f"tilecore {version('tilecore')}")
        return 0
    if not args.cmd:
        _parser().print_help()
        return 0
    try:
        return COMMANDS[args.cmd](args)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - the CLI never shows a traceback
        from .errors import TilecoreError

        if isinstance(e, TilecoreError):
            print(e.render(), file=sys.stderr)
        else:
            if os.environ.get("TILECORE_TRACEBACK"):
                raise
            print(f"error: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    finally:
        from . import plugins

        if plugins._DEFAULT is not None and args.cmd != "plugins":
            _warn(plugins._DEFAULT)


def _plugins(args):
    from .plugins import get_plugin_manager

    pm = get_plugin_manager(load=args.load)
    return pm


def _warn(pm) -> None:
    """Print plugin problems not printed yet (more can appear once hooks run)."""
    shown = getattr(pm, "_problems_shown", 0)
    for prob in pm.problems[shown:]:
        print(prob.render(), file=sys.stderr)
    pm._problems_shown = len(pm.problems)


def _options(args, **kw):
    from .options import CompileOptions

    extra = {}
    for item in getattr(args, "option", []) or []:
        k, _, v = item.partition("=")
        extra[k] = v
    return CompileOptions(opt_level=getattr(args, "opt_level", 3), debug=getattr(args, "debug", False),
                          lineinfo=getattr(args, "lineinfo", False), extra=extra, **kw)


def cmd_compile(args) -> int:
    import time

    from .compiler import compile_module, read_input, write_atomically
    from .targets import resolve_target

    pm = _plugins(args)
    _warn(pm)
    emit = "mlir" if args.stop_after else args.emit
    opts = _options(args, emit=emit, print_ir_after_all=args.print_ir_after_all, dump_dir=args.dump_dir,
                    timing=args.timing or bool(args.timing_json), remarks=args.remarks, stop_after=args.stop_after)
    t0 = time.perf_counter()
    module, _ = read_input(args.input, pm)
    t_read = time.perf_counter() - t0
    target = resolve_target(args.gpu_name, pm.targets())
    res = compile_module(module, target, opts, pm)
    total = time.perf_counter() - t0
    out = args.output_file or os.path.splitext(os.path.basename(args.input))[0] + EMIT_SUFFIX[emit]
    if emit == "cubin":
        data = res.artifacts["cubin"]
    elif emit == "ptx":
        data = "\n".join(res.artifacts["ptx"].values())
    elif emit == "llvm":
        data = res.artifacts["llvm"]
    else:
        data = str(res.module)
    if args.timing or args.timing_json:
        _report_timing(args, t_read, total, res.records)
    size = len(data) if isinstance(data, bytes) else len(data.encode())
    kernels = _kernel_names(res)
    summary = f"({emit}, {size} bytes) for {target.name}" + (f"; kernels: {', '.join(kernels)}" if kernels else "")
    if out == "-":  # -o - writes the output to stdout, the summary to stderr
        sys.stdout.buffer.write(data if isinstance(data, bytes) else data.encode())
        sys.stdout.flush()
        print(f"tilecore: wrote stdout {summary}", file=sys.stderr)
        return 0
    write_atomically(out, data)
    print(f"tilecore: wrote {out} {summary}")
    return 0


def _kernel_names(res) -> list[str]:
    """``name (N params, T threads/CTA)`` for every .entry of the PTX."""
    import re

    out = []
    for text in (res.artifacts.get("ptx") or {}).values():
        for m in re.finditer(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\)([^{]*)", text):
            nparams = m.group(2).count(".param")
            req = re.search(r"\.reqntid\s+(\d+)(?:,\s*(\d+))?(?:,\s*(\d+))?", m.group(3))
            threads = ""
            if req:
                n = 1
                for g in req.groups():
                    n *= int(g) if g else 1
                threads = f", {n} threads/CTA"
            out.append(f"{m.group(1)} ({nparams} params{threads})")
    return out


def _report_timing(args, t_read, total, records) -> None:
    rows = [{"stage": "read-input", "plugin": "core", "seconds": t_read, "patterns": {}}]
    rows += [{"stage": r.name, "plugin": r.plugin, "seconds": r.seconds, "patterns": r.fired,
              "ops_before": r.ops_before, "ops_after": r.ops_after} for r in records]
    if args.timing:
        print("===-------------------------------------------------------------------------===", file=sys.stderr)
        print("                      tilecore stage timing report", file=sys.stderr)
        print("===-------------------------------------------------------------------------===", file=sys.stderr)
        for r in rows:
            applied = sum(r["patterns"].values())
            print(f"  {r['seconds'] * 1000:9.2f} ms  {100 * r['seconds'] / max(total, 1e-9):5.1f}%  "
                  f"{r['stage']:<34} ({r['plugin']}) patterns applied: {applied}", file=sys.stderr)
            for name, n in sorted(r["patterns"].items(), key=lambda kv: -kv[1]):
                print(f"{'':28}{n:6d}  {name}", file=sys.stderr)
        print(f"  {total * 1000:9.2f} ms  100.0%  total", file=sys.stderr)
    if args.timing_json:
        from .compiler import write_atomically

        write_atomically(args.timing_json, json.dumps({"total_seconds": total, "stages": rows}, indent=2))


def cmd_opt(args) -> int:
    from .compiler import compile_module, read_input, write_atomically
    from .targets import resolve_target

    pm = _plugins(args)
    _warn(pm)
    target = resolve_target(args.gpu_name, pm.targets())
    opts = _options(args, emit="mlir", timing=args.timing)
    module, _ = read_input(args.input, pm)
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    res = compile_module(module, target, opts, pm, stages=stages)
    text = str(res.module)
    if args.output_file:
        write_atomically(args.output_file, text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_disasm(args) -> int:
    from .compiler import read_input, write_atomically
    from .inputs import choose_format

    pm = _plugins(args)
    _warn(pm)
    module, _ = read_input(args.input, pm)
    with open(args.input, "rb") as fh:
        fmt = choose_format(args.input, fh.read(64), pm.input_formats())
    text = fmt.disasm(module) if fmt.disasm else str(module)
    if args.output_file:
        write_atomically(args.output_file, text)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def cmd_plugins(args) -> int:
    pm = _plugins(args)
    desc = pm.describe()
    if args.json:
        print(json.dumps({"plugins": desc, "problems": [vars(p) for p in pm.problems]}, indent=2))
        return 0
    _warn(pm)
    for d in desc:
        print(f"{d['name']:<12} {d['distribution'] or '-':<22} {d['version'] or '-':<8} {d['module']}")
        for kind, names in d["registers"].items():
            shown = ", ".join(names[:8]) + (f", ... ({len(names)} in all)" if len(names) > 8 else "")
            print(f"{'':14}{kind}: {shown}")
    return 0


def cmd_pipeline(args) -> int:
    from .conversion import order_patterns
    from .options import CompileOptions
    from .stages import StageScheduler
    from .targets import resolve_target

    pm = _plugins(args)
    _warn(pm)
    target = resolve_target(args.gpu_name, pm.targets())
    opts = CompileOptions()
    sched = StageScheduler(pm)
    out = []
    for i, s in enumerate(sched.stages, 1):
        by_root = order_patterns(pm.patterns(s.name, target, opts))
        natives = pm.native_passes(s.name, target, opts)
        out.append({
            "index": i, "stage": s.name, "plugin": s.plugin, "description": s.description,
            "custom_run": s.run is not None,
            "patterns": {root: [{"pattern": p.name, "plugin": p.plugin, "benefit": p.benefit} for p in pats]
                         for root, pats in sorted(by_root.items())},
            "native_passes": [{"pipeline": n.pipeline, "plugin": n.plugin} for n in natives],
        })
    if args.json:
        print(json.dumps({"target": target.name, "stages": out}, indent=2))
        return 0
    print(f"pipeline for {target.name} (cc {target.cc}, {target.feature_string}):")
    for st in out:
        npat = sum(len(v) for v in st["patterns"].values())
        print(f"{st['index']:2d}. {st['stage']:<34} [{st['plugin']}] {npat} patterns on {len(st['patterns'])} root ops"
              + (" (custom)" if st["custom_run"] else ""))
        for root, pats in st["patterns"].items():
            win, rest = pats[0], pats[1:]
            others = "".join(f"; then {p['plugin']}:{p['pattern']} ({p['benefit']})" for p in rest)
            print(f"      {root:<40} -> {win['plugin']}:{win['pattern']} (benefit {win['benefit']}){others}")
        for n in st["native_passes"]:
            print(f"      native pass: {n['pipeline']} [{n['plugin']}]")
    return 0


def cmd_run(args) -> int:
    from .cutile.cli import is_cutile_input

    pm = _plugins(args)
    _warn(pm)
    if is_cutile_input(args.input):
        from .cutile.cli import run_command

        if args.device == "cpu" and args.gpu_name is None:
            args.gpu_name = "sm_80"
        return run_command(args)
    from .emulate.cli import run_command

    if not args.kernel:
        from .errors import TilecoreError

        raise TilecoreError("--kernel is required (the llvm.func to run)", args.input)
    args.gpu_name = args.gpu_name or "sm_80"
    return run_command(args, pm)


COMMANDS = {"compile": cmd_compile, "opt": cmd_opt, "disasm": cmd_disasm, "plugins": cmd_plugins,
            "pipeline": cmd_pipeline, "run": cmd_run}

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
