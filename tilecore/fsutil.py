"""Output files written atomically (a temporary file in the same folder, then a rename).

Kept apart from :mod:`tilecore.compiler` so that writing a cached artifact imports nothing heavy.
"""

from __future__ import annotations

import os


def write_atomically(path: str, data: bytes | str) -> None:
    """Write ``data`` to ``path`` through a temporary file + rename (no partial outputs)."""
    from .errors import TilecoreError

    mode = "wb" if isinstance(data, bytes) else "w"
    d = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(d, f".{os.path.basename(path)}.tmp{os.getpid()}")
    try:
        with open(tmp, mode) as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise TilecoreError(f"cannot write output: {e.strerror}", path) from None
