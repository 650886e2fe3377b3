"""Run generated programs: export once, compile per SM, emulate, compare, classify, minimise.

Per program: the module text is written to a file and imported, the kernel is exported with
cuTile (``export_kernel``, one or two ``KernelSignature``) to TileIR bytecode once, and each SM is
handled in a forked child process (``isolated``): ``tilecore.compiler.compile_file`` then, for each
signature, ``tilecore.emulate.launch`` on the inputs and the model's ``reference`` on a copy.
A signal, a hang or a Python exception escaping tilecore is a crash; the parent stays clean.

Outcomes (``STATUSES``): ``ok``; ``rejected`` (a located ``TilecoreError`` from the compiler);
``mismatched``; ``emu_error`` (the emulator refused the compiled kernel: unknown op, out-of-bounds
access, deadlock); ``crashed`` (signal, timeout, internal exception); ``skipped`` (SM below the
program's element types: compiled all the same, a crash counts, the run is skipped); ``export_failed`` / ``model_error`` are the generator's own faults.
A rejection is a *gap* when ``tileiras`` compiles the same bytecode.
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

from . import compare
from .generator import Edits, Program, generate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BLOCK = (128, 1, 1)
BYTECODE_VERSION = "13.4"
CHILD_TIMEOUT = 180.0
STATUSES = ("ok", "rejected", "mismatched", "emu_error", "crashed", "skipped", "export_failed", "model_error")
FAILURES = ("mismatched", "emu_error", "crashed")
# tilecore target -> tileiras --gpu-name (tileiras has no "a" spelling)
TILEIRAS_GPU = {"sm_80": "sm_80", "sm_89": "sm_89", "sm_90a": "sm_90", "sm_100a": "sm_100"}


@dataclass
class Outcome:
    status: str
    message: str = ""
    seconds: float = 0.0
    ops: list[str] = field(default_factory=list)  # cuda_tile ops of the bytecode (when read)
    gap: bool = False  # rejected by tilecore, compiled by tileiras

    @property
    def key(self) -> str:
        """The failure class: status + message with locations and numbers stripped."""
        return f"{self.status}: {normalize(self.message)}" if self.message else self.status


@dataclass
class ProgramResult:
    seed: int
    template: str
    features: list[str]
    outcomes: dict[str, Outcome]
    seconds: float
    ops: list[str]
    source: str = ""
    reproducers: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------ messages


_LOC = re.compile(r'(loc\([^)]*\)|"[^"]*\.py":\d+:\d+|\S+\.(py|tileirbc|mlir):\d+(:\d+)?:?|%\w+|#loc\d*)')
_NUM = re.compile(r"\b\d+\b")


def normalize(message: str) -> str:
    """A rejection / crash message without locations, value names and numbers (the grouping key)."""
    line = message.strip().splitlines()[0] if message.strip() else ""
    line = _LOC.sub("", line)
    line = _NUM.sub("N", line)
    line = re.sub(r"^error:\s*", "", line.strip())
    return re.sub(r"\s+", " ", line).strip()[:160]


# ------------------------------------------------------------------------------ files, export


def ensure_path() -> None:
    """Generated modules import ``fuzz.npsem``: the tests folder must be importable."""
    tests = os.path.join(ROOT, "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)


def load_module(path: str):
    ensure_path()
    name = "fz_" + re.sub(r"\W", "_", os.path.abspath(path))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def signatures(mod) -> list:
    """The ``KernelSignature`` list of a generated module."""
    import cuda.tile as ct
    from cuda.tile.compilation import (
        ArrayConstraint,
        CallingConvention,
        KernelSignature,
        ScalarConstraint,
        TupleConstraint,
    )

    from .dtypes import DTYPES

    tuples = getattr(mod, "TUPLES", {})  # tuple parameter -> its members (consecutive in PARAMS)
    member_of = {m: t for t, ms in tuples.items() for m in ms}
    sigs = []
    for symbol, tile in mod.SIGNATURES:
        params = []
        for name, kind, dt, rank, index_dt in mod.PARAMS:
            ctdt = getattr(ct, DTYPES[dt].ct)
            if kind == "array":
                params.append(ArrayConstraint(ctdt, rank, index_dtype=ct.int64 if index_dt == "i64" else ct.int32,
                                              stride_lower_bound_incl=0, alias_groups=(), may_alias_internally=False,
                                              stride_constant=[None] * (rank - 1) + [1], base_addr_divisible_by=16))
            else:
                params.append(ScalarConstraint(ctdt))
            params[-1] = (member_of.get(name), params[-1])
        grouped = []  # a tuple parameter's members as one TupleConstraint (its leaves pass one after the other)
        for group, c in params:
            if group is not None and grouped and isinstance(grouped[-1], tuple) and grouped[-1][0] == group:
                grouped[-1][1].append(c)
            else:
                grouped.append((group, [c]) if group is not None else c)
        params = [TupleConstraint(c[1]) if isinstance(c, tuple) else c for c in grouped]
        cc = CallingConvention.cutile_python_v2() if tuples else CallingConvention.cutile_python_v1()
        sigs.append(KernelSignature(params + list(tile), cc, symbol=symbol))
    return sigs


def export(mod, path: str) -> None:
    from cuda.tile.compilation import export_kernel

    export_kernel(mod.KERNEL, signatures(mod), path, gpu_code=None, output_format="tileir_bytecode",
                  bytecode_version=BYTECODE_VERSION)


def kernel_args(mod, inp: dict) -> list:
    """Arguments in the kernel ABI: an array is pointer, shape..., strides... (in elements, of its
    index type); a scalar is itself."""
    args = []
    for name, kind, dt, _rank, index_dt in mod.PARAMS:
        a = inp[name]
        if kind == "array":
            it = np.int64 if index_dt == "i64" else np.int32
            buf = a if a.base is None or a.flags.c_contiguous else a.base  # a row-padded view: its buffer
            if dt == "f4e2m1":  # e2m1: the model's code per byte packed two to a byte (element 2i low)
                buf = pack_e2m1(buf)
            args += [buf, *[it(d) for d in a.shape], *[it(s // a.itemsize) for s in a.strides]]
        else:
            args.append(a)
    return args


def pack_e2m1(codes: np.ndarray) -> np.ndarray:
    """E2M1 codes (one per byte, row-major) as the kernel's memory holds them: two to a byte, element 2i
    in the low half of byte i (strides stay in elements)."""
    flat = np.asarray(codes, np.uint8).reshape(-1) & 15
    if flat.size % 2:
        flat = np.append(flat, np.uint8(0))
    return (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8)


# ------------------------------------------------------------------------------ one SM, in a child


def run_sm(src: str, bytecode: str, sm: str, extents: list[int] | None = None, want_ops: bool = False) -> Outcome:
    """Compile ``bytecode`` for ``sm`` and check every signature of module ``src`` (in this process)."""
    from tilecore.compiler import compile_file
    from tilecore.errors import TilecoreError
    from tilecore.launch_attrs import cta_grid
    from tilecore.options import CompileOptions

    t0 = time.perf_counter()
    mod = load_module(src)
    ops = _ops(bytecode) if want_ops else []
    below = int(sm[3:].rstrip("af")) < mod.MIN_SM  # an element type the SM lacks: expect a clean rejection
    try:
        pairs = "cta_pairs" in getattr(mod, "FEATURES", ())  # CTA pairs are asked for: a tile block per CTA
        res = compile_file(bytecode, sm, CompileOptions(extra={"sm100.cta_pairs": "on"}) if pairs else None)
    except TilecoreError as e:
        if below:
            return Outcome("skipped", f"needs sm_{mod.MIN_SM}, rejected: {e}", time.perf_counter() - t0, ops)
        return Outcome("rejected", str(e), time.perf_counter() - t0, ops)
    except Exception as e:  # noqa: BLE001 - an internal error of the compiler is a crash
        return Outcome("crashed", f"compiler raised {type(e).__name__}: {e}\n{traceback.format_exc()}",
                       time.perf_counter() - t0, ops)
    from tilecore import emulate

    if below:
        return Outcome("skipped", f"needs sm_{mod.MIN_SM}, yet compiled", time.perf_counter() - t0, ops)
    S = list(extents or mod.EXTENTS)
    for symbol, tile in mod.SIGNATURES:
        try:
            inp = mod.make_inputs(S, tile, np.random.default_rng(mod.SEED))
            with np.errstate(all="ignore"):  # inf / NaN padding meets exp, cos... in positions never stored
                want = mod.reference({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inp.items()},
                                     S, tile)
            grid = tuple(mod.grid(S, tile)) + (1,) * (3 - len(mod.grid(S, tile)))
        except Exception as e:  # noqa: BLE001
            return Outcome("model_error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}", 0.0, ops)
        want_prints = sorted(getattr(mod, "PRINTS", []))
        try:
            launched = emulate.launch(res.module, symbol, cta_grid(res.module, symbol, grid), BLOCK,
                                      kernel_args(mod, inp))
        except TilecoreError as e:
            return Outcome("emu_error", f"{symbol}: {e}", time.perf_counter() - t0, ops)
        except Exception as e:  # noqa: BLE001
            return Outcome("crashed", f"emulator raised {type(e).__name__}: {e}\n{traceback.format_exc()}",
                           time.perf_counter() - t0, ops)
        bad = compare.mismatches(inp, want, mod.CHECKS) + _printf_mismatch(launched.printf, want_prints)
        if bad:
            return Outcome("mismatched", f"{symbol} T={tile} S={S}: " + "; ".join(bad), time.perf_counter() - t0, ops)
    return Outcome("ok", "", time.perf_counter() - t0, ops)


def _printf_mismatch(text: str, want: list[str]) -> list[str]:
    """The device printf text against the model's lines (as multisets: blocks print in any order)."""
    got = sorted(text.splitlines())
    if got == want:
        return []
    extra = sorted(set(got) - set(want))[:3]
    missing = sorted(set(want) - set(got))[:3]
    return [f"printf: {len(got)} lines printed, {len(want)} expected; unexpected {extra!r}, missing {missing!r}"]


def _ops(bytecode: str) -> list[str]:
    """The distinct cuda_tile ops of a bytecode file (through the tileas bytecode reader)."""
    from tilecore.compiler import read_input
    from tilecore.errors import TilecoreError
    from tilecore.plugins import get_plugin_manager

    try:
        module, _ = read_input(bytecode, get_plugin_manager())
    except TilecoreError:
        return []  # the compile that follows reports it
    # terminators (yield, return, break, continue) are read into a sibling dialect, cuda_tile_term
    asm = module.operation.get_asm(print_generic_op_form=True)
    return sorted({f"cuda_tile.{op}" for op in re.findall(r'"?cuda_tile(?:_term)?\.([a-z_0-9]+)"?\(', asm)})


def isolated(fn, *args, timeout: float = CHILD_TIMEOUT) -> Outcome:
    """``fn(*args)`` in a forked child; a signal, a hang or a lost child is a crash."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(rfd)
        import faulthandler

        faulthandler.disable()  # a crash is reported by the parent, not dumped here
        code = 0
        try:
            out = fn(*args)
        except BaseException as e:  # noqa: BLE001
            out = Outcome("crashed", f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
        try:
            data = pickle.dumps(out)
            with os.fdopen(wfd, "wb") as fh:
                fh.write(data)
        except BaseException:  # noqa: BLE001
            code = 3
        os._exit(code)
    os.close(wfd)
    t0 = time.monotonic()
    chunks = []
    import select

    with os.fdopen(rfd, "rb") as fh:
        while True:
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return Outcome("crashed", f"timeout after {timeout:.0f} s", timeout)
            ready, _, _ = select.select([fh], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(fh.fileno(), 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return Outcome("crashed", f"killed by signal {signal.Signals(sig).name}", time.monotonic() - t0)
    try:
        return pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001
        return Outcome("crashed", f"child exited with status {os.WEXITSTATUS(status)} and no result",
                       time.monotonic() - t0)


def warm_up(sms: list[str]) -> None:
    """Load the plugins and compile + JIT the bundled example once, so that forked children start
    warm (neither leaves a thread behind: forking afterwards is safe)."""
    from tilecore import emulate
    from tilecore.compiler import compile_file

    ensure_path()
    example = os.path.join(ROOT, "examples", "vadd_f32.tileirbc")
    if not os.path.exists(example):
        return
    res = None
    for sm in sms:
        res = compile_file(example, sm)
    if res is not None:
        emulate.compile_kernel(res.module, "vadd_f32")


# ------------------------------------------------------------------------------ tileiras


def tileiras_compiles(bytecode: str, sm: str, workdir: str) -> bool | None:
    """Whether NVIDIA's tileiras compiles ``bytecode`` for ``sm`` (None: tileiras not found)."""
    from tilecore.serialize import find_nvidia_tool

    exe = find_nvidia_tool("tileiras")
    if exe is None:
        return None
    out = os.path.join(workdir, f"tileiras-{sm}.cubin")
    try:
        r = subprocess.run([exe, f"--gpu-name={TILEIRAS_GPU.get(sm, sm.rstrip('af'))}", "--opt-level=3",
                            f"--output-file={out}", bytecode], capture_output=True, timeout=300)
    except subprocess.TimeoutExpired:
        return False
    return r.returncode == 0


# ------------------------------------------------------------------------------ one program


def prepare(p: Program, workdir: str, edits: Edits | None = None, extents=None,
            tag="prog") -> tuple[str, str, str | None]:
    """Write the module and export it; returns (source path, bytecode path, export error or None)."""
    os.makedirs(workdir, exist_ok=True)
    src = os.path.join(workdir, f"{tag}.py")
    with open(src, "w") as fh:
        fh.write(p.render(edits, extents))
    bc = os.path.join(workdir, f"{tag}.tileirbc")
    try:
        export(load_module(src), bc)
    except Exception as e:  # noqa: BLE001
        return src, bc, f"{type(e).__name__}: {e}"
    return src, bc, None


def check_program(seed: int, sms: list[str], workdir: str, use_tileiras: bool = True,
                  template: str | None = None) -> ProgramResult:
    """Generate program ``seed`` (of ``template``, or a drawn one), export it once and check it on every SM."""
    t0 = time.perf_counter()
    p = generate(seed, template=template)
    src, bc, err = prepare(p, workdir)
    if err is not None:
        outcomes = {sm: Outcome("export_failed", err) for sm in sms}
        return ProgramResult(seed, p.template, sorted(p.features), outcomes, time.perf_counter() - t0, [],
                             open(src).read())
    outcomes, ops = {}, []
    for i, sm in enumerate(sms):
        o = isolated(run_sm, src, bc, sm, None, i == 0)
        ops = ops or o.ops
        if o.status == "rejected" and use_tileiras:
            o.gap = bool(tileiras_compiles(bc, sm, workdir))
        outcomes[sm] = o
    return ProgramResult(seed, p.template, sorted(p.features), outcomes, time.perf_counter() - t0, ops,
                         open(src).read())


# ------------------------------------------------------------------------------ minimisation


def _same(a: Outcome, b: Outcome) -> bool:
    if a.status != b.status:
        return False
    return a.status == "mismatched" or normalize(a.message) == normalize(b.message)


def minimise(seed: int, sm: str, failure: Outcome, workdir: str, budget_s: float = 120.0,
             template: str | None = None):
    """Remove statements (outright, else replaced by their bypass ``v3 = v2``) and shrink the
    extents while the program still fails the same way on ``sm``; returns (program, edits, extents)."""
    p = generate(seed, template=template)
    edits = Edits()
    extents = list(p.extents)
    t0 = time.monotonic()
    n = 0

    def fails(e: Edits, s) -> bool:
        nonlocal n
        n += 1
        src, bc, err = prepare(p, workdir, e, s, tag=f"min{n}")
        if err is not None:  # e.g. a removed statement's value is still used
            return False
        return _same(isolated(run_sm, src, bc, sm, s), failure)

    stores = {i for i, s in enumerate(p.stmts) if s.droppable}
    for i in reversed(range(len(p.stmts))):
        if time.monotonic() - t0 > budget_s:
            break
        if i in stores and not stores - edits.removed - {i}:
            continue  # the last store stays
        if fails(edits.remove(i), extents):
            edits = edits.remove(i)
        elif p.stmts[i].bypass is not None and fails(edits.bypass(i), extents):
            edits = edits.bypass(i)
    for ax in range(len(extents)):
        while extents[ax] > 1 and time.monotonic() - t0 <= budget_s:
            trial = list(extents)
            trial[ax] = max(1, extents[ax] // 2)
            if not fails(edits, trial):
                break
            extents = trial
    return p, edits, extents


def write_reproducer(seed: int, sm: str, outcome: Outcome, outdir: str, run_seed: int, index: int,
                     workdir: str, do_minimise: bool = True, template: str | None = None) -> str:
    """Minimise and write ``<outdir>/<sm>-<run_seed>-<index>/``: kernel.py (the minimised program),
    original.py, kernel.tileirbc, inputs.npz (first signature) and README (how to rerun)."""
    if do_minimise:
        p, edits, extents = minimise(seed, sm, outcome, os.path.join(workdir, "min"), template=template)
    else:
        p, edits, extents = generate(seed, template=template), Edits(), None
    d = os.path.join(outdir, f"{sm}-{run_seed}-{index}")
    os.makedirs(d, exist_ok=True)
    src, bc, _ = prepare(p, d, edits, extents, tag="kernel")
    with open(os.path.join(d, "original.py"), "w") as fh:
        fh.write(p.render())
    final = isolated(run_sm, src, bc, sm, extents)
    mod = load_module(src)
    S = list(extents or mod.EXTENTS)
    inp = mod.make_inputs(S, mod.SIGNATURES[0][1], np.random.default_rng(mod.SEED))
    np.savez(os.path.join(d, "inputs.npz"), **{k: np.asarray(v) for k, v in inp.items()})
    rel = os.path.relpath(d, ROOT)
    with open(os.path.join(d, "README"), "w") as fh:
        fh.write(f"{final.key} (program seed {seed}, {sm}; {len(edits.removed)} statements removed, {len(edits.bypassed)} bypassed, extents {S})\n"
                 f"rerun: .venv/bin/python bench/fuzz_programs.py --replay {rel}/kernel.py --gpu-name {sm}\n"
                 f"message: {final.message.strip().splitlines()[0] if final.message.strip() else ''}\n")
    for f in os.listdir(d):
        if f.startswith("min") or f.endswith(".cubin"):
            os.unlink(os.path.join(d, f))
    return d


def replay(path: str, sms: list[str]) -> dict[str, Outcome]:
    """Run a written program module (a reproducer's kernel.py) on ``sms``."""
    import tempfile

    work = tempfile.mkdtemp(prefix="fuzz-replay-")
    try:
        bc = os.path.join(work, "kernel.tileirbc")
        export(load_module(path), bc)
        return {sm: isolated(run_sm, path, bc, sm) for sm in sms}
    finally:
        shutil.rmtree(work, ignore_errors=True)
