"""Errors tilecore reports to users: ``error: <location>: <message>``.

Every failure a user can cause (bad input, an op no plugin lowers, an SM floor)
is a :class:`TilecoreError`. The CLI prints it and exits with status 1; it never
lets a Python traceback escape.
"""

from __future__ import annotations

import contextlib


class TilecoreError(Exception):
    """A user-facing compilation error with an optional source location.

    ``location`` is a plain string (``file:line:col``, ``file:byte offset`` or an
    op location rendered by :func:`format_location`); ``notes`` are extra lines
    printed after the error.
    """

    def __init__(self, message: str, location: str | None = None, notes: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.location = location
        self.notes = list(notes or [])

    def render(self) -> str:
        head = f"error: {self.location}: {self.message}" if self.location else f"error: {self.message}"
        return "\n".join([head] + [f"note: {n}" for n in self.notes])

    def __str__(self) -> str:  # pragma: no cover - convenience
        return self.render()


class PluginError(TilecoreError):
    """A plugin could not be loaded, or returned something malformed from a hook."""


class LoweringError(TilecoreError):
    """A pattern refused an op for a reason the user must see (SM floor, bad operand type ...).

    Raise it from ``Pattern.match`` or ``Pattern.rewrite`` with the op: the driver
    stops, leaves the module unchanged and reports it at the op's location.
    """

    def __init__(self, message: str, op=None, location: str | None = None):
        if location is None and op is not None:
            location = format_location(op.location)
        super().__init__(message, location)


_LIBRARY_FRAME = "/cuda/tile/"  # frames of the cuTile package: a location names the user's line instead


@contextlib.contextmanager
def at_op(op, stage: str = ""):
    """Report what goes wrong while ``op`` is processed at ``op``'s location.

    A :class:`TilecoreError` without a location gets the op's; any other exception (a handler
    that met IR it did not expect: a wrong attribute kind, a missing operand) becomes a
    :class:`LoweringError` at the op, so outside-written MLIR never ends in a traceback.
    """
    try:
        yield
    except TilecoreError as e:
        if not e.location or e.location == "unknown":
            e.location = format_location(op.location)
        raise
    except Exception as e:  # noqa: BLE001 - the point: every failure is reported at the op
        where = f" in stage '{stage}'" if stage else ""
        raise LoweringError(f"cannot handle '{op.name}'{where} (unexpected operands, types or attributes): "
                            f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".rstrip(": "),
                            op) from e


def ops_in(op) -> list:
    """Every op nested in ``op`` (``op`` included), in pre-order: walk first, then work on the list, so
    an error raised for one of them is not wrapped by MLIR's walk callback machinery."""
    from .mlir import ir  # (errors.py is imported by a cache hit: MLIR only when ops are walked)

    out = []

    def visit(o):
        out.append(o.operation if hasattr(o, "operation") else o)
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return out


def format_location(loc) -> str:
    """Render an MLIR location as ``file:line:col`` (falls back to MLIR's own text)."""
    try:
        if loc.is_a_file():
            return f"{loc.filename}:{loc.start_line}:{loc.start_col}"
        if loc.is_a_name():
            inner = format_location(loc.child_loc)
            return inner if inner != "unknown" else loc.name_str
        if loc.is_a_callsite():  # the callee, unless it is cuTile's own code (``x.astype(...)`` calls its stub)
            callee = format_location(loc.callee)
            if _LIBRARY_FRAME in callee.replace("\\", "/"):
                caller = format_location(loc.caller)
                return caller if caller != "unknown" else callee
            return callee
        if loc.is_a_fused():
            for sub in loc.locations:
                text = format_location(sub)
                if text != "unknown":
                    return text
            return "unknown"
    except Exception:  # noqa: BLE001 - any binding quirk falls back to the text form
        pass
    text = str(loc)
    if text.startswith("loc(") and text.endswith(")"):
        text = text[4:-1]
    return text.strip('"') or "unknown"


def mlir_error_to_tilecore(e: Exception, what: str = "", default_location: str | None = None) -> TilecoreError:
    """Turn an ``MLIRError`` (or any exception) into a TilecoreError at the first diagnostic's location.

    ``what`` prefixes the message (``"pass pipeline 'x' failed: "``); locations of
    text parsed from memory (``-:3:4``) take ``default_location``'s file name.
    """
    diags = list(getattr(e, "error_diagnostics", []) or [])
    if not diags:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        return TilecoreError(what + first, default_location)
    rendered = []
    for d in diags:
        loc = format_location(d.location)
        if default_location and (loc == "unknown" or loc.startswith("-:")):
            loc = default_location + (loc[1:] if loc.startswith("-:") else "")
        rendered.append((loc, d.message))
        for n in d.notes:
            rendered.append((format_location(n.location), "note: " + n.message))
    loc, msg = rendered[0]
    return TilecoreError(what + msg, None if loc == "unknown" else loc,
                         notes=[f"{lc}: {m}" for lc, m in rendered[1:]])
