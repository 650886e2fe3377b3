"""``tilecore run FILE --kernel K --grid X[,Y,Z] --block X[,Y,Z] --arg a.npy --arg 3 ...``.

FILE is a lowered ``.mlir`` module (llvm + nvvm in a gpu.module), a gpu-dialect
module (compiled through the installed stages for ``--gpu-name``, stopping
before serialize) or a TileIR bytecode file (compiled the same way). Outputs
(every array argument after the run) are written as ``<name>.npy`` under
``--out-dir``; device printf text goes to stdout. The launch runs in a child process
(:mod:`.isolate`) unless ``--no-isolate``: a kernel that crashes the emulator is an error with
exit status 1, never a signal of ``tilecore`` itself.
"""

from __future__ import annotations

import os
import sys

from ..errors import TilecoreError


def parse_dims(text: str, what: str) -> tuple[int, ...]:
    """``"8,2"`` -> (8, 2): 1 to 3 positive sizes (``what`` names the option in the error)."""
    try:
        vals = tuple(int(v) for v in text.split(","))
    except ValueError:
        vals = ()
    if not 1 <= len(vals) <= 3 or any(v < 1 for v in vals):
        raise TilecoreError(f"--{what} must be 1 to 3 positive integers separated by commas, got '{text}'")
    return vals


def parse_arg(text: str, i: int):
    """Argument ``i`` of the command line: a ``.npy`` file (an array), an int or a float."""
    import numpy as np

    if text.endswith(".npy"):
        try:
            return np.load(text, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise TilecoreError(f"cannot read argument {i}: {e}", text) from None
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise TilecoreError(f"argument {i} '{text}' is neither a .npy file nor a number") from None


def _needs_compile(module) -> bool:
    """True unless the module already is llvm + nvvm inside its gpu.module(s)."""
    for op in module.body.operations:
        if op.operation.name == "gpu.module":
            return any(not o.operation.name.startswith("llvm.") for o in op.regions[0].blocks[0].operations)
    return any(not o.operation.name.startswith("llvm.") for o in module.body.operations)


def load_module(path: str, gpu_name: str, pm):
    """Read ``path``; compile it through the installed stages (up to serialize) unless already lowered."""
    from ..compiler import compile_module, read_input
    from ..options import CompileOptions
    from ..stages import StageScheduler
    from ..targets import resolve_target

    module, _ = read_input(path, pm)
    if not _needs_compile(module):
        return module
    names = StageScheduler(pm).names()
    last = [n for n in names if n != "serialize"]
    if not last:
        raise TilecoreError("no installed stage can lower this input for the emulator", path)
    target = resolve_target(gpu_name, pm.targets())
    compile_module(module, target, CompileOptions(emit="mlir"), pm, stop_after=last[-1])
    return module


def write_outputs(texts: list[str], arrays: dict, out_dir: str) -> list[str]:
    """Write ``arrays`` (argument position -> array after the launch) as ``.npy`` files under ``out_dir``,
    named after the argument's file (``NAME.out.npy`` where that would overwrite it; ``arg<i>.npy`` for an
    array that was not a file); returns the paths written."""
    import io

    import numpy as np

    from ..compiler import write_atomically

    os.makedirs(out_dir, exist_ok=True)
    written = []
    for i, array in sorted(arrays.items()):
        text = texts[i]
        name = os.path.basename(text) if text.endswith(".npy") else f"arg{i}.npy"
        out = os.path.join(out_dir, name)
        if os.path.abspath(out) == os.path.abspath(text):
            out = out[:-4] + ".out.npy"
        buf = io.BytesIO()
        np.save(buf, array)
        write_atomically(out, buf.getvalue())
        written.append(out)
    return written


def run_command(args, pm) -> int:
    """Body of ``tilecore run`` (see the module docstring)."""
    import numpy as np

    from . import launch

    grid, block = parse_dims(args.grid, "grid"), parse_dims(args.block, "block")
    values = [parse_arg(a, i) for i, a in enumerate(args.arg)]
    module = load_module(args.input, args.gpu_name, pm)
    result = launch(module, args.kernel, grid, block, values, shared_bytes=args.shared,
                    check_bounds=not getattr(args, "no_bounds_check", False),
                    isolate=not getattr(args, "no_isolate", False))
    sys.stdout.write(result.printf)
    outputs = iter(result.outputs)
    written = write_outputs(args.arg, {i: next(outputs) for i, v in enumerate(values) if isinstance(v, np.ndarray)},
                            args.out_dir)
    print(f"tilecore: ran {args.kernel} on grid {grid} x block {block}; wrote {', '.join(written) or 'nothing'}",
          file=sys.stderr)
    return 0
