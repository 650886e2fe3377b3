"""tilecore plugin ``gpu_nvvm``: the gpu dialect to NVVM, and the base targets sm_80 .. sm_90a."""

__version__ = "0.1.0"
