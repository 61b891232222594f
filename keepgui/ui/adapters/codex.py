"""The Codex preview: the two blocks a session's first request carries, each exactly, each to copy.

The memory block (the developer part that begins ``## Memory`` and, for a V2
root, the parts that continue it — the view marks where Codex splits it) and
the AGENTS.md block (the user part that begins ``# AGENTS.md instructions``),
each under a line with its size; the summary above says why memory is on or
off, which root is active, where the AGENTS.md budget cut falls and what else
a person should know. Copy gives either block byte for byte.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QVBoxLayout, QWidget

from keepgui.backends.codex.context import CodexPreview
from keepgui.backends.codex.text import size_words, utf8_len
from keepgui.ui.adapters.base import Adapter, PreviewView, plain_view

PART_BREAK = "\n┄┄┄┄ (Codex sends the rest in the next content part) ┄┄┄┄\n"


class CodexPreviewView(PreviewView):
    """Both blocks, one after the other, with the V2 part breaks marked."""

    copy_choices = (("The memory block, exactly", "memory"), ("The AGENTS.md block, exactly", "agents_md"))

    def build(self) -> None:
        """One text view of both blocks."""
        self.text = plain_view("What a Codex session is given at its start", self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.text, 1)

    def show_result(self, result: Any) -> None:
        """Each block under its line, the memory block's part breaks marked."""
        if not isinstance(result, CodexPreview):
            self.text.setPlainText(str(result))
            return
        context = result.context
        lines: list[str] = []
        block = context.block
        if block is None:
            lines.append(f"── no memory block: {context.why_no_memory}")
        else:
            lines.append(
                f"── memory block · {size_words(block.size)} · {len(block.parts)} content part(s) · "
                f"{context.root.version.upper()} root {context.root.path}"
            )
            lines.append(PART_BREAK.join(block.parts))
        lines.append("")
        agents = context.agents_md
        if agents is None:
            lines.append("── no AGENTS.md block: no global or project file gives anything")
        else:
            where = context.cwd or "a folder with no AGENTS.md of its own (the global file alone)"
            lines.append(f"── AGENTS.md block · {size_words(utf8_len(agents))} · session in {where}")
            lines.append(agents)
        self.text.setPlainText("\n".join(lines))

    def summary(self, result: Any) -> str:
        """Memory on or off and why, the root, the budget, the notes."""
        if not isinstance(result, CodexPreview):
            return super().summary(result)
        context = result.context
        head = f"Codex {context.codex_version} · memory " + (
            "injected" if context.block is not None else f"not injected ({context.why_no_memory})"
        )
        chain = context.chain
        if context.cwd:
            head += f" · AGENTS.md budget {chain.spent:,} / {chain.budget:,} bytes"
            if chain.cut is not None:
                head += f", cut in {chain.cut.path} at byte {chain.cut.read:,}"
        return head + "\n" + "\n".join(result.notes)

    def injected_text(self, result: Any, what: str) -> str:
        """One block exactly ("" when there is none); ``all`` gives both, as the view shows them."""
        if not isinstance(result, CodexPreview):
            return super().injected_text(result, what)
        if what == "memory":
            return result.context.memory or ""
        if what == "agents_md":
            return result.context.agents_md or ""
        return result.text


class CodexAdapter(Adapter):
    """Codex's view of its preview."""

    kind = "codex"

    def preview_view(self, parent: QWidget) -> PreviewView:
        """The two blocks."""
        return CodexPreviewView(parent)


ADAPTER = CodexAdapter()
