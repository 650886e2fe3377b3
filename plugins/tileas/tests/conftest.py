"""tileas tests: make the shared helper modules of this folder (``cutile_kernels``) importable.

The project runs pytest with ``--import-mode=importlib``, which does not put test
folders on ``sys.path``.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
