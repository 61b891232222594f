"""Absolute paths as an agent names them, and where keepgui reads them (no Qt, no backend).

An agent's files name absolute paths of the machine it runs on: Codex's session logs and trusted
projects, Gemini CLI's ``projects.json`` and its Auto Memory patches, the memory folder Codex's
prompt names. On this machine every such path is where it is named (:data:`LOCAL`). A source on
another machine is read from a local mirror (:mod:`keepgui.core.remote`), whose :class:`PathMap`
maps both ways, and a backend applies it wherever it reads or prints such a path, so the text it
computes is what the agent on that machine gets. It reaches a backend as ``OpenOptions.paths``.
"""

from __future__ import annotations

import os


class PathMap:
    """This machine's paths: every path is read where it is named (see the module docstring)."""

    def shown(self, path: str) -> str:
        """``path`` (one keepgui reads) as the agent names it."""
        return path

    def local(self, named: str) -> str:
        """Where keepgui reads the absolute path ``named`` an agent's file names."""
        return named

    def resolved(self, real: str) -> str:
        """The real path ``real`` found here (links followed) as the agent's machine resolves it, read here:
        here, itself; in a copy of the machine's files, a link the copy made to the machine's own file (a
        folder it did not copy) stands for the copy's."""
        return real

    def include(self, folder: str, names: tuple[str, ...], markers: tuple[str, ...] = ()) -> str:
        """Make the folder ``folder`` (as the agent names it), outside the source, readable here, and
        return where: on another machine, its project — the nearest folder up from it that holds one
        of ``markers``, else itself — is brought over, its files whose names match one of the
        patterns ``names`` (and the markers). Here it is already where it is named."""
        del names, markers
        return self.local(folder)


LOCAL = PathMap()
"""The paths of this machine."""


class RootedPaths(PathMap):
    """The paths of this machine repeated below a folder ``root``: ``/p`` is read at ``<root>/p`` (a copy of
    the machine's files as they were, :mod:`keepgui.core.timetravel`), and named ``/p``."""

    def __init__(self, root: str) -> None:
        self.roots = tuple(dict.fromkeys(r.rstrip(os.sep) for r in (os.path.abspath(root), os.path.realpath(root))))

    def shown(self, path: str) -> str:
        """A path below the root as the machine names it (any other path as it is)."""
        full = os.path.abspath(path)
        for root in self.roots:
            if full == root:
                return os.sep
            if full.startswith(root + os.sep):
                return full[len(root) :]
        return path

    def local(self, named: str) -> str:
        """Where the copy holds the absolute path ``named`` (a relative one, or one already in the copy, as it is)."""
        if not os.path.isabs(named) or self.shown(named) != named:
            return named
        return os.path.join(self.roots[0], os.path.normpath(named).lstrip(os.sep))

    def resolved(self, real: str) -> str:
        """A real path outside the copy (reached through a link the copy made) is the copy's own."""
        return self.local(real)
