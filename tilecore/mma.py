"""The MMA atom interface shared by the stage that lowers dots (``tileas``) and the plugins that contribute
MMA atoms (``cute``, third parties): the request an atom is chosen for and how operands are handed to it.

An MMA atom (:class:`tilecore.atoms.Atom` of kind ``mma``) with ``data["interface"] == MMA_INTERFACE``
is either the CUDA-core atom (``data["cuda_cores"]``) or a warp-level tensor-core atom with
``data["inst"] = (16, 8, K)`` whose ``lower(cg, action, req, ...)`` implements:

- ``lower(cg, "load_a", req, a: SmemOperand, row, k)`` -> the A fragment words (i32; 4, or 2 for m16n8k8 f16 / bf16) of the
  16 x K block whose first row / column are the i32 values ``row`` / ``k``;
- ``lower(cg, "load_b", req, b: SmemOperand, k, col)`` -> the B fragment words (2, or 1 for m16n8k8 f16 / bf16) of the
  K x 8 block;
- ``lower(cg, "mma", req, a_words, b_words, c)`` -> D (4 accumulator scalars in the PTX ISA's
  C / D fragment order).

A **block-scaled MMA atom** (kind ``block_scaled_mma``, the same interface; cuda_tile ``mmaf_scaled``: the
request's ``scale`` / ``scale_block`` say the scale factors' type and how many K elements each covers) is a
tensor-memory atom (``data["fragment"] == "tcgen05"``) with two actions:

- ``lower(cg, "layouts", req, at)`` -> the shared-memory layouts of A (M x K), B (K x N), A's scale factors
  (M x K / block) and B's (K / block x N) from byte ``at`` (each with ``offset``, ``nbytes``, ``elem`` and
  ``address(cg, row, col)``); the caller writes the four tiles there;
- ``lower(cg, "dot", req, a, b, scale_a, scale_b, frag, acc_regs, k)`` -> the result registers in ``frag``
  (``acc_regs``: the accumulator in ``frag``, None for a zero splat).

Dots no such atom admits stay on the CUDA cores.

A **global -> shared copy atom** (kind ``copy``, ``data["interface"] == G2S_INTERFACE``) feeds a pipelined
K loop (``data["chunk_bytes"]``: bytes per copy, the alignment it needs):

- ``lower(cg, "copy", dst, src, nbytes)``: start copying one chunk from ``src`` (``!llvm.ptr<1>``) to
  ``dst`` (``!llvm.ptr<3>``) asynchronously; only ``nbytes`` (i32, 0 .. chunk) are read, the rest of the
  chunk is zero-filled;
- ``lower(cg, "commit")``: close the group of copies issued since the last commit;
- ``lower(cg, "wait", n)``: wait until at most ``n`` of this thread's groups are still pending.

A **tensor-memory-access copy atom** (kind ``copy``, ``data["interface"] == TMA_INTERFACE``, sm_90+) feeds
a pipelined K loop from tensor maps (the kernel's trailing tensor-map parameters, :mod:`tilecore.tensormaps`),
each stage completing on an mbarrier (one thread issues, every thread waits):

- ``lower(cg, "barrier_init", bar)``: initialise the mbarrier at ``bar`` (``!llvm.ptr<3>``) for one arrival
  (and make the initialisation visible to the async proxy);
- ``lower(cg, "expect_tx", bar, nbytes)``: arrive on ``bar`` expecting ``nbytes`` (i32) more bytes;
- ``lower(cg, "load", dst, tensor_map, bar, coords)``: copy the box of ``tensor_map`` (``!llvm.ptr``) at
  ``coords`` (i32 values, innermost dimension first) to ``dst`` (``!llvm.ptr<3>``), completing on ``bar``;
- ``lower(cg, "wait", bar, phase)``: wait until the phase of parity ``phase`` (i32) of ``bar`` completed;
- ``lower(cg, "inval", bar)``: the mbarrier's memory becomes ordinary shared memory again;
- ``lower(cg, "fence_proxy")``: order this thread's generic-proxy shared-memory accesses before later
  async-proxy ones (a stage the threads read with ld.shared / ldmatrix is refilled by TMA; a box the threads
  wrote is stored by TMA).

An atom with ``data["stores"]`` also stores (epilogues, one thread issues):

- ``lower(cg, "store", tensor_map, src, coords)``: write the box at ``src`` (``!llvm.ptr<3>``, 128-byte aligned)
  to the tensor of ``tensor_map`` at ``coords`` (innermost first), clipped to the tensor, in this thread's bulk
  async-group;
- ``lower(cg, "store_commit")``: close the group; ``lower(cg, "store_wait", n)``: wait until at most ``n`` of
  this thread's groups still read their shared memory.

``cg`` is the lowering stage's code generator (``cg.op``, ``cg.c32``, ``cg.i32``, ``cg.lane_and_warp()``,
``cg.smem_ptr`` ...). See ``plugins/tileas/README.md`` ("MMA atoms") for the full contract.
"""

from __future__ import annotations

from dataclasses import dataclass

MMA_INTERFACE = "tileas-mma/1"
G2S_INTERFACE = "tileas-g2s/1"
TMA_INTERFACE = "tileas-tma/1"
SMEM_BUDGET = 48 * 1024  # a request's default operand budget (PTX's static shared memory); see dot_smem_budget
STATIC_SHARED_BYTES = 48 * 1024  # PTX's limit on a kernel's static shared memory; beyond it, dynamic
# Shared memory a dot's operands leave to the rest of the CTA: the 1024-byte alignment of swizzled operands and a
# few small static variables (the tcgen05 mbarrier and tensor-memory address, TMA mbarriers)
SMEM_SLACK_BYTES = 1024
# Shared memory one CTA may opt into, by compute capability (CUDA C++ Programming Guide, "Technical
# Specifications per Compute Capability": 163 KB on 8.0 / 8.7, 99 KB on 8.6 / 8.9 / 12.x, 227 KB on 9.0 / 10.x).
MAX_SHARED_BYTES = {80: 163 * 1024, 86: 99 * 1024, 87: 163 * 1024, 89: 99 * 1024, 90: 227 * 1024,
                    100: 227 * 1024, 101: 227 * 1024, 103: 227 * 1024, 110: 227 * 1024, 120: 99 * 1024,
                    121: 99 * 1024}


def max_shared_bytes(cc: int) -> int:
    """Shared memory a CTA may use on compute capability ``cc`` (48 KiB for one the table does not know)."""
    return MAX_SHARED_BYTES.get(cc, STATIC_SHARED_BYTES)


def dot_smem_budget(cc: int) -> int:
    """Shared memory the operands of one dot may take on compute capability ``cc``: what a CTA may opt into
    (:func:`max_shared_bytes`; beyond PTX's 48 KiB of static shared memory the scratch buffer is dynamic) less
    :data:`SMEM_SLACK_BYTES`. Nothing else of the kernel holds scratch while a dot reads its operands, except a
    pipelined loop's ring of stages, which leaves its body room for the body's dots (``pipeline.plan``)."""
    return max_shared_bytes(cc) - SMEM_SLACK_BYTES
# Operand rows in shared memory are padded by 16 bytes: the 8 rows an ldmatrix phase reads (16 bytes each)
# then fall in 8 different groups of 4 banks when the row length is a multiple of 128 bytes.
ROW_PAD_BYTES = 16


@dataclass(frozen=True)
class MmaRequest:
    """What a dot needs: ``acc (m x n) + A (m x k) @ B (k x n)``; element names as
    :func:`tilecore_tileas.stage4_tileas_to_llvm.narrow_float.element_name` gives them (``f16``,
    ``bf16``, ``tf32``, ``f32``, ``f64``, ``i8``, ``f8E4M3FN``, ``f8E5M2`` ...), integer signedness,
    which operands are stored transposed (K-major B is ``trans_b``), the CTA's threads, the target's
    compute capability and the shared memory the operands may take."""

    m: int
    n: int
    k: int
    a: str
    b: str
    acc: str
    a_signed: bool = True
    b_signed: bool = True
    trans_a: bool = False
    trans_b: bool = True
    threads: int = 128
    cc: int = 80
    smem_budget: int = SMEM_BUDGET
    arch: str = ""  # the target's name (sm_90a: arch-specific instructions such as wgmma)
    scale: str = ""  # block-scaled dots (atom kind ``block_scaled_mma``): the scale factors' element type
    scale_block: int = 0  # ... and the K elements one scale factor covers
    # the result meets row statistics (reduced along N, or combined with a row slice): its warp / warpgroup grid
    # has one column when one of the most warps has (the row reductions stay inside a warp); atoms whose operand
    # layouts depend on the grid take it from here
    rows_whole: bool = False


@dataclass(frozen=True)
class SmemOperand:
    """A dot operand in shared memory: ``rows x cols`` row-major, ``pitch`` elements per row, from
    ``offset`` bytes into the CTA's scratch buffer; ``elem`` is the register type of an element."""

    offset: int
    rows: int
    cols: int
    pitch: int
    elem: object
    elem_bytes: int
    dynamic: object = None  # an i32 value of elements added at run time (the buffer of a pipeline stage)

    def address(self, cg, row, col):
        """``!llvm.ptr<3>`` of element (``row``, ``col``) (i32 values)."""
        index = cg.op("arith.addi", cg.op("arith.muli", row, cg.c32(self.pitch)), col)
        if self.dynamic is not None:
            index = cg.op("arith.addi", index, self.dynamic)
        return cg.smem_ptr(self.offset, index, self.elem)


@dataclass(frozen=True)
class SwizzledOperand:
    """A dot operand in shared memory in the canonical swizzled layout of warpgroup MMA descriptors (PTX ISA,
    "Shared Memory Matrix Layout" of wgmma): ``rows`` x ``cols`` elements of ``elem_bytes`` bytes, ``cols``
    contiguous (A: M x K, K-major; B: K x N, N-major); the contiguous axis is cut into columns of
    ``swizzle`` bytes (32, 64 or 128), each a block of ``rows x swizzle`` bytes (``rows * swizzle`` apart),
    8-row atoms ``8 * swizzle`` bytes apart; the 16-byte unit of byte address ``a`` is then XOR-ed with
    ``(a / 128) % (swizzle / 16)``. ``offset``: bytes into the scratch buffer (a multiple of 1024, as is
    the buffer, so the XOR pattern is the absolute address's)."""

    offset: int
    rows: int
    cols: int
    elem_bytes: int
    swizzle: int
    elem: object = None
    dynamic: object = None  # an i32 value of bytes added at run time (a pipeline stage's buffer; 1024-multiple)
    transposed: bool = False  # holds the operand's transpose (B K-major: rows = N); coordinates stay (k, n)

    @property
    def nbytes(self) -> int:
        return (self.rows * self.cols * self.elem_bytes + 1023) // 1024 * 1024

    def base(self, cg):
        """i32 byte offset of the operand (``offset`` + ``dynamic``)."""
        return cg.c32(self.offset) if self.dynamic is None else cg.op("arith.addi", self.dynamic,
                                                                        cg.c32(self.offset))

    def byte_offset(self, cg, row, col):
        """i32 byte offset (from the scratch buffer) of the operand's element (``row``, ``col``) (i32 values)."""
        if self.transposed:
            row, col = col, row
        s = self.swizzle
        b = cg.op("arith.muli", col, cg.c32(self.elem_bytes)) if self.elem_bytes != 1 else col
        column = cg.op("arith.divui", b, cg.c32(s))
        within = cg.op("arith.remui", b, cg.c32(s))
        off = cg.op("arith.addi", cg.op("arith.muli", column, cg.c32(self.rows * s)),
                    cg.op("arith.muli", row, cg.c32(s)))  # (row / 8) * 8s + (row % 8) * s
        off = cg.op("arith.addi", off, within)
        key = cg.op("arith.shli", cg.op("arith.remui", cg.op("arith.shrui", off, cg.c32(7)), cg.c32(s // 16)),
                    cg.c32(4))
        return cg.op("arith.addi", cg.op("arith.xori", off, key), self.base(cg))


    def address(self, cg, row, col):
        """``!llvm.ptr<3>`` of the operand's element (``row``, ``col``) (i32 values), as :class:`SmemOperand`."""
        from .mlir import dialects, ir

        # a byte GEP: the offset may be negative (a pipelined stage seen from a shifted scratch base)
        return dialects.llvm.getelementptr(ir.Type.parse("!llvm.ptr<3>"), cg.smem_base, [self.byte_offset(cg, row, col)],
                                           [-2147483648], cg.i8, 0)


def grid_key(gm: int, gn: int, m: int, n: int, rows_whole: bool) -> tuple:
    """How a ``gm x gn`` grid (of warps or warpgroups) over an ``m x n`` result ranks, smallest first: the most
    warps (warpgroups), then - for a result whose rows meet row statistics (``rows_whole``: it is reduced along N,
    or combined with a row slice: :attr:`MmaRequest.rows_whole`) - one column of them (``gn == 1``: the row
    reductions stay inside a warp / warpgroup, no shared-memory combine), then the fewest operand rows + columns
    per warp (``m / gm + n / gn``), then the fewer rows of warps."""
    return -(gm * gn), rows_whole and gn != 1, m // gm + n // gn, gm


def best_grid(m: int, n: int, units: int, fits, rows_whole: bool = False) -> tuple[int, int] | None:
    """The ``gm x gn`` grid of at most ``units`` warps (warpgroups) over an ``m x n`` result ranked first by
    :func:`grid_key` among those ``fits(gm, gn)`` admits, or None."""
    grids = [(gm, gn) for gm in range(1, units + 1) for gn in range(1, units // gm + 1) if fits(gm, gn)]
    return min(grids, key=lambda g: grid_key(*g, m, n, rows_whole), default=None)


def warpgroup_grid(m: int, n: int, threads: int, n_ok, rows_whole: bool = False) -> tuple[int, int] | None:
    """The ``groups_m x groups_n`` grid of warpgroups (128 threads) for an ``m x n`` warpgroup-MMA result: among
    those whose instruction N (``n / groups_n``) ``n_ok`` admits and whose rows are whole 64-row instructions, the
    first by :func:`grid_key` (the most warpgroups, then with ``rows_whole`` (:attr:`MmaRequest.rows_whole`) one
    column of them, then the squarest); None when there is none."""
    if threads % 128 or m % 64:
        return None
    return best_grid(m, n, threads // 128, lambda gm, gn: (m // 64) % gm == 0 and n % gn == 0 and n_ok(n // gn),
                     rows_whole)


def swizzle_for(nbytes: int) -> int:
    """The widest swizzle (128 / 64 / 32 bytes) dividing a contiguous extent of ``nbytes``, or 0."""
    return next((s for s in (128, 64, 32) if nbytes % s == 0), 0)


def element_bytes(name: str) -> int:
    return {"f64": 8, "f32": 4, "tf32": 4, "i32": 4, "f16": 2, "bf16": 2, "i16": 2}.get(name, 1)


def operand_bytes(req: MmaRequest) -> int:
    """Shared memory the two operands take in the layouts tileas writes a warp-level atom's operands in (what
    :func:`tensor_core_admits` checks): A then B, each XOR-swizzled (1024-byte aligned, whole 1024-byte blocks) when
    its rows are a multiple of 32 bytes, else with rows padded by :data:`ROW_PAD_BYTES`."""
    at = 0
    for rows, cols, eb in ((req.m, req.k, element_bytes(req.a)), (req.k, req.n, element_bytes(req.b))):
        if swizzle_for(cols * eb):
            at = (at + 1023) // 1024 * 1024 + (rows * cols * eb + 1023) // 1024 * 1024
        else:
            at += (rows * (cols * eb + ROW_PAD_BYTES) + 15) // 16 * 16
    return at


def tensor_core_admits(req: MmaRequest, inst: tuple[int, int, int]) -> bool:
    """The shape conditions every warp-level atom with instruction ``inst`` shares: M, N, K multiples of
    the instruction, a warp grid for the result, operands within the shared-memory budget."""
    m, n, k = inst
    return (req.m % m == 0 and req.n % n == 0 and req.k % k == 0 and req.threads % 32 == 0
            and operand_bytes(req) <= req.smem_budget)




def zero_k_padding(cg, x: SwizzledOperand, k: int, k_major: bool) -> None:
    """Zero the K padding of operand ``x``, laid out with a K wider than the dot's ``k`` (an atom whose instruction
    K, or narrowest swizzle, is wider than the tile's: its elements ``k ..`` along K, stored columns of a K-major
    operand, A or a transposed B; stored rows of an N-major B), so that they add nothing to D; 16 bytes a store (a
    swizzle permutes whole 16-byte units; ``k`` elements are a multiple of 16 bytes), every thread a share (``cg``:
    tileas' code generator), every stored row (an operand that stores some rows twice: its copies too)."""
    from .mlir import dialects, ir

    op, c = cg.op, cg.c32
    per = 16 // x.elem_bytes
    rows, row0, u0, u1 = (x.rows, 0, k // per, x.cols // per) if k_major else (x.rows - k, k, 0, x.cols // per)
    w = u1 - u0
    zero = dialects.llvm.mlir_zero(ir.VectorType.get([4], cg.i32))

    def one(i):
        r = op("arith.divui", i, c(w))
        r = op("arith.addi", r, c(row0)) if row0 else r
        col = op("arith.muli", op("arith.addi", op("arith.remui", i, c(w)), c(u0)), c(per))
        dialects.llvm.store(zero, x.address(cg, col, r) if x.transposed else x.address(cg, r, col), alignment=16)

    cg.each_share(rows * w, one)
