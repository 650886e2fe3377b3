"""Verifier of cuda_tile modules: IRDL structure plus the type rules users hit first."""

from __future__ import annotations

from tilecore.errors import TilecoreError, mlir_error_to_tilecore


def verify_module(module) -> None:
    """Raise a located TilecoreError for the first violated rule."""
    try:
        module.operation.verify()
    except Exception as e:  # noqa: BLE001 - MLIRError with diagnostics
        raise mlir_error_to_tilecore(e) from None
