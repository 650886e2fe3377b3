"""Batch compiles: many (input, target, options) jobs at once, in parallel, through the cache.

>>> from tilecore import CompileJob, compile_many
>>> results = compile_many([CompileJob("a.tileirbc", "sm_80"), CompileJob("b.tileirbc", "sm_90a")])  # doctest: +SKIP
>>> [r.ok for r in results], results[0].artifact[:4]                                              # doctest: +SKIP
([True, True], b'\\x7fELF')

:func:`compile_many` reads every input in the calling process, answers what it can from the compile
cache (no MLIR is imported for a hit), and hands the rest to an executor: a process pool by default
(:func:`default_executor`), or any :class:`concurrent.futures.Executor`, e.g. a thread pool or a Dask
cluster's ``client.get_executor()``. Jobs carry their input's bytes, so workers on other machines
need tilecore and the same plugins installed, not the input files. One failing job never stops the
others: its :class:`JobResult` carries the error message and location instead of an artifact.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

EMITS = ("cubin", "ptx", "llvm", "mlir")


@dataclass
class CompileJob:
    """One compile: ``input`` (a path, or the input's bytes) for ``gpu_name`` with these options.

    ``options`` are the plugin options (``--option KEY=VALUE``); ``name`` names a bytes input in
    error locations (and its suffix may choose the input format: ``.mlir`` text); for a path it
    defaults to the path.
    """

    input: str | os.PathLike | bytes
    gpu_name: str = "sm_80"
    emit: str = "cubin"
    opt_level: int = 3
    debug: bool = False
    lineinfo: bool = False
    options: dict = field(default_factory=dict)
    name: str | None = None

    @property
    def label(self) -> str:
        """The input's name as errors show it."""
        if self.name:
            return self.name
        return "<bytes>" if isinstance(self.input, (bytes, bytearray)) else os.fspath(self.input)


@dataclass
class JobResult:
    """What one job produced: ``artifact`` (``bytes`` for a cubin, ``str`` for PTX / LLVM / MLIR) or,
    when it failed, ``error`` / ``location`` / ``notes``. ``target`` is the resolved target name,
    ``kernels`` the ``name (N params, T threads/CTA)`` of each kernel, ``cached`` whether it came from
    the compile cache, ``seconds`` the time it took where it ran."""

    job: CompileJob
    artifact: bytes | str | None = None
    target: str | None = None
    kernels: list = field(default_factory=list)
    error: str | None = None
    location: str | None = None
    notes: list = field(default_factory=list)
    cached: bool = False
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    def render_error(self) -> str:
        """``error: <location>: <message>`` (with ``note:`` lines), as the CLI prints it."""
        from .errors import TilecoreError

        return TilecoreError(self.error or "", self.location, self.notes).render()

    def summary(self) -> str:
        """``(cubin, 4504 bytes) for sm_90a; kernels: ...`` (the tail of the CLI's ``wrote`` line)."""
        from .cli import artifact_summary

        return artifact_summary(self.job.emit, self.artifact or b"", self.target or self.job.gpu_name, self.kernels)


def artifact_of(res, emit: str) -> bytes | str:
    """The artifact ``emit`` asks for out of a :class:`~tilecore.compiler.CompileResult`."""
    if emit == "cubin":
        return res.artifacts["cubin"]
    if emit == "ptx":
        return "\n".join(res.artifacts["ptx"].values())
    if emit == "llvm":
        return res.artifacts["llvm"]
    if emit == "metadata":
        import json

        return json.dumps(kernel_metadata(res), indent=1) + "\n"
    return str(res.module)


def kernel_metadata(res) -> dict:
    """What a launcher needs of every ``.entry`` of the result's PTX (``--emit metadata``): its name,
    parameter count, threads per CTA (``.reqntid``; None without one), dynamic shared memory per CTA
    (:mod:`tilecore.launch_attrs`) and tensor-map recipes
    (:mod:`tilecore.tensormaps`: the trailing parameters the launcher encodes)."""
    import re

    from .launch_attrs import dynamic_shared_bytes, kernel_functions
    from .tensormaps import recipes_of

    funcs = kernel_functions(res.module)  # one walk of the module for both attributes
    recipes = {name: recipes_of(f) for name, f in funcs.items()}
    dynamic = {name: dynamic_shared_bytes(f) for name, f in funcs.items()}
    kernels = []
    for text in (res.artifacts.get("ptx") or {}).values():
        for m in re.finditer(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\)([^{]*)", text):
            req = re.search(r"\.reqntid\s+(\d+)(?:,\s*(\d+))?(?:,\s*(\d+))?", m.group(3))
            threads = None
            if req:
                threads = 1
                for g in req.groups():
                    threads *= int(g) if g else 1
            kernels.append({"name": m.group(1), "params": m.group(2).count(".param"), "threads_per_cta": threads,
                            "dynamic_shared_bytes": dynamic.get(m.group(1), 0),
                            "tensor_maps": [r.to_json() for r in recipes.get(m.group(1), [])]})
    return {"tilecore_metadata": 1, "kernels": kernels}


def kernel_summaries(res) -> list[str]:
    """``name (N params, T threads/CTA[, M tensor maps: ...])`` for every ``.entry`` of the result's PTX."""
    from .tensormaps import TensorMapRecipe

    out = []
    for k in kernel_metadata(res)["kernels"]:
        threads = f", {k['threads_per_cta']} threads/CTA" if k["threads_per_cta"] else ""
        if k["dynamic_shared_bytes"]:
            threads += f", {k['dynamic_shared_bytes']} bytes of dynamic shared memory"
        maps = [TensorMapRecipe.from_json(r) for r in k["tensor_maps"]]
        tm = f", {len(maps)} tensor maps: " + "; ".join(r.describe() for r in maps) if maps else ""
        out.append(f"{k['name']} ({k['params']} params{threads}{tm})")
    return out


# -- the worker side ------------------------------------------------------------------------------
_PMS: dict = {}
_ENVS: dict = {}
_COMPILE_LOCK = threading.Lock()  # MLIR + the forked back end: one compile at a time per process
# A pool worker (init_worker) compiles its jobs in one MLIR context per plugin set: a fresh context
# (every upstream dialect and the plugins' IRDL dialects loaded) costs ~10 ms, a small kernel's whole
# compile in a warm worker ~70 ms. A context keeps every type and attribute it has uniqued, so it is
# replaced after CONTEXT_JOBS jobs; outside a pool (a caller's own executor, one job in this process)
# each job gets a fresh one.
CONTEXT_JOBS = 256
_REUSE_CONTEXT = False
_CTXS: dict = {}  # load -> [context, jobs compiled in it]


def _plugin_manager(load: tuple):
    pm = _PMS.get(load)
    if pm is None:
        from .plugins import PluginManager

        pm = _PMS[load] = PluginManager(load=list(load))
    return pm


def _env_digest(load: tuple) -> str | None:
    if load not in _ENVS:
        from .cache import environment, environment_digest

        env = environment(list(load))
        _ENVS[load] = environment_digest(env) if env is not None else None
    return _ENVS[load]


def _context(load: tuple, pm):
    """The MLIR context for this job: the worker's shared one (see CONTEXT_JOBS), else None (a fresh one)."""
    if not _REUSE_CONTEXT:
        return None
    entry = _CTXS.get(load)
    if entry is None or entry[1] >= CONTEXT_JOBS:
        entry = _CTXS[load] = [pm.make_context(), 0]
    entry[1] += 1
    return entry[0]


def init_worker(load: Iterable[str] = ()) -> None:
    """Process-pool initializer: import tilecore, MLIR and the plugins once per worker; its jobs share
    an MLIR context (:func:`_context`). The environment digest is read by the first job whose result the
    caller will store (``want_env``), not here."""
    global _REUSE_CONTEXT
    _REUSE_CONTEXT = True
    load = tuple(load)
    import tilecore.compiler  # noqa: F401 - brings in MLIR

    _plugin_manager(load).targets()


_STDERR_FILE = None


@contextlib.contextmanager
def _held_stderr():
    """Hold what is written to file descriptor 2 inside the block and write it out after it.

    A job compiled without isolation whose back end aborts (``LLVM ERROR: ...``) takes its worker down
    before the block ends: its message is dropped here and reported by the isolated retry instead
    (:func:`compile_many`), located, as any compile error."""
    global _STDERR_FILE
    if _STDERR_FILE is None:
        import tempfile

        _STDERR_FILE = tempfile.TemporaryFile()
    held = _STDERR_FILE
    held.seek(0)
    held.truncate()
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(held.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        held.seek(0)
        data = held.read()
        if data:
            os.write(2, data)


def run_job(payload: dict) -> dict:
    """Compile one job's bytes where this runs (a worker); never raises for a compile error.

    ``payload``: ``data``, ``path``, ``gpu_name``, ``emit``, ``opt_level``, ``debug``, ``lineinfo``,
    ``options``, ``load``, and ``isolate`` (default True: the LLVM back end runs in a forked child,
    :func:`tilecore.serialize.run_isolated`; False runs it in this process, for a pool whose owner
    recovers from a dead worker: :func:`compile_many`), ``want_env`` (default True: False when the caller
    stores nothing, which spares the worker its environment digest, ~6 ms). Returns ``artifact`` / ``target`` / ``kernels`` / ``env`` (this process'
    environment digest) / ``clean`` (no plugin problems), or ``error`` / ``location`` / ``notes``.
    """
    from .errors import TilecoreError

    t0 = time.perf_counter()
    load = tuple(payload.get("load") or ())
    try:
        with _COMPILE_LOCK:
            from .compiler import compile_module, read_input
            from .options import CompileOptions
            from .serialize import isolation
            from .targets import resolve_target

            pm = _plugin_manager(load)
            opts = CompileOptions(opt_level=payload["opt_level"], debug=payload["debug"],
                                  lineinfo=payload["lineinfo"], emit=payload["emit"],
                                  extra=dict(payload["options"]))
            target = resolve_target(payload["gpu_name"], pm.targets())
            module, _ = read_input(payload["path"], pm, ctx=_context(load, pm), data=payload["data"])
            isolate = payload.get("isolate", True)
            with isolation(isolate), (contextlib.nullcontext() if isolate else _held_stderr()):
                res = compile_module(module, target, opts, pm)
            out = {"artifact": artifact_of(res, payload["emit"]), "target": target.name,
                   "kernels": kernel_summaries(res), "clean": not pm.problems}
            del module, res
    except TilecoreError as e:
        return {"error": e.message, "location": e.location, "notes": list(e.notes),
                "seconds": time.perf_counter() - t0}
    except Exception as e:  # noqa: BLE001 - a job's failure is its result, never the batch's
        return {"error": f"internal error: {type(e).__name__}: {e}", "location": payload.get("path"),
                "notes": [], "seconds": time.perf_counter() - t0}
    out["env"] = _env_digest(load) if payload.get("want_env", True) else None
    out["seconds"] = time.perf_counter() - t0
    return out


# -- the calling side ---------------------------------------------------------------------------
def _start_method() -> str:
    """'fork' where it is safe and cheap (Linux, MLIR not loaded or loading (tilecore.preload) in this
    process), else 'spawn'.

    A process that has loaded MLIR may hold LLVM / MLIR threads and locks, which a forked child
    would inherit in an undefined state; spawned workers start clean (and import MLIR themselves).
    """
    preload = sys.modules.get(f"{__package__}.preload")  # its thread may be inside dlopen: the loader's lock
    if sys.platform.startswith("linux") and "mlir" not in sys.modules and getattr(preload, "_thread", None) is None:
        return "fork"
    return "spawn"


def default_executor(max_workers: int | None = None, load: Iterable[str] = (), start_method: str | None = None):
    """The process pool :func:`compile_many` uses when given no executor.

    ``max_workers`` defaults to the CPU count; every worker imports tilecore, MLIR and the plugins
    once (:func:`init_worker`). ``start_method`` defaults to ``fork`` when this process has not
    loaded MLIR (Linux), else ``spawn``.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context(start_method or _start_method())
    return ProcessPoolExecutor(max_workers=max_workers or os.cpu_count() or 1, mp_context=ctx,
                               initializer=init_worker, initargs=(tuple(load),))


ENV_TTL = 1.0  # seconds a caller's environment digest is reused by the next compile_many calls
_CALLER_ENV: dict = {}


def _caller_env_digest(load: tuple) -> str | None:
    """This process' environment digest (:func:`tilecore.cache.environment`), re-read at most every
    :data:`ENV_TTL` seconds: reading it (metadata, source stamps) costs ~2 ms, more than a batch of
    cache hits; a few calls a second for one job each stay well under 1 ms a job."""
    from .cache import environment, environment_digest

    stamp = (load, tuple(sys.path), os.environ.get("TILECORE_DISABLED_PLUGINS"),
             os.environ.get("TILECORE_DISABLE_PLUGIN_AUTOLOAD"), os.environ.get("TILECORE_ASSEMBLER"),
             os.environ.get("TILECORE_PTXAS"), os.environ.get("TILECORE_NVJITLINK"))
    now = time.monotonic()
    hit = _CALLER_ENV.get(stamp)
    if hit is not None and now - hit[0] < ENV_TTL:
        return hit[1]
    env = environment(list(load))
    digest = environment_digest(env) if env is not None else None
    _CALLER_ENV.clear()
    _CALLER_ENV[stamp] = (now, digest)
    return digest


def _as_job(j) -> CompileJob:
    if isinstance(j, CompileJob):
        return j
    if isinstance(j, dict):
        return CompileJob(**j)
    if isinstance(j, (str, os.PathLike, bytes, bytearray)):
        return CompileJob(j)
    raise TypeError(f"a job is a CompileJob, a dict of its fields, a path or bytes, not {type(j).__name__}")


def _read(job: CompileJob) -> tuple[bytes, str]:
    from .errors import TilecoreError

    if isinstance(job.input, (bytes, bytearray)):
        return bytes(job.input), job.name or ""
    path = os.fspath(job.input)
    try:
        with open(path, "rb") as fh:
            return fh.read(), job.name or path
    except OSError as e:
        raise TilecoreError(f"cannot read input: {e.strerror}", path) from None


def compile_many(jobs: Iterable, executor=None, *, max_workers: int | None = None, cache: bool = True,
                 load: Iterable[str] = (), on_result: Callable[[int, JobResult], None] | None = None,
                 cache_dir: str | None = None) -> list[JobResult]:
    """Compile every job; return one :class:`JobResult` per job, in job order.

    ``jobs``: :class:`CompileJob` s (or dicts of their fields, or plain paths: sm_80 cubins).
    ``executor``: any :class:`concurrent.futures.Executor` (a thread pool, a process pool, a Dask
    ``client.get_executor()``...); by default a :func:`default_executor` process pool of
    ``max_workers`` processes, created for the call and shut down after it (``max_workers=1``, or a
    single job to compile, runs in this process instead). ``cache``: look jobs up in the compile
    cache first (hits never reach the executor) and store what the workers compile (only when a
    worker's environment digest matches this process'; ``cache_dir`` overrides the folder).
    ``load``: plugins to load explicitly (the CLI's ``-p``). ``on_result(index, result)`` is called
    in this thread as each job finishes (progress bars). A failing job, even a worker that dies,
    becomes a result with ``error`` set; the others go on.
    """
    from .errors import TilecoreError

    jobs = [_as_job(j) for j in jobs]
    load = tuple(load)
    results: list[JobResult | None] = [None] * len(jobs)

    def done(i: int, r: JobResult) -> None:
        results[i] = r
        if on_result is not None:
            on_result(i, r)

    store = env = None
    if cache:
        from .cache import CompileCache, compile_key, enabled

        if enabled():
            env = _caller_env_digest(load)
            if env is not None:
                store = CompileCache(cache_dir)
    pending = []  # (index, key, payload)
    for i, job in enumerate(jobs):
        t0 = time.perf_counter()
        if job.emit not in EMITS:
            done(i, JobResult(job, error=f"unknown emit '{job.emit}' (expected one of {', '.join(EMITS)})"))
            continue
        try:
            data, path = _read(job)
        except TilecoreError as e:
            done(i, JobResult(job, error=e.message, location=e.location, notes=e.notes))
            continue
        key = None
        if store is not None:
            key = compile_key(data, path, job.gpu_name, emit=job.emit, opt_level=job.opt_level, debug=job.debug,
                              lineinfo=job.lineinfo, extra=job.options, env=env)
            hit = store.get(key)
            if hit is not None:
                done(i, JobResult(job, hit.data, hit.meta.get("target"), list(hit.meta.get("kernels", [])),
                                  cached=True, seconds=time.perf_counter() - t0))
                continue
        payload = {"data": data, "path": path, "gpu_name": job.gpu_name, "emit": job.emit,
                   "opt_level": job.opt_level, "debug": job.debug, "lineinfo": job.lineinfo,
                   "options": dict(job.options), "load": load, "want_env": key is not None}
        pending.append((i, key, payload))

    def finish(i: int, key: str | None, out: dict) -> None:
        job = jobs[i]
        if "error" in out:
            done(i, JobResult(job, error=out["error"], location=out.get("location"), notes=out.get("notes", []),
                              seconds=out.get("seconds", 0.0)))
            return
        if store is not None and key and out.get("clean") and out.get("env") == env:
            store.put(key, out["artifact"], {"target": out["target"], "kernels": out["kernels"], "emit": job.emit})
        done(i, JobResult(job, out["artifact"], out["target"], out["kernels"], seconds=out.get("seconds", 0.0)))

    if not pending:
        return results  # type: ignore[return-value]
    own = executor is None
    if own and (max_workers == 1 or len(pending) == 1):
        for i, key, payload in pending:
            finish(i, key, run_job(payload))
        return results  # type: ignore[return-value]
    if not own:
        _run_on(executor, pending, finish, jobs)
        return results  # type: ignore[return-value]
    # Our own pool: its workers run the back end in-process (no fork per job, see run_job). A back end that
    # aborts kills its worker and breaks the pool; every job that had not finished then runs again in a
    # fresh pool, isolated (forked back end), where the culprit gets its error message and the others compile.
    workers = min(max_workers or os.cpu_count() or 1, len(pending))
    for _, _, payload in pending:
        payload["isolate"] = False
    pool = default_executor(workers, load)
    try:
        broken = _run_on(pool, pending, finish, jobs, retry=True)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    if broken:
        for _, _, payload in broken:
            payload["isolate"] = True
        pool = default_executor(min(workers, len(broken)), load)
        try:
            _run_on(pool, broken, finish, jobs)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    return results  # type: ignore[return-value]


def _run_on(executor, pending: list, finish: Callable, jobs: list, retry: bool = False) -> list:
    """Run ``pending`` ``(index, key, payload)`` jobs on ``executor``, calling ``finish(index, key, out)`` as
    each ends. With ``retry``, the jobs whose worker died (a broken process pool) are returned instead of
    being reported as failed."""
    from concurrent.futures import as_completed
    from concurrent.futures.process import BrokenProcessPool

    futures, broken = {}, []
    for item in pending:
        try:
            futures[executor.submit(run_job, item[2])] = item
        except Exception as e:  # noqa: BLE001 - a broken pool: this job fails, the loop goes on
            if retry and isinstance(e, BrokenProcessPool):
                broken.append(item)
                continue
            finish(item[0], item[1], {"error": f"cannot submit the job: {type(e).__name__}: {e}",
                                      "location": item[2]["path"] or None})
    for fut in as_completed(futures):
        i, key, _ = item = futures[fut]
        try:
            out = fut.result()
        except BaseException as e:  # noqa: BLE001 - a dead worker, a cancelled task
            if isinstance(e, KeyboardInterrupt):
                raise
            if retry and isinstance(e, BrokenProcessPool):
                broken.append(item)
                continue
            out = {"error": f"worker failed: {type(e).__name__}: {e}", "location": jobs[i].label}
        finish(i, key, out)
    return broken
