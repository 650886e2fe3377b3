"""NVIDIA's textual cuda_tile syntax (what ``tileirdisasm`` prints) -> the cuda_tile module of this package.

The visible corpus ships each kernel twice: TileIR bytecode and ``*.cuda_tile.mlir``, its text in the
dialect's own assembly format::

    entry @vadd(%arg0: tile<ptr<f32>>, %arg1: tile<i32>) optimization_hints=<default = {}> {
      %tview = make_tensor_view %arg0, shape = [%arg1], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
      ...
    }

MLIR's parser only knows the generic form of the IRDL-defined dialect, so this module reads the custom
form itself (a recursive-descent parser over the text) and builds the same ops the bytecode reader
builds (:mod:`tilecore_tileas.bytecode.build`): one ``cuda_tile.entry`` per ``entry``, the globals, the
terminators in ``cuda_tile_term``. Accepted: a ``cuda_tile.module @name { ... }`` wrapper or bare
``entry`` / ``global`` ops, op names with or without the ``cuda_tile.`` prefix, types with or without
``!cuda_tile.``, ``//`` comments, trailing ``loc(...)`` and ``#loc`` aliases (ignored). Each op gets the
location of its first character in the file, so verifier and compiler errors point into it. Syntax
errors are :class:`~tilecore.errors.TilecoreError` at ``file:line:col``.
"""

from __future__ import annotations

import re

from tilecore.errors import TilecoreError

from .ops import ENUMS, OPS_BY_NAME, non_single, segment_sizes

DYN = -9223372036854775808
_IDENT = re.compile(r"[A-Za-z_][\w$]*(\.[A-Za-z_][\w$]*)*")
_VALUE = re.compile(r"%[\w$.\-]+(#\d+)?")
_INT = re.compile(r"-?(0x[0-9a-fA-F]+|\d+)")
_ELEMENTS = {"i1", "i4", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "tf32", "f64", "f8E4M3FN", "f8E5M2",
             "f8E8M0FNU", "f4E2M1FN"}
_TOP_WORDS = ("cuda_tile.module", "entry", "cuda_tile.entry", "global", "cuda_tile.global")

# Ops whose text is ``op operands [modifiers] : T`` with every operand and the result of type T.
_SAME = {"absf", "absi", "addf", "addi", "andi", "atan2", "ceil", "cos", "cosh", "divf", "divi", "exp", "exp2",
         "floor", "fma", "fpowf", "log", "log2", "maxf", "maxi", "minf", "mini", "mulf", "mulhii", "muli", "negf",
         "negi", "ori", "remf", "remi", "rsqrt", "shli", "shri", "sin", "sinh", "sqrt", "subf", "subi", "tan",
         "tanh", "xori"}
# Ops whose text is ``op %x [modifiers] : T1 -> T2``.
_CONVERT = {"bitcast", "broadcast", "reshape", "pack", "unpack", "exti", "trunci", "ftof", "ftoi", "itof",
            "int_to_ptr", "ptr_to_int", "ptr_to_ptr"}
# Rounding modes an op takes when its text names none.
_ROUNDING_DEFAULT = {"exp": "full", "tanh": "full", "ftoi": "nearest_int_to_zero", "divi": "zero"}
_IEEE = ("nearest_even", "zero", "negative_inf", "positive_inf")
# The rounding modes each op's text may name (NVIDIA's parser refuses the others); ftof / itof also take
# nearest_away (a tf32 conversion of cuTile's).
_ROUNDING_ALLOWED = {**{op: _IEEE for op in ("addf", "subf", "mulf", "fma")},
                     "divf": _IEEE + ("approx", "full"), "sqrt": _IEEE + ("approx",), "exp": ("approx", "full"),
                     "tanh": ("approx", "full"), "ftoi": ("nearest_int_to_zero",), "ftof": _IEEE + ("nearest_away",),
                     "itof": _IEEE + ("nearest_away",), "divi": ("zero", "negative_inf", "positive_inf")}
_ALIASES = {"pow": "fpowf"}  # the dialect's ODS mnemonic; tileirdisasm prints fpowf
# NVIDIA's generic form: enum attributes (#cuda_tile.signedness<signed>) and attribute names that differ here
_GENERIC_ENUMS = {"comparison_predicate", "comparison_ordering", "signedness", "rounding_mode", "overflow",
                  "integer_overflow", "memory_ordering_semantics", "memory_scope", "atomic_rmw_mode", "padding_value"}
_GENERIC_NAMES = {"memory_ordering_semantics": "memory_ordering"}
_MULTIMEM = {"multimem_load_reduce_view_tko", "multimem_reduce_view_tko", "multimem_store_view_tko"}


def looks_like_cuda_tile_text(data: bytes) -> bool:
    """True when ``data`` starts (after comments and ``#loc`` aliases) with a cuda_tile op in custom form."""
    text = data[:65536].decode("utf-8", errors="replace")
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("//") or s.startswith("#"):
            continue
        return any(s == w or s.startswith(w + " ") or s.startswith(w + "@") for w in _TOP_WORDS)
    return False


class _Fail(Exception):
    def __init__(self, message: str, pos: int):
        super().__init__(message)
        self.message, self.pos = message, pos


class Parser:
    """Reads one file of cuda_tile custom syntax into a ``builtin.module`` (see the module docstring)."""

    def __init__(self, text: str, path: str):
        self.text, self.path, self.pos, self.op_pos = text, path, 0, 0
        self.scopes: list[dict[str, list]] = []
        self.lines = [m.start() for m in re.finditer(r"^", text, re.M)]

    # -- characters ------------------------------------------------------------------------------
    def fail(self, message: str, pos: int | None = None):
        raise _Fail(message, self.pos if pos is None else pos)

    def line_col(self, pos: int) -> tuple[int, int]:
        import bisect

        i = bisect.bisect_right(self.lines, pos) - 1
        return i + 1, pos - self.lines[i] + 1

    def ws(self) -> None:
        t, n = self.text, len(self.text)
        while self.pos < n:
            c = t[self.pos]
            if c in " \t\r\n":
                self.pos += 1
            elif t.startswith("//", self.pos):
                end = t.find("\n", self.pos)
                self.pos = n if end < 0 else end + 1
            else:
                return

    def peek(self, lit: str) -> bool:
        self.ws()
        if not self.text.startswith(lit, self.pos):
            return False
        end = self.pos + len(lit)
        return not (lit[-1].isalnum() or lit[-1] == "_") or end >= len(self.text) or not (
            self.text[end].isalnum() or self.text[end] in "_$")

    def accept(self, lit: str) -> bool:
        if self.peek(lit):
            self.pos += len(lit)
            return True
        return False

    def expect(self, lit: str, what: str = "") -> None:
        if not self.accept(lit):
            self.fail(f"expected '{lit}'{what}, found {self.found()}")

    def found(self) -> str:
        self.ws()
        if self.pos >= len(self.text):
            return "end of file"
        m = re.compile(r"\S+").match(self.text, self.pos)
        return f"'{m.group(0)[:30]}'"

    def ident(self, what: str = "a keyword") -> str:
        self.ws()
        m = _IDENT.match(self.text, self.pos)
        if not m:
            self.fail(f"expected {what}, found {self.found()}")
        self.pos = m.end()
        return m.group(0)

    def integer(self, bits: int = 64) -> int:
        """A signed integer that fits ``bits`` bits."""
        self.ws()
        m = _INT.match(self.text, self.pos)
        if not m:
            self.fail(f"expected an integer, found {self.found()}")
        v = int(m.group(0), 0)
        if not -(1 << (bits - 1)) <= v < (1 << (bits - 1)):
            self.fail(f"integer {m.group(0)} does not fit {bits} bits")
        self.pos = m.end()
        return v

    def int32(self) -> int:
        return self.integer(32)

    def int_or_dyn(self) -> int:
        return DYN if self.accept("?") else self.integer()

    def balanced(self, open_: str, close: str) -> str:
        """The text between ``open_`` (next) and its matching ``close`` (strings respected)."""
        self.expect(open_)
        start, depth, t = self.pos, 1, self.text
        while self.pos < len(t):
            c = t[self.pos]
            if c == '"':
                self.string_literal()
                continue
            self.pos += 1
            if c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    return t[start:self.pos - 1]
        self.fail(f"unbalanced '{open_}'", start - 1)

    def string_literal(self) -> str:
        """A ``"..."`` literal as written (quotes and escapes kept, for MLIR's attribute parser)."""
        self.ws()
        start = self.pos
        if not self.text.startswith('"', start):
            self.fail(f"expected a string, found {self.found()}")
        i = start + 1
        while i < len(self.text) and self.text[i] != '"':
            if self.text[i] == "\n":
                break
            i += 2 if self.text[i] == "\\" else 1
        if i >= len(self.text) or self.text[i] != '"':
            self.fail("unterminated string", start)
        self.pos = i + 1
        return self.text[start:self.pos]

    def comma_list(self, item, close: str) -> list:
        out = []
        if self.accept(close):
            return out
        while True:
            out.append(item())
            if self.accept(close):
                return out
            self.expect(",", f" or '{close}'")

    # -- types -----------------------------------------------------------------------------------
    def type_(self) -> str:
        """One cuda_tile type, as the IRDL spelling (``!cuda_tile.tile<array<i64: 4>, f32>``)."""
        self.ws()
        start = self.pos
        self.accept("!cuda_tile.")
        name = self.ident("a type")
        if name == "token":
            return "!cuda_tile.token"
        if name == "tile":
            self.expect("<")
            shape, elem = self.shape_and_element(dynamic=False)
            self.expect(">")
            return f"!cuda_tile.tile<{_i64s(shape)}, {elem}>"
        if name == "ptr":
            self.expect("<")
            elem = self.element()
            self.expect(">")
            return f"!cuda_tile.ptr<{elem}>"
        if name == "tensor_view":
            return self.tensor_view()
        if name in ("partition_view", "strided_view", "gather_scatter_view"):
            return self.view_type(name)
        self.fail(f"expected a cuda_tile type (tile, ptr, token, tensor_view, partition_view, strided_view, "
                  f"gather_scatter_view), found '{name}'", start)

    def element(self) -> str:
        self.ws()
        start = self.pos
        if self.peek("ptr") or self.peek("!cuda_tile.ptr"):
            return self.type_()
        name = self.ident("an element type")
        if name not in _ELEMENTS:
            self.fail(f"unknown element type '{name}'", start)
        return name

    def shape_and_element(self, dynamic: bool) -> tuple[list[int], str]:
        shape = []
        while True:
            self.ws()
            c = self.text[self.pos:self.pos + 1]
            if not (c.isdigit() or (dynamic and c == "?")):
                break
            if c == "?":
                self.pos += 1
                shape.append(DYN)
            else:
                m = re.compile(r"\d+").match(self.text, self.pos)
                if int(m.group(0)) >= 1 << 63:
                    self.fail(f"dimension {m.group(0)} does not fit 64 bits")
                self.pos = m.end()
                shape.append(int(m.group(0)))
            if self.text[self.pos:self.pos + 1] != "x":
                self.fail(f"expected 'x' after a dimension, found {self.found()}")
            self.pos += 1
        return shape, self.element()

    def tensor_view(self) -> str:
        self.expect("<")
        shape, elem = self.shape_and_element(dynamic=True)
        strides: list[int] = []
        if shape:
            self.expect(",", " and 'strides=[...]'")
            self.expect("strides")
            self.expect("=")
            self.expect("[")
            strides = self.comma_list(self.int_or_dyn, "]")
            if len(strides) != len(shape):
                self.fail(f"tensor_view of rank {len(shape)} has {len(strides)} strides")
        self.expect(">")
        return f"!cuda_tile.tensor_view<{elem}, {_i64s(shape)}, {_i64s(strides)}>"

    def tile_shape(self) -> list[int]:
        self.expect("tile")
        self.expect("=")
        self.expect("(")
        shape = []
        while True:
            shape.append(self.int32())
            if self.accept(")"):
                return shape
            self.ws()
            if self.text[self.pos:self.pos + 1] != "x":
                self.fail(f"expected 'x' or ')' in a tile shape, found {self.found()}")
            self.pos += 1

    def view_type(self, kind: str) -> str:
        self.expect("<")
        tile = self.tile_shape()
        self.expect(",")
        strides = None
        if kind == "strided_view":
            self.expect("traversal_strides")
            self.expect("=")
            self.expect("[")
            strides = self.comma_list(self.int32, "]")
            self.expect(",")
        padding = "none"
        if self.accept("padding_value"):
            self.expect("=")
            start = self.pos
            padding = self.ident("a padding value")
            if padding not in ENUMS["padding_value"]:
                self.fail(f"unknown padding value '{padding}' (expected one of: "
                          f"{', '.join(ENUMS['padding_value'])})", start)
            self.expect(",")
        self.ws()
        tv_at = self.pos
        tv = self.type_()
        if not tv.startswith("!cuda_tile.tensor_view"):
            self.fail("expected a tensor_view type", tv_at)
        if kind == "gather_scatter_view":
            self.expect(",")
            self.expect("sparse_dim")
            self.expect("=")
            sparse = self.integer()
            self.expect(">")
            return f'!cuda_tile.gather_scatter_view<{_i32s(tile)}, {tv}, {sparse} : i64, "{padding}">'
        dim_map = list(range(len(tile)))
        if self.accept(","):
            self.expect("dim_map")
            self.expect("=")
            self.expect("[")
            dim_map = self.comma_list(self.int32, "]")
        self.expect(">")
        if kind == "strided_view":
            return (f'!cuda_tile.strided_view<{_i32s(tile)}, {_i32s(strides)}, {tv}, {_i32s(dim_map)}, '
                    f'"{padding}">')
        return f'!cuda_tile.partition_view<{_i32s(tile)}, {tv}, {_i32s(dim_map)}, "{padding}">'

    def type_list(self) -> list[str]:
        out = [self.type_()]
        while self.accept(","):
            out.append(self.type_())
        return out

    def paren_or_bare_types(self) -> list[str]:
        if self.accept("("):
            return self.comma_list(self.type_, ")")
        return self.type_list()

    # -- values ----------------------------------------------------------------------------------
    def value_name(self) -> tuple[str, int]:
        self.ws()
        m = _VALUE.match(self.text, self.pos)
        if not m:
            self.fail(f"expected a value (%name), found {self.found()}")
        self.pos = m.end()
        return m.group(0), m.start()

    def use(self, expect_type: str | None = None):
        """A value use; with ``expect_type`` the value must have that type."""
        name, at = self.value_name()
        return self.lookup(name, at, expect_type)

    def lookup(self, name: str, at: int, expect_type: str | None = None):
        base, _, idx = name.partition("#")
        for scope in reversed(self.scopes):
            if base in scope:
                vals = scope[base]
                i = int(idx) if idx else 0
                if i >= len(vals) or (not idx and len(vals) > 1):
                    self.fail(f"'{name}' does not name one value ({base} has {len(vals)} results)", at)
                v = vals[i]
                if expect_type is not None and str(v.type) != expect_type:
                    self.fail(f"use of value '{name}' expects different type than prior uses: "
                              f"'{_short(expect_type)}' vs '{_short(str(v.type))}'", at)
                return v
        self.fail(f"use of undeclared value '{name}'", at)

    def define(self, names: list[tuple[str, int]], values: list) -> None:
        total = sum(n for _name, _at, n in names) if names else 0
        if names and total != len(values):
            self.fail(f"operation defines {len(values)} results but was provided {total} to bind", names[0][1])
        i = 0
        for name, at, n in names:
            if name in self.scopes[-1]:
                self.fail(f"redefinition of SSA value '{name}'", at)
            self.scopes[-1][name] = values[i:i + n]
            i += n

    def ir_type(self, text: str, at: int | None = None):
        """The MLIR type of an IRDL spelling; one MLIR refuses (a value out of range) is an error at ``at``
        (default: the op being read)."""
        from tilecore.mlir import ir

        try:
            return ir.Type.parse(text)
        except Exception as e:  # noqa: BLE001 - MLIRError
            self.fail(f"invalid type '{_short(text)}': {_first_line(e)}", self.op_pos if at is None else at)

    # -- attributes --------------------------------------------------------------------------------
    def attr(self, text: str, at: int):
        from tilecore.mlir import ir

        try:
            return ir.Attribute.parse(text)
        except Exception as e:  # noqa: BLE001 - MLIRError: report it at the attribute
            self.fail(f"invalid attribute '{text}': {_first_line(e)}", at)

    def attr_dict(self, attrs: dict) -> None:
        """An optional ``{name = value, ...}`` dictionary, merged into ``attrs``."""
        self.ws()
        if not self.text.startswith("{", self.pos) or self.text.startswith("{\n", self.pos):
            return
        at = self.pos
        body = self.balanced("{", "}")
        d = self.attr("{" + body + "}", at)
        for named in d:
            attrs[named.name] = named.attr

    def enum(self, kind: str, what: str) -> str:
        self.ws()
        at = self.pos
        word = self.ident(what)
        if word not in ENUMS[kind]:
            self.fail(f"invalid {what} '{word}' (expected one of: {', '.join(ENUMS[kind])})", at)
        return word

    def hints(self) -> str:
        """``<sm_90 = {...}>`` -> ``#cuda_tile.optimization_hints<{sm_90 = {...}}>``."""
        return _hints_text(self.balanced("<", ">"))

    def modifiers(self, op: str, attrs: dict, sign_names=("signedness",)) -> None:
        """Keywords between the operands and the ``:``: rounding<...>, flush_to_zero, overflow<...>, signedness."""
        signs = list(sign_names)
        while True:
            self.ws()
            at = self.pos
            if self.accept("rounding"):
                self.expect("<")
                self.ws()
                mat = self.pos
                mode = self.enum("rounding", "rounding mode")
                allowed = _ROUNDING_ALLOWED.get(op)
                if allowed and mode not in allowed:
                    self.fail(f"'{op}' takes rounding modes {', '.join(allowed)}, got '{mode}'", mat)
                self.expect(">")
                attrs["rounding" if op == "divi" else "rounding_mode"] = f'"{mode}"'
            elif self.accept("overflow"):
                self.expect("<")
                attrs["overflow"] = f'"{self.enum("overflow", "overflow flag")}"'
                self.expect(">")
            elif self.peek("signed") or self.peek("unsigned"):
                if not signs:
                    self.fail(f"'{op}' takes no signedness here", at)
                attrs[signs.pop(0)] = f'"{self.ident()}"'
            elif any(self.peek(w) for w in ("flush_to_zero", "propagate_nan", "fast_acc", "saturating")):
                attrs[self.ident()] = "unit"
            elif self.peek("{") and not self.text.startswith("{\n", self.pos):
                self.attr_dict(attrs)
            else:
                return

    # -- module structure ----------------------------------------------------------------------------
    def module(self, ctx):
        from tilecore.mlir import ir

        with ctx, ir.Location.unknown(ctx):
            m = ir.Module.create()
            m.operation.attributes["cuda_tile.bytecode_version"] = ir.StringAttr.get("13.4")
            self.scopes.append({})
            with ir.InsertionPoint(m.body):
                depth = 0  # inside a cuda_tile.module { ... } (a file may hold several, one after the other)
                while True:
                    self.skip_loc_aliases()
                    self.ws()
                    if depth and self.accept("}"):
                        depth = 0
                        self.attr_dict({})
                        continue
                    if self.pos >= len(self.text):
                        if depth:
                            self.fail("expected '}' to close cuda_tile.module, found end of file")
                        break
                    at = self.pos
                    word = self.ident("'entry' or 'global'")
                    if word == "cuda_tile.module" and not depth:
                        self.ws()
                        if self.text.startswith("@", self.pos):
                            self.symbol()
                        self.attr_dict({})
                        self.expect("{")
                        depth = 1
                        continue
                    word = word[len("cuda_tile."):] if word.startswith("cuda_tile.") else word
                    if word == "entry":
                        self.entry(at)
                    elif word == "global":
                        self.global_(at)
                    else:
                        self.fail(f"expected 'entry' or 'global' at the top level of a cuda_tile module, found "
                                  f"'{word}'", at)
                    self.trailing_loc()
            self.ws()
            if self.pos < len(self.text):
                self.fail(f"unexpected {self.found()} after the module")
            return m

    def skip_loc_aliases(self) -> None:
        while True:
            self.ws()
            if not self.text.startswith("#", self.pos):
                return
            end = self.text.find("\n", self.pos)
            self.pos = len(self.text) if end < 0 else end + 1

    def trailing_loc(self) -> None:
        if self.peek("loc") and self.text[self.pos + 3:self.pos + 4] == "(":
            self.pos += 3
            self.balanced("(", ")")

    def symbol(self) -> str:
        self.ws()
        if not self.text.startswith("@", self.pos):
            self.fail(f"expected a symbol name (@name), found {self.found()}")
        self.pos += 1
        if self.text.startswith('"', self.pos):
            return self.string_literal()[1:-1]
        return self.ident("a symbol name")

    def loc(self, pos: int):
        from tilecore.mlir import ir

        line, col = self.line_col(pos)
        return ir.Location.file(self.path, line, col)

    def global_(self, at: int) -> None:
        from tilecore.mlir import ir

        attrs = {"sym_visibility": ir.StringAttr.get("public")}
        if self.peek("public") or self.peek("private"):
            attrs["sym_visibility"] = ir.StringAttr.get(self.ident())
        if self.accept("constant"):
            attrs["constant"] = ir.UnitAttr.get()
        attrs["sym_name"] = ir.StringAttr.get(self.symbol())
        alignment = 16
        if self.accept("alignment"):
            self.expect("=")
            alignment = self.integer()
        attrs["alignment"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), alignment)
        self.ws()
        vat = self.pos
        elem, body = self.dense_literal()
        self.expect(":")
        ty = self.type_()
        attrs["value"] = self.dense_attr(elem, body, ty, vat)
        ir.Operation.create("cuda_tile.global", attributes=attrs, loc=self.loc(at))

    def dense_literal(self) -> tuple[str, str]:
        """``<f32: [1.0, 2.0]>`` -> ("f32", "[1.0, 2.0]")."""
        self.expect("<")
        elem = self.element()
        self.expect(":")
        self.ws()
        start = self.pos
        depth = 0
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c == "[":
                depth += 1
            elif c == "]":
                depth -= 1
            elif c == ">" and depth == 0:
                break
            elif c == '"':
                self.string_literal()
                continue
            self.pos += 1
        body = self.text[start:self.pos].strip()
        self.expect(">")
        return elem, body

    def dense_attr(self, elem: str, body: str, ty: str, at: int):
        m = re.fullmatch(r"!cuda_tile\.tile<array<i64(?:: ([\d, ]+))?>, (.+)>", ty)
        if not m:
            self.fail(f"a constant's type must be a tile, got '{_short(ty)}'", at)
        if m.group(2) != elem:
            self.fail(f"constant element type {elem} does not match its tile type '{_short(ty)}'", at)
        dims = [d.strip() for d in (m.group(1) or "").split(",") if d.strip()]
        tensor = f"tensor<{'x'.join(dims)}x{elem}>" if dims else f"tensor<{elem}>"
        return self.attr(f"dense<{body}> : {tensor}", at)

    def entry(self, at: int) -> None:
        from tilecore.mlir import ir

        name = self.symbol()
        self.expect("(")
        args = []
        if not self.accept(")"):
            while True:
                nm, nat = self.value_name()
                self.expect(":")
                args.append((nm, nat, self.type_()))
                self.attr_dict({})  # argument attributes are not kept
                if self.accept(")"):
                    break
                self.expect(",", " or ')'")
        if self.accept("->"):
            self.fail("entry functions return no values", self.pos)
        hints = "#cuda_tile.optimization_hints<{}>"
        if self.accept("optimization_hints"):
            self.expect("=")
            hints = self.hints()
        types = [self.ir_type(t, a) for _n, a, t in args]
        attrs = {"sym_name": ir.StringAttr.get(name),
                 "function_type": ir.TypeAttr.get(ir.FunctionType.get(types, [])),
                 "kernel": ir.UnitAttr.get(),
                 "optimization_hints": self.attr(hints, at)}
        op = ir.Operation.create("cuda_tile.entry", attributes=attrs, regions=1, loc=self.loc(at))
        self.region(op.regions[0], [(n, a) for n, a, _t in args], types, "return", self.loc(at))
        extra: dict = {}
        self.attr_dict(extra)
        for k, v in extra.items():
            op.attributes[k] = v

    def region(self, region, arg_names, arg_types, implicit: str | None, loc):
        """``{ ops }`` into a new block of ``region`` with the given arguments; ``implicit``: the terminator
        (without operands) appended when the block does not end in one."""
        from tilecore.mlir import ir

        self.ws()
        open_at = self.pos
        self.expect("{")
        block = region.blocks.append(*[self.ir_type(t) if isinstance(t, str) else t for t in arg_types],
                                     arg_locs=[loc] * len(arg_types))
        self.scopes.append({})
        self.define([(n, a, 1) for n, a in arg_names], list(block.arguments))
        last = None
        with ir.InsertionPoint(block):
            while not self.accept("}"):
                if self.pos >= len(self.text):
                    self.fail("expected '}' to close the region opened here", open_at)
                last = self.operation()
            if last is None or not last.name.startswith("cuda_tile_term."):
                if implicit is None:
                    self.fail("the region must end in a terminator (yield / continue / break / return)",
                              self.pos - 1)
                ir.Operation.create(f"cuda_tile_term.{implicit}", loc=self.loc(self.pos - 1))
        self.scopes.pop()

    # -- operations -------------------------------------------------------------------------------
    def operation(self):
        self.ws()
        names: list[tuple[str, int, int]] = []
        if self.text.startswith("%", self.pos):
            while True:
                nm, nat = self.value_name()
                n = 1
                if self.text.startswith(":", self.pos) and self.text[self.pos + 1:self.pos + 2].isdigit():
                    self.pos += 1
                    n = self.integer()
                names.append((nm, nat, n))
                if not self.accept(","):
                    break
            self.expect("=")
        self.ws()
        op_at = self.op_pos = self.pos
        if self.text.startswith('"', self.pos):
            op = self.generic_op(op_at)
            self.trailing_loc()
            self.define(names, list(op.results))
            return op
        name = self.ident("an operation name")
        name = name[len("cuda_tile."):] if name.startswith("cuda_tile.") else name
        name = _ALIASES.get(name, name)
        if name in _MULTIMEM:
            self.fail(f"'{name}' is not supported: multimem ops need multicast memory shared by several GPUs "
                      "(a multicast object), which tilecore does not target", op_at)
        if name not in OPS_BY_NAME or name in ("entry", "global", "module"):
            self.fail(f"unknown cuda_tile operation '{name}'", op_at)
        handler = getattr(self, "op_" + name, None)
        if handler is None:
            handler = (self.op_same if name in _SAME else self.op_convert if name in _CONVERT else None)
        op = handler(name, self.loc(op_at)) if handler else self.fail(f"unknown cuda_tile operation '{name}'", op_at)
        self.trailing_loc()
        self.define(names, list(op.results))
        return op

    def generic_op(self, at: int):
        """``"cuda_tile.cmpi"(%a, %b) {comparison_predicate = #cuda_tile.comparison_predicate<less_than>, ...} :
        (T, T) -> R``: an op in MLIR's generic form among custom-form ones, as NVIDIA's parser reads it (enum
        attributes spelled ``#cuda_tile.<enum><value>``). Ops with regions or operand segments are not read."""
        full = self.string_literal()[1:-1]
        name = full[len("cuda_tile."):] if full.startswith("cuda_tile.") else None
        name = _ALIASES.get(name, name)
        if name is None or name not in OPS_BY_NAME or name in ("entry", "global", "module") or name in _MULTIMEM:
            self.fail(f"unknown cuda_tile operation '{full}'", at)
        self.expect("(")
        refs = self.comma_list(self.value_name, ")")
        self.ws()
        if self.text.startswith("(", self.pos) or self.text.startswith("<", self.pos):
            self.fail(f"generic-form '{full}' with regions or properties is not supported: write it in the "
                      "custom form", at)
        attrs: dict = {}
        self.ws()
        if self.text.startswith("{", self.pos):
            dat = self.pos
            body = self.balanced("{", "}")
            body = re.sub(r"#cuda_tile\.(\w+)<(\w+)>",
                          lambda m: f'"{m.group(2)}"' if m.group(1) in _GENERIC_ENUMS else m.group(0), body)
            for named in self.attr("{" + body + "}", dat):
                attrs[_GENERIC_NAMES.get(named.name, named.name)] = named.attr
        self.expect(":")
        self.expect("(")
        otypes = self.comma_list(self.type_, ")")
        self.expect("->")
        rtypes = self.paren_or_bare_types()
        spec = OPS_BY_NAME[name]
        if "operandSegmentSizes" in attrs or sum(k != "single" for _n, k in spec.operands()) > 1:
            self.fail(f"generic-form '{full}' with operand segments is not supported: write it in the custom form",
                      at)
        for f in spec.fields:
            if f.kind == "I" and f.names[0] in attrs:
                attrs[f.names[0]] = f"{attrs[f.names[0]].value} : i64"
        values = self.resolve(refs, otypes) if refs else []
        groups, i = {}, 0
        fixed = sum(k == "single" for _n, k in spec.operands())
        for gname, kind in spec.operands():
            take = 1 if kind == "single" else len(values) - fixed
            groups[gname], i = values[i:i + take], i + take
        results = {}
        for gname, kind in spec.results():
            results[gname] = rtypes[len(results):] if kind != "single" else rtypes[len(results):len(results) + 1]
        return self.make(name, self.loc(at), groups, results, attrs)

    def make(self, name: str, loc, operands: dict, results: dict | list, attrs: dict, regions: int = 0):
        """Create ``cuda_tile.<name>`` with operand / result groups named as in :data:`.ops.OPS`."""
        from tilecore.mlir import ir

        spec = OPS_BY_NAME[name]
        ops, okinds, ocounts = [], [], []
        for gname, kind in spec.operands():
            vals = operands.get(gname, [])
            vals = vals if isinstance(vals, list) else [vals]
            ops += vals
            okinds.append(kind)
            ocounts.append(len(vals))
        rtypes, rkinds, rcounts = [], [], []
        if isinstance(results, list):
            results = {spec.results()[0][0]: results} if spec.results() else {}
        for gname, kind in spec.results():
            ts = results.get(gname, [])
            ts = ts if isinstance(ts, list) else [ts]
            rtypes += ts
            rkinds.append(kind)
            rcounts.append(len(ts))
        built = {}
        for k, v in attrs.items():
            built[k] = v if not isinstance(v, str) else (ir.UnitAttr.get() if v == "unit" else self.attr(v, 0))
        if non_single(okinds) > 1:
            built["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get(segment_sizes(okinds, ocounts))
        if non_single(rkinds) > 1:
            built["resultSegmentSizes"] = ir.DenseI32ArrayAttr.get(segment_sizes(rkinds, rcounts))
        return ir.Operation.create(spec.full_name, results=[self.ir_type(t) for t in rtypes], operands=ops,
                                   attributes=built, regions=regions, loc=loc)

    def operands(self, n: int) -> list[tuple[str, int]]:
        out = [self.value_name()]
        for _ in range(n - 1):
            self.expect(",")
            out.append(self.value_name())
        return out

    def resolve(self, refs: list[tuple[str, int]], types: list[str]) -> list:
        if len(types) == 1 and len(refs) > 1:
            types = types * len(refs)
        if len(types) != len(refs):
            self.fail(f"{len(refs)} operands but {len(types)} types", refs[0][1] if refs else self.pos)
        return [self.lookup(n, a, t) for (n, a), t in zip(refs, types)]

    def token_operand(self) -> list:
        if self.accept("token"):
            self.expect("=")
            return [self.use("!cuda_tile.token")]
        return []

    def op_same(self, name: str, loc):
        spec = OPS_BY_NAME[name]
        names = [n for n, _k in spec.operands()]
        refs = self.operands(len(names))
        attrs: dict = {}
        if name in _ROUNDING_DEFAULT:
            attrs["rounding" if name == "divi" else "rounding_mode"] = f'"{_ROUNDING_DEFAULT[name]}"'
        elif any(f.kind == "E" and f.names[0] == "rounding_mode" for f in spec.fields):
            attrs["rounding_mode"] = '"nearest_even"'
        if any(f.kind == "E" and f.names[0] == "overflow" for f in spec.fields):
            attrs["overflow"] = '"none"'
        self.modifiers(name, attrs)
        self.expect(":")
        types = self.type_list()  # one type for all, or one per operand (fpowi: base, exponent)
        vals = self.resolve(refs, types)
        rtype = types[0]
        self.check_enums(name, attrs)
        return self.make(name, loc, dict(zip(names, vals)), [rtype], attrs)

    op_fpowi = op_same

    def check_enums(self, name: str, attrs: dict) -> None:
        spec = OPS_BY_NAME[name]
        for f in spec.fields:
            if f.kind == "E" and not f.optional and f.names[0] not in attrs:
                self.fail(f"'{name}' needs its {f.names[0].replace('_', ' ')} "
                          f"({' or '.join(ENUMS[f.enum][:6])})")

    def op_convert(self, name: str, loc):
        ref = self.value_name()
        attrs: dict = {}
        if name in ("ftof", "itof"):
            attrs["rounding_mode"] = '"nearest_even"'
        if name == "ftoi":
            attrs["rounding_mode"] = '"nearest_int_to_zero"'
        if name == "trunci":
            attrs["overflow"] = '"none"'
        self.modifiers(name, attrs)
        if self.accept("saturating"):
            attrs["saturating"] = "unit"
        self.expect(":")
        src = self.type_()
        self.expect("->")
        dst = self.type_()
        self.check_enums(name, attrs)
        return self.make(name, loc, {"source": self.resolve([ref], [src])}, [dst], attrs)

    def op_permute(self, name, loc):
        ref = self.value_name()
        self.expect("[")
        perm = self.comma_list(self.int32, "]")
        attrs = {"permutation": f"array<i32{': ' + ', '.join(map(str, perm)) if perm else ''}>"}
        self.attr_dict(attrs)
        self.expect(":")
        src = self.type_()
        self.expect("->")
        dst = self.type_()
        return self.make(name, loc, {"source": self.resolve([ref], [src])}, [dst], attrs)

    def op_extract(self, name, loc):
        ref = self.value_name()
        self.expect("[")
        idx = self.comma_list(self.value_name, "]")
        attrs: dict = {}
        self.attr_dict(attrs)
        self.expect(":")
        src = self.type_()
        self.expect("->")
        dst = self.type_()
        return self.make(name, loc, {"source": self.resolve([ref], [src]), "indices": self.scalar_indices(idx)},
                         [dst], attrs)

    def scalar_indices(self, refs) -> list:
        return [self.lookup(n, a) for n, a in refs]

    def op_insert(self, name, loc):
        src, dst = self.operands(2)
        self.expect("[")
        idx = self.comma_list(self.value_name, "]")
        attrs: dict = {}
        self.attr_dict(attrs)
        self.expect(":")
        st = self.type_()
        self.expect(",")
        dt = self.type_()
        return self.make(name, loc, {"source": self.resolve([src], [st]), "destination": self.resolve([dst], [dt]),
                                     "indices": self.scalar_indices(idx)}, [dt], attrs)

    def op_cmpi(self, name, loc):
        attrs = {"comparison_predicate": f'"{self.enum("cmp_predicate", "comparison predicate")}"'}
        if name == "cmpf":
            attrs["comparison_ordering"] = f'"{self.enum("cmp_ordering", "comparison ordering")}"'
        refs = self.operands(2)
        if name == "cmpi":
            self.expect(",")
            attrs["signedness"] = f'"{self.enum("signedness", "signedness")}"'
        self.attr_dict(attrs)
        self.expect(":")
        t = self.type_()
        self.expect("->")
        r = self.type_()
        lhs, rhs = self.resolve(refs, [t])
        return self.make(name, loc, {"lhs": lhs, "rhs": rhs}, [r], attrs)

    op_cmpf = op_cmpi

    def op_select(self, name, loc):
        refs = self.operands(3)
        attrs: dict = {}
        self.attr_dict(attrs)
        self.expect(":")
        ct = self.type_()
        self.expect(",")
        rt = self.type_()
        c, t, f = self.resolve(refs, [ct, rt, rt])
        return self.make(name, loc, {"cond": c, "val_if_true": t, "val_if_false": f}, [rt], attrs)

    def op_offset(self, name, loc):
        refs = self.operands(2)
        attrs: dict = {}
        self.attr_dict(attrs)
        self.expect(":")
        pt = self.type_()
        self.expect(",")
        ot = self.type_()
        self.expect("->")
        rt = self.type_()
        p, o = self.resolve(refs, [pt, ot])
        return self.make(name, loc, {"ptr": p, "offset": o}, [rt], attrs)

    def op_cat(self, name, loc):
        refs = self.operands(2)
        self.expect("dim")
        self.expect("=")
        attrs = {"dim": f"{self.integer()} : i64"}
        self.attr_dict(attrs)
        self.expect(":")
        lt = self.type_()
        self.expect(",")
        rt = self.type_()
        self.expect("->")
        res = self.type_()
        lhs, rhs = self.resolve(refs, [lt, rt])
        return self.make(name, loc, {"lhs": lhs, "rhs": rhs}, [res], attrs)

    def op_mmaf(self, name, loc):
        n = 5 if name == "mmaf_scaled" else 3
        refs = self.operands(n)
        attrs: dict = {}
        self.modifiers(name, attrs, ("signedness_lhs", "signedness_rhs") if name == "mmai" else ())
        self.expect(":")
        types = self.type_list()
        vals = self.resolve(refs, types)
        keys = ["lhs", "rhs", "acc", "lhs_scale", "rhs_scale"][:n]
        if name == "mmai":
            self.check_enums(name, attrs)
        return self.make(name, loc, dict(zip(keys, vals)), [types[2]], attrs)

    op_mmai = op_mmaf
    op_mmaf_scaled = op_mmaf

    def op_assume(self, name, loc):
        self.ws()
        at = self.pos
        self.accept("#cuda_tile.")
        kind = self.ident("an assume predicate")
        self.ws()
        body = self.balanced("<", ">") if self.text.startswith("<", self.pos) else ""
        pred = _predicate(kind, body, at, self)
        self.expect(",")
        ref = self.value_name()
        attrs = {"predicate": pred}
        self.attr_dict(attrs)
        self.expect(":")
        t = self.type_()
        return self.make(name, loc, {"value": self.resolve([ref], [t])}, [t], attrs)

    def op_constant(self, name, loc):
        self.ws()
        at = self.pos
        elem, body = self.dense_literal()
        attrs: dict = {}
        self.attr_dict(attrs)
        self.expect(":")
        t = self.type_()
        attrs["value"] = self.dense_attr(elem, body, t, at)
        return self.make(name, loc, {}, [t], attrs)

    def op_iota(self, name, loc):
        attrs: dict = {}
        self.attr_dict(attrs)
        self.expect(":")
        t = self.type_()
        return self.make(name, loc, {}, [t], attrs)

    op_make_token = op_iota

    def op_get_tile_block_id(self, name, loc):
        attrs: dict = {}
        self.attr_dict(attrs)
        self.expect(":")
        t = self.type_()
        return self.make(name, loc, {}, {"x": t, "y": t, "z": t}, attrs)

    op_get_num_tile_blocks = op_get_tile_block_id

    def op_get_global(self, name, loc):
        sym = self.symbol()
        attrs = {"name": f'"{sym}"'}
        self.attr_dict(attrs)
        self.expect(":")
        return self.make(name, loc, {}, [self.type_()], attrs)

    def op_alloca(self, name, loc):
        self.expect("num_elem")
        self.expect("=")
        attrs = {"num_elem": f"{self.integer()} : i64"}
        self.expect(",")
        self.expect("alignment")
        self.expect("=")
        attrs["alignment"] = f"{self.integer()} : i64"
        if self.accept("global"):
            attrs["global"] = "unit"
        self.attr_dict(attrs)
        self.expect(":")
        return self.make(name, loc, {}, [self.type_()], attrs)

    def op_join_tokens(self, name, loc):
        refs = [self.value_name()]
        while self.accept(","):
            refs.append(self.value_name())
        attrs: dict = {}
        self.attr_dict(attrs)
        self.expect(":")
        t = self.type_()
        return self.make(name, loc, {"tokens": self.resolve(refs, ["!cuda_tile.token"])}, [t], attrs)

    def op_assert(self, name, loc):
        ref = self.value_name()
        self.expect(",")
        msg = self.string_literal()
        attrs = {"message": msg}
        self.attr_dict(attrs)
        self.expect(":")
        t = self.type_()
        return self.make(name, loc, {"condition": self.resolve([ref], [t])}, [], attrs)

    def op_print_tko(self, name, loc):
        attrs = {"str": self.string_literal()}
        refs = []
        while self.accept(","):
            refs.append(self.value_name())
        tok = self.token_operand()
        self.attr_dict(attrs)
        types = []
        if self.accept(":"):
            types = self.type_list()
        self.expect("->")
        rt = self.type_()
        args = self.resolve(refs, types) if refs else []
        return self.make(name, loc, {"args": args, "token": tok}, {"result_token": [rt]}, attrs)

    def op_gdc_wait_tko(self, name, loc):
        tok = self.token_operand()
        attrs: dict = {}
        self.attr_dict(attrs)
        rt = "!cuda_tile.token"
        if self.accept("->") or self.accept(":"):
            rt = self.type_()
        return self.make(name, loc, {"token": tok}, [rt], attrs)

    op_gdc_launch_dependents_tko = op_gdc_wait_tko

    def op_memory_fence_alias_tko(self, name, loc):
        tok = self.use("!cuda_tile.token")
        attrs: dict = {}
        self.attr_dict(attrs)
        if self.accept(":"):
            self.type_()
        return self.make(name, loc, {"token": tok}, ["!cuda_tile.token"], attrs)

    # memory ops
    def memory_attrs(self, attrs: dict, scope_required: bool = False) -> None:
        attrs["memory_ordering"] = f'"{self.enum("memory_ordering", "memory ordering")}"'
        self.ws()
        if any(self.peek(s) for s in ENUMS["memory_scope"]):
            at = self.pos
            if attrs["memory_ordering"] == '"weak"':
                self.fail("weak memory ordering takes no memory scope", at)
            attrs["memory_scope"] = f'"{self.ident()}"'
        elif scope_required:
            self.fail(f"expected a memory scope (tl_blk, device or sys), found {self.found()}")

    def optional_hints(self, attrs: dict) -> None:
        if self.accept("optimization_hints"):
            self.expect("=")
            self.ws()
            at = self.pos
            attrs["optimization_hints"] = self.attr(self.hints(), at)

    def op_load_ptr_tko(self, name, loc):
        attrs: dict = {}
        self.memory_attrs(attrs)
        refs = [self.value_name()]
        while self.accept(","):
            refs.append(self.value_name())
        tok = self.token_operand()
        self.optional_hints(attrs)
        self.attr_dict(attrs)
        self.expect(":")
        types = self.type_list()
        self.expect("->")
        rt = self.type_()
        self.expect(",")
        tt = self.type_()
        vals = self.resolve(refs, types)
        groups = {"source": vals[:1], "mask": vals[1:2], "padding_value": vals[2:3], "token": tok}
        return self.make(name, loc, groups, {"result": rt, "result_token": tt}, attrs)

    def op_store_ptr_tko(self, name, loc):
        attrs: dict = {}
        self.memory_attrs(attrs)
        refs = self.operands(2)
        while self.accept(","):
            refs.append(self.value_name())
        tok = self.token_operand()
        self.optional_hints(attrs)
        self.attr_dict(attrs)
        self.expect(":")
        types = self.type_list()
        self.expect("->")
        tt = self.type_()
        vals = self.resolve(refs, types)
        groups = {"destination": vals[0], "value": vals[1], "mask": vals[2:3], "token": tok}
        return self.make(name, loc, groups, {"result_token": tt}, attrs)

    def op_atomic_cas_tko(self, name, loc):
        attrs: dict = {}
        self.memory_attrs(attrs, scope_required=True)
        cas = name == "atomic_cas_tko"
        p = self.value_name()
        self.expect(",")
        if cas:
            refs = [p] + self.operands(2)
        else:
            attrs["mode"] = f'"{self.enum("rmw_mode", "atomic mode")}"'
            self.expect(",")
            refs = [p, self.value_name()]
        mask = []
        if self.accept(","):
            mask = [self.value_name()]
        tok = self.token_operand()
        self.attr_dict(attrs)
        self.expect(":")
        types = self.type_list()
        self.expect("->")
        rt = self.type_()
        self.expect(",")
        tt = self.type_()
        # types: pointers, value [, mask]; cmp has the value's type
        want = [types[0]] + [types[1]] * (len(refs) - 1) + types[2:3]
        vals = self.resolve(refs + mask, want[:len(refs) + len(mask)] if len(types) >= 2 else types)
        keys = ["pointers", "cmp", "val"] if cas else ["pointers", "arg"]
        groups = dict(zip(keys, vals[:len(refs)]))
        groups["mask"] = vals[len(refs):]
        groups["token"] = tok
        return self.make(name, loc, groups, {"result": rt, "result_token": tt}, attrs)

    op_atomic_rmw_tko = op_atomic_cas_tko

    def view_index(self):
        view = self.value_name()
        self.expect("[")
        idx = self.comma_list(self.value_name, "]")
        return view, idx

    def index_types(self, n: int) -> list[str]:
        types = []
        while self.accept(","):
            types.append(self.type_())
        if n and not types:
            self.fail("index types must be specified when indices are present")
        if len(types) == 1:
            types *= n
        if len(types) != n:
            self.fail(f"expected {n} index types, got {len(types)}")
        return types

    def op_load_view_tko(self, name, loc):
        attrs: dict = {}
        self.memory_attrs(attrs)
        view, idx = self.view_index()
        tok = self.token_operand()
        self.optional_hints(attrs)
        self.attr_dict(attrs)
        self.expect(":")
        vt = self.type_()
        its = self.index_types(len(idx))
        self.expect("->")
        rt = self.type_()
        self.expect(",")
        tt = self.type_()
        attrs.setdefault("inbounds", _bools(len(idx)))
        groups = {"view": self.resolve([view], [vt]), "index": self.resolve(idx, its) if idx else [], "token": tok}
        return self.make(name, loc, groups, {"tile": rt, "result_token": tt}, attrs)

    def op_store_view_tko(self, name, loc):
        attrs: dict = {}
        self.memory_attrs(attrs)
        tile = self.value_name()
        self.expect(",")
        view, idx = self.view_index()
        tok = self.token_operand()
        self.optional_hints(attrs)
        self.attr_dict(attrs)
        self.expect(":")
        tt = self.type_()
        self.expect(",")
        vt = self.type_()
        its = self.index_types(len(idx))
        self.expect("->")
        rt = self.type_()
        attrs.setdefault("inbounds", _bools(len(idx)))
        groups = {"tile": self.resolve([tile], [tt]), "view": self.resolve([view], [vt]),
                  "index": self.resolve(idx, its) if idx else [], "token": tok}
        return self.make(name, loc, groups, {"result_token": rt}, attrs)

    def op_atomic_red_view_tko(self, name, loc):
        attrs: dict = {}
        self.memory_attrs(attrs, scope_required=True)
        view, idx = self.view_index()
        self.expect(",")
        attrs["mode"] = f'"{self.enum("rmw_mode", "atomic mode")}"'
        self.expect(",")
        value = self.value_name()
        tok = self.token_operand()
        self.attr_dict(attrs)
        self.expect(":")
        valt = self.type_()
        self.expect(",")
        vt = self.type_()
        its = self.index_types(len(idx))
        self.expect("->")
        rt = self.type_()
        groups = {"view": self.resolve([view], [vt]), "index": self.resolve(idx, its) if idx else [],
                  "value": self.resolve([value], [valt]), "token": tok}
        return self.make(name, loc, groups, {"result_token": rt}, attrs)

    def op_make_tensor_view(self, name, loc):
        base = self.value_name()
        self.expect(",")
        self.expect("shape")
        self.expect("=")
        self.expect("[")

        def item():
            self.ws()
            return self.value_name() if self.text.startswith("%", self.pos) else self.integer()

        shape = self.comma_list(item, "]")
        self.expect(",")
        self.expect("strides")
        self.expect("=")
        self.expect("[")
        strides = self.comma_list(item, "]")
        attrs: dict = {}
        self.attr_dict(attrs)
        self.expect(":")
        self.ws()
        at = self.pos
        dyn = [x for x in shape + strides if isinstance(x, tuple)]
        first = self.type_()
        if first.startswith("!cuda_tile.tensor_view"):
            if dyn:
                self.fail("the type of the dynamic shape / stride values must come first "
                          "(': tile<i32> -> tensor_view<...>')", at)
            idx_t, tv = None, first
        else:
            self.expect("->")
            idx_t, tv = first, self.type_()
        m = re.fullmatch(r"!cuda_tile\.tensor_view<(.+?), array<i64(?:: ([^>]*))?>, array<i64(?:: ([^>]*))?>>", tv)
        if not m:
            self.fail(f"expected a tensor_view result type, got '{_short(tv)}'", at)
        tshape = [int(x) for x in (m.group(2) or "").split(",") if x.strip()]
        tstrides = [int(x) for x in (m.group(3) or "").split(",") if x.strip()]
        for written, typed, what in ((shape, tshape, "shape"), (strides, tstrides, "strides")):
            if len(written) != len(typed):
                self.fail(f"{what} has {len(written)} entries but the tensor_view type has {len(typed)}", at)
            for w, t in zip(written, typed):
                if isinstance(w, tuple) != (t == DYN) or (not isinstance(w, tuple) and w != t):
                    self.fail(f"{what} [{', '.join(_mixed(x) for x in written)}] does not match the tensor_view "
                              f"type '{_short(tv)}' (a value for each '?', the same number elsewhere)", at)
        base_v = self.lookup(*base)
        groups = {"base": base_v,
                  "dynamic_shape": [self.lookup(n, a, idx_t) for n, a in (x for x in shape if isinstance(x, tuple))],
                  "dynamic_strides": [self.lookup(n, a, idx_t)
                                      for n, a in (x for x in strides if isinstance(x, tuple))]}
        return self.make(name, loc, groups, [tv], attrs)

    def op_make_partition_view(self, name, loc):
        ref = self.value_name()
        attrs: dict = {}
        self.attr_dict(attrs)
        self.expect(":")
        self.ws()
        at = self.pos
        vt = self.type_()
        kind = name[len("make_"):]
        if not vt.startswith(f"!cuda_tile.{kind}<"):
            self.fail(f"expected '{kind}' type, but got '{_short(vt)}'", at)
        tv = _inner_tensor_view(vt)
        return self.make(name, loc, {"tensor_view": self.resolve([ref], [tv])}, [vt], attrs)

    op_make_strided_view = op_make_partition_view
    op_make_gather_scatter_view = op_make_partition_view

    def op_get_index_space_shape(self, name, loc):
        ref = self.value_name()
        attrs: dict = {}
        self.attr_dict(attrs)
        self.expect(":")
        vt = self.type_()
        self.expect("->")
        rt = self.type_()
        rank = _view_rank(vt)
        return self.make(name, loc, {"src": self.resolve([ref], [vt])}, {"results": [rt] * rank}, attrs)

    op_get_tensor_shape = op_get_index_space_shape

    # control flow
    def terminator(self, name, loc):
        refs = []
        self.ws()
        if self.text.startswith("%", self.pos):
            refs = [self.value_name()]
            while self.accept(","):
                refs.append(self.value_name())
        attrs: dict = {}
        self.attr_dict(attrs)
        types = []
        if refs:
            self.expect(":")
            types = self.type_list()
        return self.make(name, loc, {"operands": self.resolve(refs, types) if refs else []}, [], attrs)

    op_yield = op_continue = op_break = op_return = terminator

    def op_if(self, name, loc):
        cond = self.use()
        rtypes = []
        if self.accept("->"):
            self.expect("(")
            rtypes = self.comma_list(self.type_, ")")
        op = self.make(name, loc, {"condition": cond}, {"results": rtypes}, {}, regions=2)
        self.region(op.regions[0], [], [], "yield", loc)
        if self.accept("else"):
            self.region(op.regions[1], [], [], "yield", loc)
        else:
            if rtypes:
                self.fail("an 'if' with results needs an 'else' region")
            from tilecore.mlir import ir

            block = op.regions[1].blocks.append()
            with ir.InsertionPoint(block):
                ir.Operation.create("cuda_tile_term.yield", loc=loc)
        extra: dict = {}
        self.attr_dict(extra)
        return op

    def iter_values(self):
        names, inits = [], []
        self.expect("(")
        if not self.accept(")"):
            while True:
                names.append(self.value_name())
                self.expect("=")
                inits.append(self.value_name())
                if self.accept(")"):
                    break
                self.expect(",")
        return names, inits

    def op_for(self, name, loc):
        attrs: dict = {}
        if self.accept("unsigned"):
            attrs["unsigned_cmp"] = "unit"
        iv = self.value_name()
        self.expect("in")
        self.expect("(")
        lb = self.value_name()
        self.expect("to")
        ub = self.value_name()
        self.expect(",")
        self.expect("step")
        st = self.value_name()
        self.expect(")")
        self.expect(":")
        it = self.type_()
        names, inits, types = [], [], []
        if self.accept("iter_values"):
            names, inits = self.iter_values()
            self.expect("->")
            self.expect("(")
            types = self.comma_list(self.type_, ")")
            if len(types) != len(names):
                self.fail(f"{len(names)} iter_values but {len(types)} types")
        lbv, ubv, stv = self.resolve([lb, ub, st], [it])
        op = self.make(name, loc, {"lower_bound": lbv, "upper_bound": ubv, "step": stv,
                                   "init_values": self.resolve(inits, types) if inits else []},
                       {"results": types}, attrs, regions=1)
        self.region(op.regions[0], [iv] + names, [it] + types, "continue", loc)
        self.attr_dict({})
        return op

    def op_loop(self, name, loc):
        names, inits, itypes, rtypes = [], [], [], []
        if self.accept("iter_values"):
            names, inits = self.iter_values()
            self.expect(":")
            itypes = self.type_list()
            if len(itypes) != len(names):
                self.fail(f"found different number of iter_values and types ({len(names)} vs {len(itypes)})")
            if self.accept("->"):
                rtypes = self.type_list()
        elif self.accept(":"):
            rtypes = self.type_list()
        op = self.make(name, loc, {"init_values": self.resolve(inits, itypes) if inits else []},
                       {"results": rtypes}, {}, regions=1)
        self.region(op.regions[0], names, itypes, "continue", loc)
        self.attr_dict({})
        return op

    def op_reduce(self, name, loc):
        refs = [self.value_name()]
        while self.accept(","):
            refs.append(self.value_name())
        attrs: dict = {}
        self.expect("dim")
        self.expect("=")
        attrs["dim"] = f"{self.integer()} : i64"
        if name == "scan":
            self.expect("reverse")
            self.expect("=")
            self.ws()
            at = self.pos
            word = self.ident("true or false")
            if word not in ("true", "false"):
                self.fail(f"expected true or false, found '{word}'", at)
            attrs["reverse"] = word
        self.expect("identities")
        self.expect("=")
        self.ws()
        at = self.pos
        idents = re.sub(r"\b(true|false)\s*:\s*i1\b", r"\1", self.balanced("[", "]"))  # MLIR spells i1 bare
        attrs["identities"] = self.attr("[" + idents + "]", at)
        self.attr_dict(attrs)
        self.expect(":")
        otypes = self.type_list()
        self.expect("->")
        rtypes = self.type_list()
        vals = self.resolve(refs, otypes)
        op = self.make(name, loc, {"operands": vals}, {"results": rtypes}, attrs, regions=1)
        self.expect("(")
        args, atypes = [], []
        if not self.accept(")"):
            while True:
                args.append(self.value_name())
                self.expect(":")
                atypes.append(self.type_())
                if self.accept(")"):
                    break
                self.expect(",")
        self.region(op.regions[0], args, atypes, None, loc)
        return op

    op_scan = op_reduce


# -- helpers ---------------------------------------------------------------------------------------

def _i64s(v) -> str:
    return f"array<i64: {', '.join(map(str, v))}>" if v else "array<i64>"


def _i32s(v) -> str:
    return f"array<i32: {', '.join(map(str, v))}>" if v else "array<i32>"


def _bools(n: int) -> str:
    return f"array<i1: {', '.join(['false'] * n)}>" if n else "array<i1>"


def _mixed(x) -> str:
    return x[0] if isinstance(x, tuple) else str(x)


def _short(t: str) -> str:
    """A readable spelling of an IRDL type for messages (``tile<4x128xf32>``)."""
    from .types import parse_type
    from .verifier import short

    try:
        return short(parse_type(t))
    except Exception:  # noqa: BLE001 - fall back to the text
        return t.replace("!cuda_tile.", "")


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    msg = [ln for ln in text if "error:" in ln]
    return (msg[0].split("error:", 1)[1].strip() if msg else (text[0] if text else type(e).__name__))


def _inner_tensor_view(view: str) -> str:
    i = view.index("!cuda_tile.tensor_view<")
    depth, j = 0, i
    while j < len(view):
        if view[j] == "<":
            depth += 1
        elif view[j] == ">":
            depth -= 1
            if depth == 0:
                return view[i:j + 1]
        j += 1
    return view


def _view_rank(view: str) -> int:
    if view.startswith("!cuda_tile.tensor_view"):
        m = re.search(r"array<i64(?:: ([^>]*))?>", view)
        return len([x for x in (m.group(1) or "").split(",") if x.strip()])
    m = re.match(r"!cuda_tile\.\w+<array<i32(?:: ([^>]*))?>", view)
    return len([x for x in (m.group(1) or "").split(",") if x.strip()]) if m else 0


def _predicate(kind: str, body: str, at: int, p: Parser) -> str:
    parts = [x.strip() for x in body.split(",")] if body.strip() else []
    if kind == "div_by":
        m = re.fullmatch(r"\s*(\d+)\s*(?:,\s*every\s+(\d+)\s+along\s+(\d+)\s*)?", body)
        if not m:
            p.fail(f"invalid div_by<{body}> (expected div_by<N> or div_by<N, every E along D>)", at)
        every = f"{m.group(2)} : i64" if m.group(2) else "unit"
        along = f"{m.group(3)} : i64" if m.group(3) else "unit"
        return f"#cuda_tile.div_by<{m.group(1)} : i64, {every}, {along}>"
    if kind == "bounded":
        if len(parts) != 2 or not all(re.fullmatch(r"-?\d+|\?", x) for x in parts):
            p.fail(f"invalid bounded<{body}> (expected bounded<lb, ub>, each an integer or ?)", at)
        lb, ub = ("unit" if x == "?" else f"{x} : i64" for x in parts)
        return f"#cuda_tile.bounded<{lb}, {ub}>"
    if kind == "same_elements":
        m = re.fullmatch(r"\s*\[([\d,\s]*)\]\s*", body)
        if not m:
            p.fail(f"invalid same_elements<{body}> (expected same_elements<[n, ...]>)", at)
        vals = [x.strip() for x in m.group(1).split(",") if x.strip()]
        return f"#cuda_tile.same_elements<{_i64s(vals)}>"
    p.fail(f"unknown assume predicate attribute: {kind} (expected 'div_by', 'same_elements', or 'bounded')", at)


def _hints_text(body: str) -> str:
    """``sm_90 = {occupancy = 4}`` -> ``#cuda_tile.optimization_hints<{sm_90 = {occupancy = 4 : i32}}>``
    (bare integers are i32, as the bytecode stores them)."""
    body = re.sub(r"(=\s*-?\d+)(?=\s*[,}])", r"\1 : i32", body)
    return f"#cuda_tile.optimization_hints<{{{body}}}>"


def read_cuda_tile_text(data: bytes, path: str, ctx):
    """Parse cuda_tile custom syntax into a verified ``builtin.module`` (an input format reader)."""
    from .verifier import verify_module

    text = data.decode("utf-8", errors="replace")
    p = Parser(text, path or "<input>")
    try:
        module = p.module(ctx)
    except _Fail as e:
        line, col = p.line_col(min(e.pos, len(text)))
        raise TilecoreError(e.message, f"{path or '<input>'}:{line}:{col}") from None
    except RecursionError:
        raise TilecoreError("cuda_tile text nested too deeply", f"{path or '<input>'}:1:1") from None
    verify_module(module)
    return module
