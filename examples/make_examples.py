"""Regenerate the bundled TileIR bytecode examples with cuTile Python (no GPU needed).

Usage: python examples/make_examples.py     (needs the test extra: cuda-tile)
Writes examples/<name>.tileirbc for each name in EXAMPLES, using the kernel
definitions of plugins/tileas/tests/cutile_kernels.py.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "plugins", "tileas", "tests"))

from cutile_kernels import export  # noqa: E402

EXAMPLES = ["vadd_f32", "row_softmax_f16"]

if __name__ == "__main__":
    for name in EXAMPLES:
        print(export(name, os.path.join(HERE, f"{name}.tileirbc")))
