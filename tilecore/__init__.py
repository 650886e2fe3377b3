"""tilecore: an open, extensible compiler from NVIDIA CUDA Tile IR to NVVM, PTX and cubin.

The core is small: plugin manager (:mod:`tilecore.plugins`), conversion driver
(:mod:`tilecore.conversion`), shared LLVM type converter (:mod:`tilecore.typeconv`),
stage scheduler (:mod:`tilecore.stages`), compiler and serializer. Every dialect
family and SM generation is a plugin.
"""

__version__ = "0.1.0"

__all__ = ["CompileJob", "JobResult", "compile_many"]


def __getattr__(name):
    """``tilecore.compile_many`` / ``CompileJob`` / ``JobResult``, imported on first use (no MLIR on
    ``import tilecore``)."""
    if name in __all__:
        from . import batch

        return getattr(batch, name)
    raise AttributeError(f"module 'tilecore' has no attribute {name!r}")
