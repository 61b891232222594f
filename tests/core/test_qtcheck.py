"""``make run`` checks Qt's xcb platform plugin first and prints the one command that fixes it (#16.1).

On Debian 12 with Xvfb, Qt named xcb-cursor0 (present) while libxcb-icccm4 and libxcb-keysyms1
were missing, and aborted.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from keepgui import qtcheck
from tests.reliability.common import ROOT

LDD_DEBIAN_12 = """\
\tlinux-vdso.so.1 (0x00007ffd2f9e5000)
\tlibxkbcommon-x11.so.0 => /lib/x86_64-linux-gnu/libxkbcommon-x11.so.0 (0x00007f0c1c2f1000)
\tlibxcb-cursor.so.0 => /lib/x86_64-linux-gnu/libxcb-cursor.so.0 (0x00007f0c1c2ea000)
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms.so.1 => not found
\tlibxcb-icccm.so.4 => not found
\tlibxcb.so.1 => /lib/x86_64-linux-gnu/libxcb.so.1 (0x00007f0c1bd9b000)
"""

DEBIAN_12 = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n'
UBUNTU = 'NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="24.04"\n'
FEDORA = 'NAME="Fedora Linux"\nVERSION="41 (Workstation Edition)"\nID=fedora\n'
ROCKY = 'NAME="Rocky Linux"\nID="rocky"\nID_LIKE="rhel centos fedora"\n'


def test_the_missing_libraries_become_one_install_command():
    missing = qtcheck.missing_libraries(LDD_DEBIAN_12)
    assert missing == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"]
    assert [qtcheck.os_family(text) for text in (DEBIAN_12, UBUNTU, FEDORA, ROCKY, "ID=arch\n")] == [
        "debian",
        "debian",
        "fedora",
        "fedora",
        "",
    ]
    assert qtcheck.install_commands(missing, "debian") == ["sudo apt-get install libxcb-icccm4 libxcb-keysyms1"]
    assert qtcheck.install_commands(missing, "fedora") == ["sudo dnf install xcb-util-wm xcb-util-keysyms"]
    both = qtcheck.install_commands(missing, "")
    assert both == [
        "(Debian/Ubuntu) sudo apt-get install libxcb-icccm4 libxcb-keysyms1",
        "(Fedora) sudo dnf install xcb-util-wm xcb-util-keysyms",
    ]
    text = qtcheck.report([*missing, "libxcb-new.so.9"], "debian", "/x/libqxcb.so")
    assert text.splitlines()[0] == (
        "keepgui: Qt's X11 platform plugin cannot load: libxcb-icccm.so.4, libxcb-keysyms.so.1, "
        "libxcb-new.so.9 are missing (/x/libqxcb.so)."
    )
    assert "  sudo apt-get install libxcb-icccm4 libxcb-keysyms1" in text
    assert "No package is known here for libxcb-new.so.9" in text


def test_every_library_the_installed_plugin_links_has_its_packages():
    """The table covers what this PySide6's plugin needs beyond the C library (so a new Qt that
    links one more X library shows up here, not as an unhelpful 'no package known')."""
    plugin = qtcheck.xcb_plugin()
    assert plugin is not None and os.path.exists(plugin)
    done = subprocess.run(["ldd", plugin], capture_output=True, text=True, check=True)
    linked = {
        m.group(1) for m in re.finditer(r"^\s*(lib(?:xcb|X11|xkbcommon)[^ ]*\.so\.\d+)", done.stdout, re.MULTILINE)
    }
    assert linked and linked <= set(qtcheck.PACKAGES), sorted(linked - set(qtcheck.PACKAGES))


def test_check_runs_ldd_on_the_installed_plugin(tmp_path):
    # Here every library is present: nothing to say.
    assert qtcheck.check({"PATH": os.environ["PATH"]}) is None
    # Another platform chosen (the tests' offscreen one): nothing to check.
    assert qtcheck.check({"PATH": "/nonexistent", "QT_QPA_PLATFORM": "offscreen"}) is None
    # An ldd that cannot find two of them, on Debian 12.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "ldd"
    fake.write_text(f"#!/bin/sh\ncat <<'EOF'\n{LDD_DEBIAN_12}EOF\n")
    fake.chmod(0o755)
    release = tmp_path / "os-release"
    release.write_text(DEBIAN_12)
    text = qtcheck.check({"PATH": str(bindir)}, str(release))
    assert text is not None and text.endswith(
        "Install what it needs with:\n  sudo apt-get install libxcb-icccm4 libxcb-keysyms1"
    )


def test_make_run_checks_the_plugin_before_opening_the_window(tmp_path):
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as fh:
        makefile = fh.read()
    recipe = makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    lines = [line.strip() for line in recipe.splitlines()[1:]]
    assert lines[0].endswith("python -m keepgui.qtcheck") and lines[1].endswith("keepgui --demo"), lines
    done = subprocess.run([sys.executable, "-m", "keepgui.qtcheck"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0 and done.stderr == ""
