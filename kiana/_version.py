"""kiana's version, in a module of its own so that any module may import it without
importing the package's public API (``kiana/__init__.py``) and its lazy names."""

__version__ = "0.1.0"
