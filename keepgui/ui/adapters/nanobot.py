"""The nanobot preview: the memory-bearing parts of nanobot's system prompt, each with its size.

Each part is labelled with whether nanobot injects it, its size in bytes and an
estimate in tokens; keep.md is shown as its own part (stock nanobot reads it
only when the model opens it); the summary says whether nanobot's own code
rendered it (exact) and what could not be reproduced without it.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QVBoxLayout, QWidget

from keepgui.core.textdiff import elided_lines
from keepgui.ui.adapters.base import Adapter, PreviewView, plain_view

PART_MAX_LINES = 5000
"""A part shows this many lines at most: set into the view on the GUI thread, a keep.md of 100,000 lines
held the window half a second to two. Copy still copies every byte."""


def _head(text: str) -> str:
    """``text``, or its first :data:`PART_MAX_LINES` lines and how many more there are."""
    cut = -1
    for _ in range(PART_MAX_LINES):
        cut = text.find("\n", cut + 1)
        if cut < 0:
            return text
    rest = text.count("\n", cut + 1) + 1
    return text[:cut] + f"\n… {rest:,} more lines (Copy copies them all)"


class NanobotPreviewView(PreviewView):
    """nanobot's prompt parts as one text, part by part."""

    copy_choices = (("Memory-bearing prompt", "prompt"),)

    def build(self) -> None:
        """One text view of the parts."""
        self.section = plain_view("System prompt parts", self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.section, 1)

    def show_result(self, preview: Any) -> None:
        """Every part, its state, size and token estimate, then its text."""
        lines = []
        for part in preview.parts:
            lines.append(f"── {part.label} · {part_state(part)} · {part.size_bytes:,} bytes · ~{part.tokens:,} tokens")
            lines.append(_head(part.text.rstrip("\n")))
            lines.append("")
        # a line of megabytes laid out whole froze the window for minutes: long lines are cut for display
        self.section.setPlainText(elided_lines("\n".join(lines)))

    def clear(self) -> None:
        """Nothing to show."""
        self.section.setPlainText("")

    def summary(self, preview: Any) -> str:
        """Exact or built-in, the injected size, and what could not be reproduced."""
        notes = list(preview.notes) + [f"not reproduced: {n}" for n in preview.not_reproduced]
        mode = f"exact (nanobot {preview.nanobot_version})" if preview.nanobot_version else "built-in rendering"
        return (
            f"nanobot system prompt, memory-bearing parts · {mode} · "
            f"{preview.injected_bytes:,} bytes ≈ {preview.injected_tokens:,} tokens sent\n" + "\n".join(notes)
        )

    def injected_text(self, preview: Any, what: str) -> str:
        """The memory-bearing prompt exactly as nanobot joins its parts."""
        return str(preview.memory_prompt)


def part_state(part: Any) -> str:
    """Whether a part reaches the model, said once ("in the system prompt", "not in the system
    prompt: …"), with what the backend's status adds to it."""
    status = str(part.status or "")
    for word in ("not injected", "injected"):
        if status.startswith(word):
            status = status[len(word) :].lstrip(" :;")
            break
    state = "in the system prompt" if part.injected else "not in the system prompt"
    if not status:
        return state
    return f"{state} {status}" if status.startswith("(") else f"{state}: {status}"


class NanobotAdapter(Adapter):
    """nanobot's view of its preview."""

    kind = "nanobot"

    def preview_view(self, parent: QWidget) -> PreviewView:
        """The prompt parts."""
        return NanobotPreviewView(parent)


ADAPTER = NanobotAdapter()
