"""Atoms: the hardware primitives a tile op is lowered through (copy, MMA, reduce).

Plugins return :class:`Atom` objects from ``tilecore_register_atoms(target)``.
Names are unique across plugins unless an atom says which one it ``overrides``;
:func:`select_atom` picks the admissible atom of a kind with the highest priority.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Atom:
    """One atom.

    ``name``: unique id (``copy.global.vec128``); ``kind``: ``copy`` | ``mma`` |
    ``reduce`` | other; ``min_cc`` / ``max_cc``: admissible compute capabilities;
    ``admits(request) -> bool``: finer admissibility (alignment, dtype, shape);
    ``lower``: the callable the owning stage calls to emit it; ``priority``:
    higher wins among admissible atoms; ``overrides``: name of an atom this one
    replaces (so a third party can swap a built-in lowering).
    """

    name: str
    kind: str
    lower: Callable | None = None
    min_cc: int = 0
    max_cc: int = 10_000
    admits: Callable[[Any], bool] | None = None
    priority: int = 0
    overrides: str | None = None
    description: str = ""
    plugin: str = ""
    data: dict = field(default_factory=dict)

    def admissible(self, target, request=None) -> bool:
        if target is not None and not (self.min_cc <= target.cc <= self.max_cc):
            return False
        return self.admits is None or request is None or bool(self.admits(request))


def select_atom(atoms: dict[str, Atom], kind: str, target, request=None) -> Atom | None:
    """The admissible atom of ``kind`` with the highest priority (ties: name)."""
    cands = [a for a in atoms.values() if a.kind == kind and a.admissible(target, request)]
    if not cands:
        return None
    cands.sort(key=lambda a: (-a.priority, a.name))
    return cands[0]
