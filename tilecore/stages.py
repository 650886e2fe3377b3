"""Stages and the stage scheduler.

A :class:`Stage` is declared by a plugin (``tilecore_register_stages``) with a
name, ordering constraints (``after`` / ``before``), a legality target and
optionally a custom body. The :class:`StageScheduler` orders the installed
stages, runs them, checks each stage's legality target afterwards, and records
timing and pattern statistics.

Ordering constraints may name a stage of :data:`KNOWN_STAGES` that is not
installed (a venv without the ``tileas`` plugin has no stage 1); they are then
ignored. Any other unknown name, or a cycle, is an error naming the plugins.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

from .conversion import ConversionStats, ConversionTarget, apply_conversion, check_legality
from .errors import PluginError

# The seed stage names of DESIGN.md, in cascade order.
KNOWN_STAGES: list[str] = [
    "convert-cuda-tile-to-tileaa",
    "convert-tileaa-to-tileas",
    "tileas-assign-layouts",
    "tileas-select-atoms",
    "convert-tile-func-to-llvm",
    "convert-tileas-to-llvm",
    "convert-cute-to-llvm",
    "convert-nvgpu-and-gpu-to-nvvm",
    "attach-nvvm-target",
    "translate-debug-info",
    "serialize",
]


@dataclass
class Stage:
    """A named step of the cascade.

    ``legality(target, options) -> ConversionTarget`` says what may survive the
    stage (checked after it runs). Without ``run`` the stage collects every
    plugin's patterns and native passes for its name and applies them with the
    conversion driver; with ``run(ctx: StageContext)`` it does its own work
    (attach a target, analyse layouts, serialize).
    """

    name: str
    after: tuple[str, ...] = ()
    before: tuple[str, ...] = ()
    legality: Callable | None = None
    run: Callable | None = None
    description: str = ""
    plugin: str = ""


@dataclass
class StageContext:
    """Everything a stage body can use."""

    module: object
    target: object
    options: object
    plugins: object
    type_converter: object
    stage: Stage | None = None
    artifacts: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)

    def atoms(self):
        """The atom registry for the compile target."""
        return self.plugins.atoms(self.target)


@dataclass
class StageRecord:
    """Timing and pattern statistics of one stage run."""

    name: str
    plugin: str
    seconds: float
    fired: dict
    ops_before: int = 0
    ops_after: int = 0


class StageScheduler:
    """Orders the installed stages and runs them on a module."""

    def __init__(self, plugins):
        self.plugins = plugins
        self.stages: list[Stage] = order_stages(list(plugins.stages().values()))

    def names(self) -> list[str]:
        return [s.name for s in self.stages]

    def run(self, ctx: StageContext, stop_after: str | None = None, log=None) -> list[StageRecord]:
        """Run every stage (up to ``stop_after``) on ``ctx.module``; return per-stage records."""
        records: list[StageRecord] = []
        opts = ctx.options
        log = log or sys.stderr
        for idx, stage in enumerate(self.stages):
            ctx.stage = stage
            t0 = time.perf_counter()
            stats = run_stage(stage, ctx)
            rec = StageRecord(stage.name, stage.plugin, time.perf_counter() - t0, dict(stats.fired),
                              stats.ops_before, stats.ops_after)
            records.append(rec)
            if stage.name != "serialize":
                if getattr(opts, "print_ir_after_all", False):
                    print(f"// -----// IR Dump After {stage.name} ({stage.plugin}) //----- //", file=log)
                    print(str(ctx.module), file=log)
                if getattr(opts, "dump_dir", None):
                    os.makedirs(opts.dump_dir, exist_ok=True)
                    path = os.path.join(opts.dump_dir, f"{idx + 1:02d}-{stage.name}.mlir")
                    with open(path, "w") as fh:
                        fh.write(str(ctx.module))
            if stop_after and stage.name == stop_after:
                break
        return records


def verify_module(module, stage: str) -> None:
    """Verify ``module`` after ``stage``; invalid IR is reported, never handed to the next stage."""
    from .errors import mlir_error_to_tilecore

    try:
        module.operation.verify()
    except Exception as e:  # noqa: BLE001 - MLIRError with the verifier diagnostics
        raise mlir_error_to_tilecore(e, f"stage '{stage}' produced invalid IR: ") from None


def run_stage(stage: Stage, ctx: StageContext) -> ConversionStats:
    """Run one stage, verify its output and check its legality target."""
    stats = _run_stage_body(stage, ctx)
    if stage.name != "serialize" and not stats.verified:  # (a native pass run last has verified it)
        verify_module(ctx.module, stage.name)
    return stats


def _run_stage_body(stage: Stage, ctx: StageContext) -> ConversionStats:
    legality: ConversionTarget | None = stage.legality(ctx.target, ctx.options) if stage.legality else None
    if stage.run is not None:
        t0 = time.perf_counter()
        result = stage.run(ctx)
        stats = result if isinstance(result, ConversionStats) else ConversionStats(stage=stage.name)
        if legality is not None:
            check_legality(ctx.module.operation, legality, stage.name)
        stats.seconds = time.perf_counter() - t0
        return stats
    pm = ctx.plugins
    patterns = pm.patterns(stage.name, ctx.target, ctx.options)
    natives = pm.native_passes(stage.name, ctx.target, ctx.options)
    return apply_conversion(ctx.module, legality, patterns, ctx.type_converter, native_passes=natives,
                            stage=stage.name, compile_target=ctx.target, options=ctx.options)


def order_stages(stages: list[Stage]) -> list[Stage]:
    """Topologically order stages by after/before; ties follow :data:`KNOWN_STAGES`, then name."""
    by_name = {s.name: s for s in stages}
    edges: dict[str, set[str]] = {s.name: set() for s in stages}  # name -> must run before these
    for s in stages:
        for ref, forward in [(a, False) for a in s.after] + [(b, True) for b in s.before]:
            if ref not in by_name:
                if ref in KNOWN_STAGES:
                    continue
                raise PluginError(f"stage '{s.name}' of plugin '{s.plugin}' is ordered relative to "
                                  f"unknown stage '{ref}'")
            if forward:
                edges[s.name].add(ref)
            else:
                edges[ref].add(s.name)

    def rank(name):
        return (KNOWN_STAGES.index(name) if name in KNOWN_STAGES else len(KNOWN_STAGES), name)

    indeg = {n: 0 for n in edges}
    for succ in edges.values():
        for m in succ:
            indeg[m] += 1
    ready = sorted([n for n, d in indeg.items() if d == 0], key=rank)
    out: list[Stage] = []
    while ready:
        n = ready.pop(0)
        out.append(by_name[n])
        for m in sorted(edges[n], key=rank):
            indeg[m] -= 1
            if indeg[m] == 0:
                ready.append(m)
        ready.sort(key=rank)
    if len(out) != len(stages):
        cyc = sorted(n for n, d in indeg.items() if d > 0)
        who = ", ".join(f"'{n}' ({by_name[n].plugin})" for n in cyc)
        raise PluginError(f"stage ordering has a cycle among {who}")
    return out
