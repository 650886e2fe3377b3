"""The cuda_tile op table: one row per op, with its bytecode opcode and encoding.

Each row is ``(opcode, name, since, encoding)``. ``encoding`` lists, in the order
the bytecode stores them, the fields of the op; it is read by the bytecode reader
(:mod:`tilecore_tileas.bytecode.reader`) and, to derive operand / result / attribute
/ region declarations, by the IRDL generator (:mod:`.irdl`). The field grammar:

=================  =================================================================
``T:a,b``          one result type id per name (fixed results)
``TS:a``           sized type-id list: one variadic result group ``a``
``TS:a,b``         sized type-id list that must hold exactly the named results
``TS1:a``          sized type-id list that must hold exactly one result ``a``
``F:x,?y,@z``      flag bit field (varint), bit i for the i-th name: ``x`` a unit
                   attribute, ``?y`` an optional operand ``y``, ``@z`` an optional
                   attribute ``z``
``E:attr:enum``    enum attribute (varint value -> string, see :data:`ENUMS`)
``I:attr``         integer attribute (varint, stored as i64)
``B:attr``         boolean attribute (one byte, stored as BoolAttr)
``S:attr``         string attribute (string-table index)
``P:attr``         self-contained tagged attribute (assume predicates)
``A:attr``         array of tagged attributes (reduce / scan identities)
``D:attr``         dense constant (constant-table index), typed by the first result
``DG:attr``        dense constant of a global (typed by the global's type)
``I32A:attr``      int32 array (count + 4-byte LE values) -> ``array<i32: ...>``
``BA:attr``        bool array (count + 1-byte values) -> ``array<i1: ...>``
``H:attr``         optimization hints (untagged dictionary keyed by SM)
``TY:attr``        type attribute (type-table index)
``O:a,b``          one operand per name
``OV:a``           sized variadic operand group (count + value ids)
``OC:a,b,*c``      one count for all: fixed ``a``, ``b`` then variadic ``c``
``O?:a``           optional operand, present when its flag bit is set
``R:n``            ``n`` regions, each: block count, per block arg types + ops
=================  =================================================================

A group name starting with ``~`` (``TS:~results``, ``OV:~index``) may mix types. IRDL
binds all members of a variadic group to one type, so such a group is declared in IRDL
as :data:`HETERO_SLOTS` optional slots ``name_0 ... name_63`` (see :func:`groups` to
read a group back from an op).

A field may end with ``@13.3`` (present only from that version on) and ``=value``
(the value to use for older files).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Enum attributes: bytecode value -> spelling (the keyword NVIDIA's tools print).
ENUMS: dict[str, tuple[str, ...]] = {
    "signedness": ("unsigned", "signed"),
    "overflow": ("none", "no_signed_wrap", "no_unsigned_wrap", "no_wrap"),
    "rounding": ("nearest_even", "zero", "negative_inf", "positive_inf", "approx", "full",
                 "nearest_int_to_zero", "nearest_away"),
    "cmp_ordering": ("unordered", "ordered"),
    "cmp_predicate": ("equal", "not_equal", "less_than", "less_than_or_equal", "greater_than",
                      "greater_than_or_equal"),
    "rmw_mode": ("and", "or", "xor", "add", "addf", "max", "min", "umax", "umin", "xchg"),
    "memory_ordering": ("weak", "relaxed", "acquire", "release", "acq_rel"),
    "memory_scope": ("tl_blk", "device", "sys"),
    "padding_value": ("zero", "neg_zero", "nan", "pos_inf", "neg_inf"),
    "visibility": ("public", "private"),
    "multimem_reduction": ("add", "min", "max", "and", "or", "xor", "umin", "umax"),
}

_UNARY = "T:result O:source"
_BINARY = "T:result O:lhs,rhs"
_FBINARY = "T:result F:flush_to_zero E:rounding_mode:rounding O:lhs,rhs"
_IBINARY_OVF = "T:result E:overflow:overflow O:lhs,rhs"
_IBINARY_SIGN = "T:result E:signedness:signedness O:lhs,rhs"
_TERMINATOR = "TS:results OC:*operands"

# (opcode, name, since, encoding)
OPS: list[tuple[int, str, str, str]] = [
    (0x00, "absf", "13.1", _UNARY),
    (0x01, "absi", "13.1", _UNARY),
    (0x02, "addf", "13.1", _FBINARY),
    (0x03, "addi", "13.1", _IBINARY_OVF),
    (0x04, "andi", "13.1", _BINARY),
    (0x05, "assert", "13.1", "S:message O:condition"),
    (0x06, "assume", "13.1", "T:result P:predicate O:value"),
    (0x07, "atomic_cas_tko", "13.1", "T:result,result_token F:?mask,?token E:memory_ordering:memory_ordering "
                                      "E:memory_scope:memory_scope O:pointers,cmp,val O?:mask O?:token"),
    (0x08, "atomic_rmw_tko", "13.1", "T:result,result_token F:?mask,?token E:memory_ordering:memory_ordering "
                                      "E:memory_scope:memory_scope E:mode:rmw_mode O:pointers,arg O?:mask O?:token"),
    (0x09, "bitcast", "13.1", _UNARY),
    (0x0A, "break", "13.1", _TERMINATOR),
    (0x0B, "broadcast", "13.1", _UNARY),
    (0x0C, "cat", "13.1", "T:result I:dim O:lhs,rhs"),
    (0x0D, "ceil", "13.1", _UNARY),
    (0x0E, "cmpf", "13.1", "T:result E:comparison_predicate:cmp_predicate "
                            "E:comparison_ordering:cmp_ordering O:lhs,rhs"),
    (0x0F, "cmpi", "13.1", "T:result E:comparison_predicate:cmp_predicate E:signedness:signedness O:lhs,rhs"),
    (0x10, "constant", "13.1", "T:result D:value"),
    (0x11, "continue", "13.1", _TERMINATOR),
    (0x12, "cos", "13.1", _UNARY),
    (0x13, "cosh", "13.1", _UNARY),
    (0x14, "divf", "13.1", _FBINARY),
    (0x15, "divi", "13.1", "T:result E:signedness:signedness E:rounding:rounding O:lhs,rhs"),
    (0x16, "entry", "13.1", "F:@res_attrs,@optimization_hints,@arg_attrs S:sym_name TY:function_type "
                             "A?:arg_attrs A?:res_attrs H?:optimization_hints R:1"),
    (0x17, "exp", "13.1", "T:result E:rounding_mode:rounding@13.3=full O:source"),
    (0x18, "exp2", "13.1", "T:result F:flush_to_zero O:source"),
    (0x25, "exti", "13.1", "T:result E:signedness:signedness O:source"),
    (0x26, "extract", "13.1", "TS1:result OC:source,*indices"),
    (0x27, "floor", "13.1", _UNARY),
    (0x28, "fma", "13.1", "T:result F:flush_to_zero E:rounding_mode:rounding O:lhs,rhs,acc"),
    (0x29, "for", "13.1", "TS:~results F:unsigned_cmp@13.2 OC:lower_bound,upper_bound,step,*~init_values R:1"),
    (0x2A, "ftof", "13.1", "T:result E:rounding_mode:rounding O:source"),
    (0x2B, "ftoi", "13.1", "T:result F:saturating@13.4 E:signedness:signedness E:rounding_mode:rounding "
                            "O:source"),
    (0x2C, "get_global", "13.1", "T:result S:name"),
    (0x2D, "get_index_space_shape", "13.1", "TS:results O:src"),
    (0x2E, "get_num_tile_blocks", "13.1", "T:x,y,z"),
    (0x2F, "get_tensor_shape", "13.1", "TS:results O:src"),
    (0x30, "get_tile_block_id", "13.1", "T:x,y,z"),
    (0x31, "global", "13.1", "F:constant@13.3 S:sym_name DG:value I:alignment "
                              "E:sym_visibility:visibility@13.3=public"),
    (0x32, "if", "13.1", "TS:~results O:condition R:2"),
    (0x33, "int_to_ptr", "13.1", _UNARY),
    (0x3A, "iota", "13.1", "T:result"),
    (0x3B, "itof", "13.1", "T:result E:signedness:signedness E:rounding_mode:rounding O:source"),
    (0x3C, "join_tokens", "13.1", "TS1:result OC:*tokens"),
    (0x3D, "load_ptr_tko", "13.1", "T:result,result_token F:@memory_scope,@optimization_hints,?mask,"
                                    "?padding_value,?token E:memory_ordering:memory_ordering "
                                    "E?:memory_scope:memory_scope H?:optimization_hints "
                                    "O:source O?:mask O?:padding_value O?:token"),
    (0x3E, "load_view_tko", "13.1", "TS:tile,result_token F:@memory_scope,@optimization_hints,?token "
                                     "E:memory_ordering:memory_ordering E?:memory_scope:memory_scope "
                                     "H?:optimization_hints BA:inbounds@13.4 O:view OV:~index O?:token"),
    (0x3F, "log", "13.1", _UNARY),
    (0x40, "log2", "13.1", _UNARY),
    (0x41, "loop", "13.1", "TS:~results OC:*~init_values R:1"),
    (0x42, "make_partition_view", "13.1", "T:result O:tensor_view"),
    (0x43, "make_tensor_view", "13.1", "TS1:result O:base OV:dynamic_shape OV:dynamic_strides"),
    (0x44, "make_token", "13.1", "T:result"),
    (0x45, "maxf", "13.1", "T:result F:propagate_nan,flush_to_zero O:lhs,rhs"),
    (0x46, "maxi", "13.1", _IBINARY_SIGN),
    (0x47, "minf", "13.1", "T:result F:propagate_nan,flush_to_zero O:lhs,rhs"),
    (0x48, "mini", "13.1", _IBINARY_SIGN),
    (0x49, "mmaf", "13.1", "T:result F:fast_acc@13.3 O:lhs,rhs,acc"),
    (0x4A, "mmai", "13.1", "T:result E:signedness_lhs:signedness E:signedness_rhs:signedness O:lhs,rhs,acc"),
    (0x4B, "module", "13.1", "F:@producer@13.3 S:sym_name S?:producer"),
    (0x4C, "mulf", "13.1", _FBINARY),
    (0x4D, "mulhii", "13.1", "T:result O:x,y"),
    (0x4E, "muli", "13.1", _IBINARY_OVF),
    (0x4F, "negf", "13.1", _UNARY),
    (0x50, "negi", "13.1", "T:result E:overflow:overflow@13.2=none O:source"),
    (0x51, "offset", "13.1", "T:result O:ptr,offset"),
    (0x52, "ori", "13.1", _BINARY),
    (0x53, "permute", "13.1", "T:result I32A:permutation O:source"),
    (0x54, "fpowf", "13.1", "T:result O:source,exponent"),
    (0x55, "print_tko", "13.1", "TS:result_token F:?token@13.2 S:str OV:~args O?:token"),
    (0x56, "ptr_to_int", "13.1", _UNARY),
    (0x57, "ptr_to_ptr", "13.1", _UNARY),
    (0x58, "reduce", "13.1", "TS:~results I:dim A:identities OC:*~operands R:1"),
    (0x59, "remf", "13.1", _BINARY),
    (0x5A, "remi", "13.1", _IBINARY_SIGN),
    (0x5B, "reshape", "13.1", _UNARY),
    (0x5C, "return", "13.1", _TERMINATOR),
    (0x5D, "rsqrt", "13.1", "T:result F:flush_to_zero O:source"),
    (0x5E, "scan", "13.1", "TS:~results I:dim B:reverse A:identities OC:*~operands R:1"),
    (0x5F, "select", "13.1", "T:result O:cond,val_if_true,val_if_false"),
    (0x60, "shli", "13.1", _IBINARY_OVF),
    (0x61, "shri", "13.1", _IBINARY_SIGN),
    (0x62, "sin", "13.1", _UNARY),
    (0x63, "sinh", "13.1", _UNARY),
    (0x64, "sqrt", "13.1", "T:result F:flush_to_zero E:rounding_mode:rounding O:source"),
    (0x65, "store_ptr_tko", "13.1", "T:result_token F:@memory_scope,@optimization_hints,?mask,?token "
                                     "E:memory_ordering:memory_ordering E?:memory_scope:memory_scope "
                                     "H?:optimization_hints O:destination,value O?:mask O?:token"),
    (0x66, "store_view_tko", "13.1", "TS1:result_token F:@memory_scope,@optimization_hints,?token "
                                      "E:memory_ordering:memory_ordering E?:memory_scope:memory_scope "
                                      "H?:optimization_hints BA:inbounds@13.4 O:tile,view OV:~index O?:token"),
    (0x67, "subf", "13.1", _FBINARY),
    (0x68, "subi", "13.1", _IBINARY_OVF),
    (0x69, "tan", "13.1", _UNARY),
    (0x6A, "tanh", "13.1", "T:result E:rounding_mode:rounding@13.2=full O:source"),
    (0x6B, "trunci", "13.1", "T:result E:overflow:overflow O:source"),
    (0x6C, "xori", "13.1", _BINARY),
    (0x6D, "yield", "13.1", _TERMINATOR),
    (0x6E, "atan2", "13.2", "T:result O:x,y"),
    (0x6F, "pack", "13.3", _UNARY),
    (0x70, "unpack", "13.3", _UNARY),
    (0x71, "alloca", "13.3", "T:result F:global I:num_elem I:alignment"),
    (0x72, "mmaf_scaled", "13.3", "T:result O:lhs,rhs,acc,lhs_scale,rhs_scale"),
    (0x73, "make_gather_scatter_view", "13.3", "T:result O:tensor_view"),
    (0x74, "make_strided_view", "13.3", "T:result O:tensor_view"),
    (0x75, "atomic_red_view_tko", "13.3", "TS1:result_token F:?token E:memory_ordering:memory_ordering "
                                           "E:memory_scope:memory_scope E:mode:rmw_mode BA:inbounds@13.5 "
                                           "O:view OV:~index O:value O?:token"),
    (0x76, "insert", "13.4", "TS1:result OC:source,destination,*indices"),
    (0x77, "gdc_launch_dependents_tko", "13.4", "T:result_token F:?token O?:token"),
    (0x78, "gdc_wait_tko", "13.4", "T:result_token F:?token O?:token"),
    (0x79, "fpowi", "13.4", "T:result O:source,exponent"),
    (0x7A, "memory_fence_alias_tko", "13.4", "T:result_token O:token"),
    (0x7B, "multimem_load_reduce_view_tko", "13.5", "TS:result,result_token F:@memory_scope,?token "
                                                     "E:memory_ordering:memory_ordering "
                                                     "E?:memory_scope:memory_scope E:reduction:multimem_reduction "
                                                     "BA:inbounds O:view OV:~index O?:token"),
    (0x7C, "multimem_reduce_view_tko", "13.5", "TS1:result_token F:?token E:memory_ordering:memory_ordering "
                                                "E:memory_scope:memory_scope E:reduction:multimem_reduction "
                                                "BA:inbounds O:view,tile OV:~index O?:token"),
    (0x7D, "multimem_store_view_tko", "13.5", "TS1:result_token F:@memory_scope,?token "
                                               "E:memory_ordering:memory_ordering E?:memory_scope:memory_scope "
                                               "BA:inbounds O:view,tile OV:~index O?:token"),
]

# Ops whose blocks they end: IRDL cannot mark an op as a terminator, so these live in
# the unregistered companion namespace ``cuda_tile_term`` (see the package docstring).
TERMINATORS = ("break", "continue", "return", "yield")
HETERO_SLOTS = 64
TERMINATOR_NAMESPACE = "cuda_tile_term"


@dataclass
class Field:
    """One encoded field of an op (see the module docstring for the kinds)."""

    kind: str
    names: tuple[str, ...] = ()
    enum: str = ""
    since: tuple[int, int] = (13, 1)
    default: str | None = None
    optional: bool = False  # E? / H? / A? / S?: present only when its @flag is set


@dataclass
class OpSpec:
    """A decoded op-table row."""

    opcode: int
    name: str
    since: tuple[int, int]
    fields: list[Field] = field(default_factory=list)

    @property
    def full_name(self) -> str:
        ns = TERMINATOR_NAMESPACE if self.name in TERMINATORS else "cuda_tile"
        return f"{ns}.{self.name}"

    def results(self) -> list[tuple[str, str]]:
        """Result groups as (name, "single" | "variadic" | "hetero")."""
        out = []
        for f in self.fields:
            if f.kind == "T":
                out += [(n, "single") for n in f.names]
            elif f.kind == "TS1":
                out.append((f.names[0], "single"))
            elif f.kind == "TS":
                out += [_group(f.names[0])] if len(f.names) == 1 else [(n, "single") for n in f.names]
        return out

    def operands(self) -> list[tuple[str, str]]:
        """Operand groups as (name, "single" | "variadic" | "optional" | "hetero")."""
        out = []
        for f in self.fields:
            if f.kind == "O":
                out += [(n, "single") for n in f.names]
            elif f.kind == "OV":
                out.append(_group(f.names[0]))
            elif f.kind == "OC":
                out += [_group(n[1:]) if n.startswith("*") else (n, "single") for n in f.names]
            elif f.kind == "O?":
                out.append((f.names[0], "optional"))
        return out

    def regions(self) -> int:
        return sum(int(f.names[0]) for f in self.fields if f.kind == "R")


def _group(name: str) -> tuple[str, str]:
    return (name[1:], "hetero") if name.startswith("~") else (name, "variadic")


def segment_sizes(kinds: list[str], counts: list[int]) -> list[int]:
    """IRDL segment sizes for groups of ``kinds`` holding ``counts`` values (hetero: slots)."""
    out = []
    for kind, n in zip(kinds, counts):
        out += [1] * n + [0] * (HETERO_SLOTS - n) if kind == "hetero" else [n]
    return out


def non_single(kinds) -> int:
    """How many segments groups of ``kinds`` take (a hetero group: its slots); more than one needs a segment
    attribute."""
    return sum(HETERO_SLOTS if k == "hetero" else k != "single" for k in kinds)


def groups(op, results: bool = False) -> dict:
    """Operands (or results) of a cuda_tile op by group name: ``{"index": [v0, v1], "token": [t]}``.

    Works on any ``ir.Operation`` of the dialect: it undoes the segment encoding.
    """
    spec = OPS_BY_NAME[op.name.split(".", 1)[1]]
    decl = spec.results() if results else spec.operands()
    values = list(op.results if results else op.operands)
    attr = "resultSegmentSizes" if results else "operandSegmentSizes"
    if attr in op.attributes:
        sizes = list(op.attributes[attr])
        counts, i = [], 0
        for _name, kind in decl:
            if kind == "hetero":
                counts.append(sum(sizes[i:i + HETERO_SLOTS]))
                i += HETERO_SLOTS
            else:
                counts.append(sizes[i])
                i += 1
    else:
        fixed = sum(1 for _n, k in decl if k == "single")
        counts = [1 if k == "single" else len(values) - fixed for _n, k in decl]
    out, pos = {}, 0
    for (name, _kind), n in zip(decl, counts):
        out[name] = values[pos:pos + n]
        pos += n
    return out


def _version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


def _parse_field(token: str) -> Field:
    default = None
    if "=" in token:
        token, default = token.split("=", 1)
    since = (13, 1)
    if token.count("@") and token.rsplit("@", 1)[1][:1].isdigit():
        token, ver = token.rsplit("@", 1)
        since = _version(ver)
    kind, _, rest = token.partition(":")
    optional = kind.endswith("?") and kind != "O?"
    kind = kind.rstrip("?") if optional else kind
    if kind == "E":
        attr, enum = rest.split(":")
        return Field(kind, (attr,), enum, since, default, optional)
    return Field(kind, tuple(rest.split(",")) if rest else (), "", since, default, optional)


def _build() -> dict[int, OpSpec]:
    table = {}
    for opcode, name, since, enc in OPS:
        table[opcode] = OpSpec(opcode, name, _version(since), [_parse_field(t) for t in enc.split()])
    return table


OP_SPECS: dict[int, OpSpec] = _build()
OPS_BY_NAME: dict[str, OpSpec] = {s.name: s for s in OP_SPECS.values()}
