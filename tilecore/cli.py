"""The ``tilecore`` command.

    tilecore compile IN --gpu-name sm_90a -O3 -o OUT.cubin [--emit mlir|llvm|ptx|cubin]
             [-g] [--lineinfo] [--print-ir-after-all] [--dump-dir DIR] [--timing] [--remarks] [--no-cache]
    tilecore compile IN... [-o DIR] -j N --gpu-name sm_80,sm_90a   # batch: DIR/<stem>.<sm>.cubin
    tilecore cache info|clear
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

EMIT_SUFFIX = {"cubin": ".cubin", "ptx": ".ptx", "llvm": ".ll", "mlir": ".mlir", "metadata": ".json"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tilecore", description="Compile NVIDIA CUDA Tile IR (TileIR bytecode) "
                                "to NVVM, PTX and cubin, every stage inspectable.")
    p.add_argument("-p", dest="load", action="append", default=[], metavar="NAME",
                   help="load plugin NAME explicitly (entry point name or module); repeatable")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")

    c = sub.add_parser("compile", help="compile TileIR bytecode or MLIR to cubin / PTX / LLVM / MLIR")
    c.add_argument("input", nargs="+", help="input file(s); several inputs and / or several --gpu-name values "
                   "make a batch compile (one output per input and target)")
    c.add_argument("--gpu-name", "--arch", dest="gpu_name", default="sm_80",
                   help="target GPU, e.g. sm_80, sm_90a, sm_100a (default sm_80); a comma-separated list "
                   "compiles for each")
    c.add_argument("-O", "--opt-level", type=int, default=3, choices=[0, 1, 2, 3], help="optimization level (default 3)")
    c.add_argument("-o", "--output-file", help="output path ('-' for stdout; default: input name with the emitted "
                   "suffix); with several outputs a folder (default: the current one) for <stem>.<sm><suffix>")
    c.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                   help="batch compiles: N worker processes (default: the CPU count)")
    c.add_argument("--no-cache", action="store_true",
                   help="do not look up or store the result in the compile cache (see 'tilecore cache')")
    c.add_argument("-g", dest="debug", action="store_true", help="full debug info (ptxas -g)")
    c.add_argument("--lineinfo", action="store_true", help="line tables only (.loc / .file in PTX)")
    c.add_argument("--emit", choices=list(EMIT_SUFFIX), default="cubin",
                   help="what to write (default cubin); metadata: JSON of each kernel's launch contract "
                        "(parameters, threads per CTA, tensor-map recipes)")
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

    ca = sub.add_parser("cache", help="the compile cache: 'info' (folder, entries, size, limit) or 'clear'")
    ca.add_argument("action", choices=["info", "clear"])
    ca.add_argument("--json", action="store_true", help="info as JSON")

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
        code = COMMANDS[args.cmd](args)
        sys.stdout.flush()  # a closed pipe shows here, in the handler below, not in the exit's flush (status 120)
        return code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader closed stdout (`tilecore pipeline | head`): stop quietly, like cat
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush would fail again
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
        plugins = sys.modules.get(f"{__package__}.plugins")  # not imported by a cache hit: keep it so

        if plugins is not None and plugins._DEFAULT is not None and args.cmd != "plugins":
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

    return CompileOptions(opt_level=getattr(args, "opt_level", 3), debug=getattr(args, "debug", False),
                          lineinfo=getattr(args, "lineinfo", False), extra=_extra(args), **kw)


_INSPECTION = ("stop_after", "print_ir_after_all", "dump_dir", "timing", "timing_json", "remarks")


def cmd_compile(args) -> int:
    gpus = [g.strip() for g in args.gpu_name.split(",") if g.strip()]
    if not gpus:
        from .errors import TilecoreError

        raise TilecoreError("--gpu-name: no target given")
    if len(args.input) > 1 or len(gpus) > 1:
        return _compile_batch(args, gpus)
    args.input, args.gpu_name = args.input[0], gpus[0]
    return _compile_one(args)


def artifact_summary(emit: str, data: bytes | str, target: str, kernels: list) -> str:
    """``(<emit>, <N> bytes) for <target>[; kernels: ...]``: the tail of the ``tilecore: wrote`` line."""
    size = len(data) if isinstance(data, (bytes, bytearray)) else len(data.encode())
    return f"({emit}, {size} bytes) for {target}" + (f"; kernels: {', '.join(kernels)}" if kernels else "")


def _compile_one(args) -> int:
    """One input, one target: compile (or take it from the cache), write it, print the summary."""
    emit = "mlir" if args.stop_after else args.emit
    out = args.output_file or os.path.splitext(os.path.basename(args.input))[0] + EMIT_SUFFIX[emit]
    cache = key = data = None
    # The cache answers only a plain compile to an artifact: the inspection flags need the pipeline to run.
    if not args.no_cache and not any(getattr(args, a) for a in _INSPECTION):
        from .cache import CompileCache, compile_key, enabled, environment

        if enabled():
            env = environment(args.load)
            if env is not None:
                data = _read_bytes(args.input)
                cache = CompileCache()
                key = compile_key(data, args.input, args.gpu_name, emit=emit, opt_level=args.opt_level,
                                  debug=args.debug, lineinfo=args.lineinfo, extra=_extra(args), env=env)
                hit = cache.get(key)
                if hit is not None:
                    _write_output(out, hit.data, artifact_summary(emit, hit.data, hit.meta.get("target", args.gpu_name),
                                                                  hit.meta.get("kernels", [])))
                    return 0

    # A cache miss (or no cache): this process compiles once and exits. The MLIR libraries load on a
    # second thread meanwhile (tilecore.preload), and the cyclic garbage collector stays off: its
    # collections, triggered by the allocations of imports and stages, took ~7 ms of a small kernel's
    # ~200 ms while freeing nothing the compile would miss (matmul_f16's peak memory is unchanged).
    import gc

    from . import codecache

    gc_was_enabled = gc.isenabled()
    try:
        cold_compile_setup()
        return _compile_miss(args, emit, out, cache, key, data)
    finally:
        codecache.save()
        codecache.uninstall()
        if gc_was_enabled:
            gc.enable()


def cold_compile_setup() -> None:
    """What a process that compiles once does before its imports: GC off, the MLIR libraries loading,
    dataclass methods from the byte-code cache (tilecore.codecache).

    Also used by ``bench/coldstart.py``'s phase child. The caller re-enables the GC, saves and
    uninstalls the code cache if it needs to.
    """
    import gc

    from . import codecache, preload

    gc.disable()
    preload.start()
    codecache.install()
    # Needed later anyway (the bindings' start-up, serialize's back-end child, ptxas): imported now,
    # while the MLIR libraries load on the other thread.
    import logging  # noqa: F401
    import pickle  # noqa: F401
    import subprocess  # noqa: F401
    import tempfile  # noqa: F401


def _compile_miss(args, emit: str, out: str, cache, key, data) -> int:
    """The compile of :func:`_compile_one` when the cache did not answer it."""
    import time

    from .batch import artifact_of, kernel_summaries
    from .compiler import compile_module, read_input
    from .targets import resolve_target

    pm = _plugins(args)
    _warn(pm)
    opts = _options(args, emit=emit, print_ir_after_all=args.print_ir_after_all, dump_dir=args.dump_dir,
                    timing=args.timing or bool(args.timing_json), remarks=args.remarks, stop_after=args.stop_after)
    t0 = time.perf_counter()
    module, _ = read_input(args.input, pm, data=data)
    t_read = time.perf_counter() - t0
    target = resolve_target(args.gpu_name, pm.targets())
    res = compile_module(module, target, opts, pm)
    total = time.perf_counter() - t0
    result = artifact_of(res, emit)
    if args.timing or args.timing_json:
        _report_timing(args, t_read, total, res.records)
    kernels = kernel_summaries(res)
    if cache is not None and not pm.problems:
        cache.put(key, result, {"target": target.name, "kernels": kernels, "emit": emit})
    _write_output(out, result, artifact_summary(emit, result, target.name, kernels))
    return 0


def _read_bytes(path: str) -> bytes:
    from .errors import TilecoreError

    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as e:
        raise TilecoreError(f"cannot read input: {e.strerror}", path) from None


def _write_output(out: str, data: bytes | str, summary: str) -> None:
    if out == "-":  # -o - writes the output to stdout, the summary to stderr
        sys.stdout.buffer.write(data if isinstance(data, bytes) else data.encode())
        sys.stdout.flush()
        print(f"tilecore: wrote stdout {summary}", file=sys.stderr)
        return
    from .fsutil import write_atomically

    write_atomically(out, data)
    print(f"tilecore: wrote {out} {summary}")


def _extra(args) -> dict:
    extra = {}
    for item in getattr(args, "option", []) or []:
        k, _, v = item.partition("=")
        extra[k] = v
    return extra


def _compile_batch(args, gpus: list[str]) -> int:
    """Several inputs and / or targets: one output per (input, target) in the -o folder, N processes."""
    import time

    from .batch import CompileJob, compile_many
    from .errors import TilecoreError

    used = [f"--{a.replace('_', '-')}" for a in _INSPECTION if getattr(args, a)]
    if used:
        raise TilecoreError(f"{', '.join(used)}: only with one input and one --gpu-name (this batch compile has "
                            f"{len(args.input)} inputs x {len(gpus)} targets)")
    if args.jobs is not None and args.jobs < 1:
        raise TilecoreError(f"-j {args.jobs}: need at least 1 worker")
    outdir = args.output_file or "."
    if outdir == "-" or (os.path.exists(outdir) and not os.path.isdir(outdir)) \
            or (not os.path.exists(outdir) and outdir.endswith(tuple(EMIT_SUFFIX.values()))):
        raise TilecoreError(f"-o must be a folder when compiling several outputs "
                            f"({len(args.input)} inputs x {len(gpus)} targets)", outdir)
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as e:
        raise TilecoreError(f"cannot create the output folder: {e.strerror}", outdir) from None
    jobs, outs, seen = [], [], {}
    for path in args.input:
        stem = os.path.splitext(os.path.basename(path))[0]
        for gpu in gpus:
            out = os.path.join(outdir, f"{stem}.{gpu}{EMIT_SUFFIX[args.emit]}")
            if out in seen:
                raise TilecoreError(f"inputs '{seen[out]}' and '{path}' would both write {out}")
            seen[out] = path
            jobs.append(CompileJob(path, gpu, emit=args.emit, opt_level=args.opt_level, debug=args.debug,
                                   lineinfo=args.lineinfo, options=_extra(args)))
            outs.append(out)
    workers = min(args.jobs or os.cpu_count() or 1, len(jobs))
    bar = None
    if sys.stderr.isatty():
        import tqdm

        tqdm.tqdm.monitor_interval = 0  # no monitor thread (the pool may fork)
        bar = tqdm.tqdm(total=len(jobs), unit="job", file=sys.stderr, leave=False)

    def say(line: str, err: bool = False) -> None:
        if bar is not None:
            bar.write(line, file=sys.stderr if err else sys.stdout)
        else:
            print(line, file=sys.stderr if err else sys.stdout, flush=True)

    failed = cached = 0

    def on_result(i: int, r) -> None:
        nonlocal failed, cached
        if r.ok:
            try:
                from .fsutil import write_atomically

                write_atomically(outs[i], r.artifact)
            except TilecoreError as e:
                r.error, r.location, r.notes = e.message, e.location, e.notes
        if r.ok:
            cached += r.cached
            say(f"tilecore: wrote {outs[i]} {r.summary()}")
        else:
            failed += 1
            say(r.render_error() + f"\nnote: while compiling {r.job.label} for {r.job.gpu_name}", err=True)
        if bar is not None:
            bar.update(1)

    t0 = time.perf_counter()
    try:
        compile_many(jobs, max_workers=workers, cache=not args.no_cache, load=args.load, on_result=on_result)
    finally:
        if bar is not None:
            bar.close()
    wall = time.perf_counter() - t0
    print(f"tilecore: {len(jobs) - failed} of {len(jobs)} compiled ({cached} from the cache), {failed} failed, "
          f"in {wall:.2f} s (-j {workers})")
    return 1 if failed else 0


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
            "native_passes": [{"pipeline": n.pipeline, "plugin": n.plugin, "needs": list(n.needs)} for n in natives],
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
            when = f" (only with {', '.join(n['needs'])})" if n["needs"] else ""
            print(f"      native pass: {n['pipeline']} [{n['plugin']}]{when}")
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


def cmd_cache(args) -> int:
    from .cache import CompileCache, format_bytes

    cache = CompileCache()
    if args.action == "clear":
        n, freed = cache.clear()
        print(f"tilecore: removed {n} cache entr{'y' if n == 1 else 'ies'} ({format_bytes(freed)}) from {cache.directory}")
        return 0
    info = cache.info()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"directory: {info['directory']}")
    print(f"entries:   {info['entries']}")
    print(f"size:      {format_bytes(info['bytes'])} ({info['bytes']} bytes)")
    print(f"limit:     {format_bytes(info['limit'])} ({info['limit']} bytes)")
    return 0


COMMANDS = {"compile": cmd_compile, "opt": cmd_opt, "disasm": cmd_disasm, "plugins": cmd_plugins,
            "pipeline": cmd_pipeline, "run": cmd_run, "cache": cmd_cache}

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
