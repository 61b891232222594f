"""Can Qt's X11 platform plugin load here? If not, the one command that installs what it lacks.

Qt's ``xcb`` plugin links a dozen small X libraries that a minimal Debian,
Ubuntu or Fedora install (a server, a container with Xvfb) often lacks. Qt
then aborts with a message naming only one of them ("xcb-cursor0 is
needed"), though ``libxcb-icccm4`` and ``libxcb-keysyms1`` may be missing
too. ``make run`` runs this module first: ``ldd`` on the plugin of the
installed PySide6 lists every library the loader cannot find, and the
packages that hold them become one install command for this system.

Run it as ``python -m keepgui.qtcheck``: exit 0 when the plugin can load (or
there is nothing to check: not Linux, no ``ldd``, another Qt platform chosen),
1 with the command on stderr when it cannot. Qt itself is never imported.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping

PACKAGES: dict[str, tuple[str, str]] = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb"),
    "libxcb.so.1": ("libxcb1", "libxcb"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb"),
    "libX11.so.6": ("libx11-6", "libX11"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libGL.so.1": ("libgl1", "libglvnd-glx"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl"),
    "libOpenGL.so.0": ("libopengl0", "libglvnd-opengl"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig"),
    "libfreetype.so.6": ("libfreetype6", "freetype"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2"),
    "libgthread-2.0.so.0": ("libglib2.0-0", "glib2"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs"),
}
"""Library file -> (the Debian/Ubuntu package, the Fedora package) that installs it."""

_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found\s*$")


def xcb_plugin() -> str | None:
    """The xcb platform plugin of the installed PySide6 (found without importing Qt), or None."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = os.path.join(folder, "Qt", "plugins", "platforms", "libqxcb.so")
        if os.path.exists(path):
            return path
    return None


def missing_libraries(ldd_output: str) -> list[str]:
    """The libraries ``ldd`` says it cannot find, in its order, each once."""
    found = []
    for line in ldd_output.splitlines():
        match = _NOT_FOUND.match(line)
        if match and match.group(1) not in found:
            found.append(match.group(1))
    return found


def os_family(os_release: str) -> str:
    """``debian`` (Debian, Ubuntu and their kin), ``fedora`` (Fedora, RHEL...) or ``""`` (unknown),
    from the text of ``/etc/os-release``."""
    values: dict[str, str] = {}
    for line in os_release.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip().strip('"')
    names = {values.get("ID", ""), *values.get("ID_LIKE", "").split()}
    if names & {"debian", "ubuntu"}:
        return "debian"
    if names & {"fedora", "rhel", "centos"}:
        return "fedora"
    return ""


def install_commands(missing: list[str], family: str) -> list[str]:
    """The install command(s) for ``missing`` libraries: the one for ``family``, or both when the
    system is not known. A library with no known package is left to the message."""
    commands = []
    for name, index, tool in (("debian", 0, "sudo apt-get install"), ("fedora", 1, "sudo dnf install")):
        if family and family != name:
            continue
        packages = list(dict.fromkeys(PACKAGES[lib][index] for lib in missing if lib in PACKAGES))
        if packages:
            prefix = "" if family else f"({'Debian/Ubuntu' if name == 'debian' else 'Fedora'}) "
            commands.append(prefix + f"{tool} {' '.join(packages)}")
    return commands


def report(missing: list[str], family: str, plugin: str) -> str:
    """What to tell a person whose xcb plugin cannot load."""
    lines = [
        (
            f"keepgui: Qt's X11 platform plugin cannot load: {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} missing ({plugin})."
        ),
    ]
    commands = install_commands(missing, family)
    if commands:
        lines.append("Install what it needs with:")
        lines += [f"  {command}" for command in commands]
    unknown = [lib for lib in missing if lib not in PACKAGES]
    if unknown:
        lines.append(
            f"No package is known here for {', '.join(unknown)}: find it with `apt-file search NAME` or "
            "`dnf provides '*/NAME'`."
        )
    return "\n".join(lines)


def check(environ: Mapping[str, str] | None = None, os_release_path: str = "/etc/os-release") -> str | None:
    """The report when the xcb plugin cannot load here, else None (also when nothing can be checked)."""
    env = os.environ if environ is None else environ
    platform = env.get("QT_QPA_PLATFORM", "").split(":")[0]
    if not sys.platform.startswith("linux") or platform not in ("", "xcb"):
        return None
    plugin = xcb_plugin()
    ldd = shutil.which("ldd", path=env.get("PATH"))
    if plugin is None or ldd is None:
        return None
    try:
        done = subprocess.run([ldd, plugin], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    missing = missing_libraries(done.stdout)
    if not missing:
        return None
    try:
        with open(os_release_path, encoding="utf-8") as fh:
            family = os_family(fh.read())
    except OSError:
        family = ""
    return report(missing, family, plugin)


def main() -> int:
    """``python -m keepgui.qtcheck``."""
    problem = check()
    if problem is None:
        return 0
    print(problem, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
