"""Warp-level matrix ops: ``nvgpu.mma.sync`` -> ``nvvm.mma.sync``, ``nvgpu.ldmatrix`` -> ``nvvm.ldmatrix``,
``nvgpu.mma.sp.sync`` -> ``llvm.inline_asm`` (no NVVM op models sparse MMA).

Per-thread fragments are packed into 32-bit registers: f16 pairs stay ``vector<2xf16>``
for mma.sync; bf16 pairs, 8-bit and 4-bit groups and tf32 are bitcast to i32; f64 is scalar.
"""

from __future__ import annotations

from tilecore_gpu_nvvm.llvm_build import (
    bitcast,
    extractelement,
    extractvalue,
    function_of,
    hoisted_poison,
    insertelement,
    insertvalue,
)

from tilecore.errors import LoweringError
from tilecore.mlir import dialects, ir

from .common import NvgpuPattern, i32, memref_element_ptr

llvm = dialects.llvm

# element type of A / B -> PTX multiplicand type (tf32 when tf32Enabled on f32).
PTX_TYPE = {"f16": "f16", "bf16": "bf16", "i8": "s8", "i4": "s4", "f64": "f64", "f32": "tf32",
            "f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}
ACC_PTX_TYPE = {"f16": "f16", "f32": "f32", "i32": "s32", "f64": "f64"}


def _elem(v) -> str:
    return str(ir.VectorType(v.type).element_type)


def row_array_type(rw, vt: ir.VectorType) -> ir.Type:
    """The LLVM form of an n-D fragment ``vector<R x C x T>``: ``!llvm.array<R x vector<C x T>>``."""
    return rw.memoized(("row-array", vt), lambda: ir.Type.parse(
        f"!llvm.array<{vt.shape[0]} x {ir.VectorType.get(vt.shape[1:], vt.element_type)}>"))


def _rows(rw, value) -> list:
    """The rows of a 2-D per-thread fragment ``vector<R x C x T>`` as ``vector<C x T>`` values.

    The fragment is taken as its LLVM row array (``llvm.extractvalue`` per row); the cast to the
    array folds away when the producer was lowered here (ldmatrix, mma.sync) and is reconciled with
    the upstream vector lowering's otherwise.
    """
    vt = ir.VectorType(value.type)
    arr = rw.cast(value, row_array_type(rw, vt))
    row_type = ir.VectorType.get(vt.shape[1:], vt.element_type)
    return [extractvalue(rw, arr, (r,), row_type) for r in range(vt.shape[0])]


def _operands(rw, value, packed: bool) -> list:
    rows = _rows(rw, value)
    return [bitcast(r, i32()) for r in rows] if packed else rows


def _scalars(rw, op, value) -> list:
    fn = function_of(op)
    elem = ir.VectorType(value.type).element_type
    out = []
    for row in _rows(rw, value):
        n = ir.VectorType(row.type).shape[0]
        out.extend(extractelement(rw, op, row, c, elem, fn) for c in range(n))
    return out


def _rows_value(rw, op, rows: list, res_vec: ir.VectorType):
    """``rows`` (``vector<C x T>`` values) inserted into the row array of ``res_vec``."""
    arr_type = row_array_type(rw, res_vec)
    result = hoisted_poison(rw, op, arr_type)
    for r, row in enumerate(rows):
        result = insertvalue(rw, result, row, (r,))
    return result


class MmaSyncPattern(NvgpuPattern):
    """``nvgpu.mma.sync (%a, %b, %c) {mmaShape}`` -> ``nvvm.mma.sync`` (row.col) and a repack of D.

    A, B and C are read as LLVM row arrays (one ``llvm.extractvalue`` per 32-bit register row,
    ``llvm.extractelement`` per f32 / i32 / f64 accumulator element); D's registers are rebuilt
    into the result's row array with ``llvm.insertelement`` / ``llvm.insertvalue``.
    """

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
            if a_el == "f64":
                a, b = _scalars(rw, op, view.matrixA), _scalars(rw, op, view.matrixB)
            else:
                a, b = _operands(rw, view.matrixA, packed_ab), _operands(rw, view.matrixB, packed_ab)
            c = _rows(rw, view.matrixC) if c_el == "f16" else _scalars(rw, op, view.matrixC)
            reg = "vector<2xf16>" if c_el == "f16" else c_el
            d_type = rw.type("!llvm.struct<(" + ", ".join([reg] * len(c)) + ")>")
            kw = {}
            if a_el in ("i8", "i4"):
                kw["int_overflow_behavior"] = rw.attr("#nvvm.mma_int_overflow<satfinite>")
            kw["multiplicand_a_ptx_type"] = rw.attr(f"#nvvm.mma_type<{PTX_TYPE[a_el]}>")
            kw["multiplicand_b_ptx_type"] = rw.attr(f"#nvvm.mma_type<{PTX_TYPE[a_el]}>")
            d = dialects.nvvm.mma_sync(d_type, rw.attr(f"#nvvm.shape<m = {m}, n = {n}, k = {k}>"),
                              rw.attr("#nvvm.mma_layout<row>"), rw.attr("#nvvm.mma_layout<col>"),
                              a, b, c, **kw)
            rw.replace(op, _repack(rw, op, d, len(c), rw.type(reg), res_vec))


def _repack(rw, op, d, count: int, reg: ir.Type, res_vec: ir.VectorType):
    """D registers (a struct of ``count`` ``reg``) -> the row array of ``vector<R x C x T>``."""
    return _regs_to_rows(rw, op, [extractvalue(rw, d, (i,), reg) for i in range(count)], res_vec)


def _regs_to_rows(rw, op, regs: list, res_vec: ir.VectorType):
    """Accumulator registers -> the row array of ``res_vec``: a register per row (f16 pairs, bitcast
    when they travel as i32) or an element per register (``llvm.insertelement``)."""
    row_type = ir.VectorType.get(res_vec.shape[1:], res_vec.element_type)
    if len(regs) == res_vec.shape[0]:
        return _rows_value(rw, op, [r if r.type == row_type else bitcast(r, row_type) for r in regs], res_vec)
    fn = function_of(op)
    cols = row_type.shape[0]
    rows = []
    for r in range(res_vec.shape[0]):
        row = hoisted_poison(rw, op, row_type, fn)
        for j in range(cols):
            row = insertelement(rw, op, row, regs[r * cols + j], j, fn)
        rows.append(row)
    return _rows_value(rw, op, rows, res_vec)


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
        rows, cols = res_vec.shape
        with rw.ip:
            p = memref_element_ptr(rw, view.srcMemref, list(view.indices))
            res_type = i32() if num == 1 else rw.type("!llvm.struct<(" + ", ".join(["i32"] * num) + ")>")
            frag = ir.Operation.create("nvvm.ldmatrix", results=[res_type], operands=[p], attributes={
                "num": rw.attr(f"{num} : i32"), "layout": rw.attr(f"#nvvm.mma_layout<{'col' if trans else 'row'}>"),
                "shape": rw.attr("#nvvm.ld_st_matrix_shape<m = 8, n = 8>"),
                "eltType": rw.attr("#nvvm.ld_st_matrix_elt_type<b16>")}).result
            regs = [frag] if num == 1 else [extractvalue(rw, frag, (i,), i32()) for i in range(num)]
            packed = ir.Operation.create("vector.from_elements", results=[ir.VectorType.get([num], i32())],
                                         operands=regs).result
            flat = bitcast(packed, ir.VectorType.get([rows * cols], res_vec.element_type))
            row_type = ir.VectorType.get([cols], res_vec.element_type)
            slices = []
            for r in range(rows):
                mask = rw.memoized(("shuffle", r, cols), lambda r=r: {
                    "mask": ir.DenseI32ArrayAttr.get(list(range(r * cols, (r + 1) * cols)))})
                slices.append(ir.Operation.create("llvm.shufflevector", results=[row_type], operands=[flat, flat],
                                                  attributes=mask).result)
            rw.replace(op, _rows_value(rw, op, slices, res_vec))


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
            a = _operands(rw, view.matrixA, True)
            b = _operands(rw, view.matrixB, True)
            c = _operands(rw, view.matrixC, True) if c_el == "f16" else _scalars(rw, op, view.matrixC)
            meta = bitcast(rw.operand(view.sparseMetadata), i32())
            reg = rw.type("i32" if c_el != "f32" else "f32")
            n_d = len(c)
            template, constraints = sparse_mma_asm(shape, ACC_PTX_TYPE[c_el], PTX_TYPE[a_el], PTX_TYPE[a_el],
                                                   ACC_PTX_TYPE[c_el], n_d, len(a), len(b), len(c), selector)
            d = llvm.inline_asm(ir.Type.parse("!llvm.struct<(" + ", ".join([str(reg)] * n_d) + ")>"),
                                [*a, *b, *c, meta], template, constraints, has_side_effects=True,
                                asm_dialect=0)
            rw.replace(op, _repack(rw, op, d, n_d, reg, res_vec))


def patterns():
    return [MmaSyncPattern(), LdMatrixPattern(), MmaSparseSyncPattern()]
