"""The shared LLVM type converter (the ABI table of DESIGN.md / spec note 1).

| source                                   | LLVM / NVVM                                            |
|------------------------------------------|--------------------------------------------------------|
| ranked memref / internal tile memory ref | {ptr, ptr, i64 offset, [N x i64] sizes, [N x i64] strides} |
| kernel memref argument, bare-pointer ABI | the aligned pointer only                               |
| index                                    | i64 (option: index bit width)                          |
| vector                                   | LLVM vector of the converted element type              |
| async / pipeline token                   | i32, low bit = phase parity                            |
| tiled view descriptor                    | {ptr base, i64 packed layout / rank metadata}          |
| memory spaces                            | ptr<1> global, <3> shared, <4> constant, <5> local, <6> tensor memory |

Rules are functions ``rule(type, converter) -> type | None``; the most recently
added rule is tried first (as in MLIR), so a plugin can override a built-in row
through ``tilecore_register_type_conversions``.
"""

from __future__ import annotations

from typing import Callable

from .mlir import ir

# Address spaces of the NVPTX back end.
ADDRSPACE_GENERIC = 0
ADDRSPACE_GLOBAL = 1
ADDRSPACE_SHARED = 3
ADDRSPACE_CONSTANT = 4
ADDRSPACE_LOCAL = 5
ADDRSPACE_TENSOR = 6

# Memory-space spellings accepted on memrefs and tile memory, by address space.
MEMORY_SPACE_NAMES: dict[str, int] = {
    "global": ADDRSPACE_GLOBAL,
    "workgroup": ADDRSPACE_SHARED,
    "shared": ADDRSPACE_SHARED,
    "constant": ADDRSPACE_CONSTANT,
    "private": ADDRSPACE_LOCAL,
    "local": ADDRSPACE_LOCAL,
    "tensor": ADDRSPACE_TENSOR,
    "tmem": ADDRSPACE_TENSOR,
}

# Types that are async / pipeline tokens: lowered to i32 (low bit = phase parity).
TOKEN_TYPES: set[str] = {"!gpu.async.token", "!nvgpu.device.async.token"}

Rule = Callable[[ir.Type, "TypeConverter"], "ir.Type | None"]


def llvm_ptr(addrspace: int = 0) -> ir.Type:
    """``!llvm.ptr`` / ``!llvm.ptr<N>``."""
    return ir.Type.parse("!llvm.ptr" if addrspace == 0 else f"!llvm.ptr<{addrspace}>")


def token_type() -> ir.Type:
    """The LLVM form of every async / pipeline token: i32 (bit 0 = phase parity)."""
    return ir.IntegerType.get_signless(32)


def memref_descriptor_type(addrspace: int, rank: int, index_type: ir.Type) -> ir.Type:
    """``{allocated ptr, aligned ptr, offset, sizes[rank], strides[rank]}`` in that field order."""
    ptr = f"!llvm.ptr<{addrspace}>" if addrspace else "!llvm.ptr"
    idx = str(index_type)
    fields = [ptr, ptr, idx]
    if rank > 0:
        fields += [f"!llvm.array<{rank} x {idx}>"] * 2
    return ir.Type.parse(f"!llvm.struct<({', '.join(fields)})>")


def tiled_view_descriptor_type(addrspace: int = ADDRSPACE_GLOBAL) -> ir.Type:
    """Tiled view descriptor: ``{base ptr, i64 packed layout / rank metadata}``."""
    ptr = f"!llvm.ptr<{addrspace}>" if addrspace else "!llvm.ptr"
    return ir.Type.parse(f"!llvm.struct<({ptr}, i64)>")


def memory_space_to_addrspace(attr) -> int:
    """Map a memref memory-space attribute to an NVPTX address space.

    ``None`` (no memory space) is the generic space 0; integer attributes are
    taken as address spaces; ``#gpu.address_space<workgroup>`` and named spaces
    follow :data:`MEMORY_SPACE_NAMES`.
    """
    if attr is None:
        return ADDRSPACE_GENERIC
    if isinstance(attr, ir.IntegerAttr):
        return int(attr.value)
    text = str(attr)
    for name, space in MEMORY_SPACE_NAMES.items():
        if f"<{name}>" in text or text.strip('"') == name:
            return space
    raise ValueError(f"unknown memory space {text}")


class TypeConverter:
    """Converts source types to their LLVM / NVVM form (see the module docstring's table).

    ``index_bitwidth`` sets the width of ``index``; ``bare_pointer_kernel_abi``
    makes :meth:`convert_kernel_argument` pass memrefs as their aligned pointer.
    """

    def __init__(self, index_bitwidth: int = 64, bare_pointer_kernel_abi: bool = True):
        self.index_bitwidth = index_bitwidth
        self.bare_pointer_kernel_abi = bare_pointer_kernel_abi
        self._rules: list[tuple[str, Rule]] = []
        # type -> converted type; a memoised type keeps its context alive, so keys never go stale
        self._memo: dict = {}
        for rule in (_identity_rule, _index_rule, _vector_rule, _memref_rule, _token_rule):
            self.add_conversion(rule, plugin="core")

    def add_conversion(self, rule: Rule, plugin: str = "") -> None:
        """Add ``rule(type, converter) -> type | None``; later rules win."""
        self._rules.append((plugin, rule))
        self._memo.clear()

    @property
    def rules(self) -> list[tuple[str, str]]:
        """(plugin, rule name) pairs, most recent first."""
        return [(p, getattr(r, "__name__", repr(r))) for p, r in reversed(self._rules)]

    def index_type(self) -> ir.Type:
        return ir.IntegerType.get_signless(self.index_bitwidth)

    def convert(self, t: ir.Type):
        """The converted type, or None when no rule knows ``t`` (memoised per type: rules are pure)."""
        try:
            return self._memo[t]
        except KeyError:
            pass
        out = None
        for _, rule in reversed(self._rules):
            out = rule(t, self)
            if out is not None:
                break
        self._memo[t] = out
        return out

    def is_legal(self, t: ir.Type) -> bool:
        """True when ``t`` converts to itself."""
        out = self.convert(t)
        return out is not None and out == t

    def convert_kernel_argument(self, t: ir.Type):
        """A kernel argument's type: under the bare-pointer ABI a memref becomes its aligned pointer."""
        if self.bare_pointer_kernel_abi and isinstance(t, ir.MemRefType):
            return llvm_ptr(memory_space_to_addrspace(t.memory_space))
        return self.convert(t)


# -- built-in rules ---------------------------------------------------------------

_LLVM_PREFIXES = ("!llvm.",)


def _identity_rule(t, conv):
    if isinstance(t, (ir.IntegerType, ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type)):
        return t
    if str(t).startswith(_LLVM_PREFIXES) or isinstance(t, ir.FloatType):
        return t
    return None


def _index_rule(t, conv):
    if isinstance(t, ir.IndexType):
        return conv.index_type()
    return None


def _vector_rule(t, conv):
    if isinstance(t, ir.VectorType):
        elem = conv.convert(t.element_type)
        if elem is None:
            return None
        return t if elem == t.element_type else ir.VectorType.get(list(t.shape), elem, loc=ir.Location.unknown(t.context))
    return None


def _memref_rule(t, conv):
    if isinstance(t, ir.MemRefType):
        space = memory_space_to_addrspace(t.memory_space)
        return memref_descriptor_type(space, t.rank, conv.index_type())
    return None


def _token_rule(t, conv):
    if str(t) in TOKEN_TYPES:
        return token_type()
    return None
