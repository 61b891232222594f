"""The tray icon: optional everywhere, real under Xvfb + trayer, and the compaction hook.

Under the offscreen platform Qt reports no tray, so :func:`install` makes none
and everything still works from the window. The real tray runs in a child
process on its own Xvfb display with ``trayer`` as the tray host, clicked with
``xdotool`` (Debian packages ``xvfb``, ``trayer``, ``xdotool``; ``tools/install-x-tools``
says which are missing); that test is skipped with the reason when one is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest
from PySide6.QtWidgets import QApplication

from keepgui.backends.nanobot.bank import KEEP_BANK
from keepgui.core.source import BankKey
from keepgui.ui.desktop import KEEP_RUNNING_SETTING, Desktop, install
from keepgui.ui.quickkeep import popup_for
from keepgui.ui.tray import tray_available
from tests.conftest import ROOT


@pytest.fixture
def window(make_window, demo_copy, qtbot):
    win = make_window(demo_copy.iii, workspace=demo_copy.nanobot)
    qtbot.waitUntil(lambda: win.hub.sources[demo_copy.nanobot].doc is not None, timeout=10_000)
    return win


def test_offscreen_has_no_tray_and_everything_still_works(window, demo_copy, qtbot):
    assert not tray_available()
    desktop = install(window, QApplication.instance())
    assert desktop.tray is None and window.findChild(Desktop) is desktop
    assert not desktop.keeps_running()
    window.settings.set(KEEP_RUNNING_SETTING, True)  # without a tray the setting must not trap the window
    assert not desktop.keeps_running()
    assert QApplication.instance().quitOnLastWindowClosed()
    desktop.quick_keep()
    popup = popup_for(window)
    qtbot.addWidget(popup)
    assert popup.isVisible()


def test_compaction_due_and_its_hook(window, demo_copy, qtbot):
    desktop = install(window, QApplication.instance(), use_tray=False)
    keep = BankKey(demo_copy.nanobot, KEEP_BANK)
    due = desktop.compaction_due()
    assert [(key, int(size.split()[0]) > 150) for key, _label, size in due] == [(keep, True)]
    # the default answer: show the window on that keep.md
    with qtbot.waitSignal(desktop.compactionRequested) as signal:
        desktop.request_compaction(keep)
    assert signal.args == [keep]
    assert window.current == keep
    # the lead's compaction dialog plugs in here
    asked = []
    desktop.set_compaction_handler(asked.append)
    desktop.request_compaction(keep)
    assert asked == [keep]
    desktop.set_compaction_handler(None)
    window.select_bank(BankKey(demo_copy.iii, "main"))
    desktop.request_compaction(keep)
    assert window.current == BankKey(demo_copy.nanobot, KEEP_BANK)
    # Switching banks starts the Preview pane's debounce; let it fire before the fixture shuts the
    # hub down (a timer firing after that raises in preview.py, whichever test switched banks).
    qtbot.wait(600)


@pytest.mark.qt_log_ignore("This plugin does not support grabbing the keyboard")  # offscreen: a menu cannot grab
def test_a_click_on_the_icon_opens_the_menu_and_a_double_click_shows_the_window(qtbot):
    from PySide6.QtWidgets import QSystemTrayIcon

    from keepgui.ui.tray import KeepTray

    tray = KeepTray(keep_running=False)
    shown = []
    tray.showRequested.connect(lambda: shown.append(True))
    tray.activated.emit(QSystemTrayIcon.ActivationReason.Trigger)
    qtbot.waitUntil(tray.menu.isVisible, timeout=3_000)
    assert shown == []
    tray.menu.hide()
    # a double click: its first click must not open the menu (which would swallow the second)
    tray.activated.emit(QSystemTrayIcon.ActivationReason.Trigger)
    tray.activated.emit(QSystemTrayIcon.ActivationReason.DoubleClick)
    assert shown == [True]
    qtbot.wait(QApplication.styleHints().mouseDoubleClickInterval() + 200)
    assert not tray.menu.isVisible()


def test_tray_menu_entries_without_showing_it(qtbot):
    from keepgui.ui.tray import KeepTray

    tray = KeepTray(keep_running=False)
    assert [a.text() for a in tray.menu.actions() if not a.isSeparator() and a.isVisible()] == [
        "&Quick keep…",
        "&Show window",
        "Inbox: nothing to review",
        "No writes await approval",
        "No compaction due",
        "&Keep running in the tray when the window closes",
        "&Quit keepgui",
    ]
    assert not tray.act_compaction.isEnabled()
    w1, w2 = BankKey("/w1", KEEP_BANK), BankKey("/w2", KEEP_BANK)
    tray.set_compaction_due([(w1, "keep.md — /w1", "172 lines")])
    assert (
        tray.act_compaction.isEnabled() and tray.act_compaction.text() == "Compaction due: keep.md — /w1 (172 lines)…"
    )
    with qtbot.waitSignal(tray.compactionRequested) as signal:
        tray.act_compaction.trigger()
    assert signal.args == [w1]
    tray.set_compaction_due([(w1, "keep.md — /w1", "172 lines"), (w2, "keep.md — /w2", "160 lines")])
    assert not tray.act_compaction.isVisible()
    assert tray.compaction_menu.title() == "Compaction due (2 banks)"
    assert [a.text() for a in tray.compaction_menu.actions()] == [
        "keep.md — /w1 (172 lines)…",
        "keep.md — /w2 (160 lines)…",
    ]
    assert "compaction due in 2 banks" in tray.toolTip()


# ---------------------------------------------------------------------- a real tray


CHILD = r"""
import argparse, json, os, subprocess, sys, tempfile, time
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QSystemTrayIcon
from keepgui.core.demo import make_demo_copy
from keepgui.ui.application import build_window, make_app
from keepgui.ui.desktop import KEEP_RUNNING_SETTING, install
from keepgui.backends.nanobot.backend import KEEP_BANK
from keepgui.core.source import BankKey
from keepgui.ui.quickkeep import popup_for
from keepgui.ui.settings import Settings

app = make_app()
def spin(seconds, until=lambda: False):
    end = time.time() + seconds
    while time.time() < end and not until():
        app.processEvents()
        time.sleep(0.02)

out = {}
spin(10, QSystemTrayIcon.isSystemTrayAvailable)  # trayer may still be starting
out["available"] = QSystemTrayIcon.isSystemTrayAvailable()
copy = make_demo_copy(parent=tempfile.mkdtemp())
args = argparse.Namespace(demo=False, data_dir=copy.iii, workspace=[copy.nanobot], bank="main", panel=None,
                          query=None, screenshot=None, reload_command="")
window = build_window(args, Settings(os.path.join(os.environ["KEEPGUI_HOME"], "settings.json")), watch=False)
desktop = install(window, app)
window.resize(900, 600)
window.show()
tray = desktop.tray
out["tray"] = tray is not None and tray.isVisible()
spin(10, lambda: tray.act_compaction.isEnabled() and not tray.geometry().isEmpty())
out["geometry"] = [tray.geometry().width(), tray.geometry().height()]
out["compaction"] = tray.act_compaction.text()
out["tooltip"] = tray.toolTip()
menu = tray.contextMenu()
centre = tray.geometry().center()

def click(button):
    # a real click of the X server on the icon trayer embedded, as a person's
    subprocess.run(["xdotool", "mousemove", str(centre.x()), str(centre.y()), "click", str(button)], check=True)
    spin(3.0, menu.isVisible)
    spin(0.3)
    return menu.isVisible()

out["menu_by_right_click"] = click(3)
out["menu"] = [a.text() for a in menu.actions() if not a.isSeparator() and a.isVisible()]
app.primaryScreen().grabWindow(0).save(sys.argv[1], "PNG")
menu.hide()
spin(0.5)
out["menu_by_left_click"] = click(1)
menu.hide()
spin(0.3)
tray.act_quick_keep.trigger()
popup = popup_for(window)
spin(0.5)
out["popup"] = popup.isVisible()
popup.close()
tray.act_compaction.trigger()
out["compaction_shows"] = window.current == BankKey(copy.nanobot, KEEP_BANK)
tray.act_keep_running.setChecked(True)
out["setting"] = window.settings.get(KEEP_RUNNING_SETTING)
window.close()
spin(0.5)
out["hidden_in_tray"] = not window.isVisible() and not app.quitOnLastWindowClosed()
subprocess.run(["xdotool", "mousemove", str(centre.x()), str(centre.y()), "click", "--repeat", "2", "--delay", "60", "1"],
               check=True)
spin(3.0, window.isVisible)
spin(0.5)
out["shown_by_double_click"] = window.isVisible() and not menu.isVisible()
window.close()
spin(0.5)
tray.act_show.trigger()
spin(0.5)
out["shown_again"] = window.isVisible()
QTimer.singleShot(100, tray.act_quit.trigger)
out["quit_status"] = app.exec()
out["window_closed"] = not window.isVisible()
print(json.dumps(out), flush=True)
"""


def _start_xvfb() -> tuple[subprocess.Popen, str]:
    read, write = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    number = b""
    deadline = time.time() + 15
    while not number.endswith(b"\n") and time.time() < deadline:
        chunk = os.read(read, 16)
        if not chunk:
            break
        number += chunk
    os.close(read)
    if not number.strip():
        xvfb.kill()
        pytest.skip("Xvfb did not start")
    return xvfb, ":" + number.decode().strip()


@pytest.mark.xvfb
@pytest.mark.skipif(
    not (shutil.which("Xvfb") and shutil.which("trayer") and shutil.which("xdotool")),
    reason="needs Xvfb, trayer and xdotool (Debian: apt-get install xvfb trayer xdotool)",
)
def test_real_tray_under_xvfb(tmp_path):
    xvfb, display = _start_xvfb()
    env = dict(
        os.environ, DISPLAY=display, QT_QPA_PLATFORM="xcb", KEEPGUI_HOME=tempfile.mkdtemp(prefix="kg-"), PYTHONPATH=ROOT
    )
    env.pop("WAYLAND_DISPLAY", None)
    trayer = subprocess.Popen(
        [
            "trayer",
            "--edge",
            "top",
            "--align",
            "right",
            "--widthtype",
            "pixel",
            "--width",
            "120",
            "--height",
            "28",
            "--transparent",
            "false",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    shot = os.environ.get("KEEPGUI_TRAY_PNG") or str(tmp_path / "tray-menu.png")
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, shot], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
        )
    finally:
        trayer.terminate()
        xvfb.terminate()
        for proc in (trayer, xvfb):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(env["KEEPGUI_HOME"], ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["available"] and out["tray"]
    assert out["geometry"][0] > 0 and out["geometry"][1] > 0  # embedded in trayer
    assert out["compaction"].startswith("Compaction due: keep.md — ") and "lines)…" in out["compaction"]
    assert "compaction due in 1 bank" in out["tooltip"]
    assert out["menu_by_right_click"] and out["menu_by_left_click"]  # #16.16: a click opened no menu
    assert out["menu"][:2] == ["&Quick keep…", "&Show window"] and out["menu"][-1] == "&Quit keepgui"
    assert out["popup"] and out["compaction_shows"]
    assert out["setting"] is True and out["hidden_in_tray"] and out["shown_by_double_click"] and out["shown_again"]
    assert out["quit_status"] == 0 and out["window_closed"]
    assert os.path.getsize(shot) > 0


# ---------------------------------------------------------------------- the desktop entry and icons


def test_desktop_entry_and_icons_are_complete():
    import configparser

    from PySide6.QtGui import QImage

    from keepgui.ui.application import DESKTOP_ID

    path = os.path.join(ROOT, "resources", f"{DESKTOP_ID}.desktop")
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str  # keys are case-sensitive
    entry.read(path, encoding="utf-8")
    main = entry["Desktop Entry"]
    assert main["Exec"] == "keepgui" and main["Icon"] == DESKTOP_ID and main["StartupWMClass"] == "keepgui"
    assert main["Actions"] == "quick-keep;" and "Utility" in main["Categories"].split(";")
    assert entry["Desktop Action quick-keep"]["Exec"] == "keepgui quick-keep"
    for size in (16, 32, 48, 64, 128, 256):
        image = QImage(
            os.path.join(ROOT, "resources", "icons", "hicolor", f"{size}x{size}", "apps", f"{DESKTOP_ID}.png")
        )
        assert (image.width(), image.height()) == (size, size)
    assert os.path.exists(os.path.join(ROOT, "resources", "icons", "hicolor", "scalable", "apps", f"{DESKTOP_ID}.svg"))
    validator = shutil.which("desktop-file-validate")
    if validator:
        done = subprocess.run([validator, path], capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


def test_the_x_tools_helper_says_what_is_missing_and_installs_it_only_when_asked(tmp_path):
    """tools/install-x-tools is a helper for people; CI installs the three tools itself (with the rest of
    .ci/packages, each only when missing), so the real-tray test runs there rather than skipping."""
    script = os.path.join(ROOT, "tools", "install-x-tools")
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as fh:
        ci = fh.read()
    with open(os.path.join(ROOT, ".ci", "packages"), encoding="utf-8") as fh:
        packages = {word for line in fh if not line.startswith("#") for word in line.split()}
    assert {"xvfb", "trayer", "xdotool"} <= packages
    assert "dpkg -s" in ci and ".ci/packages" in ci  # only what is missing is installed
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("bash", "id"):
        os.symlink(shutil.which(name), bindir / name)
    env = {"PATH": str(bindir)}  # none of the three tools, no apt-get, no sudo

    def run(*args):
        return subprocess.run(
            [shutil.which("bash"), script, *args], env=env, capture_output=True, text=True, timeout=60
        )

    done = run()
    assert done.returncode == 1 and "missing for the real-tray test: xvfb trayer xdotool" in done.stderr
    assert "sudo apt-get install xvfb trayer xdotool" in done.stderr
    assert run("--install").returncode == 1 and "no apt-get here" in run("--install").stderr
    # an apt-get (and a sudo) that "install" the three as stubs and record what they were asked
    log = tmp_path / "apt.log"
    bash, chmod = shutil.which("bash"), shutil.which("chmod")
    fake_apt = [f"#!{bash}", f'echo "$*" >> {log}']
    for tool in ("Xvfb", "trayer", "xdotool"):
        fake_apt += [f"printf '#!{bash}\\nexit 0\\n' > {bindir}/{tool}", f"{chmod} +x {bindir}/{tool}"]
    (bindir / "apt-get").write_text("\n".join(fake_apt) + "\n")
    (bindir / "sudo").write_text(f'#!{bash}\nexec "$@"\n')
    for name in ("apt-get", "sudo"):
        (bindir / name).chmod(0o755)
    assert run().returncode == 1 and not log.exists()  # not asked to install: installs nothing
    done = run("--install")
    assert done.returncode == 0, done.stderr
    assert log.read_text() == "install -y --no-install-recommends xvfb trayer xdotool\n"
    done = run()
    assert done.returncode == 0 and done.stderr == ""


def test_pending_approvals_entry_names_the_count_and_opens_them(qtbot):
    from keepgui.ui.tray import KeepTray

    tray = KeepTray()
    asked = []
    tray.approvalsRequested.connect(lambda: asked.append(True))
    assert not tray.act_approvals.isEnabled()
    tray.set_pending(2)
    assert tray.act_approvals.isEnabled() and tray.act_approvals.text() == "Pending approvals (2)…"
    assert tray.toolTip() == "keepgui — 2 writes await approval"
    tray.act_approvals.trigger()
    assert asked == [True]
    tray.set_pending(0)
    assert not tray.act_approvals.isEnabled() and tray.toolTip() == "keepgui"


def test_writes_awaiting_approval_put_a_dot_on_the_tray_icon(qtbot):
    from keepgui.ui import theme
    from keepgui.ui.tray import KeepTray

    def corner(tray: KeepTray):
        return tray.icon().pixmap(32, 32).toImage().pixelColor(28, 3)

    tray = KeepTray()
    assert corner(tray) != theme.ATTENTION
    tray.set_pending(1)
    assert corner(tray) == theme.ATTENTION
    tray.set_pending(3)
    assert corner(tray) == theme.ATTENTION
    tray.set_pending(0)
    assert corner(tray) != theme.ATTENTION
