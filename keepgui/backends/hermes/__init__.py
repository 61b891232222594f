"""Hermes Agent's memory, read and written as Hermes itself does (no Qt).

placeholder docstring, rewritten below
"""

CHECKED_VERSION = "0.19.0"
"""The hermes-agent version keepgui's rendering, parser and writes were compared with."""
