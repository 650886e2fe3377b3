"""Stage 2, ``convert-tileaa-to-tileas``: nv_tileaa -> nv_tileas (spec note 2).

The driver follows the spec's order: populate the arith bank, then math, then the
nv_tileaa core (:mod:`.populators`); attach the kernel-spec attribute
(:mod:`.kernel_spec`) before converting; convert; check the conversion target
(nv_tileas, arith, math, func, gpu, scf legal; nv_tileaa illegal except func, return
and mark_for_reuse). A survivor fails with "failed to convert nv_tileaa to nv_tileas".
"""

from __future__ import annotations

from tilecore.conversion import ConversionStats, ConversionTarget, check_legality
from tilecore.errors import TilecoreError
from tilecore.mlir import ir
from tilecore.stages import Stage

from ..rebuild import Rebuilder, run_stage
from . import populators
from .kernel_spec import attach_kernel_specs

NAME = "convert-tileaa-to-tileas"


def conversion_target() -> ConversionTarget:
    """The spec's conversion target (the nv_tileaa types and terminator-namespace rules included)."""
    t = ConversionTarget(NAME)
    t.add_legal_dialect("nv_tileas", "nv_tileas_term", "arith", "math", "func", "gpu", "scf")
    t.add_illegal_dialect("nv_tileaa", "nv_tileaa_term", "cuda_tile", "cuda_tile_term")
    t.add_legal_op("nv_tileaa.func", "nv_tileaa_term.return", "nv_tileaa.mark_for_reuse")
    return t


def populate() -> list[tuple[str, dict]]:
    """The three populators in the spec's fixed order: arith, math, nv_tileaa core."""
    return [("arith", populators.arith_populator()), ("math", populators.math_populator()),
            ("core", populators.core_populator())]


def run(ctx) -> ConversionStats:
    return run_stage(ctx, NAME, _run)  # other plugins' patterns for this stage go first


def _run(ctx) -> ConversionStats:
    module = ctx.module
    pats = populate()
    attach_kernel_specs(module, ctx.target)  # before the conversion: the SM100 guard reads it
    rb = Rebuilder(pats, lambda t: t, stage=NAME)  # unknown ops survive: legality reports them
    rb.data["target"] = ctx.target
    body = module.body
    for op in list(body.operations):
        if op.operation.name in ("nv_tileaa.func", "nv_tileaa.global"):
            with ir.InsertionPoint(op):
                rb.op(op)
            op.operation.erase()
    try:
        check_legality(module.operation, conversion_target(), NAME)
    except TilecoreError as e:
        raise TilecoreError("failed to convert nv_tileaa to nv_tileas", e.location,
                            notes=[e.message, *getattr(e, "notes", [])]) from None
    stats = ConversionStats(stage=NAME)
    stats.fired = dict(rb.fired)
    return stats


def stage() -> Stage:
    return Stage(NAME, after=("convert-cuda-tile-to-tileaa",), run=run, legality=lambda t, o: conversion_target(),
                 description="nv_tileaa -> nv_tileas (kernel spec, witnesses, tiled views)")
