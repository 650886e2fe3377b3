"""IRDL text of the ``cuda_tile`` dialect, generated from the op table.

Types and attributes are declared here; ops come from :data:`.ops.OP_SPECS`
(operand groups, result groups, required attributes, regions). Every operand /
result / parameter gets its own ``irdl.any`` constraint: IRDL unifies uses of one
constraint value, and the type rules live in :mod:`.verifier`, which reports
them with the op's location. Enum attributes are constrained to their spellings.
"""

from __future__ import annotations

from tilecore.dialects import DialectDef

from .ops import ENUMS, HETERO_SLOTS, OP_SPECS, TERMINATOR_NAMESPACE, TERMINATORS

# Parametric types: name -> parameter names (see the package docstring for the forms).
TYPES: dict[str, tuple[str, ...]] = {
    "tile": ("shape", "element_type"),
    "ptr": ("pointee",),
    "tensor_view": ("element_type", "shape", "strides"),
    "partition_view": ("tile_shape", "tensor_view", "dim_map", "padding_value"),
    "strided_view": ("tile_shape", "traversal_strides", "tensor_view", "dim_map", "padding_value"),
    "gather_scatter_view": ("tile_shape", "tensor_view", "sparse_dim", "padding_value"),
    "token": (),
    "fnv8e5m3fnu": (),  # 8-bit float element type with no builtin MLIR counterpart
}

ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "div_by": ("divisor", "every", "along"),
    "bounded": ("lb", "ub"),
    "same_elements": ("values",),
    "optimization_hints": ("hints",),
}


class _Gen:
    def __init__(self):
        self.lines: list[str] = []
        self.n = 0

    def any(self) -> str:
        self.n += 1
        self.lines.append(f"    %v{self.n} = irdl.any")
        return f"%v{self.n}"

    def enum(self, enum: str) -> str:
        alts = []
        for s in ENUMS[enum]:
            self.n += 1
            self.lines.append(f'    %v{self.n} = irdl.is "{s}"')
            alts.append(f"%v{self.n}")
        self.n += 1
        self.lines.append(f"    %v{self.n} = irdl.any_of({', '.join(alts)})")
        return f"%v{self.n}"


def _params(kind: str, name: str, params: tuple[str, ...]) -> str:
    g = _Gen()
    vals = [g.any() for _ in params]
    body = list(g.lines)
    if params:
        body.append(f"    irdl.parameters({', '.join(f'{p}: {v}' for p, v in zip(params, vals))})")
    return f"  irdl.{kind} @{name} {{\n" + "\n".join(body) + "\n  }"


def _slots(g: _Gen, groups) -> list[str]:
    """IRDL operand / result declarations; a hetero group becomes HETERO_SLOTS optional slots."""
    out = []
    for name, kind in groups:
        if kind == "hetero":
            out += [f"{name}_{i}: optional {g.any()}" for i in range(HETERO_SLOTS)]
        else:
            out.append(f"{name}: {'' if kind == 'single' else kind + ' '}{g.any()}")
    return out


def _operation(spec) -> str:
    g = _Gen()
    decl = []
    ops = _slots(g, spec.operands())
    if ops:
        decl.append(f"    irdl.operands({', '.join(ops)})")
    res = _slots(g, spec.results())
    if res:
        decl.append(f"    irdl.results({', '.join(res)})")
    attrs = []
    for f in spec.fields:
        if f.optional or f.since > (13, 1) and f.default is None and f.kind != "E":
            continue  # absent in some files: not a required attribute
        if f.kind == "E":
            attrs.append(f'"{f.names[0]}" = {g.enum(f.enum)}')
        elif f.kind in ("I", "B", "S", "P", "A", "D", "DG", "I32A", "TY"):
            attrs.append(f'"{f.names[0]}" = {g.any()}')
    if attrs:
        decl.append(f"    irdl.attributes {{{', '.join(attrs)}}}")
    if spec.regions():
        regs = []
        for i in range(spec.regions()):
            g.n += 1
            g.lines.append(f"    %v{g.n} = irdl.region")
            regs.append(f"r{i}: %v{g.n}")
        decl.append(f"    irdl.regions({', '.join(regs)})")
    return f"  irdl.operation @{spec.name} {{\n" + "\n".join(g.lines + decl) + "\n  }"


def irdl_text() -> str:
    """The ``irdl.dialect @cuda_tile`` module text."""
    parts = [_params("type", n, p) for n, p in TYPES.items()]
    parts += [_params("attribute", n, p) for n, p in ATTRIBUTES.items()]
    parts += [_operation(s) for s in OP_SPECS.values() if s.name not in TERMINATORS]
    return "irdl.dialect @cuda_tile {\n" + "\n".join(parts) + "\n}\n"


def dialect_defs() -> list[DialectDef]:
    """The DialectDef the plugin registers (terminators are unregistered ops, see the package docs)."""
    return [DialectDef("cuda_tile", irdl_text(), allow_unregistered=True, companions=(TERMINATOR_NAMESPACE,))]
