"""The layout of a tensor-core accumulator reduced along its columns: :class:`RowSlice`.

Reducing an ``M x N`` tile held in an MMA accumulator layout (:class:`~.fragment.Fragment`,
:class:`~.fragment.WgFragment`, :class:`~.fragment.TmemFragment`, the *parent*) along N gives an ``(M,)`` (or,
reshaped, ``(M, 1)``) tile. In the row-slice layout each thread holds, for every distinct row its parent's
registers cover, one register with that row's value: register ``j`` is row ``row0 + row_offsets[j]``
(``row0``: the row of the thread's parent register 0). Every thread that holds a row of the parent holds the
row's value (the lanes of a quad, the warps / warpgroups across N): broadcasting it back over the columns in
the parent's layout is a register copy, and element-wise ops between such tiles (flash attention's running
max, denominator, rescale factor) stay in registers.

Two row slices whose parents have the same kind, rows, warp grid and thread count (:attr:`RowSlice.rows_key`)
put the same rows in the same threads and registers whatever the parents' column counts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from .fragment import TmemFragment


@dataclass(frozen=True)
class RowSlice:
    """A row slice of ``parent`` (module docstring); ``shape`` is ``(M,)`` or ``(M, 1)``."""

    shape: tuple
    parent: object

    @property
    def n(self) -> int:
        return self.parent.shape[0]

    @cached_property
    def row_offsets(self) -> tuple[int, ...]:
        """Rows (relative to the thread's first) of the parent's registers, ascending, each once."""
        return tuple(sorted({self.parent.offset(k)[0] for k in range(self.parent.regs)}))

    @property
    def regs(self) -> int:
        return len(self.row_offsets)

    def register_of(self, parent_layout, k: int) -> int:
        """The register holding the row of register ``k`` of ``parent_layout`` (the parent, or a layout of the
        same rows: :func:`with_columns`)."""
        return self.row_offsets.index(parent_layout.offset(k)[0])

    @property
    def grid(self) -> tuple[int, int]:
        p = self.parent
        return (p.warps_m, p.warps_n) if hasattr(p, "warps_m") else (p.groups_m, p.groups_n)

    @property
    def rows_key(self) -> tuple:
        """What decides which thread holds which row in which register (not the parent's column count)."""
        p = self.parent
        return type(p).__name__, p.shape[0], self.grid, p.threads, getattr(p, "m64", False)

    @property
    def shuffle_offsets(self) -> tuple[int, ...]:
        """The ``shfl.bfly`` lane masks that join the lanes of a warp sharing a row: the four lanes of a quad for
        mma.sync / wgmma accumulators (lane ``4g + t`` holds columns ``2t, 2t + 1`` of row ``g``); none for a
        tensor-memory accumulator (a thread reads whole rows of its columns)."""
        return () if isinstance(self.parent, TmemFragment) else (1, 2)

    @property
    def column_groups(self) -> int:
        """Warps (warpgroups) holding different columns of the same rows: their partials meet in shared memory."""
        return self.grid[1]

    def with_shape(self, shape) -> RowSlice:
        return replace(self, shape=tuple(shape))

    def static_rows(self, tid: int) -> list[int]:
        """Row of each register in thread ``tid`` (tests, documentation)."""
        first = self.parent.static_coords(0, tid)[0] - self.parent.offset(0)[0]
        return [first + d for d in self.row_offsets]


def with_columns(parent, n: int):
    """``parent``'s layout for an ``M x n`` tile (the same rows in the same threads and registers), or None when
    ``n`` does not split into its column groups (whole 16 x 8 blocks for mma.sync / wgmma accumulators)."""
    grid_n = parent.warps_n if hasattr(parent, "warps_n") else parent.groups_n
    step = grid_n * (1 if isinstance(parent, TmemFragment) else 8)
    if n < 1 or n % step or (isinstance(parent, TmemFragment) and parent.m64 and grid_n != 1):
        return None
    return replace(parent, shape=(parent.shape[0], n))
