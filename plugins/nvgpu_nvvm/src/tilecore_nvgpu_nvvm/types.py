"""LLVM types of the nvgpu types (the plugin's rows of the shared type converter).

| nvgpu type                                   | LLVM type                                     |
|----------------------------------------------|-----------------------------------------------|
| !nvgpu.mbarrier.group<memorySpace = S, ...>  | !llvm.ptr<S> (the group's first i64 word)     |
| !nvgpu.mbarrier.token                        | i64 (the arrival state)                       |
| !nvgpu.tensormap.descriptor<...>             | !llvm.ptr (the 128-byte CUtensorMap)          |
| !nvgpu.warpgroup.descriptor<...>             | i64 (the GMMA shared-memory descriptor)       |
| !nvgpu.warpgroup.accumulator<vector<MxNxT>>  | !llvm.struct of M/64 structs of N/2 T values  |
| !nvgpu.device.async.token                    | i32 (the core token row, ``typeconv``)        |

The same rows type the nvgpu values at function boundaries (``signature.py``) and in the ops that
pass them on (``carriers.py``).
"""

from __future__ import annotations

from tilecore.mlir import ir
from tilecore.typeconv import token_type

from .common import i64, ptr


def accumulator_struct(vector_type: ir.VectorType) -> ir.Type:
    """Per-thread registers of a warpgroup accumulator: one inner struct per 64-row WGMMA tile."""
    m, n = vector_type.shape
    inner = "!llvm.struct<(" + ", ".join([str(vector_type.element_type)] * (n // 2)) + ")>"
    return ir.Type.parse("!llvm.struct<(" + ", ".join([inner[len("!llvm."):]] * (m // 64)) + ")>")


def fragmented_vector(t: ir.Type) -> ir.VectorType:
    text = str(t)
    return ir.VectorType(ir.Type.parse(text.split("fragmented = ", 1)[1][:-1]))


def _mbarrier_group(t):
    from .mbarrier import group_info

    return ptr(group_info(t)[0])


ACCUMULATOR_ELEMENTS = ("f32", "f16", "i32")  # WGMMA's D types


def _accumulator(t):
    vec = fragmented_vector(t)
    if vec.rank != 2 or vec.shape[0] % 64 or not vec.shape[0] or vec.shape[1] % 8 or not 8 <= vec.shape[1] <= 256 \
            or str(vec.element_type) not in ACCUMULATOR_ELEMENTS:
        raise ValueError(f"a warpgroup accumulator holds an M x N tile of {' / '.join(ACCUMULATOR_ELEMENTS)} "
                         f"with M a multiple of 64 and N a multiple of 8 in 8..256 (one m64nN WGMMA tile per "
                         f"64 rows); this one is {vec}")
    return accumulator_struct(vec)


# (type name as printed, up to its parameters; its LLVM type)
TYPE_ROWS = (
    ("!nvgpu.mbarrier.group", _mbarrier_group),
    ("!nvgpu.mbarrier.token", lambda t: i64()),
    ("!nvgpu.tensormap.descriptor", lambda t: ptr(0)),
    ("!nvgpu.warpgroup.descriptor", lambda t: i64()),
    ("!nvgpu.warpgroup.accumulator", _accumulator),
    ("!nvgpu.device.async.token", lambda t: token_type()),
)


_NVGPU_BY_TYPEID: dict = {}  # TypeID of a type class -> whether it is an nvgpu type


def is_nvgpu(t) -> bool:
    """True for a type of the nvgpu dialect.

    Asked of every operand, result and block argument of the carrier ops (thousands on a matmul):
    the answer is remembered per type class (its TypeID, the same in every context), since printing
    the type costs 2-5 us against 0.3. Opaque types (one TypeID for every unregistered dialect) are
    printed each time.
    """
    tid = t.typeid
    known = _NVGPU_BY_TYPEID.get(tid)
    if known is None:
        known = str(t).startswith("!nvgpu.")
        if tid != ir.OpaqueType.static_typeid:
            _NVGPU_BY_TYPEID[tid] = known
    return known


def lower_type(t) -> ir.Type:
    """The LLVM type of nvgpu type ``t`` (``TYPE_ROWS``); ValueError with the reason when it has none."""
    text = str(t)
    for prefix, make in TYPE_ROWS:
        if text.startswith(prefix) and text[len(prefix):len(prefix) + 1] in ("", "<"):
            return make(t)
    raise ValueError(f"no LLVM type for {text}")


def convert_nvgpu_type(t, conv=None):
    """The type converter's rule: the LLVM type of an nvgpu type, None for other types and bad nvgpu types."""
    if not str(t).startswith("!nvgpu."):
        return None
    try:
        return lower_type(t)
    except ValueError:
        return None
