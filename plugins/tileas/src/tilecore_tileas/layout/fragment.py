"""The accumulator layout of warp-level MMA atoms: :class:`Fragment`.

A warp-level MMA instruction (``mma.sync`` m16n8kK) computes a ``16 x 8`` block of the result, and
the PTX ISA fixes which lane holds which element of it ("Matrix Fragments for mma.m16n8k16",
figure "MMA .m16n8k16 fragment layout for accumulator matrix C/D"): lane ``l`` with group
``g = l / 4`` and ``t = l % 4`` holds ``(g, 2t)``, ``(g, 2t + 1)``, ``(g + 8, 2t)``, ``(g + 8, 2t + 1)``.

A ``M x N`` dot result is cut into such blocks; the warps of the CTA form a ``warps_m x warps_n``
grid, each owning a ``M / warps_m x N / warps_n`` sub-tile whose blocks it holds in block-row-major
order. Register ``k`` of a thread is element ``k % 4`` of its block ``k / 4``. Warps past
``warps_m * warps_n`` replicate warp ``w % (warps_m * warps_n)`` (as threads past ``owners`` do in
a blocked layout).

The layout an MMA atom gives its result is kept across a K loop (the accumulator is a loop-carried
value in these registers); stage 4 converts it to the blocked layout only for a consumer that
needs one (:mod:`tilecore_tileas.stage4_tileas_to_llvm.fragments`).
"""

from __future__ import annotations

from dataclasses import dataclass

from tilecore.mma import best_grid

INST_M, INST_N = 16, 8  # the C block of one warp-level MMA instruction


@dataclass(frozen=True)
class Fragment:
    """A warp-level MMA accumulator layout (see the module docstring)."""

    shape: tuple[int, int]
    warps_m: int
    warps_n: int
    threads: int

    @property
    def n(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def warp_shape(self) -> tuple[int, int]:
        return self.shape[0] // self.warps_m, self.shape[1] // self.warps_n

    @property
    def blocks(self) -> tuple[int, int]:
        """16 x 8 blocks per warp along M and N."""
        wm, wn = self.warp_shape
        return wm // INST_M, wn // INST_N

    @property
    def regs(self) -> int:
        bm, bn = self.blocks
        return 4 * bm * bn

    def offset(self, k: int) -> tuple[int, int]:
        """(row, column) of register ``k`` relative to the thread's first element (its warp's origin +
        (g, 2t))."""
        bm, bn = self.blocks
        bi, bj = divmod(k // 4, bn)
        i = k % 4
        return bi * INST_M + 8 * (i // 2), bj * INST_N + i % 2

    def static_coords(self, k: int, tid: int) -> tuple[int, int]:
        """(row, column) of register ``k`` in thread ``tid`` (tests, documentation)."""
        w = (tid // 32) % (self.warps_m * self.warps_n)
        lane = tid % 32
        wr, wc = divmod(w, self.warps_n)
        dr, dc = self.offset(k)
        wm, wn = self.warp_shape
        return wr * wm + lane // 4 + dr, wc * wn + 2 * (lane % 4) + dc

    def attr_text(self) -> str:
        return f"#nv_tileas.mma_fragment<{self.shape[0]}x{self.shape[1]}, warps = {self.warps_m}x{self.warps_n}>"


def arrange_warps(m: int, n: int, warps: int, rows_whole: bool = False) -> tuple[int, int] | None:
    """The ``warps_m x warps_n`` grid for an ``m x n`` result, or None when ``m`` / ``n`` are not multiples of
    the 16 x 8 block.

    Among grids that divide the blocks evenly, the one using the most warps wins, then (``rows_whole``) one with
    ``warps_n == 1``, then the one whose per-warp tile reads the fewest operand rows + columns from shared memory
    (``m / wm + n / wn``): :func:`grid_key`.
    """
    if m % INST_M or n % INST_N or warps < 1:
        return None
    bm, bn = m // INST_M, n // INST_N
    return best_grid(m, n, warps, lambda wm, wn: bm % wm == 0 and bn % wn == 0, rows_whole)


def fragment(m: int, n: int, threads: int, rows_whole: bool = False) -> Fragment | None:
    """The fragment layout of an ``m x n`` warp-level MMA result over ``threads`` threads (``rows_whole``: prefer
    warps that hold whole rows, :func:`arrange_warps`)."""
    grid = arrange_warps(m, n, threads // 32, rows_whole) if threads % 32 == 0 else None
    return Fragment((m, n), grid[0], grid[1], threads) if grid else None


WG_M = 64  # rows of one warpgroup-level MMA instruction (wgmma m64nNkK)


@dataclass(frozen=True)
class WgFragment:
    """The accumulator layout of a warpgroup-level MMA atom (``wgmma.mma_async`` m64nNkK, PTX ISA "Register
    Fragments" of wgmma D): warpgroups (4 consecutive warps) form a ``groups_m x groups_n`` grid over the
    tile; a warpgroup owns ``M / groups_m`` rows (one instruction per 64) and ``inst_n = N / groups_n``
    columns; in each instruction warp ``w`` of the group holds rows ``16w .. 16w + 15`` laid out as the
    16 x 8 blocks of :class:`Fragment`. Register ``k``: instruction ``k / (inst_n / 2)``, element
    ``k % (inst_n / 2)`` = block ``/ 4`` along N, position ``% 4`` in the block."""

    shape: tuple[int, int]
    groups_m: int
    groups_n: int
    threads: int

    @property
    def n(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def inst_n(self) -> int:
        return self.shape[1] // self.groups_n

    @property
    def insts(self) -> int:
        """wgmma instructions per warpgroup per K step (along M)."""
        return self.shape[0] // self.groups_m // WG_M

    @property
    def regs(self) -> int:
        return self.insts * self.inst_n // 2

    def offset(self, k: int) -> tuple[int, int]:
        per = self.inst_n // 2
        r, i = divmod(k, per)
        return r * WG_M + 8 * ((i % 4) // 2), 8 * (i // 4) + i % 2

    def static_coords(self, k: int, tid: int) -> tuple[int, int]:
        q = (tid // 128) % (self.groups_m * self.groups_n)
        w, lane = (tid // 32) % 4, tid % 32
        gr, gc = divmod(q, self.groups_n)
        dr, dc = self.offset(k)
        return gr * (self.shape[0] // self.groups_m) + 16 * w + lane // 4 + dr, gc * self.inst_n + 2 * (lane % 4) + dc


def wg_fragment(m: int, n: int, threads: int, n_ok=lambda n: n % 8 == 0 and n <= 256,
                rows_whole: bool = False) -> WgFragment | None:
    """The warpgroup fragment layout of an ``m x n`` result over ``threads`` threads (whole warpgroups), on the
    grid :func:`tilecore.mma.warpgroup_grid` picks (``n_ok``: the instruction N the atom admits; ``rows_whole``:
    prefer ``groups_n == 1``)."""
    from tilecore.mma import warpgroup_grid

    grid = warpgroup_grid(m, n, threads, n_ok, rows_whole)
    return WgFragment((m, n), grid[0], grid[1], threads) if grid else None


TM_M = 128  # rows of one tensor-memory MMA instruction (tcgen05.mma cta_group::1, M = 128): one per TMEM lane


@dataclass(frozen=True)
class TmemFragment:
    """The accumulator layout of a tensor-memory MMA atom (``tcgen05.mma``, sm_100a) read back with
    ``tcgen05.ld .32x32b`` (PTX ISA "Tensor Memory" / "Matrix fragments for tcgen05.ld 32x32b": thread ``l`` of
    warp ``w`` of a warpgroup reads TMEM lane ``32 (w % 4) + l``, one 32-bit column per register).

    M = 128 instructions (``m64`` False): row ``i`` of a block is in lane ``i``. Warpgroups form a
    ``groups_m x groups_n`` grid over the tile: a warpgroup owns ``M / groups_m`` rows (blocks of 128) and
    ``cols = N / groups_n`` columns; thread ``t`` of it holds row ``t % 128`` of each of its blocks. Register
    ``k``: block ``k / cols``, column ``k % cols``.

    A 64-row tile (``m64``, one warpgroup): M = 64 instructions put row ``i`` in lane ``32 (i / 16) + i % 16`` of
    the D address's lane (PTX ISA "Data path layout", layout F); the atom computes the tile twice, at lanes 0 and
    16, so thread ``l`` of warp ``w`` holds row ``16 w + l % 16`` (threads ``l`` and ``l + 16`` hold the same
    elements), all ``N`` columns. A 16- or 32-row tile (``m64`` too: tcgen05 has no M under 64) is computed by the
    same M = 64 instructions over an A whose 64 rows repeat the tile's (row ``i`` at ``i``, ``i + M``, ...: the
    atom's operand layout), so thread ``l`` of warp ``w`` holds row ``(16 w + l % 16) % M`` (warps past ``M / 16``
    replicate the first ones)."""

    shape: tuple[int, int]
    groups_m: int
    groups_n: int
    threads: int
    m64: bool = False

    @property
    def n(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def cols(self) -> int:
        return self.shape[1] // self.groups_n

    @property
    def insts(self) -> int:
        """128-row blocks per warpgroup (1 for a 64-row tile)."""
        return 1 if self.m64 else self.shape[0] // self.groups_m // TM_M

    @property
    def regs(self) -> int:
        return self.insts * self.cols

    def offset(self, k: int) -> tuple[int, int]:
        r, c = divmod(k, self.cols)
        return r * TM_M, c

    def static_coords(self, k: int, tid: int) -> tuple[int, int]:
        q = (tid // 128) % (self.groups_m * self.groups_n)
        gr, gc = divmod(q, self.groups_n)
        dr, dc = self.offset(k)
        if self.m64:
            w, lane = (tid % 128) // 32, tid % 32
            return (16 * w + lane % 16) % self.shape[0] + dr, dc
        return gr * (self.shape[0] // self.groups_m) + tid % 128 + dr, gc * self.cols + dc

    def origin_values(self, cg) -> tuple:
        """i32 (row, column) of register 0 in this thread and of its warpgroup's sub-tile (built at the kernel
        entry by :meth:`CodeGen.fragment_origin`)."""
        if self.m64:
            t = cg.op("arith.remui", cg.tid, cg.c32(128))
            row = cg.op("arith.addi", cg.op("arith.muli", cg.op("arith.divui", t, cg.c32(32)), cg.c32(16)),
                        cg.op("arith.remui", t, cg.c32(16)))
            if self.shape[0] < 64:  # a 16- / 32-row tile: the rows repeat every M lanes of layout F
                row = cg.op("arith.remui", row, cg.c32(self.shape[0]))
            zero = cg.c32(0)
            return row, zero, zero, zero
        grid = self.groups_m * self.groups_n
        q = cg.op("arith.divui", cg.tid, cg.c32(128))
        if grid * 128 < self.threads:
            q = cg.op("arith.remui", q, cg.c32(grid))
        wrow = cg.op("arith.muli", cg.op("arith.divui", q, cg.c32(self.groups_n)),
                     cg.c32(self.shape[0] // self.groups_m))
        wcol = cg.op("arith.muli", cg.op("arith.remui", q, cg.c32(self.groups_n)), cg.c32(self.cols))
        row = cg.op("arith.addi", wrow, cg.op("arith.remui", cg.tid, cg.c32(128)))
        return row, wcol, wrow, wcol


SMALL_TMEM_M = (16, 32, 64)  # tile rows computed by M = 64 tcgen05 instructions (layout F, :class:`TmemFragment`)


def tmem_grid(m: int, n: int, threads: int, n_step: int = 8, rows_whole: bool = False) -> tuple[int, int] | None:
    """The ``groups_m x groups_n`` warpgroup grid of an ``m x n`` tensor-memory accumulator: the most warpgroups
    whose rows are whole 128-row blocks and whose columns a multiple of ``n_step``, then (``rows_whole``)
    ``groups_n == 1``, then the squarest (:func:`grid_key`); a 64-row tile (or a 16- / 32-row one, computed as 64
    rows) takes one warpgroup (``threads`` 128)."""
    if m in SMALL_TMEM_M:
        return (1, 1) if threads == 128 and n % n_step == 0 else None
    if threads % 128 or m % TM_M or n % n_step:
        return None
    blocks = m // TM_M
    return best_grid(m, n, threads // 128, lambda gm, gn: blocks % gm == 0 and n % gn == 0 and (n // gn) % n_step == 0,
                     rows_whole)


def tmem_fragment(m: int, n: int, threads: int, rows_whole: bool = False) -> TmemFragment | None:
    """The tensor-memory fragment layout of an ``m x n`` result over ``threads`` threads (whole warpgroups;
    ``rows_whole``: prefer ``groups_n == 1``)."""
    grid = tmem_grid(m, n, threads, rows_whole=rows_whole)
    return TmemFragment((m, n), grid[0], grid[1], threads, m in SMALL_TMEM_M) if grid else None
