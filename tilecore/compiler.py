"""compile(): input -> stages -> serialize.

>>> from tilecore.compiler import compile_file
>>> result = compile_file("vadd_f32.tileirbc", "sm_90a")      # doctest: +SKIP
>>> result.artifacts["cubin"][:4]                              # doctest: +SKIP
b'\\x7fELF'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import TilecoreError
from .fsutil import write_atomically  # noqa: F401 - here since the beginning; `from .compiler import write_atomically`
from .options import CompileOptions

if TYPE_CHECKING:  # the stages (and MLIR) are imported when something is compiled, not on import
    from .stages import StageRecord


@dataclass
class CompileResult:
    """The final module, what serialize produced (``ptx`` / ``cubin`` / ``llvm``) and per-stage records."""

    module: object
    artifacts: dict
    records: list[StageRecord] = field(default_factory=list)
    read_seconds: float = 0.0


def read_input(path: str, plugins, ctx=None, data: bytes | None = None):
    """Read ``path`` with the plugin input format that recognises it; returns (module, context)."""
    from .inputs import choose_format

    if data is None:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as e:
            raise TilecoreError(f"cannot read input: {e.strerror}", path) from None
    fmt = choose_format(path, data, plugins.input_formats())
    ctx = ctx or plugins.make_context()
    module = fmt.read(data, path, ctx)
    return module, ctx


def compile_module(module, target, options: CompileOptions, plugins, stop_after: str | None = None,
                   stages: list[str] | None = None, log=None) -> CompileResult:
    """Run the installed stages (or only ``stages``) on ``module``."""
    from .stages import StageContext, StageScheduler

    sched = StageScheduler(plugins)
    if stages is not None:
        known = set(sched.names())
        for s in stages:
            if s not in known:
                raise TilecoreError(f"unknown stage '{s}'; installed stages: {', '.join(sched.names())}")
        sched.stages = [s for s in sched.stages if s.name in stages]
    ctx = StageContext(module=module, target=target, options=options, plugins=plugins,
                       type_converter=plugins.type_converter(options))
    records = sched.run(ctx, stop_after=stop_after or options.stop_after, log=log)
    return CompileResult(module, ctx.artifacts, records)


def compile_file(path: str, gpu_name: str = "sm_80", options: CompileOptions | None = None,
                 plugins=None, **kw) -> CompileResult:
    """Compile a file (TileIR bytecode or MLIR) for ``gpu_name``."""
    import time

    from .plugins import get_plugin_manager
    from .targets import resolve_target

    plugins = plugins or get_plugin_manager()
    options = options or CompileOptions()
    target = resolve_target(gpu_name, plugins.targets())
    t0 = time.perf_counter()
    module, _ = read_input(path, plugins)
    read_s = time.perf_counter() - t0
    res = compile_module(module, target, options, plugins, **kw)
    res.read_seconds = read_s
    return res
