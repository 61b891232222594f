"""keepgui: see and control what your AI agents remember."""

__version__ = "0.1.0"
