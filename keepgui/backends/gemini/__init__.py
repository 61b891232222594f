"""Gemini CLI's memory (placeholder docstring, rewritten below)."""

CHECKED_VERSION = "0.61.0"
