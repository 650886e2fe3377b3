"""SM floors of nvvm ops that arrive already written (MLIR from elsewhere, or a stage's output compiled for
another target): stage 6 checks them before the NVPTX back end, which has no instruction for them below the
floor and stops with "LLVM ERROR: Cannot select: intrinsic ...".

The packed narrow-float conversions (PTX ISA, "Data Movement and Conversion Instructions: cvt": the
``.e4m3x2`` / ``.e5m2x2`` source formats need sm_89, ``.e2m1x2`` sm_100 and newer), the same floors as the
nvgpu rows of :mod:`.floors` and tileas' ``narrow_float.MIN_CC``.
"""

from __future__ import annotations

from tilecore.conversion import Pattern

from . import floors

# nvvm op -> family of floors.FLOORS
NVVM_FAMILIES = {
    "nvvm.convert.f8x2.to.f16x2": "cvt.packed.f8",
    "nvvm.convert.f4x2.to.f16x2": "cvt.packed.f4",
}


class NvvmFloorCheck(Pattern):
    """Never rewrites: its ``match`` raises the floor's LoweringError (at the op) when the target is below."""

    def __init__(self, root: str, family: str, target):
        self.root = root
        self.family = family
        self.target = target

    @property
    def name(self) -> str:
        return f"NvvmFloorCheck[{self.root}]"

    def match(self, op) -> bool:
        floors.require(self.family, op, self.target)
        return False


def patterns(target) -> list:
    return [NvvmFloorCheck(root, family, target) for root, family in NVVM_FAMILIES.items()]
