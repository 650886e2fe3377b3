"""IRDL text for the internal tile dialects (nv_tileaa, nv_tileas) from small tables, and a builder.

An op row is ``name -> (operands, results, regions)`` where operands / results are
space-separated group names, ``name*`` variadic (one type per group: IRDL unifies
the values a constraint matches) and ``name?`` optional. Ops with two or more
non-single groups carry ``operandSegmentSizes`` / ``resultSegmentSizes``.
Terminators cannot be declared in IRDL, so each dialect keeps its terminators in
an unregistered companion namespace ``<dialect>_term`` (like ``cuda_tile_term``).
"""

from __future__ import annotations

from tilecore.mlir import ir


def _groups(spec: str) -> list[tuple[str, str]]:
    out = []
    for g in spec.split():
        kind = {"*": "variadic", "?": "optional"}.get(g[-1], "single")
        out.append((g.rstrip("*?"), kind))
    return out


def dialect_text(name: str, types: dict, attributes: dict, ops: dict) -> str:
    """``irdl.dialect @name`` text from type / attribute parameter tables and the op table."""
    parts = []
    for kind, table in (("type", types), ("attribute", attributes)):
        for tname, params in table.items():
            lines = [f"    %p{i} = irdl.any" for i in range(len(params))]
            if params:
                lines.append("    irdl.parameters(" + ", ".join(f"{p}: %p{i}" for i, p in enumerate(params)) + ")")
            parts.append(f"  irdl.{kind} @{tname} {{\n" + "\n".join(lines) + "\n  }")
    for oname, (operands, results, nreg) in ops.items():
        lines, decl, n = [], [], 0
        for label, spec in (("operands", operands), ("results", results)):
            items = []
            taken = {g for g, _ in _groups(operands)} if label == "results" else set()
            for g, kind in _groups(spec):
                g = f"result_{g}" if g in taken else g  # IRDL names are unique per op
                n += 1
                lines.append(f"    %c{n} = irdl.any")
                items.append(f"{g}: {'' if kind == 'single' else kind + ' '}%c{n}")
            if items:
                decl.append(f"    irdl.{label}({', '.join(items)})")
        if nreg:
            lines += [f"    %r{i} = irdl.region" for i in range(nreg)]
            decl.append("    irdl.regions(" + ", ".join(f"region{i}: %r{i}" for i in range(nreg)) + ")")
        parts.append(f"  irdl.operation @{oname} {{\n" + "\n".join(lines + decl) + "\n  }")
    return f"irdl.dialect @{name} {{\n" + "\n".join(parts) + "\n}\n"


class OpBuilder:
    """Builds ops of one table-defined dialect with the right segment-size attributes."""

    def __init__(self, dialect: str, ops: dict):
        self.dialect = dialect
        self.ops = ops

    def build(self, op: str, operands: list, results: list, attrs: dict | None = None, regions: int = 0,
              loc=None):
        """Create ``dialect.op`` at the current insertion point.

        ``operands`` / ``results`` hold one entry per group of the op's row: a Value
        (or Type) for a single group, a list for variadic groups, a Value/Type or
        None for optional groups.
        """
        ospec, rspec, nreg = self.ops[op]
        attrs = dict(attrs or {})
        flat_o, sizes_o = _flatten(_groups(ospec), operands, op)
        flat_r, sizes_r = _flatten(_groups(rspec), results, op)
        if sum(1 for _, k in _groups(ospec) if k != "single") >= 2:
            attrs["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get(sizes_o)
        if sum(1 for _, k in _groups(rspec) if k != "single") >= 2:
            attrs["resultSegmentSizes"] = ir.DenseI32ArrayAttr.get(sizes_r)
        return ir.Operation.create(f"{self.dialect}.{op}", results=flat_r, operands=flat_o, attributes=attrs,
                                   regions=regions or nreg, loc=loc)


def _flatten(groups, values, op):
    if len(groups) != len(values):
        raise ValueError(f"{op}: expected {len(groups)} groups, got {len(values)}")
    flat, sizes = [], []
    for (_, kind), v in zip(groups, values):
        if kind == "variadic":
            flat += list(v)
            sizes.append(len(v))
        elif kind == "optional":
            if v is not None:
                flat.append(v)
            sizes.append(0 if v is None else 1)
        else:
            flat.append(v)
            sizes.append(1)
    return flat, sizes


def group_values(op, spec: str) -> dict:
    """Operands of ``op`` split by the groups of ``spec`` (variadic -> list, optional -> value or None)."""
    groups = _groups(spec)
    vals = list(op.operands)
    if "operandSegmentSizes" in op.attributes:
        sizes = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    else:
        n_var = len(vals) - sum(1 for _, k in groups if k == "single")
        sizes = [1 if k == "single" else n_var for _, k in groups]
    out, i = {}, 0
    for (name, kind), s in zip(groups, sizes):
        chunk = vals[i:i + s]
        i += s
        out[name] = chunk if kind == "variadic" else (chunk[0] if chunk else None)
    return out


def slots(values: list, n: int) -> list:
    """``values`` padded with None to ``n`` optional slots (ops with heterogeneous operand lists)."""
    if len(values) > n:
        raise ValueError(f"at most {n} values supported, got {len(values)}")
    return list(values) + [None] * (n - len(values))
