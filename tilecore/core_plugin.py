"""The core's own plugin: stages 7-8 and serialize, and the MLIR input formats.

* ``attach-nvvm-target`` writes exactly one ``#nvvm.target<chip, features, O>``
  on every gpu.module (with libdevice linked when the module calls ``__nv_*``);
* ``translate-debug-info`` gives every ``llvm.func`` a debug scope when ``-g`` /
  ``--lineinfo`` is on, so op locations become ``.loc`` / ``.file`` in the PTX;
* ``serialize`` turns the gpu.module into PTX in-process, then into a cubin
  with ptxas or nvJitLink (``tilecore.assembler``).
"""

from __future__ import annotations

from .conversion import ConversionStats, ConversionTarget, run_native_pipeline
from .errors import TilecoreError
from .hookspecs import hookimpl
from .inputs import CORE_FORMATS
from .mlir import ir
from .stages import Stage


def _gpu_modules(module) -> list:
    return [op for op in module.body.operations if op.operation.name == "gpu.module"]


def _calls_libdevice(gm) -> bool:
    """Whether gpu.module ``gm`` declares a libdevice function (``llvm.func @__nv_*``).

    Functions sit in the module's body; their bodies (thousands of ops on a matmul) are not walked.
    """
    for op in gm.regions[0].blocks[0].operations:
        o = op.operation
        if o.name == "llvm.func" and ir.StringAttr(o.attributes["sym_name"]).value.startswith("__nv_"):
            return True
    return False


# LLVM-dialect ops in a gpu.module from which -O3 runs LLVM at O1 (bench/llvm_opt_level.py): on the corpus'
# matmul_f16 (7,400-9,100 ops) O1 gives the same SASS as O3 on sm_80 / sm_90a / sm_100a (sm_80: one
# instruction fewer) in 35 % less LLVM time (~100 ms a compile); the small kernels (200-1,200 ops) keep O3,
# where O1 costs rownorm_loop_if_f32 sm_90a 3 instructions and saves ~1 ms.
LARGE_MODULE_OPS = 4096


def module_ops(gm) -> int:
    """The ops in the bodies of gpu.module ``gm``'s functions (LLVM-dialect bodies are flat: blocks of
    ops, no nested regions, so the blocks' lengths count them without a walk)."""
    n = 0
    for op in gm.regions[0].blocks[0].operations:
        for region in op.operation.regions:
            for block in region.blocks:
                n += len(block.operations)
    return n


def llvm_opt_level(options, ops: int | None = None) -> int:
    """The LLVM (NVPTX back end) optimisation level: ``--option llvm-opt-level=N`` (0-3), else -O's,
    except that -O3 on a module of at least :data:`LARGE_MODULE_OPS` ``ops`` runs LLVM at O1.

    Only the ``#nvvm.target``'s ``O`` (LLVM's pass pipeline and code generator) follows it; ptxas
    keeps -O (``tilecore.assembler``).
    """
    raw = (options.extra or {}).get("llvm-opt-level")
    if raw is None:
        if options.opt_level == 3 and ops is not None and ops >= LARGE_MODULE_OPS:
            return 1
        return options.opt_level
    if str(raw) not in ("0", "1", "2", "3"):
        raise TilecoreError(f"--option llvm-opt-level={raw}: expected 0, 1, 2 or 3")
    return int(raw)


def nvvm_target_attr(target, options, link: list[str] | None = None) -> ir.Attribute:
    """The ``#nvvm.target`` attribute for a compile target and options."""
    return ir.Attribute.parse(_nvvm_target_text(target, options, link))


def _nvvm_target_text(target, options, link: list[str] | None = None, ops: int | None = None) -> str:
    text = f'#nvvm.target<O = {llvm_opt_level(options, ops)}, chip = "{target.name}", features = "{target.feature_string}"'
    if link:
        text += ", link = [" + ", ".join(f'"{p}"' for p in link) + "]"
    return text + ">"


def attach_nvvm_target(ctx) -> ConversionStats:
    """Stage 7: exactly one ``#nvvm.target`` on each gpu.module.

    Only an attribute parsed from its text changes: the module needs no second verification (``verified``).
    """
    from .serialize import libdevice_path

    mods = _gpu_modules(ctx.module)
    if not mods:
        raise TilecoreError("attach-nvvm-target: the module has no gpu.module to attach a target to",
                            _loc_of(ctx.module))
    for gm in mods:  # checked before anything is written
        _check_kernels(gm)
    with ctx.module.context:
        for gm in mods:
            link = None
            if _calls_libdevice(gm):
                lib = libdevice_path()
                if lib is None:
                    raise TilecoreError("the kernel calls libdevice (__nv_*) but libdevice.10.bc was not "
                                        "found: install nvidia-nvvm")
                link = [lib]
            # Parsed as the whole array: the bindings hand a lone #nvvm.target back as its Python class,
            # which imports mlir.dialects.nvvm (~7 ms of a small kernel's compile that never needs it).
            gm.operation.attributes["targets"] = ir.Attribute.parse(
                f"[{_nvvm_target_text(ctx.target, ctx.options, link, module_ops(gm))}]")
    return ConversionStats(stage="attach-nvvm-target", verified=True)


KERNEL_MARKS = ("nvvm.kernel", "gpu.kernel")


def _check_kernels(gm) -> None:
    """A kernel (``llvm.func`` marked ``nvvm.kernel`` / ``gpu.kernel``) returns nothing: PTX has no return
    value for a ``.entry`` (the NVPTX back end would write one that ptxas rejects)."""
    from .errors import format_location

    for op in gm.regions[0].blocks[0].operations:
        o = op.operation
        if o.name != "llvm.func" or not any(m in o.attributes for m in KERNEL_MARKS):
            continue
        fty = str(ir.TypeAttr(o.attributes["function_type"]).value)
        if not fty.startswith("!llvm.func<void"):
            name = ir.StringAttr(o.attributes["sym_name"]).value
            raise TilecoreError(f"kernel '{name}' must not return values (its type is {fty})",
                                format_location(o.location))


def _loc_of(module) -> str:
    from .errors import format_location

    return format_location(module.operation.location)


def _one_target(op) -> bool:
    attrs = op.attributes
    if "targets" not in attrs:
        return False
    arr = ir.ArrayAttr(attrs["targets"])  # its text, not its element: see attach_nvvm_target
    return len(arr) == 1 and str(arr).startswith("[#nvvm.target")


def attach_legality(target, options) -> ConversionTarget:
    return ConversionTarget("attach-nvvm-target", top_level=True).add_dynamically_legal_op("gpu.module", _one_target)


def translate_debug_info(ctx) -> ConversionStats:
    """Stage 8: attach debug scopes to llvm.funcs when -g / --lineinfo asks for them.

    The module is unchanged, or changed by a pass manager that verified it: ``verified``.
    """
    opts = ctx.options
    done = ConversionStats(stage="translate-debug-info", verified=True)
    if not (opts.debug or opts.lineinfo):
        return done
    kind = "Full" if opts.debug else "LineTablesOnly"
    if _gpu_modules(ctx.module):
        run_native_pipeline(ctx.module.operation, f"ensure-debug-info-scope-on-llvm-func{{emission-kind={kind}}}")
    return done


def serialize(ctx) -> None:
    """Serialize: PTX in-process, then a cubin through ptxas or nvJitLink (unless only PTX is wanted)."""
    from .assembler import nvjitlink, ptx_to_cubin, select
    from .serialize import module_to_ptx, module_to_ptx_and_cubin

    opts = ctx.options
    if opts.emit == "mlir":
        return
    if opts.emit == "llvm":
        from .serialize import module_to_llvm_ir

        ctx.artifacts["llvm"] = module_to_llvm_ir(ctx.module)
        return
    # --option assembler=ptxas|nvjitlink|auto overrides $TILECORE_ASSEMBLER (tilecore.assembler)
    choice = (opts.extra or {}).get("assembler") or None
    if opts.emit == "cubin" and select(ctx.target.ptx_version, choice) == "nvjitlink":
        # nvJitLink runs in-process: in the back end's forked child (see module_to_ptx_and_cubin)
        nvjitlink()  # loaded once per process, before the fork
        ptx, cubins = module_to_ptx_and_cubin(ctx.module, lambda name, text: ptx_to_cubin(
            text, ctx.target.ptxas_arch, opts.opt_level, opts.debug, opts.lineinfo, name=name,
            assembler="nvjitlink"))
    else:
        ptx, cubins = module_to_ptx(ctx.module), None
    ctx.artifacts["ptx"] = ptx
    if opts.emit == "cubin":
        if len(ptx) != 1:
            raise TilecoreError(f"serialize: expected one gpu.module, found {len(ptx)}")
        (name, text), = ptx.items()
        ctx.artifacts["cubin"] = cubins[name] if cubins else ptx_to_cubin(
            text, ctx.target.ptxas_arch, opts.opt_level, opts.debug, opts.lineinfo, name=name, assembler="ptxas")


@hookimpl
def tilecore_register_stages():
    return [
        Stage("attach-nvvm-target", after=("convert-nvgpu-and-gpu-to-nvvm",), legality=attach_legality,
              run=attach_nvvm_target, description="write exactly one #nvvm.target on the gpu.module"),
        Stage("translate-debug-info", after=("attach-nvvm-target",), run=translate_debug_info,
              description="debug scopes on llvm.func for -g / --lineinfo (.loc / .file in PTX)"),
        Stage("serialize", after=("translate-debug-info",), run=serialize,
              description="gpu.module -> PTX (in-process NVPTX) -> cubin (ptxas / nvJitLink)"),
    ]


@hookimpl
def tilecore_register_input_formats():
    return list(CORE_FORMATS)
