"""tilecore: an open, extensible compiler from NVIDIA CUDA Tile IR to NVVM, PTX and cubin.

The core is small: plugin manager (:mod:`tilecore.plugins`), conversion driver
(:mod:`tilecore.conversion`), shared LLVM type converter (:mod:`tilecore.typeconv`),
stage scheduler (:mod:`tilecore.stages`), compiler and serializer. Every dialect
family and SM generation is a plugin.
"""

__version__ = "0.1.0"
