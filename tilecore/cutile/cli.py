"""``tilecore run FILE.py::KERNEL --grid X[,Y,Z] --arg a.npy --arg 3 --const TILE=128 [--device cuda]``.

The Python file is imported, ``KERNEL`` must be a ``@ct.kernel`` in it. ``--arg`` gives the
arrays (``.npy``) and scalars of the non-constant parameters in order, ``--const NAME=VALUE`` each
``ct.Constant`` parameter by name. The kernel runs through :func:`tilecore.cutile.launch`: in the
CPU emulator (in a child process unless ``--no-isolate``) or, with ``--device cuda``, on the GPU
(arrays copied there with CuPy or PyTorch and back). Every array argument is written back as
``.npy`` under ``--out-dir``; device printf goes to stdout.
"""

from __future__ import annotations

import importlib.util
import os
import sys

from ..errors import TilecoreError


def is_cutile_input(text: str) -> bool:
    """True for ``FILE.py::KERNEL`` (or a ``.py`` file) inputs of ``tilecore run``."""
    return "::" in text or text.endswith(".py")


def load_kernel(path: str, name: str):
    """The ``@ct.kernel`` ``name`` defined by the Python file ``path`` (imported as a fresh module)."""
    import cuda.tile as ct

    if not os.path.isfile(path):
        raise TilecoreError("no such Python file", path)
    mod_name = "tilecore_run_" + "".join(c if c.isalnum() else "_" for c in os.path.abspath(path))
    spec = importlib.util.spec_from_file_location(mod_name, path)
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 - the user's file: report where it failed
        tb = e.__traceback__
        line = None
        while tb is not None:
            if os.path.abspath(tb.tb_frame.f_code.co_filename) == os.path.abspath(path):
                line = tb.tb_lineno
            tb = tb.tb_next
        raise TilecoreError(f"importing the file failed: {type(e).__name__}: {e}",
                            f"{path}:{line}" if line else path) from None
    finally:
        sys.path.remove(folder)
    kernels = sorted(k for k, v in vars(module).items() if isinstance(v, ct.kernel))
    obj = getattr(module, name, None)
    if not isinstance(obj, ct.kernel):
        what = "is not a @ct.kernel" if obj is not None else "is not defined"
        raise TilecoreError(f"'{name}' {what} (kernels in the file: {', '.join(kernels) or 'none'})", path)
    return obj


def parse_consts(items: list[str]) -> dict:
    """``["TILE=128", "EPS=1e-5", "FLAG=True", "SHAPE=(32,16)"]`` -> {"TILE": 128, "EPS": 1e-05, "FLAG": True,
    "SHAPE": (32, 16)}."""
    out = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise TilecoreError(f"--const must be NAME=VALUE, got '{item}'")
        if text in ("True", "False"):
            out[key] = text == "True"
            continue
        if text.startswith("("):  # a tuple constant (a tile shape): --const SHAPE=(32,16)
            import ast

            try:
                out[key] = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                out[key] = None
            if not isinstance(out[key], tuple):
                raise TilecoreError(f"--const {key}: '{text}' is not a tuple of ints, floats, True or False")
            continue
        try:
            out[key] = int(text, 0)
        except ValueError:
            try:
                out[key] = float(text)
            except ValueError:
                raise TilecoreError(f"--const {key}: '{text}' is not an int, a float, True or False") from None
    return out


def _to_device(a):
    """A CUDA copy of numpy array ``a`` (CuPy, else PyTorch) and the function bringing it back to numpy."""
    try:
        import cupy

        return cupy.asarray(a), cupy.asnumpy
    except ImportError:
        pass
    try:
        import torch

        return torch.from_numpy(a).cuda(), lambda t: t.cpu().numpy()
    except ImportError:
        raise TilecoreError("--device cuda needs CuPy or PyTorch to hold the arrays on the GPU") from None


def run_command(args) -> int:
    """Body of ``tilecore run FILE.py::KERNEL`` (see the module docstring)."""
    import numpy as np

    from ..emulate.cli import parse_arg, parse_dims, write_outputs
    from . import launch
    from .specialize import parameters

    path, _, name = args.input.rpartition("::") if "::" in args.input else (args.input, "", "")
    name = name or args.kernel
    if not name:
        raise TilecoreError("name the kernel: FILE.py::KERNEL (or --kernel KERNEL)", path)
    if args.block != "1":
        raise TilecoreError("--block does not apply to cuTile kernels: the compiled kernel states its threads per "
                            "CTA")
    kernel = load_kernel(path, name)
    params = parameters(kernel)
    consts = parse_consts(args.const)
    for key in consts:
        p = next((p for p in params if p.name == key), None)
        if p is None or not p.constant:
            raise TilecoreError(f"--const {key}: kernel '{name}' has no ct.Constant parameter '{key}' (constants: "
                                f"{', '.join(p.name for p in params if p.constant) or 'none'})")
    runtime = [p for p in params if not p.constant]
    if len(args.arg) != len(runtime):
        raise TilecoreError(f"kernel '{name}' takes {len(runtime)} --arg ({', '.join(p.name for p in runtime)}), "
                            f"got {len(args.arg)}")
    parsed = iter(parse_arg(a, i) for i, a in enumerate(args.arg))
    values = []
    for p in params:
        if p.constant and p.name not in consts:
            raise TilecoreError(f"kernel '{name}' needs --const {p.name}=VALUE")
        values.append(consts[p.name] if p.constant else next(parsed))
    grid = parse_dims(args.grid, "grid")
    host = {i: v for i, v in enumerate(v for p, v in zip(params, values) if not p.constant)
            if isinstance(v, np.ndarray)}
    if args.device == "cuda":
        from .gpu import device

        device(0)  # no cuda-core / no GPU: say so before looking for CuPy or PyTorch
        back = {}
        for k, v in enumerate(values):
            if isinstance(v, np.ndarray):
                values[k], back[k] = _to_device(v)
        launch(None, grid, kernel, values, gpu_name=args.gpu_name, device="cuda")
        runtime_pos = [k for k, p in enumerate(params) if not p.constant]
        host = {i: back[k](values[k]) for i, k in enumerate(runtime_pos) if k in back}
    else:
        launch(None, grid, kernel, values, gpu_name=args.gpu_name, device="cpu",
               isolate=not getattr(args, "no_isolate", False))
    written = write_outputs(args.arg, host, args.out_dir)
    print(f"tilecore: ran {name} on grid {grid} ({args.device}); wrote {', '.join(written) or 'nothing'}",
          file=sys.stderr)
    return 0
