"""The Auto Memory inbox, applied by keepgui and by Gemini CLI's own code, must leave the same bytes.

Each case prepares a Gemini home with a private memory folder and an inbox twice — one copy for
Gemini, one for keepgui (patch headers are absolute paths, so each copy's name its own files). Gemini's
exported ``listInboxMemoryPatches`` / ``applyInboxMemoryPatch`` (the functions behind ``/memory inbox``,
run in Node from the pinned package) list and apply every kind; keepgui lists its pending writes and
approves them one at a time in its own order, skipping those it says cannot be applied. Then the two
homes must be byte-identical (keepgui's history lives elsewhere; its lock is gone again), and both must
have listed the same targets.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable

import pytest

from keepgui.backends.gemini import inbox as inbox_module
from keepgui.core.errors import KeepguiError
from keepgui.core.history import History
from tests.backends.gemini import gemini_cli
from tests.backends.gemini.trees import put

WORK = os.path.join(gemini_cli.ROOT, "build", "gemini-compare", "inbox")


def _diff(old: str, target: str, body: list[str]) -> str:
    return "\n".join([f"--- {old}", f"+++ {target}", *body]) + "\n"


Case = Callable[[str, str], None]
"""``case(gd, pm)`` writes a Gemini dir's files and its private memory folder's inbox."""


def append(gd: str, pm: str) -> None:
    put(os.path.join(pm, "MEMORY.md"), "# Project Memory\n- one\n- two\n")
    put(
        os.path.join(pm, ".inbox", "private", "extraction.patch"),
        _diff(f"{pm}/MEMORY.md", f"{pm}/MEMORY.md", ["@@ -2,2 +2,3 @@", " - one", " - two", "+- three"]),
    )


def sibling(gd: str, pm: str) -> None:
    put(os.path.join(pm, "MEMORY.md"), "- keep\n- this")  # no final newline
    body = ["@@ -0,0 +1,2 @@", "+# Deploy", "+steps"]
    put(os.path.join(pm, ".inbox", "private", "extraction.patch"), _diff("/dev/null", f"{pm}/deploy_steps-v2.md", body))


def sibling_no_index(gd: str, pm: str) -> None:
    os.makedirs(pm, exist_ok=True)
    put(
        os.path.join(pm, ".inbox", "private", "extraction.patch"),
        _diff("/dev/null", f"{pm}/notes.md", ["@@ -0,0 +1 @@", "+n"]),
    )


def sibling_mentioned(gd: str, pm: str) -> None:
    put(os.path.join(pm, "MEMORY.md"), "- see notes.md\n")
    put(
        os.path.join(pm, ".inbox", "private", "extraction.patch"),
        _diff("/dev/null", f"{pm}/notes.md", ["@@ -0,0 +1 @@", "+n"]),
    )


def global_patch(gd: str, pm: str) -> None:
    put(os.path.join(gd, "GEMINI.md"), "# Prefs\n- tabs\n")
    os.makedirs(pm, exist_ok=True)
    put(
        os.path.join(pm, ".inbox", "global", "extraction.patch"),
        _diff(f"a{gd}/GEMINI.md", f"b{gd}/GEMINI.md", ["@@ -1,2 +1,3 @@", " # Prefs", " - tabs", "+- dark theme"]),
    )


def disallowed(gd: str, pm: str) -> None:
    put(os.path.join(pm, "MEMORY.md"), "- x\n")
    project = os.path.join(os.path.dirname(gd), "proj", "GEMINI.md")
    put(project, "project\n")
    inbox = os.path.join(pm, ".inbox", "private")
    put(os.path.join(inbox, "a-project.patch"), _diff(project, project, ["@@ -1 +1,2 @@", " project", "+no"]))
    put(os.path.join(inbox, "b-dot.patch"), _diff("/dev/null", f"{pm}/.hidden.md", ["@@ -0,0 +1 @@", "+h"]))
    put(os.path.join(inbox, "c-relative.patch"), _diff("MEMORY.md", "MEMORY.md", ["@@ -1 +1,2 @@", " - x", "+- y"]))
    put(os.path.join(inbox, "d-garbage.patch"), "not a patch at all\n")
    put(
        os.path.join(inbox, "e-global-in-private.patch"),
        _diff(f"{gd}/GEMINI.md", f"{gd}/GEMINI.md", ["@@ -0,0 +1 @@", "+g"]),
    )
    put(
        os.path.join(inbox, "f-sub", "ok.patch"),
        _diff(f"{pm}/MEMORY.md", f"{pm}/MEMORY.md", ["@@ -1 +1,2 @@", " - x", "+- z"]),
    )


def does_not_apply(gd: str, pm: str) -> None:
    put(os.path.join(pm, "MEMORY.md"), "- changed since\n")
    body = ["@@ -1 +1,2 @@", " - original", "+- new"]
    put(os.path.join(pm, ".inbox", "private", "extraction.patch"), _diff(f"{pm}/MEMORY.md", f"{pm}/MEMORY.md", body))


def offset_and_hunks(gd: str, pm: str) -> None:
    lines = [f"- line {i}" for i in range(1, 21)]
    put(os.path.join(pm, "MEMORY.md"), "- inserted a\n- inserted b\n" + "\n".join(lines) + "\n")
    body = [
        "@@ -3,2 +3,3 @@",
        " - line 3",
        " - line 4",
        "+- after four",
        "@@ -15,3 +16,2 @@",
        " - line 15",
        "-- line 16",
        " - line 17",
    ]
    put(os.path.join(pm, ".inbox", "private", "extraction.patch"), _diff(f"{pm}/MEMORY.md", f"{pm}/MEMORY.md", body))


def crlf(gd: str, pm: str) -> None:
    put(os.path.join(pm, "MEMORY.md"), b"- one\r\n- two\r\n")
    body = ["@@ -1,2 +1,3 @@", " - one", " - two", "+- three"]
    put(os.path.join(pm, ".inbox", "private", "extraction.patch"), _diff(f"{pm}/MEMORY.md", f"{pm}/MEMORY.md", body))


def no_final_newline(gd: str, pm: str) -> None:
    put(os.path.join(pm, "MEMORY.md"), "- one\n- two")
    body = ["@@ -1,2 +1,3 @@", " - one", "-- two", "\\ No newline at end of file", "+- two", "+- three"]
    put(os.path.join(pm, ".inbox", "private", "extraction.patch"), _diff(f"{pm}/MEMORY.md", f"{pm}/MEMORY.md", body))


def new_file_exists(gd: str, pm: str) -> None:
    put(os.path.join(pm, "MEMORY.md"), "- x\n")
    put(os.path.join(pm, "notes.md"), "already\n")
    put(
        os.path.join(pm, ".inbox", "private", "extraction.patch"),
        _diff("/dev/null", f"{pm}/notes.md", ["@@ -0,0 +1 @@", "+n"]),
    )


def two_patches(gd: str, pm: str) -> None:
    put(os.path.join(pm, "MEMORY.md"), "- a\n")
    inbox = os.path.join(pm, ".inbox", "private")
    put(os.path.join(inbox, "1.patch"), _diff(f"{pm}/MEMORY.md", f"{pm}/MEMORY.md", ["@@ -1 +1,2 @@", " - a", "+- b"]))
    put(
        os.path.join(inbox, "2.patch"),
        _diff(f"{pm}/MEMORY.md", f"{pm}/MEMORY.md", ["@@ -1,2 +1,3 @@", " - a", " - b", "+- c"]),
    )
    body = ["@@ -0,0 +1 @@", "+x"]
    put(
        os.path.join(inbox, "3.patch"),
        _diff("/dev/null", f"{pm}/x.md", body)
        + _diff(f"{pm}/MEMORY.md", f"{pm}/MEMORY.md", ["@@ -3 +3,2 @@", " - c", "+- d"]),
    )


def unicode_bom(gd: str, pm: str) -> None:
    put(os.path.join(pm, "MEMORY.md"), "\ufeff- café ☕\n- 日本語\n")
    body = ["@@ -1,2 +1,3 @@", " \ufeff- café ☕", " - 日本語", "+- naïve ✓"]
    put(os.path.join(pm, ".inbox", "private", "extraction.patch"), _diff(f"{pm}/MEMORY.md", f"{pm}/MEMORY.md", body))


CASES: dict[str, Case] = {
    "append": append,
    "sibling": sibling,
    "sibling-no-index": sibling_no_index,
    "sibling-mentioned": sibling_mentioned,
    "global": global_patch,
    "disallowed": disallowed,
    "does-not-apply": does_not_apply,
    "offset-and-hunks": offset_and_hunks,
    "crlf": crlf,
    "no-final-newline": no_final_newline,
    "new-file-exists": new_file_exists,
    "two-patches": two_patches,
    "unicode-bom": unicode_bom,
}


def tree(root: str) -> dict[str, bytes]:
    """Every file under ``root`` by its relative path (keepgui's own lock file is never left behind)."""
    out = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, root)] = fh.read()
    return out


@pytest.fixture(scope="module")
def oracle() -> tuple[str, list[dict]]:
    """Every case built twice, and Gemini's own inbox run on its copies (one Node process)."""
    try:
        gemini_cli.ensure_cli()
        gemini_cli.core_bundle()
    except gemini_cli.Unavailable as exc:
        pytest.skip(str(exc))
    shutil.rmtree(WORK, ignore_errors=True)
    specs = []
    for name, build in CASES.items():
        for side in ("gemini", "keepgui"):
            gd = os.path.join(WORK, name, side, ".gemini")
            pm = os.path.join(gd, "tmp", "p", "memory")
            os.makedirs(gd)
            build(gd, pm)
        specs.append(
            {
                "home": os.path.join(WORK, name, "gemini"),
                "pm": os.path.join(WORK, name, "gemini", ".gemini", "tmp", "p", "memory"),
            }
        )
    return WORK, gemini_cli.inbox_oracle(specs, WORK)


@pytest.mark.parametrize("name", list(CASES))
def test_keepgui_applies_the_inbox_as_gemini_does(oracle, name, tmp_path):
    work, results = oracle
    real = results[list(CASES).index(name)]
    home = os.path.join(work, name, "keepgui")
    gd = os.path.join(home, ".gemini")
    inbox = inbox_module.Inbox(
        os.path.join(gd, "tmp", "p", "memory"), os.path.join(gd, "GEMINI.md"), History(str(tmp_path))
    )
    listed = sorted((p.kind, head) for p in inbox.proposals() for head in p.heads)
    theirs = sorted(
        (g["kind"], t.replace(os.path.join(work, name, "gemini"), home)) for g in real["listed"] for t in g["targets"]
    )
    assert listed == theirs
    applied = []
    for proposal in inbox.proposals():
        try:
            inbox_module.guarded(inbox, lambda p=proposal: inbox_module.approve(inbox, [p.id], "approve"))
            applied.append(proposal.id)
        except KeepguiError:
            continue
    ours = tree(home)
    theirs_at, ours_at = os.path.join(work, name, "gemini"), home
    gemini = {  # a pointer names its note by its real path (build/ may be a link)
        k: v.replace(os.path.realpath(theirs_at).encode(), os.path.realpath(ours_at).encode()).replace(
            theirs_at.encode(), ours_at.encode()
        )
        for k, v in tree(theirs_at).items()
    }
    assert ours == gemini, json.dumps({"applied by keepgui": applied, "gemini said": real["applied"]}, indent=1)
