"""Kernel outputs against the numpy model, under dtype-aware tolerances.

A check (``CHECKS`` of a generated program) is ``("exact", dtype)`` — integers, bools and float
values the model reproduces bit for bit (``-0.0 == 0.0``, NaN equals NaN) — or
``("approx", dtype, floor, nred, nops, rtol)``: every element must satisfy

    |got - want| <= k * (|want| + max(1, floor)) * (1 + log2(nred)),   k = 3 * rtol * (2 + nops)

where ``rtol`` is the type's one-op relative error (``dtypes``), or more where the value went
through a less precise type (tf32 inputs, a cast from f16); ``floor`` the magnitude bound of the
value's operands where sums may cancel (adds / subtracts of inexact values, reductions), else 1; ``nred`` its accumulation length (reductions, scans,
mma K, loop trips: a tree or chunked sum in another order is off by about log2(n) roundings of its
partial sums); ``nops`` the inexact ops behind it. Non-finite values must agree exactly.

``("dot", dtype, nterms)`` is the check of a sum of ``nterms`` exact products (``ct.mma_scaled``: every
product of its narrow formats is exact in f32) computed in f32 in any order and grouping (an FMA chain,
a tensor core's exactly rounded partial sums, K tiles added to the accumulator): each of the at most
``nterms`` roundings errs by at most u = 2**-24 of a partial sum, and every partial sum is at most
``A = sum(|terms|)`` (times 1 + the errors so far), so

    |got - want| <= gamma * A,   gamma = nterms * u / (1 - nterms * u)

(the model's ``want`` is the exact sum; the output's own rounding to f32 is one of the ``nterms``). The
model returns ``A`` per element as ``<name>_abs`` (:func:`npsem.mma_scaled` of the magnitudes). Where
``A`` is 0 every term is 0 and so must the result be.
"""

from __future__ import annotations

import numpy as np

from . import npsem
from .dtypes import DTYPES


def mismatches(outputs: dict, reference: dict, checks: dict) -> list[str]:
    """One line per output that does not match (empty: all match). ``outputs`` are the arrays as
    the kernel left them (storage types), ``reference`` the model's values."""
    bad = []
    for name, want in reference.items():
        check = checks.get(name)
        if check is None:
            continue
        dt = check[1]
        got = npsem.decode(np.asarray(outputs[name]), dt)
        want = np.asarray(want)
        if got.shape != want.shape:
            bad.append(f"{name}: shape {got.shape} != {want.shape}")
            continue
        if DTYPES[dt].is_float:
            g, w = got.astype(np.float64), want.astype(np.float64)
            both_nan = np.isnan(g) & np.isnan(w)
            if check[0] == "dot":
                nu = check[2] * 2.0**-24
                tol = nu / (1 - nu) * np.asarray(reference[name + "_abs"], np.float64)
                with np.errstate(invalid="ignore"):
                    ok = np.where(np.isfinite(w), np.abs(g - w) <= tol, (g == w) | both_nan)
            elif check[0] == "exact":
                ok = (g == w) | both_nan
            else:
                _, _, floor, nred, nops, rtol = check
                k = 3 * max(rtol, DTYPES[dt].rtol) * (2 + nops)
                with np.errstate(invalid="ignore"):
                    tol = k * (np.abs(w) + max(1.0, floor)) * (1 + np.log2(max(1, nred)))
                    finite = np.isfinite(g) & np.isfinite(w)
                    ok = np.where(finite, np.abs(g - w) <= tol, (g == w) | both_nan)
        else:
            ok = got == want
        if not ok.all():
            pos = tuple(int(i) for i in np.argwhere(~ok)[0])
            bad.append(f"{name}: {int((~ok).sum())}/{ok.size} elements differ, first at {pos}: "
                       f"got {got[pos]!r} want {want[pos]!r}")
    return bad
