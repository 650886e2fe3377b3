"""CTA pairs: which kernels of 2-CTA clusters run their tensor-core dots as one MMA per pair (stage 4).

A kernel whose hints ask for clusters of 2 CTAs (cuTile ``num_ctas=2``: ``nvvm.cluster_dim = [2, 1, 1]``) runs a
tile block per cluster by default (:mod:`.clusters`). Asked for (``--option sm100.cta_pairs=on``), it runs one tile
block per CTA instead, two consecutive tile blocks along x forming a cluster (``tilecore.tile_block = "cta"``:
the grid is the tile-block grid, a whole number of clusters), and an MMA atom with a pair form (the sm100 plugin's
tcgen05 atoms: ``tcgen05.mma.cta_group::2``) computes the two CTAs' dots as one MMA of twice the rows: each CTA
gives its own A rows and receives its own accumulator rows, B is split by columns between the two CTAs' shared
memories. That is only the two dots when both CTAs read the same B tile in every iteration of the same K loop.
:func:`decide` proves it at compile time, or the kernel is not paired:

- every value B's tile indices, the B view and the loop bounds depend on is *cluster-uniform*: kernel
  parameters, constants, ``gpu.block_id`` along the axes the cluster does not span (y, z), grid sizes, the
  induction variables of loops with uniform bounds, and the pure scalar ops (``arith`` / ``math``, casts, views,
  ``assume``) of uniform values; ``gpu.block_id x`` (the CTA's place in its cluster) and anything loaded is not;
- every tensor-core dot of the kernel whose atom has a pair form is in a pipelined K loop (``pipeline.plan``),
  B a piped (plain, row-major) load of it, the loop and every loop around it with uniform bounds, every ``if``
  around it with a uniform condition and no other region around it (both CTAs reach every dot: the pair
  synchronises there), and the atom admits the pair (``data["pair_ok"](request)``);
- the kernel has no return but its last op (a CTA leaving early would leave its peer waiting).

A run-time check (exchanging the two CTAs' B coordinates through distributed shared memory) cannot fall back to
one-CTA MMAs: ptxas refuses ``.cta_group::1`` and ``::2`` tensor-core instructions in one kernel, so the whole
kernel takes one form or the other.

For a paired kernel ``cg.cta_pairs`` maps each such B load to its half (columns ``rank * N / 2 ..``): the
pipeline stages only that half (``pipeline.PipedLoad.pair_half``), the atom reads A and the half from the stage.
Without the option (or when the proof fails) the kernel keeps the one-CTA form and a tile block per cluster.
"""

from __future__ import annotations

from tilecore.launch_attrs import cluster_shape
from tilecore.mlir import ir

PAIR_OPTION = "sm100.cta_pairs"
NOT_A_PAIR = "not a 2-CTA cluster"
NO_TMEM_DOT = "no tensor-memory dot"
NOT_ASKED = f"a tile block is the whole cluster (--option {PAIR_OPTION}=on pairs tile blocks 2k and 2k + 1)"
PAIRS_ATTR = "tilecore.cta_pairs"  # on a kernel of 2-CTA clusters: "cta_group::2" or "off: <why>"
PURE_PREFIXES = ("arith.", "math.")
PURE_OPS = ("builtin.unrealized_conversion_cast", "nv_tileas.assume", "nv_tileas.make_memref", "nv_tileas.view",
            "gpu.grid_dim", "gpu.block_dim", "gpu.cluster_dim", "nv_tileas.make_token")


class Uniform:
    """Which values are the same in both CTAs of a cluster of shape ``cluster`` (module docstring)."""

    def __init__(self, cluster, entry):
        self.cluster = cluster
        self.entry = entry
        self.memo: dict = {}

    def __call__(self, v) -> bool:
        key = v
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = False  # a cycle (a loop-carried value) is not proven
        self.memo[key] = res = self._uniform(v)
        return res

    def _uniform(self, v) -> bool:
        if isinstance(v, ir.BlockArgument):
            if v.owner == self.entry:
                return True  # a kernel parameter
            loop = v.owner.owner
            return v.arg_number == 0 and loop is not None and loop.name == "scf.for" and \
                all(self(x) for x in list(loop.operands)[:3])
        op = v.owner
        if op.name == "gpu.block_id":
            axis = "xyz".index(str(op.attributes["dimension"]).split()[-1].rstrip(">"))
            return self.cluster[axis] == 1
        if op.regions or not (op.name.startswith(PURE_PREFIXES) or op.name in PURE_OPS):
            return False
        return all(self(x) for x in op.operands)


def _option_on(cg) -> bool:
    return (cg.options.extra if cg.options is not None else {}).get(PAIR_OPTION, "off") in ("1", "on", "true")


def _walk(block, out: list) -> None:
    for op in block.operations:
        out.append(op.operation)
        for region in op.operation.regions:
            for b in region.blocks:
                _walk(b, out)


def decide(cg, fn, block) -> str:
    """Pair the kernel ``fn`` (old body ``block``) when the module docstring's conditions hold: sets
    ``cg.cta_pairs`` (B load op -> its half's columns); returns why not ("" when paired, "no cluster" etc.)."""
    from ..atoms.select import mma_request
    from . import pipeline

    cg.cta_pairs = None
    cluster = cluster_shape(fn)
    if cluster != (2, 1, 1):
        return NOT_A_PAIR
    if not _option_on(cg):
        return NOT_ASKED
    ops: list = []
    _walk(block, ops)
    pair_dots = []
    for op in ops:
        if op.name not in ("nv_tileas.dot", pipeline.SCALED_DOT) or "atom" not in op.attributes:
            continue
        atom = cg.atoms.get(str(op.attributes["atom"]).split('"')[1])
        if atom is None or atom.data.get("fragment") != "tcgen05":
            continue
        if "pair_ok" not in atom.data:
            return f"atom {atom.name} has no pair form"
        pair_dots.append((op, atom))
    if not pair_dots:
        return NO_TMEM_DOT
    if any("return" in op.name and op.parent.name not in ("llvm.func", "func.func") for op in ops):
        return "a return inside a region"
    uniform = Uniform(cluster, block)
    halves = {}
    for d, atom in pair_dots:
        req = mma_request(d, cg.threads, cg.target)
        if not atom.data["pair_ok"](req):
            return f"atom {atom.name} does not pair a {req.m} x {req.n} x {req.k} dot"
        loop = d.parent
        if loop.name != "scf.for":
            return "a dot outside a K loop"
        anc = loop
        while anc.name in ("scf.for", "scf.if"):
            if anc.name == "scf.for" and not all(uniform(x) for x in list(anc.operands)[:3]):
                return "a loop whose bounds differ between the CTAs of a cluster"
            if anc.name == "scf.if" and not uniform(anc.operands[0]):
                return "a dot under a condition that may differ between the CTAs of a cluster"
            anc = anc.parent
        if anc.operation != fn.operation:
            return "a dot inside a region other than loops and ifs"
        plan = pipeline.plan(cg, loop)
        b_load = pipeline.piped_b(plan, d) if plan is not None else None
        if b_load is None or b_load.transposed or b_load.packed or b_load.lead or b_load.swizzled is None:
            return "B not piped as a plain tile"
        load = b_load.load
        if not all(uniform(x) for x in load.operands if "mem_token" not in str(x.type)):
            return "B's tile may differ between the CTAs of a cluster"
        halves[load] = req.n // 2
    cg.cta_pairs = halves
    return ""


def cta_rank(cg):
    """i32: this CTA's place in its cluster along x (``gpu.cluster_block_id x``: 0 or 1 in a pair), built once at
    the kernel entry."""
    rank = getattr(cg, "_cta_rank", None)
    if rank is None:
        from .codegen import create

        with cg.entry_ip, ir.Location.unknown():
            idx = create("gpu.cluster_block_id", [ir.IndexType.get()], [],
                         {"dimension": ir.Attribute.parse("#gpu<dim x>")})
            rank = create("arith.index_cast", [cg.i32], [idx.results[0]]).results[0]
        cg._cta_rank = rank
    return rank
