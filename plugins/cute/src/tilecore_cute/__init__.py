"""tilecore plugin cute."""
__version__ = "0.1.0"
