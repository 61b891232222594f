"""The Hermes preview: the memory part of the next new session's prompt, exactly, each file's meter and
the two counts, and the stored sessions a resume replays with the memory changes they will not see.

Copy gives the memory part alone, character for character (what ``keepgui context --agent hermes
--json`` calls ``memory_prompt``).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QVBoxLayout, QWidget

from keepgui.ui.adapters.base import Adapter, PreviewView, plain_view


class HermesPreviewView(PreviewView):
    """The memory part, then the resumed sessions and their unseen changes."""

    copy_choices = (("The memory part of the prompt, exactly", "memory"),)

    def build(self) -> None:
        """One text view."""
        self.section = plain_view("Hermes's memory blocks and resumed sessions", self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.section, 1)

    def show_result(self, context: Any) -> None:
        """The memory part, then each stored session and what it will not see."""
        prompt = context.prompt
        lines = ["── a new session is given, exactly:" if prompt.text is not None else "── no memory block:"]
        lines.append(prompt.text if prompt.text is not None else "\n".join(prompt.reasons))
        for resumed in context.resumed:
            s = resumed.session
            lines.append("")
            if resumed.rebuilds:
                lines.append(f"── resumed session {s.id} ({s.source}) has no stored prompt: it rebuilds from the files")
            elif resumed.same:
                lines.append(f"── resumed session {s.id} ({s.source}): the same memory as a new session")
            else:
                lines.append(f"── resumed session {s.id} ({s.source}): memory changes this session will not see")
                lines.append(resumed.diff.rstrip("\n"))
        if context.resumed_problem:
            lines.append(f"\nstate.db: {context.resumed_problem}")
        self.section.setPlainText("\n".join(lines))

    def clear(self) -> None:
        """Nothing to show."""
        self.section.setPlainText("")

    def summary(self, context: Any) -> str:
        """Both files' meters and counts, and the settings that matter."""
        parts = []
        for state in context.prompt.states.values():
            blocked = f", {len(state.blocked)} blocked" if state.blocked else ""
            parts.append(f"{state.name} {state.meter()} (header {state.header_count:,}{blocked})")
        n = len(context.resumed)
        behind = sum(1 for r in context.resumed if not r.rebuilds and not r.same)
        stored = f"{n} stored session{'' if n == 1 else 's'}"
        parts.append(stored + (f" ({behind} resumed would not see memory changes: below)" if behind else ""))
        return "what the next new Hermes session sees · " + " · ".join(parts)

    def injected_text(self, context: Any, what: str) -> str:
        """The memory part exactly ("" when there is none)."""
        return context.prompt.text or ""


class HermesAdapter(Adapter):
    """Hermes Agent's window part: its preview."""

    kind = "hermes"

    def preview_view(self, parent: QWidget) -> PreviewView:
        """The memory part and the resumed sessions."""
        return HermesPreviewView(parent)


ADAPTER = HermesAdapter()
