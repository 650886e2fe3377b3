"""Warp-level matrix ops: ``nvgpu.mma.sync`` -> ``nvvm.mma.sync``, ``nvgpu.ldmatrix`` -> ``nvvm.ldmatrix``,
``nvgpu.mma.sp.sync`` -> ``llvm.inline_asm`` (no NVVM op models sparse MMA).

Per-thread fragments are packed into 32-bit registers: f16 pairs stay ``vector<2xf16>``
for mma.sync; bf16 pairs, 8-bit and 4-bit groups and tf32 are bitcast to i32; f64 is scalar.
"""

from __future__ import annotations

from tilecore.errors import LoweringError
from tilecore.mlir import dialects, ir

from .common import NvgpuPattern, extract, i32, memref_element_ptr

llvm = dialects.llvm
nvvm = dialects.nvvm
vector = dialects.vector

# element type of A / B -> PTX multiplicand type (tf32 when tf32Enabled on f32).
PTX_TYPE = {"f16": "f16", "bf16": "bf16", "i8": "s8", "i4": "s4", "f64": "f64", "f32": "tf32",
            "f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}
ACC_PTX_TYPE = {"f16": "f16", "f32": "f32", "i32": "s32", "f64": "f64"}


def _elem(v) -> str:
    return str(ir.VectorType(v.type).element_type)


def _rows(value) -> list:
    """The rows of a 2-D per-thread fragment ``vector<R x C x T>`` as ``vector<C x T>`` values."""
    vt = ir.VectorType(value.type)
    return [vector.extract(value, [], [r]) for r in range(vt.shape[0])]


def _as_i32(row):
    """A 32-bit fragment register as i32 (bitcast; 8-bit, 4-bit and tf32 operands)."""
    return llvm.bitcast(i32(), row)


def _operands(value, packed: bool) -> list:
    rows = _rows(value)
    return [_as_i32(r) for r in rows] if packed else rows


def _scalars(value) -> list:
    out = []
    for row in _rows(value):
        n = ir.VectorType(row.type).shape[0]
        out.extend(vector.extract(row, [], [c]) for c in range(n))
    return out


class MmaSyncPattern(NvgpuPattern):
    """``nvgpu.mma.sync (%a, %b, %c) {mmaShape}`` -> ``nvvm.mma.sync`` (row.col) and a repack of D."""

    root = "nvgpu.mma.sync"
    family = "mma.sync"

    def lower(self, op, rw):
        view = op.opview
        a_el, c_el = _elem(view.matrixA), _elem(view.matrixC)
        if a_el == "f32" and "tf32Enabled" not in op.attributes:
            raise LoweringError(f"'{op.name}': f32 operands need tf32Enabled (mma.sync multiplies tf32)", op)
        if a_el not in PTX_TYPE or c_el not in ACC_PTX_TYPE:
            raise LoweringError(f"'{op.name}': no mma.sync for {a_el} -> {c_el}", op)
        m, n, k = (ir.IntegerAttr(x).value for x in ir.ArrayAttr(op.attributes["mmaShape"]))
        res_vec = ir.VectorType(op.results[0].type)
        packed_ab = a_el not in ("f16", "f64")  # bf16 pairs travel as i32 (nvvm.mma.sync)
        with rw.ip:
            a = _operands(view.matrixA, packed_ab) if a_el != "f64" else _scalars(view.matrixA)
            b = _operands(view.matrixB, packed_ab) if a_el != "f64" else _scalars(view.matrixB)
            c = _rows(view.matrixC) if c_el == "f16" else _scalars(view.matrixC)
            if c_el == "f16":
                d_type = ir.Type.parse("!llvm.struct<(" + ", ".join(["vector<2xf16>"] * len(c)) + ")>")
            else:
                d_type = ir.Type.parse("!llvm.struct<(" + ", ".join([c_el] * len(c)) + ")>")
            kw = {}
            if a_el in ("i8", "i4"):
                kw["int_overflow_behavior"] = ir.Attribute.parse("#nvvm.mma_int_overflow<satfinite>")
            kw["multiplicand_a_ptx_type"] = ir.Attribute.parse(f"#nvvm.mma_type<{PTX_TYPE[a_el]}>")
            kw["multiplicand_b_ptx_type"] = ir.Attribute.parse(f"#nvvm.mma_type<{PTX_TYPE[a_el]}>")
            d = nvvm.mma_sync(d_type, ir.Attribute.parse(f"#nvvm.shape<m = {m}, n = {n}, k = {k}>"),
                              ir.Attribute.parse("#nvvm.mma_layout<row>"), ir.Attribute.parse("#nvvm.mma_layout<col>"),
                              a, b, c, **kw)
            rw.replace(op, _repack(d, len(c), c_el, res_vec))


def _repack(d, count: int, c_el: str, res_vec: ir.VectorType):
    """D registers (struct) -> the nvgpu result vector<R x C x T> via extractvalue + vector.from_elements."""
    elems = []
    for i in range(count):
        if c_el == "f16":
            row = extract(d, [i], ir.Type.parse("vector<2xf16>"))
            elems.extend(vector.extract(row, [], [j]) for j in range(2))
        else:
            elems.append(extract(d, [i], ir.Type.parse(c_el)))
    return vector.from_elements(res_vec, elems)


class LdMatrixPattern(NvgpuPattern):
    """``nvgpu.ldmatrix %sm[..] {numTiles, transpose}`` -> ``nvvm.ldmatrix`` (m8n8, b16) and a repack.

    num 1 returns one i32, num 2 / 4 a struct of i32 (one register per tile); each is taken
    with ``llvm.extractvalue`` and gathered with ``vector.from_elements`` into
    ``vector<num x i32>`` (spec note 3). The result type is 2-D, ``vector<num x C x T>`` with
    one register per row: the gathered vector is bitcast to ``vector<num*C x T>`` and each row
    is a ``llvm.shufflevector`` slice inserted into the row array (no per-lane extraction).
    """

    root = "nvgpu.ldmatrix"
    family = "ldmatrix"

    def lower(self, op, rw):
        view = op.opview
        num = ir.IntegerAttr(view.numTiles).value
        if num not in (1, 2, 4):
            raise LoweringError(f"'{op.name}': numTiles must be 1, 2 or 4, got {num}", op)
        trans = ir.BoolAttr(view.transpose).value
        res_vec = ir.VectorType(op.results[0].type)
        with rw.ip:
            p = memref_element_ptr(rw, view.srcMemref, list(view.indices))
            res_type = i32() if num == 1 else ir.Type.parse("!llvm.struct<(" + ", ".join(["i32"] * num) + ")>")
            frag = nvvm.ldmatrix(res_type, p, num, rw.attr(f"#nvvm.mma_layout<{'col' if trans else 'row'}>"),
                                 rw.attr("#nvvm.ld_st_matrix_shape<m = 8, n = 8>"),
                                 rw.attr("#nvvm.ld_st_matrix_elt_type<b16>"))
            regs = [frag] if num == 1 else [extract(frag, [i], i32()) for i in range(num)]
            packed = vector.from_elements(ir.VectorType.get([num], i32()), regs)
            rows, cols = res_vec.shape
            flat = llvm.bitcast(ir.VectorType.get([rows * cols], res_vec.element_type), packed)
            row_type = ir.VectorType.get([cols], res_vec.element_type)
            result = llvm.mlir_poison(ir.Type.parse(f"!llvm.array<{rows} x {row_type}>"))
            for r in range(rows):
                mask = ir.DenseI32ArrayAttr.get(list(range(r * cols, (r + 1) * cols)))
                result = llvm.insertvalue(result, llvm.shufflevector(row_type, flat, flat, mask), [r])
        rw.replace(op, result)


def sparse_mma_asm(shape, d_type: str, a_type: str, b_type: str, c_type: str,
                   n_d: int, n_a: int, n_b: int, n_c: int, selector: int) -> tuple[str, str]:
    """The PTX template and constraint string of ``mma.sp.sync`` (spec note 4; operands numbered D, A, B, C, meta).

    Register kinds: f32 accumulators ``f``, everything else ``r``; outputs ``=``. The
    sparsity selector is an immediate baked into the template.
    """
    m, n, k = shape
    counter = iter(range(n_d + n_a + n_b + n_c + 1))

    def group(count):
        return "{ " + ", ".join(f"${next(counter)}" for _ in range(count)) + " }"

    d, a, b, c = group(n_d), group(n_a), group(n_b), group(n_c)
    meta = f"${next(counter)}"
    template = (f"mma.sp.sync.aligned.m{m}n{n}k{k}.row.col.{d_type}.{a_type}.{b_type}.{c_type} "
                f"{d}, {a}, {b}, {c}, {meta}, 0x{selector:x};")
    acc = "f" if d_type == "f32" else "r"
    constraints = ",".join([f"={acc}"] * n_d + ["r"] * (n_a + n_b) + [acc] * n_c + ["r"])
    return template, constraints


class MmaSparseSyncPattern(NvgpuPattern):
    """``nvgpu.mma.sp.sync`` -> ``llvm.inline_asm`` with the template / constraints of :func:`sparse_mma_asm`."""

    root = "nvgpu.mma.sp.sync"
    family = "mma.sp.sync"

    def lower(self, op, rw):
        view = op.opview
        a_el, c_el = _elem(view.matrixA), _elem(view.matrixC)
        if a_el not in PTX_TYPE or c_el not in ACC_PTX_TYPE:
            raise LoweringError(f"'{op.name}': no mma.sp.sync for {a_el} -> {c_el}", op)
        shape = [ir.IntegerAttr(x).value for x in ir.ArrayAttr(op.attributes["mmaShape"])]
        selector = ir.IntegerAttr(op.attributes["sparsitySelector"]).value if "sparsitySelector" in op.attributes \
            else 0
        res_vec = ir.VectorType(op.results[0].type)
        with rw.ip:
            a = [_as_i32(r) for r in _rows(view.matrixA)]
            b = [_as_i32(r) for r in _rows(view.matrixB)]
            c = [_as_i32(r) for r in _rows(view.matrixC)] if c_el == "f16" else _scalars(view.matrixC)
            meta = llvm.bitcast(i32(), rw.operand(view.sparseMetadata))
            reg = "i32" if c_el != "f32" else "f32"
            n_d = len(c)
            template, constraints = sparse_mma_asm(shape, ACC_PTX_TYPE[c_el], PTX_TYPE[a_el], PTX_TYPE[a_el],
                                                   ACC_PTX_TYPE[c_el], n_d, len(a), len(b), len(c), selector)
            d = llvm.inline_asm(ir.Type.parse("!llvm.struct<(" + ", ".join([reg] * n_d) + ")>"),
                                [*a, *b, *c, meta], template, constraints, has_side_effects=True,
                                asm_dialect=0)
            elems = []
            for i in range(n_d):
                v = extract(d, [i], ir.Type.parse(reg))
                if c_el == "f16":
                    row = llvm.bitcast(ir.Type.parse("vector<2xf16>"), v)
                    elems.extend(vector.extract(row, [], [j]) for j in range(2))
                else:
                    elems.append(v)
            rw.replace(op, vector.from_elements(res_vec, elems))


def patterns():
    return [MmaSyncPattern(), LdMatrixPattern(), MmaSparseSyncPattern()]
