"""mobilegen's version: a leaf module, so the modules that print or record it need not import the package root
(whose lazy public API names the pipeline)."""

__version__ = "0.1.0"
