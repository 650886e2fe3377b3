"""tilecore plugin nvgpu_nvvm."""
__version__ = "0.1.0"
