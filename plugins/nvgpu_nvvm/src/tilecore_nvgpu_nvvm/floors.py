"""SM floors of the nvgpu families (spec note 4, "Per-Arch Availability"), enforced at stage 6.

One row per family: the lowest compute capability that has it, whether it needs the
architecture-specific target (``sm_90a``), and an observed ceiling where the family
does not carry over to newer SMs (WGMMA exists on sm_90a only).
"""

from __future__ import annotations

from dataclasses import dataclass

from tilecore.errors import LoweringError


@dataclass(frozen=True)
class Floor:
    """Where a family is available: ``min_cc`` .. ``max_cc`` (None: unbounded)."""

    family: str
    min_cc: int
    arch_specific: bool = False
    max_cc: int | None = None

    def requirement(self) -> str:
        if self.arch_specific and self.max_cc == self.min_cc:
            return f"sm_{self.min_cc}a"
        if self.arch_specific:
            return f"an architecture-specific target (sm_XXa) at sm_{self.min_cc} or newer"
        return f"sm_{self.min_cc} or newer"

    def admits(self, target) -> bool:
        if target.cc < self.min_cc:
            return False
        if self.max_cc is not None and target.cc > self.max_cc:
            return False
        return target.arch_specific or not self.arch_specific


# family key -> floor (the table of spec note 4; ldmatrix's sm_75 floor is below every target we have).
FLOORS: dict[str, Floor] = {
    "cp.async": Floor("cp.async (Ampere async copy)", 80),
    "mbarrier": Floor("mbarrier", 80),
    "mbarrier.expect_tx": Floor("mbarrier .expect_tx", 90),
    "mbarrier.try_wait": Floor("mbarrier try_wait", 90),
    "tma": Floor("TMA", 90),
    "tensormap.replace": Floor("TMA descriptor rebind (tensormap.replace)", 90, arch_specific=True),
    "wgmma": Floor("WGMMA", 90, arch_specific=True, max_cc=90),
    "ldmatrix": Floor("ldmatrix", 75),
    "mma.sync": Floor("mma.sync", 80),
    "mma.sp.sync": Floor("sparse mma.sp.sync", 80),
    "rcp": Floor("rcp.approx", 70),
    "cvt.packed.f16": Floor("packed f16x2 / bf16x2 conversion", 80),
    "cvt.packed.f8": Floor("packed e4m3x2 / e5m2x2 conversion", 89),
    "cvt.packed.f4": Floor("packed e2m1x2 conversion", 100),
    "f32x2": Floor("packed f32x2 arithmetic", 100),
}


def require(family: str, op, target) -> None:
    """Reject ``op`` when ``target`` is below (or above) the family's floor; no-op without a target."""
    if target is None:
        return
    floor = FLOORS[family]
    if not floor.admits(target):
        raise LoweringError(f"'{op.name}' ({floor.family}) requires {floor.requirement()}; "
                            f"the compile target is {target.name}", op)
