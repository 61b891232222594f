"""The Gemini CLI part of keepgui's demo: a home and a project, placed where Gemini CLI would look.

``resources/demo/gemini`` holds a home (``home/.gemini``: settings with Auto Memory on, a global
``GEMINI.md`` with a legacy ``## Gemini Added Memories`` section, the private memory of the launch folder
``webshop/Backend`` — ``MEMORY.md`` and a sibling note) and the project (``project/webshop``: a
``GEMINI.md`` that imports ``docs/conventions.md`` and mentions ``@alice``, which Gemini turns into a
failed import; ``Backend/GEMINI.md``, which sorts before its parent's file; ``Backend/payments/GEMINI.md``,
which loads only later). What depends on where the copy lands is written by :func:`place_demo`: the
repository marker, ``projects.json`` and the ``.project_root`` markers naming the copied launch folder,
``trustedFolders.json`` trusting the repository, and the Auto Memory inbox's two patches (their headers
are absolute paths).
"""

from __future__ import annotations

import json
import os

from keepgui.backends.gemini.layout import GEMINI_DIR, MEMORY_INDEX, PROJECT_ROOT_FILE
from keepgui.core import fsio

SLUG = "backend"
LAUNCH = os.path.join("project", "webshop", "Backend")
PRIVATE_FACT = "- The staging database is reset every Monday at 06:00 UTC; do not run migrations then."
GLOBAL_FACT = "- Prefers pytest's -x flag when a test run is expected to fail early."


def _patch(path: str, lines: list[str], added: str) -> bytes:
    """A one-hunk unified diff appending ``added`` after the last two lines of a file."""
    tail = lines[-2:]
    start = len(lines) - len(tail) + 1
    hunk = [f"@@ -{start},{len(tail)} +{start},{len(tail) + 1} @@", *(" " + t for t in tail), "+" + added]
    return ("\n".join([f"--- {path}", f"+++ {path}", *hunk]) + "\n").encode("utf-8")


def place_demo(folder: str) -> tuple[str, str]:
    """Place a copied demo folder; returns ``(home, launch folder)`` ("", "" when there is no demo)."""
    home = os.path.join(folder, "home")
    gd = os.path.join(home, GEMINI_DIR)
    if not os.path.isdir(gd):
        return "", ""
    launch = os.path.realpath(os.path.join(folder, LAUNCH))
    fsio.make_dirs(os.path.join(os.path.dirname(launch), ".git"))  # the repository's root marker
    mapping = json.dumps({"projects": {launch: SLUG}}, indent=2, ensure_ascii=False)
    fsio.atomic_write(os.path.join(gd, "projects.json"), mapping.encode("utf-8"), expect=fsio.Stamp.missing())
    trusted = json.dumps({os.path.dirname(launch): "TRUST_FOLDER"}, indent=2)  # the person trusted the repository
    fsio.atomic_write(os.path.join(gd, "trustedFolders.json"), trusted.encode("utf-8"), expect=fsio.Stamp.missing())
    for base in ("tmp", "history"):
        fsio.make_dirs(os.path.join(gd, base, SLUG))
        fsio.create_new(os.path.join(gd, base, SLUG, PROJECT_ROOT_FILE), launch.encode("utf-8"))
    memory = os.path.join(gd, "tmp", SLUG, "memory")
    for kind, target, fact in (
        ("private", os.path.join(memory, MEMORY_INDEX), PRIVATE_FACT),
        ("global", os.path.join(gd, "GEMINI.md"), GLOBAL_FACT),
    ):
        data, _stamp = fsio.read_stamped(target)
        lines = (data or b"").decode("utf-8").splitlines()
        inbox = os.path.join(memory, ".inbox", kind)
        fsio.make_dirs(inbox)
        fsio.atomic_write(
            os.path.join(inbox, "extraction.patch"), _patch(target, lines, fact), expect=fsio.Stamp.missing()
        )
    return home, launch
