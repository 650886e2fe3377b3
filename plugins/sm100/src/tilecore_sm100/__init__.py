"""tilecore plugin sm100."""
__version__ = "0.1.0"
