"""tilecore plugin tileas."""
__version__ = "0.1.0"
