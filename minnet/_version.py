"""minnet's version (one place: the package and show_config read it)."""
__version__ = "0.1.0"
