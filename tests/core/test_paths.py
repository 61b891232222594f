"""keepgui's own folders."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from keepgui.core import paths


@pytest.mark.skipif(os.name != "posix" or sys.platform == "darwin", reason="XDG_RUNTIME_DIR is a freedesktop setting")
def test_no_runtime_dir_falls_back_to_a_private_folder_without_a_warning(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "KEEPGUI_HOME", "XDG_CACHE_HOME")}
    env["HOME"] = str(tmp_path)
    code = "import warnings; warnings.simplefilter('error'); from keepgui.core import paths; print(paths.app_runtime_dir())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout.strip() == str(tmp_path / ".cache" / "keepgui" / "run")


def test_keepgui_home_moves_every_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("KEEPGUI_HOME", str(tmp_path))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    assert paths.app_runtime_dir() == str(tmp_path / "run")
    assert paths.app_data_dir() == str(tmp_path / "data")


def test_elide_middle_keeps_both_ends_within_the_limit():
    text = "nanobot · /tmp/pytest-of-root/pytest-207/test_the_views_render0/keepgui-demo-27bcvl1a/nanobot"
    short = paths.elide_middle(text, 48)
    assert len(short) == 48 and short.startswith("nanobot · /tmp/") and short.endswith("a/nanobot") and "…" in short
    assert paths.elide_middle(text) == text and paths.elide_middle("short", 48) == "short"
    assert paths.short_path("/srv/" + "x" * 100, 20) == paths.elide_middle("/srv/" + "x" * 100, 20)
