"""OpenAI Codex CLI's memory, read and written as Codex itself does (no Qt).

Placeholder while the package is built.
"""

CHECKED_VERSION = "0.169.0"
"""The ``@openai/codex`` version keepgui's rendering was compared with, byte for byte."""
