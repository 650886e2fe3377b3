"""The layout model: which thread holds which elements of a tile.

A tile of ``N`` elements (row-major flat index ``f``) in a block of ``T`` threads gets
the blocked layout ``Blocked(shape, vec, owners)``: ``vec`` consecutive elements per
register group (4, 2 or 1 — the largest that divides ``N``), ``chunks = N / vec`` groups
dealt round-robin to ``owners = min(T, chunks)`` threads. Register ``k`` of thread
``t`` holds

    f = ((k // vec) * owners + t % owners) * vec + k % vec      (valid when f < N)

so threads ``t >= owners`` replicate thread ``t % owners`` (a small tile is held by
every thread, which makes broadcasting it free). The layout depends only on ``N`` and
``T``: element-wise ops and ``reshape`` never move data. Ops that do (permute,
broadcast of a non-scalar, reductions, scans, slices, cat) exchange through shared
memory; :mod:`.assign` annotates them.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd, prod


@dataclass(frozen=True)
class Blocked:
    """A blocked layout (see the module docstring)."""

    shape: tuple[int, ...]
    vec: int
    owners: int
    threads: int

    @property
    def n(self) -> int:
        return max(1, prod(self.shape))

    @property
    def chunks(self) -> int:
        return self.n // self.vec

    @property
    def reps(self) -> int:
        return -(-self.chunks // self.owners)

    @property
    def regs(self) -> int:
        """Registers (elements) each thread holds."""
        return self.reps * self.vec

    def static_flat(self, k: int, t: int) -> int:
        return ((k // self.vec) * self.owners + t % self.owners) * self.vec + k % self.vec

    def register_distance(self, k: int, shape: tuple) -> tuple | None:
        """The coordinates (in row-major ``shape``) that register ``k``'s element lies from the thread's first
        (register 0's), the same in every thread, or None when a carry between digits makes them differ.

        Register ``k`` holds flat index ``F0 + C`` with ``F0 = slot * vec`` (``0 <= F0 < owners * vec``) and
        ``C = (k / vec) * owners * vec + k % vec``; the coordinates of ``F0 + C`` are those of ``F0`` plus the
        digits of ``C`` when no digit carries: for every inner block of ``Q`` elements (the product of the
        trailing dimensions), the largest ``F0 mod Q`` (a multiple of ``gcd(vec, Q)``, at most the largest ``F0``)
        plus ``C mod Q`` stays below ``Q``. The outermost digit is not reduced (registers past the tile are
        masked by their callers)."""
        c = (k // self.vec) * self.owners * self.vec + k % self.vec
        q = 1
        for d in reversed(shape[1:]):
            q *= d
            if min(self.owners * self.vec - self.vec, q - gcd(self.vec, q)) + c % q >= q:
                return None
        out, rest = [], c
        for d in reversed(shape[1:]):
            out.append(rest % d)
            rest //= d
        return (rest, *reversed(out)) if shape else ()

    def always_valid(self, k: int) -> bool:
        """True when register ``k`` is a real element in every thread."""
        return ((k // self.vec) + 1) * self.owners <= self.chunks

    def attr_text(self) -> str:
        dims = ", ".join(map(str, self.shape))
        return f"#nv_tileas.blocked<array<i64{': ' + dims if dims else ''}>, {self.vec} : i64, {self.owners} : i64>"


def blocked(shape, threads: int) -> Blocked:
    """The canonical blocked layout of a tile of ``shape`` over ``threads`` threads."""
    shape = tuple(int(s) for s in shape)
    n = max(1, prod(shape))
    vec = 4 if n % 4 == 0 else 2 if n % 2 == 0 else 1
    return Blocked(shape, vec, min(threads, n // vec), threads)


def row_major_strides(shape) -> list[int]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return list(reversed(out))
