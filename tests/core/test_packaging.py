"""The wheel: built from a clean copy of the source, quietly, with every resource file in it (#16.2).

The first ``make`` printed ~450 lines of setuptools' "Package would be ignored" warnings: with
``include-package-data`` the manifest took every folder of ``resources/`` for a package left out.
Here the real build backend builds a wheel, offline, from a copy of what ``pip install .`` reads,
and the build's verbose log must hold no setuptools warning.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import version

import pytest

from tests.conftest import ROOT

SETUPTOOLS_WARNING = re.compile(r"would be ignored|SetuptoolsDeprecationWarning|SetuptoolsWarning|BuildBackendWarning")


def _setuptools_new_enough() -> bool:
    try:
        return int(version("setuptools").split(".")[0]) >= 77
    except (ValueError, LookupError):
        return False


@pytest.mark.skipif(
    not _setuptools_new_enough(), reason="needs setuptools>=77, the build backend (make venv installs it)"
)
def test_the_wheel_builds_without_setuptools_warnings_and_ships_every_resource(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy2(os.path.join(ROOT, name), source / name)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("keepgui", "resources"):
        shutil.copytree(os.path.join(ROOT, folder), source / folder, ignore=skip)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-v", "."]
        + ["-w", str(tmp_path / "dist")],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    warnings = [line.strip() for line in log.splitlines() if SETUPTOOLS_WARNING.search(line)]
    assert warnings == []
    (wheel,) = (tmp_path / "dist").glob("keepgui-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = {
            n.removeprefix("keepgui/resources/") for n in archive.namelist() if n.startswith("keepgui/resources/")
        }
    wanted = {
        os.path.relpath(os.path.join(folder, name), source / "resources")
        for folder, _dirs, files in os.walk(source / "resources")
        for name in files
    }
    assert wanted and wanted <= shipped, sorted(wanted - shipped)[:10]
