"""Absolute paths as an agent names them, and where keepgui reads them (no Qt, no backend).

An agent's files name absolute paths of the machine it runs on: Codex's session logs and trusted
projects, Gemini CLI's ``projects.json`` and its Auto Memory patches, the memory folder Codex's
prompt names. On this machine every such path is where it is named (:data:`LOCAL`). A source on
another machine is read from a local mirror (:mod:`keepgui.core.remote`), whose :class:`PathMap`
maps both ways, and a backend applies it wherever it reads or prints such a path, so the text it
computes is what the agent on that machine gets. It reaches a backend as ``OpenOptions.paths``.
"""

from __future__ import annotations


class PathMap:
    """This machine's paths: every path is read where it is named (see the module docstring)."""

    def shown(self, path: str) -> str:
        """``path`` (one keepgui reads) as the agent names it."""
        return path

    def local(self, named: str) -> str:
        """Where keepgui reads the absolute path ``named`` an agent's file names."""
        return named

    def include(self, folder: str, names: tuple[str, ...], markers: tuple[str, ...] = ()) -> str:
        """Make the folder ``folder`` (as the agent names it), outside the source, readable here, and
        return where: on another machine, its project — the nearest folder up from it that holds one
        of ``markers``, else itself — is brought over, its files whose names match one of the
        patterns ``names`` (and the markers). Here it is already where it is named."""
        del names, markers
        return self.local(folder)


LOCAL = PathMap()
"""The paths of this machine."""
