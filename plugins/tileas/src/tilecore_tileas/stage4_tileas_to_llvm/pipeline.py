"""Software-pipelined K loops: tiles of a tensor-core dot copied global -> shared by a copy atom, S stages deep.

A ``scf.for`` qualifies (:func:`plan`) when an operand of one of its tensor-core dots is a ``tiled_load``
of its body used by that dot only (directly, or through reshapes that drop unit dimensions: a batched
matmul's ``(1, M, K)`` slice of a rank-3 tensor, copied by TMA as a 3-D box), from a view defined outside the loop, with indices computed from the
induction variable and loop-invariant values by scalar ops, contiguous rows of a whole number of copy
chunks (16 bytes), zero (or unspecified) padding and plain ordering: those loads are *piped*. A block-scaled
dot (``nv_tileas.block_scaled_mma``, cuTile ``mma_scaled``) counts with its A and B (in swizzled layouts: its
tensor-memory atoms read nothing else; e2m1 ones, two to a byte, as the bytes they are where they lie packed
along K, the form the mxf4 kinds read: :func:`_load_ok`'s ``packed_ok``, :func:`_staged_as_atom_reads`); its scale
tiles (a few bytes a row) stay loaded in the body and written to their layout there. A block-scaled dot outside
such a loop takes its tiles by TMA into one stage (:func:`single_dot_stages`, :func:`single_dot`). When every
dot operand is piped and nothing else in the body uses shared memory (element-wise ops on the
accumulator's fragment layout, scalars and tokens only), the stages are all the loop uses; otherwise (a
flash-attention loop: Q from before the loop, K loaded transposed, row reductions) the body's own
shared memory lies past the stages (``Plan.shift``, :meth:`CodeGen.shifted_scratch`), and the stages
leave it :data:`BODY_SCRATCH_BYTES`. Each stage holds one buffer per piped operand, rows padded by 16 bytes (the
ldmatrix reads of a warp then hit 8 different bank groups, the 16-byte copies of 8 consecutive threads
a whole 128-byte row); ``S = min(3, shared memory a CTA may opt into / stage bytes)`` (beyond 48 KiB the
kernel's scratch buffer is dynamic shared memory: :mod:`tilecore_tileas.stage4_tileas_to_llvm`).

The loop becomes (:func:`pipelined_for`)::

    prologue: for s < S - 1: if lb + s * step < ub: copy the tiles of iteration s into stage s; commit
    for iv (carrying the accumulators and the stage r read this iteration):
        wait until <= S - 2 groups are pending; barrier   (stage r landed; stage r - 1 is free)
        if iv + (S - 1) * step < ub: copy the tiles of that iteration into stage r - 1; commit
        the dots read their operands from stage r
    wait for all groups; barrier                           (the buffer is scratch again)

(one stage: barrier, copy, commit, wait 0, barrier, dots.) Every thread copies whole 16-byte chunks:
the part of a chunk past the array's edge is zero-filled by the copy (its source size is the bytes in
bounds; a chunk with none reads nothing). The copy needs 16-byte aligned chunk addresses: what the
compiler cannot prove (the base pointer's ``div_by`` hint, static strides) is checked at run time and
the loop runs un-pipelined when the check fails (:func:`alignment_check`).

The induction variable includes the counters the loop carries (:func:`_counters`: ``tile += 1`` beside it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tilecore.mlir import dialects, ir
from tilecore.mma import G2S_INTERFACE, ROW_PAD_BYTES, TMA_INTERFACE, SmemOperand, SwizzledOperand, max_shared_bytes

from ..atoms import default_atom
from ..atoms.mma import is_tensor_core
from ..stage1_cuda_tile_to_tileaa.common import resize_int
from ..stage4_tileas_to_llvm.memory import PTR1, memory_order, memref_type_parts, view_type_parts
from .codegen import create, scalar_bits
from .fragments import dot_fragment, preferred_layout
from .tensor_maps import int_constant

PIPELINE_OPTION = "tileas.pipeline"  # --option tileas.pipeline=off: K loops stay un-pipelined
TMA_OPTION = "tileas.tma"  # --option tileas.tma=off: pipelines copy by cp.async where TMA could
MAX_BOX = 256  # elements per dimension of a TMA box
MAX_STAGES = 3  # cuTile 1.7 has no stage-count hint (only a load's latency hint)
MBARRIER_BYTES = 8
BODY_SCRATCH_BYTES = 64 * 1024  # kept for the scratch region of a loop body that uses shared memory itself
SCALED_DOT = "nv_tileas.block_scaled_mma"  # cuda_tile mmaf_scaled: A / B piped as a dot's, the scales not
PACKED_ELEMENT = "f4E2M1FN"  # two to a byte: piped as bytes for atoms that read them packed (``packed_stages``)


@dataclass
class PipedLoad:
    """One operand tile: its load, shape, element bytes, row pitch (elements) and offset in a stage."""

    load: object
    rows: int
    cols: int
    elem_bytes: int
    pitch: int
    offset: int = 0
    swizzled: object = None  # the SwizzledOperand (offset 0) a warpgroup atom reads this tile in, or None
    transposed: bool = False  # a transposed view (``order=(1, 0)``): memory is contiguous along the tile's rows
    lead: int = 0  # unit dimensions before the tile's two (a ``(1, M, K)`` slice of a rank-3 tensor)
    chain: tuple = ()  # the ops between the load and the dot (reshapes dropping unit dimensions, f32 -> tf32)
    packed: bool = False  # e2m1, two to a byte: the contiguous axis (rows / cols) counts bytes, not elements
    pair_half: int = 0  # a CTA pair's B (:mod:`.pairs`): the stage holds columns rank * pair_half .. of the tile

    @property
    def nbytes(self) -> int:
        if self.swizzled is not None:
            return self.swizzled.nbytes  # 1024-byte multiples: stages keep the swizzle pattern's alignment
        return (self.rows * self.pitch * self.elem_bytes + 15) // 16 * 16


@dataclass
class Plan:
    loads: list
    stage_bytes: int
    stages: int
    atom: object
    slice_ops: list  # scalar body ops the load indices depend on, in program order
    shift: int = 0  # bytes the body's own scratch region starts after (the ring's): 0 when the body uses none
    loop: object = None  # the old scf.for
    counters: dict = None  # iteration argument -> (its init, the constant added per iteration): :func:`_counters`


def _in_body(v, body) -> bool:
    if isinstance(v, ir.BlockArgument):
        return v.owner == body
    return v.owner.operation.block == body


def _is_tensor(t) -> bool:
    return str(t).startswith("tensor<")


def _splat_constant(v) -> bool:
    op = v.owner if isinstance(v, ir.OpResult) else None
    return op is not None and op.name == "arith.constant" and ir.DenseElementsAttr(op.attributes["value"]).is_splat


def _passes_stage(op, permute_ok: bool = False) -> bool:
    """Whether ``op`` may stand between a piped load and its dot: a reshape dropping unit dimensions, or the
    rounding of f32 to tf32 (``ct.astype(x, ct.tfloat32)``), which :func:`.tf32.round_stage` applies to the stage
    in place (wgmma / mma.sync .tf32 read a tf32 operand's 32-bit words ignoring the low 13 bits, PTX ISA
    9.7.15.5.1 / 9.7.14.5: a truncation, not the conversion's ``cvt.rna``, so the MMA cannot do it itself);
    ``permute_ok``: also the transpose of a 2-D tile (``ct.transpose``: the stage read transposed,
    :func:`.shape_ops.permute`; for a consumer that reads such a B K-major)."""
    if op.name == "nv_tileas.reshape":
        return True
    if op.name == "nv_tileas.permute":
        return permute_ok and [int(x) for x in ir.DenseI32ArrayAttr(op.attributes["permutation"])] == [1, 0]
    from .tf32 import is_tf32

    return op.name == "arith.truncf" and is_tf32(op.results[0].type) and \
        str(ir.RankedTensorType(op.operands[0].type).element_type) == "f32"


def _reshape_chain(v, body, permute_ok: bool = False) -> tuple[object, tuple]:
    """(the op defining ``v`` past a chain of single-use ops of ``body`` that pass a stage through
    (:func:`_passes_stage`), those ops): a batched matmul's ``(1, M, K)`` tile reshaped to ``(M, K)`` for its dot,
    an f32 tile rounded to tf32, (``permute_ok``) a tile transposed."""
    chain = []
    while isinstance(v, ir.OpResult) and _in_body(v, body) and _passes_stage(v.owner, permute_ok) and \
            len(list(v.uses)) == 1 and _is_tensor(v.type):
        chain.append(v.owner)
        v = v.owner.operands[0]
    return (v.owner if isinstance(v, ir.OpResult) else None), tuple(chain)


def _load_ok(load, dot, body, transposed_ok: bool = False, chain: tuple = (), packed_ok: bool = False,
             invariant: bool = True) -> PipedLoad | None:
    """The PipedLoad of ``load`` when it can be copied by 16-byte chunks straight into shared memory
    (``transposed_ok``: also a transposed view of a row-major tensor, whose chunks run down the tile's
    columns: for a consumer that reads it K-major). The load reaches the dot directly or through ``chain``
    (reshapes); its tile is 2-D, or 2-D after unit dimensions (a slice of a rank 3-5 tensor: TMA's 3-5-D
    boxes). ``packed_ok``: also e2m1 elements (cuTile's f4E2M1FN arrays hold two to a byte, element 2i in the
    low half of byte i, shapes and strides in elements), copied as the bytes they are (``PipedLoad.packed``:
    the contiguous axis counted in bytes), for a consumer that reads them packed along that axis (the mxf4
    kinds' K-major operands). ``invariant``: the view's memref must be made outside ``body`` (a loop's)."""
    if load is None or load.name != "nv_tileas.tiled_load" or "traversal_strides" in load.attributes:
        return None
    users = [u for u in load.results[0].uses]
    if len(users) != 1 or users[0].owner != (chain[-1] if chain else dot):
        return None
    view = load.operands[0]
    if memory_order(load)[0] is not None or not isinstance(view, ir.OpResult):
        return None
    vop = view.owner  # a view made in the body is a compile-time record of its memref (made outside)
    if vop.name != "nv_tileas.view" or invariant and _in_body(vop.operands[0], body):
        return None
    tile, dim_map, pad = view_type_parts(view.type)
    lead = len(tile) - 2
    if pad not in ("zero", "none") or not 0 <= lead <= 3 or any(t != 1 for t in tile[:lead]):
        return None
    if lead and tuple(dim_map) != tuple(range(len(tile))):
        return None
    tile = tile[lead:]
    el, _shape, strides = memref_type_parts(vop.operands[0].type)
    packed = str(el) == PACKED_ELEMENT
    if str(el).startswith("!llvm") or str(el) == "i1" or packed and not packed_ok:
        return None
    strides = [strides[d] for d in dim_map][lead:]
    transposed = transposed_ok and tuple(dim_map) == (1, 0) and strides[0] == 1
    if strides[-1] != 1 and not transposed:
        return None
    width = 8 if packed else el.width if isinstance(el, ir.FloatType) else ir.IntegerType(el).width
    if width not in (8, 16, 32):
        return None
    eb = width // 8
    along = 0 if transposed else 1  # the tile axis contiguous in memory
    if packed and tile[along] % 2:
        return None
    tile = [t // 2 if packed and i == along else t for i, t in enumerate(tile)]  # packed: bytes along it
    if (tile[along] * eb) % 16:
        return None
    if transposed:
        return PipedLoad(load, tile[0], tile[1], eb, 0, transposed=True, chain=chain, packed=packed)
    from .dot import smem_operand

    op = smem_operand(tile[0], tile[1], None, eb, 0)  # swizzled rows, or padded ones (see dot.smem_operand)
    return PipedLoad(load, tile[0], tile[1], eb, tile[1] + ROW_PAD_BYTES // eb,
                     swizzled=op if isinstance(op, SwizzledOperand) else None, lead=lead, chain=chain,
                     packed=packed)


def _counters(loop) -> dict:
    """The iteration arguments of ``loop`` (an old scf.for) that count iterations: scalars of the induction variable's
    type that the body yields as ``arg + c`` (``c`` a constant): argument -> (its init value, ``c``). TileGym's kernels
    index their loads by such a counter (``tile += 1`` beside ``for n0 in range(0, S, TN)``); at iteration
    ``(iv - lb) / step`` it is ``init + that * c`` (:func:`_counter_values`)."""
    body = loop.regions[0].blocks[0]
    iv = body.arguments[0]
    yields = list(list(body.operations)[-1].operands)
    out = {}
    for arg, init, nxt in zip(list(body.arguments)[1:], list(loop.operands)[3:], yields):
        if arg.type != iv.type or not isinstance(nxt, ir.OpResult) or nxt.owner.name != "arith.addi":
            continue
        a, b = nxt.owner.operands
        other = b if a == arg else a if b == arg else None
        if other is None or not isinstance(other, ir.OpResult) or other.owner.name != "arith.constant":
            continue
        out[arg] = (init, ir.IntegerAttr(other.owner.attributes["value"]).value)
    return out


def _counter_values(rb, plan_: Plan, iv_new) -> dict:
    """Each counter of the plan's loop (:func:`_counters`) at the iteration whose induction variable is ``iv_new``."""
    if not plan_.counters:
        return {}
    cg = rb.data["cg"]
    lb, step = rb.get(plan_.loop.operands[0]), rb.get(plan_.loop.operands[2])
    n = cg.op("arith.divsi", cg.op("arith.subi", iv_new, lb), step)
    return {arg: cg.op("arith.addi", rb.get(init), cg.op("arith.muli", n, resize_int(cg.c32(c), n.type)))
            for arg, (init, c) in plan_.counters.items()}


def _index_slice(load, body, iv, seen: dict, counters=()) -> bool:
    """Collect the scalar body ops ``load``'s indices depend on (into ``seen``); False if one is not scalar
    (``counters``: iteration arguments that count iterations, :func:`_counters`, are as good as ``iv``)."""
    def visit(v) -> bool:
        if not _in_body(v, body) or v == iv or v in counters:
            return True
        if isinstance(v, ir.BlockArgument):
            return False
        op = v.owner.operation
        if op in seen:
            return True
        if not op.name.startswith("arith.") or op.regions or any(_is_tensor(r.type) for r in op.results):
            return False
        if not all(visit(x) for x in op.operands):
            return False
        seen[op] = op
        return True

    return all(visit(x) for x in list(load.operands)[1:] if "mem_token" not in str(x.type))


def plan(cg, loop) -> Plan | None:
    """A :class:`Plan` when ``loop`` (an old ``scf.for``) can be pipelined (module docstring), else None."""
    if (cg.options.extra if cg.options is not None else {}).get(PIPELINE_OPTION, "on") in ("0", "off", "false"):
        return None
    body = loop.regions[0].blocks[0]
    iv = body.arguments[0]
    ops = list(body.operations)
    dots = [o for o in ops if o.name in ("nv_tileas.dot", SCALED_DOT)]
    if not dots or any(dot_fragment(cg, d) is None for d in dots):
        return None
    frag = dot_fragment(cg, dots[0])
    atom = default_atom(cg.atoms, "copy", cg.target, None, interface=G2S_INTERFACE)
    dot_atoms = [cg.atoms.get(str(d.attributes["atom"]).split('"')[1]) for d in dots]
    if atom is None or any(not is_tensor_core(a) for a in dot_atoms):
        return None
    from ..atoms.select import mma_request

    loads, slice_ops = [], {}
    counters = _counters(loop)
    for d, a in zip(dots, dot_atoms):
        lay_a = lay_b = None
        if a.data.get("fragment") == "wgmma":  # warpgroup atoms read their operands in their swizzled layouts
            lay_a, lay_b = a.lower(cg, "layouts", mma_request(d, cg.threads, cg.target), 0)
        for i, v in enumerate(list(d.operands)[:2]):  # A and B (a block-scaled dot's scales stay in the body)
            if not isinstance(v, ir.OpResult) or not _in_body(v, body):
                continue
            # a block-scaled tcgen05 atom with ``b_k_major`` reads B K-major: a transposed view's tile, or the
            # transpose of an N x K tile (``ct.transpose(ct.load(...))``), is that layout in memory already
            b_k_major = i == 1 and d.name == SCALED_DOT and bool(a.data.get("b_k_major"))
            load, chain = _reshape_chain(v, body, permute_ok=b_k_major)
            lay = (lay_a, lay_b)[i]
            # a warpgroup atom takes B K-major too: a transposed view's tile is that layout in memory already
            k_major_ok = lay is lay_b and lay is not None or b_k_major
            piped, deps = _load_ok(load, d, body, transposed_ok=k_major_ok, chain=chain,
                                   packed_ok=_packed_ok(d, a)), {}
            if piped is None or not _index_slice(load, body, iv, deps, counters):
                continue
            piped = _staged_as_atom_reads(cg, d, a, i, piped, lay)
            if piped is None:
                continue
            slice_ops.update(deps)
            loads.append(piped)
    if not loads:
        return None
    for p in loads:
        _pair_half(cg, p)
    # a tcgen05 dot's stage the atom reads in another layout is copied into it in the scratch buffer per dot
    # (``dot._stages_to_atom_layouts``): tf32's, 8-bit N = 16 and 16-bit N = 8 B (read K-major), 8-bit operands with
    # K = 16 (padded to 32), a 16- / 32-row A (its rows repeated to 64): such a body uses shared memory of its own,
    # past the ring
    staged = {p.load.results[0] for p in loads}

    def operand_staged(d, i: int) -> bool:
        src = _reshape_chain(d.operands[i], body)[0]
        return src is not None and src.results[0] in staged

    copies_b = any(a.data.get("fragment") == "tcgen05" and (
        ("tf32" in str(d.operands[1].type) and operand_staged(d, 1)) or
        (_narrow_rows(d) and (operand_staged(d, 0) or operand_staged(d, 1))) or
        (ir.RankedTensorType(d.operands[0].type).shape[0] < 64 and operand_staged(d, 0)))
        for d, a in zip(dots, dot_atoms))
    # a block-scaled dot writes its scale factors (and a 64-row A in layout F) to shared memory in the body
    pure = len(loads) == 2 * len(dots) and not copies_b and all(d.name != SCALED_DOT for d in dots) and \
        _only_fragment_arithmetic(cg, ops, loads, slice_ops, dots, frag)
    if all(a.data.get("fragment") == "tcgen05" for a in dot_atoms):
        for p in loads:  # rows of 16 bytes (8-bit N or K of 16): dense, the stage one TMA box without swizzle
            if _dense_16(p):  # (tcgen05's atoms copy such a stage into their layouts; no ldmatrix reads it)
                p.pitch = p.cols
    at = 0
    for p in loads:
        if p.swizzled is not None:  # the swizzle pattern repeats every 1024 bytes of the absolute address
            at = (at + 1023) // 1024 * 1024
        elif p.pitch == p.cols:  # a TMA box's shared-memory address: 128-byte aligned
            at = (at + 127) // 128 * 128
        p.offset = at
        at += p.nbytes
    if any(p.swizzled is not None for p in loads):
        at = (at + 1023) // 1024 * 1024  # every stage starts 1024-byte aligned
    # the stages may take what a CTA may opt into (dynamic shared memory beyond 48 KiB), less the alignment
    # slack and the mbarriers, and (a body that uses shared memory itself) the body's scratch region
    budget = max_shared_bytes(cg.target.cc if cg.target is not None else 0) - 1024 - MBARRIER_BYTES * MAX_STAGES
    if not pure:
        copies = {d for d, a in zip(dots, dot_atoms) if copies_b and a.data.get("fragment") == "tcgen05"}
        budget -= _body_scratch(cg, dots, lambda d, i: operand_staged(d, i) and d not in copies)
    stages = min(MAX_STAGES, budget // at) if at > 0 else 0
    if stages < 1:
        return None
    order = {o.operation: i for i, o in enumerate(ops)}
    shift = 0 if pure else (stages * at + MBARRIER_BYTES * stages + 1023) // 1024 * 1024
    return Plan(loads, at, stages, atom, sorted(slice_ops.values(), key=lambda o: order[o]), shift, loop, counters)


def _body_scratch(cg, dots, staged_as_read) -> int:
    """Shared memory kept past the ring for a body that uses some itself: :data:`BODY_SCRATCH_BYTES`, or what its
    largest dot writes there, when more: the operands not read in their stage (``staged_as_read(d, i)``: operand
    ``i`` of dot ``d`` is a stage the atom reads as it is), in the atom's layouts (a dot's atom may take up to
    ``tilecore.mma.dot_smem_budget``); the ring then gets fewer stages, or none."""
    from tilecore.mma import SMEM_SLACK_BYTES, element_bytes

    from ..atoms.select import mma_request
    from .dot import smem_end, smem_operand

    def need(d) -> int:
        req = mma_request(d, cg.threads, cg.target)
        atom = cg.atoms.get(str(d.attributes["atom"]).split('"')[1])
        if atom is not None and atom.data.get("fragment") in ("wgmma", "tcgen05"):  # the atom's layouts, in place
            lays = atom.lower(cg, "layouts", req, 0)
            return max((smem_end(lay) for i, lay in enumerate(lays) if not staged_as_read(d, i)), default=0)
        at = 0  # warp-level atoms: the written operands one after the other (``dot._operands_to_smem``)
        for i, (rows, cols, el) in enumerate(((req.m, req.k, req.a), (req.k, req.n, req.b))):
            if not staged_as_read(d, i):
                at = smem_end(smem_operand(rows, cols, None, element_bytes(el), at))
        return at

    return max([BODY_SCRATCH_BYTES] + [need(d) + SMEM_SLACK_BYTES for d in dots if d.name == "nv_tileas.dot"])


def _dense_16(p: PipedLoad) -> bool:
    """Whether ``p``'s tile has rows of 16 bytes with no swizzled layout (not transposed, not packed): a TMA box of
    16-byte lines without swizzle fills it when its rows are dense (``pitch == cols``)."""
    return p.swizzled is None and not p.transposed and not p.packed and p.cols * p.elem_bytes == 16


def _narrow_rows(dot) -> bool:
    """Whether ``dot``'s B has rows of 16 bytes along N or K (8-bit operands with N or K 16, 16-bit ones with N 8):
    no swizzled layout takes them, so tcgen05 reads copies of them (K-major, or K padded to 32 bytes)."""
    t = ir.RankedTensorType(dot.operands[1].type)
    el = t.element_type
    if str(el).startswith("f8") or (isinstance(el, ir.IntegerType) and ir.IntegerType(el).width == 8):
        eb = 1
    elif isinstance(el, (ir.F16Type, ir.BF16Type)):
        eb = 2
    else:
        return False
    return any(d * eb == 16 for d in t.shape[-2:])


def _pair_half(cg, p: PipedLoad) -> None:
    """A paired kernel's B (``cg.cta_pairs``, :mod:`.pairs`): the stage holds this CTA's half of the columns, in
    the swizzled layout of a tile of that width (the pair's MMA reads each CTA's half at the same offset)."""
    from .dot import smem_operand

    halves = getattr(cg, "cta_pairs", None) or {}
    half = next((n for load, n in halves.items() if load == p.load), 0)
    if not half:
        return
    p.pair_half, p.cols = half, half
    p.pitch = half + ROW_PAD_BYTES // p.elem_bytes
    p.swizzled = smem_operand(p.rows, half, None, p.elem_bytes, 0)


def piped_b(plan_: Plan, dot) -> PipedLoad | None:
    """The piped load that is ``dot``'s B (through its chain), or None."""
    b = dot.operands[1]
    return next((p for p in plan_.loads if (p.chain[-1] if p.chain else p.load).results[0] == b), None)


def _pair_shift(cg, p: PipedLoad, acc) -> None:
    """Shift ``acc``'s column origin to this CTA's half of a paired B (``rank * pair_half`` columns)."""
    if not p.pair_half:
        return
    from .pairs import cta_rank

    col = p.lead + 1
    shift = cg.op("arith.muli", cta_rank(cg), cg.c32(p.pair_half))
    acc.origin[col] = cg.op("arith.addi", acc.origin[col], resize_int(shift, acc.index))


def _packed_ok(dot, atom) -> bool:
    """Whether ``dot``'s atom reads e2m1 operands packed in its stages (the sm100 mxf4 atoms' ``packed_stages``)."""
    return dot.name == SCALED_DOT and bool(atom.data.get("packed_stages"))


def _staged_as_atom_reads(cg, d, a, i: int, piped: PipedLoad, lay) -> PipedLoad | None:
    """``piped`` (operand ``i`` of dot ``d``, atom ``a``; ``lay``: a warpgroup atom's layout of it, or None) with the
    stage layout the atom reads it in (``piped.swizzled``), or None when the copy cannot give that layout: a
    transposed view transposed again (MN-major, which 16-byte copies cannot make K-major), a block-scaled dot's
    operand without a swizzled layout, a transposed tile for a layout that is not, and a packed (e2m1) A not
    packed along K (the mxf4 kinds read A and B K-major only, PTX ISA 9.7.16.10.7 / Table 49). A K x N e2m1 B lies
    packed along N: its stage holds those bytes (a swizzled layout of K rows of N / 2 bytes), and the atom repacks
    them along K per dot (sm100 ``BlockScaledF4Umma.pack``)."""
    from ..atoms.select import mma_request

    permuted = any(o.name == "nv_tileas.permute" for o in piped.chain)
    if permuted and (piped.transposed or piped.swizzled is None):
        return None
    if piped.packed and (piped.transposed or permuted) and i == 0:
        return None
    if piped.packed and i == 1 and not (piped.transposed or permuted) and piped.swizzled is None:
        return None  # a K x N B packed along N: a swizzled stage of its bytes, which the atom repacks along K
    if piped.transposed:
        lay = a.lower(cg, "layouts", mma_request(d, cg.threads, cg.target), 0, "k")[1]
    if d.name == SCALED_DOT and piped.swizzled is None and lay is None and not _dense_16(piped):
        return None  # its atoms read swizzled layouts (a tile of 16-byte rows: a dense stage, copied per dot)
    if lay is not None:
        if lay.transposed != piped.transposed:  # 16-byte copies cannot transpose a tile
            return None
        if lay.rows * lay.cols != piped.rows * piped.cols:  # the atom pads K (sm_90a's 8-bit K of 16): the
            return None  # stage would hold the tile only; the dot writes it and zeros the padding per dot
        piped.swizzled = lay
    return piped


def _only_fragment_arithmetic(cg, ops, loads, slice_ops, dots, frag) -> bool:
    """Whether the body's other ops use no shared memory: element-wise ops on the accumulators' fragment
    layout, scalars and tokens, and every dot's accumulator a fragment already or a splat."""
    piped_ops = {o.operation for p in loads for o in (p.load, *p.chain)}
    yields = list(ops[-1].operands)
    body = ops[-1].operation.block
    for o in ops[:-1]:
        if o.operation in piped_ops or o.operation in slice_ops or o.name == "nv_tileas.dot":
            continue
        if o.name in ("nv_tileas.make_token", "nv_tileas.join_tokens"):
            continue
        tensors = [v for v in [*o.operands, *o.results] if _is_tensor(v.type)]
        if not tensors:
            if o.regions:
                return False
            continue
        if o.regions or o.name.split(".")[0] not in ("arith", "math"):
            return False  # anything else may use shared memory (exchanges, reductions, loads, stores)
        for v in o.operands:
            if not _is_tensor(v.type) or _splat_constant(v):
                continue
            lay = preferred_layout(cg, v) if not isinstance(v, ir.BlockArgument) else \
                (preferred_layout(cg, yields[v.arg_number - 1]) if v.owner == body else None)
            if lay != frag:
                return False
    for d in dots:  # the accumulator: a fragment already, or a splat (converted for free)
        acc = d.operands[2]
        if _splat_constant(acc):
            continue
        lay = preferred_layout(cg, yields[acc.arg_number - 1]) if isinstance(acc, ir.BlockArgument) and \
            acc.owner == body else preferred_layout(cg, acc)
        if lay != dot_fragment(cg, d):
            return False
    return True


# -- code ------------------------------------------------------------------------------------------
def _indices(rb, plan_: Plan, p: PipedLoad, iv_old, iv_new) -> list:
    """The load's index values for the iteration whose induction variable is ``iv_new`` (the index slice
    rebuilt with the induction variable bound to it, and the loop's counters to their values there, the bindings
    restored after)."""
    counted = _counter_values(rb, plan_, iv_new)
    bound = [iv_old, *counted]
    saved = {v: rb.map[v] for v in [*bound, *[r for o in plan_.slice_ops for r in o.results]] if v in rb.map}
    fresh = [r for o in plan_.slice_ops for r in o.results if r not in rb.map]
    rb.map[iv_old] = iv_new
    rb.map.update(counted)
    try:
        for o in plan_.slice_ops:
            rb.op(o)
        return [rb.get(x) for x in list(p.load.operands)[1:] if "mem_token" not in str(x.type)]
    finally:
        rb.map.update(saved)
        for v in bound:
            if v not in saved:
                del rb.map[v]
        for r in fresh:
            rb.map.pop(r, None)


def _issue(cg, rb, plan_: Plan, stage_base, iv_old, iv_new, elements: bool = False) -> None:
    """Copy every operand tile of iteration ``iv_new`` into the stage starting ``stage_base`` bytes (an i32
    value) into the scratch buffer: chunk ``tid + j * threads`` of each tile per thread, by the copy atom
    (:func:`_copy_chunk`) or, ``elements``, element by element (:func:`_copy_chunk_elements`; there the reps
    ``j`` whose chunks all exist are one ``scf.for``, the copy's code one chunk, not ``reps x 16`` bytes of
    guarded loads: about a fifth of a matmul's LLVM and ptxas time otherwise)."""
    from .memory import TiledAccess

    copy = _copy_chunk_elements if elements else _copy_chunk

    for p in plan_.loads:
        view = _view(rb, p)
        acc = TiledAccess(cg, view, _indices(rb, plan_, p, iv_old, iv_new), None, p.load)
        _pair_shift(cg, p, acc)
        lines, line_elems = _lines(p)
        chunks = lines * (line_elems * p.elem_bytes // 16)
        shape = [resize_int(s, acc.index) for s in view.memref.shape]
        reps = range(-(-chunks // cg.threads))
        if elements and chunks >= 2 * cg.threads:
            # element by element, the reps whose chunks all exist are one loop (its body one rep's copy):
            # unrolled they would be reps x 16 bytes of element copies (a load, a branch, a store each)
            whole = chunks // cg.threads * cg.threads

            def rep_body(iv, _, p=p, acc=acc, shape=shape):
                copy(cg, plan_.atom, p, acc, shape, cg.op("arith.addi", cg.tid, iv), stage_base)
                return []

            cg.for_(cg.c32(0), cg.c32(whole), [], rep_body, step=cg.threads)
            reps = range(whole // cg.threads, len(reps))
        for rep in reps:
            cid = cg.op("arith.addi", cg.tid, cg.c32(rep * cg.threads)) if rep else cg.tid
            args = (cg, plan_.atom, p, acc, shape, cid, stage_base)
            if (rep + 1) * cg.threads > chunks:
                cg.masked(cg.cmpi(6, cid, cg.c32(chunks)), lambda args=args: copy(*args))
            else:
                copy(*args)


def _stage_address(cg, p: PipedLoad, stage_base, row, col):
    """``!llvm.ptr<3>`` of element (``row``, ``col``) (i32 tile coordinates) of ``p``'s buffer in the stage at
    byte ``stage_base`` (an i32 value): its place in the swizzled layout, or in the padded rows."""
    p3 = ir.Type.parse("!llvm.ptr<3>")
    llvm = dialects.llvm
    if p.swizzled is not None:
        at = replace(p.swizzled, offset=p.offset, dynamic=stage_base).byte_offset(cg, row, col)
        return llvm.getelementptr(p3, cg.smem_base, [at], [-2147483648], cg.i8, 0)
    index = cg.op("arith.addi", cg.op("arith.muli", row, cg.c32(p.pitch)), col)
    at = cg.op("arith.addi", cg.op("arith.muli", index, cg.c32(p.elem_bytes)), stage_base)
    dst = llvm.getelementptr(p3, cg.smem_base, [at], [-2147483648], cg.i8, 0)
    return llvm.getelementptr(p3, dst, [], [p.offset], cg.i8, 0) if p.offset else dst


def _lines(p: PipedLoad) -> tuple[int, int]:
    """(lines, elements per line) of ``p``'s tile in memory order: its rows, or (transposed) its columns."""
    return (p.cols, p.rows) if p.transposed else (p.rows, p.cols)


def _memory_order(m, p: PipedLoad):
    """The memref of ``p``'s view (tile order) back in memory order (a transposed view's axes swapped)."""
    from .memory import permuted

    return permuted(m, (1, 0)) if p.transposed else m


def _chunk(cg, p: PipedLoad, acc, shape, cid):
    """Where 16-byte chunk ``cid`` (line ``cid / chunks per line``: a row, or a column of a transposed tile) of
    ``p``'s tile is: (its first element's row and column in the tile, its global coordinates, i1 'that element
    is in bounds', the elements of its line from it to the array's edge)."""
    idx_t = acc.index
    vec = 16 // p.elem_bytes
    per_line = _lines(p)[1] // vec
    line = cg.op("arith.divui", cid, cg.c32(per_line))
    along = cg.op("arith.muli", cg.op("arith.remui", cid, cg.c32(per_line)), cg.c32(vec))
    row, col = (along, line) if p.transposed else (line, along)
    axis = p.lead + (0 if p.transposed else 1)  # the tile axis the chunk runs along (contiguous in memory)
    # packed (e2m1): the stage's bytes along that axis hold two elements each
    elems = cg.op("arith.muli", along, cg.c32(2)) if p.packed else along
    r_el, c_el = (elems, line) if p.transposed else (line, elems)
    g = [*acc.origin[:p.lead], cg.op("arith.addi", acc.origin[p.lead], resize_int(r_el, idx_t)),
         cg.op("arith.addi", acc.origin[p.lead + 1], resize_int(c_el, idx_t))]
    inside = cg.and_(*[cg.cmpi(6, c, n) for c, n in zip(g, shape)])
    return row, col, g, inside, cg.op("arith.subi", shape[axis], g[axis])


def _copy_chunk(cg, atom, p: PipedLoad, acc, shape, cid, stage_base) -> None:
    """One 16-byte chunk (:func:`_chunk`) of ``p``'s tile by the copy atom: the bytes in bounds are read, the
    rest zero-filled; a chunk with none in bounds reads nothing (its source is the tile origin, clamped)."""
    idx_t = acc.index
    row, col, g, inside, left = _chunk(cg, p, acc, shape, cid)
    vec_c = cg.const(idx_t, 16 // p.elem_bytes * (2 if p.packed else 1))  # elements a chunk
    n = cg.select(inside, cg.select(cg.cmpi(6, left, vec_c), left, vec_c), cg.const(idx_t, 0))
    n32 = resize_int(n, cg.i32)
    # packed: n is even (the run-time check asks for an even extent along the packed axis), n / 2 bytes
    nbytes = cg.op("arith.shrui", n32, cg.c32(1)) if p.packed else cg.op("arith.muli", n32, cg.c32(p.elem_bytes))
    clamped = [cg.select(inside, c, cg.const(idx_t, 0)) for c in g]
    src = acc._byte_ptr(acc.offset(clamped)) if p.packed else acc.address(clamped)
    # the chunk is one 16-byte unit of the swizzled layout, or 16 bytes of a padded row
    atom.lower(cg, "copy", _stage_address(cg, p, stage_base, row, col), src, nbytes)


def _copy_chunk_elements(cg, atom, p: PipedLoad, acc, shape, cid, stage_base) -> None:
    """One 16-byte chunk (:func:`_chunk`) of ``p``'s tile element by element, for tensors whose chunks are not
    16-byte aligned (the un-aligned loop, :func:`pipelined_for` with ``elements``): element ``i`` is read when
    in bounds (else the zero padding) from the chunk's source plus ``i`` and stored at its stage address plus
    ``i`` elements (a chunk is contiguous in memory and in the stage: one 16-byte unit of the swizzled layout or
    of a padded row), so the addresses are computed once per chunk."""
    from .memory import padding_value

    llvm = dialects.llvm
    row, col, g, inside, left = _chunk(cg, p, acc, shape, cid)
    if p.packed:
        _copy_packed_chunk_elements(cg, acc, inside, left, acc.offset(g), _stage_address(cg, p, stage_base, row, col))
        return
    src, dst = acc.address(g), _stage_address(cg, p, stage_base, row, col)
    zero = padding_value(cg, acc.element, "zero")
    p1, p3 = ir.Type.parse(PTR1), ir.Type.parse("!llvm.ptr<3>")
    values = []
    for i in range(16 // p.elem_bytes):
        ok = cg.and_(inside, cg.cmpi(8, left, cg.const(acc.index, i))) if i else inside  # left > i (unsigned)
        at = llvm.getelementptr(p1, src, [], [i], acc.element, 0) if i else src
        values.append(cg.masked(ok, lambda at=at: acc.load(at), zero, acc.element))
    if scalar_bits(acc.element) == 8 * p.elem_bytes:
        # the chunk is one 16-byte unit of the stage: one aligned store
        llvm.store(cg.vector(values), dst, alignment=16)
        return
    for i, value in enumerate(values):
        llvm.store(value, llvm.getelementptr(p3, dst, [], [i * p.elem_bytes], cg.i8, 0) if i else dst)


def _copy_packed_chunk_elements(cg, acc, inside, left, off, dst) -> None:
    """:func:`_copy_chunk_elements` for a packed (e2m1) chunk: 16 bytes, byte ``i`` from elements ``off + 2i`` and
    ``+ 1`` (i64 element offsets; an element's half of its byte, as :meth:`.memory.TiledAccess.load_packed` reads
    it, so odd row strides and extents are served), each when in bounds (else the zero code 0)."""
    llvm = dialects.llvm
    p3 = ir.Type.parse("!llvm.ptr<3>")
    zero = cg.const(cg.i8, 0)

    def nibble(j):
        o = cg.op("arith.addi", off, cg.const(cg.i64, j)) if j else off
        ok = cg.and_(inside, cg.cmpi(8, left, cg.const(acc.index, j))) if j else inside  # left > j (unsigned)
        return cg.masked(ok, lambda: cg.op("arith.andi", cg.op("arith.shrui", acc.load(acc._byte_ptr(o)),
                                                                acc._half_shift(o)), cg.const(cg.i8, 15)),
                         zero, cg.i8)

    for i in range(16):
        byte = cg.op("arith.ori", nibble(2 * i), cg.op("arith.shli", nibble(2 * i + 1), cg.const(cg.i8, 4)))
        llvm.store(byte, llvm.getelementptr(p3, dst, [], [i], cg.i8, 0) if i else dst)


def _view(rb, p: PipedLoad):
    """The ViewV of ``p``'s load (its view op may be in the loop body, not rebuilt yet: it only records)."""
    from .memory import view

    v = p.load.operands[0]
    return rb.map[v] if v in rb.map else view(v.owner, rb)[0]


def alignment_check(cg, rb, plan_: Plan):
    """i1: every chunk address of every operand is 16-byte aligned (None when that is known statically)."""
    return cg.and_(*[aligned_16(cg, _memory_order(_view(rb, p).memref, p), p.elem_bytes, p.packed)
                     for p in plan_.loads])


def aligned_16(cg, m, elem_bytes: int, packed: bool = False):
    """i1: the base and every stride but the innermost of memref ``m`` (elements of ``elem_bytes``) are 16-byte
    multiples, what 16-byte copies and TMA need (None when that is known statically; a false constant when a
    static stride is not). ``packed`` (e2m1, two elements a byte; ``elem_bytes`` 1): strides of 32-element
    multiples, and an even innermost extent (the last byte of an odd row holds an element of the tensor and half
    a byte past it, which a byte copy would not zero)."""
    conds = []
    unit = 16 * (2 if packed else 1)  # what a stride (elements x elem_bytes) must be a multiple of
    if m.div_by % 16:
        base = dialects.llvm.ptrtoint(cg.i64, m.base)
        conds.append(cg.cmpi(0, cg.op("arith.andi", base, cg.const(cg.i64, 15)), cg.const(cg.i64, 0)))
    for s, div in zip(m.strides[:-1], m.stride_div[:-1] or [1] * (len(m.strides) - 1)):
        if isinstance(s, int):
            if (s * elem_bytes) % unit:
                return cg.const(cg.i1, 0)
            continue
        if (div * elem_bytes) % unit == 0:  # an assume div_by hint (cuTile's stride facts)
            continue
        bytes_ = cg.op("arith.muli", s, cg.const(cg.i64, elem_bytes))
        conds.append(cg.cmpi(0, cg.op("arith.andi", bytes_, cg.const(cg.i64, unit - 1)), cg.const(cg.i64, 0)))
    if packed:
        extent = m.shape[-1]
        static = int_constant(extent)
        if static is not None and static % 2:
            return cg.const(cg.i1, 0)
        if static is None:
            one = cg.const(extent.type, 1)
            conds.append(cg.cmpi(0, cg.op("arith.andi", extent, one), cg.const(extent.type, 0)))
    return cg.and_(*conds)


def _option_off(cg, name: str) -> bool:
    return (cg.options.extra if cg.options is not None else {}).get(name, "on") in ("0", "off", "false")


def tma_maps(cg, rb, plan_: Plan, checked: bool):
    """``(atom, [tensor-map parameter per load])`` when every operand tile of the loop can come by TMA (a
    TMA copy atom for the target, every tile in a swizzled layout of whole 8-row atoms, its tensor's base /
    extents / row stride kernel parameters: :mod:`.tensor_maps`), else None. TMA needs 16-byte aligned bases
    and row strides: ``checked`` says the loop runs only after a run-time check of that (the maps are then
    optional: a launcher passes zeros for tensors that fail it)."""
    maps = rb.data.get("tensor_maps")
    atom = default_atom(cg.atoms, "copy", cg.target, None, interface=TMA_INTERFACE)
    if maps is None or atom is None or _option_off(cg, TMA_OPTION):
        return None
    recipes = [_tma_recipe(cg, rb, p, maps, checked) if _tma_box_ok(cg, p) else None for p in plan_.loads]
    if any(r is None for r in recipes):
        return None
    return atom, [maps.parameter(r) for r in recipes]


def _tma_box_ok(cg, p: PipedLoad) -> bool:
    """Whether ``p``'s tile can come by TMA boxes into its stage: a swizzled layout of the load's major, whole
    8-row atoms, at most :data:`MAX_BOX` lines, lines of whole swizzle columns, the load allowing TMA."""
    sw = p.swizzled
    lines, line_elems = _lines(p)
    if sw is None:  # dense rows of 16 bytes (:func:`_dense_16`): one box without swizzle
        return _dense_16(p) and p.pitch == p.cols and not lines % 8 and lines <= MAX_BOX and \
            _tma_allowed(cg, p.load)
    return not (sw.transposed != p.transposed or lines % 8 or lines > MAX_BOX or
                (line_elems * p.elem_bytes) % sw.swizzle or not _tma_allowed(cg, p.load))


def _tma_recipe(cg, rb, p: PipedLoad, maps, checked: bool):
    """The tensor-map recipe of ``p``'s boxes (one swizzle column of lines each; :mod:`.tensor_maps`), or None.
    A packed (e2m1) tile's map is over the tensor's bytes (``CU_TENSOR_MAP_DATA_TYPE_UINT8``, the packed axis'
    extent and the strides halved): its bytes land in the stage as they are, two e2m1 each, lower K index in the
    low half, which is the mxf4 kinds' K-major operand (PTX ISA 9.7.16.10.7, Table 49). (The driver's packed
    4-bit types, ``CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B`` / ``16U4_ALIGN16B``, unpack 16 e2m1 to a 16-byte unit in
    shared memory: the padded f4 operand of ``.kind::f8f6f4``, not the packed one of ``.kind::mxf4``.)"""
    swizzle = p.swizzled.swizzle if p.swizzled is not None else 0  # 0: dense 16-byte rows, no swizzle
    lines, _ = _lines(p)
    m = _memory_order(_view(rb, p).memref, p)
    elem = rb.convert_type(ir.RankedTensorType(p.load.results[0].type).element_type)
    box = ((swizzle or 16) // p.elem_bytes, lines) + (1,) * p.lead  # innermost first; a slice's unit dimensions
    return maps.recipe(m, elem if not m.narrow else cg.i8, box, swizzle, checked, packed=p.packed)


def _tma_boxes(cg, rb, p: PipedLoad, tmap, base, bar, index) -> None:
    """The TMA boxes of ``p``'s tile (load indices ``index``) into its buffer of the stage at byte ``base`` (an i32
    value) of the scratch buffer, completing on mbarrier ``bar``: one box per swizzle column of lines (PTX ISA
    9.7.9.25, ``cp.async.bulk.tensor``: the box's first coordinates innermost first). A packed (e2m1) tile's
    coordinate along its packed axis is in bytes: the element origin / 2 (a multiple of the tile's even extent)."""
    from .memory import TiledAccess

    p3 = ir.Type.parse("!llvm.ptr<3>")
    llvm = dialects.llvm
    atom = default_atom(cg.atoms, "copy", cg.target, None, interface=TMA_INTERFACE)
    acc = TiledAccess(cg, _view(rb, p), index, None, p.load)
    _pair_shift(cg, p, acc)
    lead = [resize_int(o, cg.i32) for o in acc.origin[:p.lead]][::-1]  # innermost first
    row, col = (resize_int(o, cg.i32) for o in acc.origin[p.lead:])
    inner0, outer = (row, col) if p.transposed else (col, row)  # memory order
    if p.packed:
        inner0 = cg.op("arith.shrsi", inner0, cg.c32(1))
    lines, line_elems = _lines(p)
    column = p.swizzled.swizzle if p.swizzled is not None else 16  # bytes of a box's lines (dense rows: 16)
    for j in range(line_elems * p.elem_bytes // column):
        at = cg.op("arith.addi", base, cg.c32(p.offset + j * lines * column))
        dst = llvm.getelementptr(p3, cg.smem_base, [at], [-2147483648], cg.i8, 0)
        inner = cg.op("arith.addi", inner0, cg.c32(j * column // p.elem_bytes)) if j else inner0
        atom.lower(cg, "load", dst, tmap, bar, [inner, outer, *lead])


def _tma_allowed(cg, load) -> bool:
    """cuTile's load hint ``allow_tma`` (``ct.load(..., allow_tma=False)``, the ``default`` or ``sm_<cc>`` entry of
    the op's ``optimization_hints``): False keeps the loop's copies on cp.async."""
    from ..stage2_tileaa_to_tileas.kernel_spec import hints_for

    attr = load.attributes["optimization_hints"] if "optimization_hints" in load.attributes else None
    return bool(hints_for(attr, cg.target).get("allow_tma", 1))


def pipelined_for(op, rb, plan_: Plan, lb, ub, step, inits, body_into, checked: bool = False,
                  elements: bool = False) -> list:
    """Build the pipelined loop (module docstring) at the current insertion point; returns the flat results.

    ``body_into(block, args)`` rebuilds the old body into ``block`` (with the dots' operands read from the
    current stage) and returns nothing; the loop's extra iteration arguments (the stage read; with TMA the
    phase parity too) are appended to its terminator here. The tiles come by TMA where they can
    (:func:`tma_maps`; ``checked``: the loop runs behind :func:`alignment_check`). ``elements``: the form for
    tensors that fail that check: one stage, filled element by element (:func:`_copy_chunk_elements`) between
    two barriers, then the same dots (the loop's whole code but the copy is shared with the aligned form)."""
    from .control import flatten

    cg = rb.data["cg"]
    tma = None if elements else tma_maps(cg, rb, plan_, checked)
    if tma is not None:
        return _tma_pipelined_for(op, rb, plan_, lb, ub, step, inits, body_into, *tma)
    s_count = 1 if elements else plan_.stages
    iv_old = op.regions[0].blocks[0].arguments[0]
    cg.reserve(s_count * plan_.stage_bytes)
    if any(p.swizzled is not None for p in plan_.loads):
        cg.smem_align = max(cg.smem_align, 1024)
    atom = plan_.atom

    def stage_base(stage):
        return cg.op("arith.muli", stage, cg.c32(plan_.stage_bytes))

    def ahead(iv, n):
        return cg.op("arith.addi", iv, cg.op("arith.muli", step, resize_int(cg.c32(n), step.type))) if n else iv

    def issue_if(iv_new, stage):
        cg.if_(cg.cmpi(2, iv_new, ub), lambda: (_issue(cg, rb, plan_, stage_base(stage), iv_old, iv_new), [])[1])
        atom.lower(cg, "commit")

    for s in range(s_count - 1):
        issue_if(ahead(lb, s), cg.c32(s))
    flat = flatten(inits)
    node = create("scf.for", [v.type for v in flat] + [cg.i32], [lb, ub, step, *flat, cg.c32(0)], regions=1)
    blk = node.regions[0].blocks.append(lb.type, *[v.type for v in flat], cg.i32)
    iv, rd = blk.arguments[0], blk.arguments[len(flat) + 1]
    with ir.InsertionPoint(blk):
        if s_count > 1:
            atom.lower(cg, "wait", s_count - 2)
            cg.barrier()
            wr = cg.select(cg.cmpi(0, rd, cg.c32(0)), cg.c32(s_count - 1), cg.op("arith.subi", rd, cg.c32(1)))
            issue_if(ahead(iv, s_count - 1), wr)
        elif elements:
            cg.barrier()
            _issue(cg, rb, plan_, cg.c32(0), iv_old, iv, elements=True)
            cg.barrier()
        else:
            cg.barrier()
            _issue(cg, rb, plan_, cg.c32(0), iv_old, iv)
            atom.lower(cg, "commit")
            atom.lower(cg, "wait", 0)
            cg.barrier()
        _body_on_stage(cg, rb, plan_, blk, iv, rd, len(flat), body_into)
        term = list(blk.operations)[-1]
        with ir.InsertionPoint(term), term.location:
            create("scf.yield", [], [*term.operands, _next_stage(cg, rd, s_count)])
        term.erase()
    if not elements:
        atom.lower(cg, "wait", 0)
    cg.barrier()
    return list(node.results)[:-1]


def _next_stage(cg, rd, s_count: int):
    nxt = cg.op("arith.addi", rd, cg.c32(1))
    return cg.select(cg.cmpi(0, nxt, cg.c32(s_count)), cg.c32(0), nxt)


def _body_on_stage(cg, rb, plan_: Plan, blk, iv, rd, n_flat: int, body_into) -> None:
    """Rebuild the old body into ``blk`` with the dots' operands read from stage ``rd`` (an i32 value); a body
    that uses shared memory itself does so past the ring (:meth:`CodeGen.shifted_scratch`, the stages then
    at negative offsets from the shifted base: the same addresses)."""
    operands = {}
    at = -plan_.shift
    for p in plan_.loads:
        elem = rb.convert_type(ir.RankedTensorType(p.load.results[0].type).element_type)
        if p.swizzled is not None:  # bytes
            dyn = cg.op("arith.muli", rd, cg.c32(plan_.stage_bytes))
            operands[p.load.results[0]] = replace(p.swizzled, offset=at + p.offset, elem=elem, dynamic=dyn)
        else:  # elements
            dyn = cg.op("arith.muli", rd, cg.c32(plan_.stage_bytes // p.elem_bytes))
            operands[p.load.results[0]] = SmemOperand(at + p.offset, p.rows, p.cols, p.pitch, elem, p.elem_bytes,
                                                      dyn)
    outer = rb.data.get("piped")  # a single dot's stages (:func:`single_dot_stages`) in the body stay
    rb.data["piped"] = {**(outer or {}), **operands}
    try:
        if plan_.shift:
            with cg.shifted_scratch(plan_.shift):
                body_into(blk, [iv, *list(blk.arguments)[1:n_flat + 1]])
        else:
            body_into(blk, [iv, *list(blk.arguments)[1:n_flat + 1]])
    finally:
        if outer is None:
            rb.data.pop("piped", None)
        else:
            rb.data["piped"] = outer


def _tma_pipelined_for(op, rb, plan_: Plan, lb, ub, step, inits, body_into, atom, maps) -> list:
    """The pipelined loop with its tiles copied by TMA into a ring of S stages, stage s completing on
    mbarrier s (placed after the stages; thread 0 issues, every thread waits)::

        thread 0: init the S mbarriers (one arrival each); barrier
        prologue: thread 0, for s < S - 1: if lb + s * step < ub: expect the stage's bytes on mbarrier s,
                  TMA the tiles of iteration s into stage s
        for iv (carrying the accumulators, the stage r read this iteration and its phase parity):
            barrier                                              (every thread is done with stage r - 1)
            thread 0: if iv + (S - 1) * step < ub: proxy fence; expect + TMA that iteration into stage r - 1
            wait for the phase of mbarrier r                     (stage r landed)
            the dots read their operands from stage r
        barrier; thread 0 invalidates the mbarriers; barrier     (the buffer is scratch again)

    A tile box out of the tensor reads zeros (TMA's out-of-bound fill), which is the loads' padding."""
    from .control import flatten

    cg = rb.data["cg"]
    s_count = plan_.stages
    iv_old = op.regions[0].blocks[0].arguments[0]
    bar_at = s_count * plan_.stage_bytes
    cg.reserve(bar_at + MBARRIER_BYTES * s_count)
    cg.smem_align = max(cg.smem_align, 1024)
    p3 = ir.Type.parse("!llvm.ptr<3>")
    llvm = dialects.llvm
    stage_tx = sum(p.rows * p.cols * p.elem_bytes for p in plan_.loads)

    def bar(stage):
        at = cg.op("arith.addi", cg.op("arith.muli", stage, cg.c32(MBARRIER_BYTES)), cg.c32(bar_at))
        return llvm.getelementptr(p3, cg.smem_base, [at], [-2147483648], cg.i8, 0)

    def ahead(iv, n):
        return cg.op("arith.addi", iv, cg.op("arith.muli", step, resize_int(cg.c32(n), step.type))) if n else iv

    leader = cg.cmpi(0, cg.tid, cg.c32(0))

    def issue(iv_new, stage, fence: bool):
        def copies():
            if fence:
                atom.lower(cg, "fence_proxy")
            atom.lower(cg, "expect_tx", bar(stage), cg.c32(stage_tx))
            base = cg.op("arith.muli", stage, cg.c32(plan_.stage_bytes))
            for p, tmap in zip(plan_.loads, maps):
                _tma_boxes(cg, rb, p, tmap, base, bar(stage), _indices(rb, plan_, p, iv_old, iv_new))
            return []

        cg.if_(cg.and_(leader, cg.cmpi(2, iv_new, ub)), copies)

    def each_barrier(action):
        def fn():
            for s in range(s_count):
                atom.lower(cg, action, bar(cg.c32(s)))
            return []
        cg.if_(leader, fn)

    each_barrier("barrier_init")
    cg.barrier()
    for s in range(s_count - 1):
        issue(ahead(lb, s), cg.c32(s), False)
    flat = flatten(inits)
    node = create("scf.for", [v.type for v in flat] + [cg.i32, cg.i32],
                  [lb, ub, step, *flat, cg.c32(0), cg.c32(0)], regions=1)
    blk = node.regions[0].blocks.append(lb.type, *[v.type for v in flat], cg.i32, cg.i32)
    iv, rd, phase = blk.arguments[0], blk.arguments[len(flat) + 1], blk.arguments[len(flat) + 2]
    with ir.InsertionPoint(blk):
        cg.barrier()
        wr = cg.select(cg.cmpi(0, rd, cg.c32(0)), cg.c32(s_count - 1), cg.op("arith.subi", rd, cg.c32(1))) \
            if s_count > 1 else rd
        issue(ahead(iv, s_count - 1), wr, True)
        atom.lower(cg, "wait", bar(rd), phase)
        _body_on_stage(cg, rb, plan_, blk, iv, rd, len(flat), body_into)
        term = list(blk.operations)[-1]
        with ir.InsertionPoint(term), term.location:
            nxt = _next_stage(cg, rd, s_count)
            flip = cg.op("arith.xori", phase, cg.c32(1))
            create("scf.yield", [], [*term.operands, nxt, cg.select(cg.cmpi(0, nxt, cg.c32(0)), flip, phase)])
        term.erase()
    cg.barrier()
    each_barrier("inval")
    cg.barrier()
    return list(node.results)[:-2]


# -- single block-scaled dots: A / B by TMA, one stage ---------------------------------------------------------
@dataclass
class DotStages:
    """The operand tiles of one block-scaled dot outside a pipelined loop that come by TMA (a one-stage
    "pipeline": :func:`single_dot`): their loads (offsets in the stage), the stage's bytes, where its mbarrier is
    and the bytes the dot's own scratch region starts after (``shift``)."""

    loads: list
    bar_at: int
    shift: int


def single_dot_stages(cg, rb, block) -> None:
    """Find, in the old kernel body ``block``, the block-scaled tensor-memory dots (``nv_tileas.block_scaled_mma``
    with a ``tcgen05`` atom: cuTile ``mma_scaled`` on sm_100a) not in a loop :func:`plan` pipelines whose A / B
    tiles TMA can serve: a ``tiled_load`` in the dot's block used by it only (directly or through the chain a
    pipelined loop admits), nothing that writes memory between the load and the dot, the stage layout the atom
    reads (:func:`_staged_as_atom_reads`) and a TMA box (:func:`_tma_box_ok`). Such a load lowers to its stage
    buffer (``rb.data["piped"]``: :func:`.memory.tiled_load` returns it, as in a pipelined loop) and the dot
    copies the tiles (:func:`single_dot`); ``rb.data["single_stages"]`` maps the dot to its :class:`DotStages`."""
    if _option_off(cg, TMA_OPTION) or default_atom(cg.atoms, "copy", cg.target, None, interface=TMA_INTERFACE) is None:
        return
    found = {}

    def walk(blk):
        for o in blk.operations:
            o = o.operation
            if o.name == SCALED_DOT:
                st = _dot_stages(cg, o)
                if st is not None:
                    found[o] = st
            for region in o.regions:
                for b in region.blocks:
                    walk(b)

    walk(block)
    if not found:
        return
    piped = rb.data.setdefault("piped", {})
    for st in found.values():
        for p in st.loads:
            elem = rb.convert_type(ir.RankedTensorType(p.load.results[0].type).element_type)
            piped[p.load.results[0]] = replace(p.swizzled, offset=p.offset - st.shift, elem=elem)
    rb.data["single_stages"] = found


def _dot_stages(cg, d) -> DotStages | None:
    """:func:`single_dot_stages` for dot ``d``: its :class:`DotStages`, or None."""
    from ..atoms.select import block_scaled_request

    if "atom" not in d.attributes:
        return None
    a = cg.atoms.get(str(d.attributes["atom"]).split('"')[1])
    if a is None or a.kind != "block_scaled_mma" or a.data.get("fragment") != "tcgen05":
        return None
    body = d.block
    parent = body.owner if body.owner is not None else None
    if parent is not None and parent.name == "scf.for" and plan(cg, parent) is not None:
        return None  # the loop's stages serve it
    loads = []
    for i, v in enumerate(list(d.operands)[:2]):
        if not isinstance(v, ir.OpResult) or not _in_body(v, body):
            continue
        b_k_major = i == 1 and bool(a.data.get("b_k_major"))
        load, chain = _reshape_chain(v, body, permute_ok=b_k_major)
        if load is None or not _in_body(load.results[0], body) or not _no_writes_between(load, d):
            continue
        piped = _load_ok(load, d, body, transposed_ok=b_k_major, chain=chain, packed_ok=_packed_ok(d, a),
                         invariant=False)
        if piped is None:
            continue
        lay = None
        if piped.transposed:
            lay = a.lower(cg, "layouts", block_scaled_request(d, cg.threads, cg.target), 0, "k")[1]
        piped = _staged_as_atom_reads(cg, d, a, i, piped, lay)
        if piped is not None and piped.swizzled is not None and _tma_box_ok(cg, piped):
            loads.append(piped)
    if not loads:
        return None
    at = 0
    for p in loads:
        p.offset = (at + 1023) // 1024 * 1024
        at = p.offset + p.nbytes
    shift = (at + MBARRIER_BYTES + 1023) // 1024 * 1024
    # the atom writes what is not staged (the scale factors) past the stages: all of it within the CTA's shared memory
    req = block_scaled_request(d, cg.threads, cg.target)
    if shift + sum(lay.nbytes for lay in a.lower(cg, "layouts", req, 0)) > req.smem_budget:
        return None
    return DotStages(loads, at, shift)


def _no_writes_between(load, dot) -> bool:
    """Whether no op between ``load`` and ``dot`` (same block) may write memory (a store, an atomic, or anything
    with regions): the tile is copied at the dot, so it must read what the load would have."""
    ops = list(dot.block.operations)
    names = [o.operation for o in ops]
    first, last = names.index(load.operation if hasattr(load, "operation") else load), names.index(dot)
    for o in names[first + 1:last]:
        if o.regions or "store" in o.name or "atomic" in o.name or "scatter" in o.name:
            return False
    return True


def single_dot(cg, rb, op, st: DotStages, types: list, dot_fn) -> list:
    """Dot ``op``'s registers (``types``) with the tiles of ``st`` copied by TMA (one stage, one mbarrier)::

        thread 0: init the mbarrier; barrier
        thread 0: proxy fence; expect the stage's bytes; the TMA boxes of every tile
        wait for phase 0 of the mbarrier
        the dot (``dot_fn()``), its scratch region past the stage (:meth:`CodeGen.shifted_scratch`)
        barrier; thread 0 invalidates the mbarrier; barrier

    A box past the tensor's edge reads zeros (TMA's out-of-bound fill: the loads' zero padding). TMA needs 16-byte
    aligned bases and strides: what the compiler cannot prove is checked at run time (:func:`aligned_16`), and a
    tensor that fails it takes the thread copies: the loads lowered to registers as without TMA, then the same dot
    (the map is optional: a launcher passes zeros for it). Without a map (a tensor not made of kernel
    parameters) the dot takes the thread copies only."""
    from .memory import tiled_load

    maps = rb.data["tensor_maps"]
    check = cg.and_(*[aligned_16(cg, _memory_order(_view(rb, p).memref, p), p.elem_bytes, p.packed)
                      for p in st.loads])
    recipes = [_tma_recipe(cg, rb, p, maps, check is not None) for p in st.loads]

    def threads():
        piped = rb.data["piped"]
        saved = {}
        for p in st.loads:
            r = p.load.results[0]
            stage = piped.pop(r)
            saved[r] = (stage, rb.map.get(r))
            rb.map[r] = tiled_load(p.load, rb)[0]
            for o in p.chain:
                for x in o.results:
                    saved.setdefault(x, (None, rb.map.get(x)))
                rb.op(o)
        try:
            return list(dot_fn().regs)
        finally:
            for r, (stage, before) in saved.items():
                if stage is not None:
                    piped[r] = stage
                rb.map[r] = before

    if any(r is None for r in recipes):
        return threads()
    tmaps = [maps.parameter(r) for r in recipes]
    atom = default_atom(cg.atoms, "copy", cg.target, None, interface=TMA_INTERFACE)

    def tma():
        llvm = dialects.llvm
        cg.reserve(st.shift)
        cg.smem_align = max(cg.smem_align, 1024)
        bar = llvm.getelementptr(ir.Type.parse("!llvm.ptr<3>"), cg.smem_base, [], [st.bar_at], cg.i8, 0)
        leader = cg.cmpi(0, cg.tid, cg.c32(0))
        cg.if_(leader, lambda: (atom.lower(cg, "barrier_init", bar), [])[1])
        cg.barrier()

        def copies():
            atom.lower(cg, "fence_proxy")  # the scratch buffer was last written by the generic proxy
            atom.lower(cg, "expect_tx", bar, cg.c32(sum(p.rows * p.cols * p.elem_bytes for p in st.loads)))
            for p, tmap in zip(st.loads, tmaps):
                index = [rb.get(x) for x in list(p.load.operands)[1:] if "mem_token" not in str(x.type)]
                _tma_boxes(cg, rb, p, tmap, cg.c32(0), bar, index)
            return []

        cg.if_(leader, copies)
        atom.lower(cg, "wait", bar, cg.c32(0))
        with cg.shifted_scratch(st.shift):
            regs = list(dot_fn().regs)
        cg.barrier()
        cg.if_(leader, lambda: (atom.lower(cg, "inval", bar), [])[1])
        cg.barrier()
        return regs

    if check is None:
        return tma()
    return cg.if_(check, tma, threads, types=types)
