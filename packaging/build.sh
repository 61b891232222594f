#!/usr/bin/env bash
# Build the one-folder keepgui app (dist/keepgui/) with PyInstaller, from a clean venv.
#
#   packaging/build.sh            build (recreates build/pkg-venv every time)
#
# Environment:
#   PYTHON=python3.12             interpreter for the build venv (default: the first of
#                                 python3.13/3.12/3.11/python3 that is 3.11 or newer)
#   PKG_VENV=DIR                  where the clean build venv goes (default: build/pkg-venv)
#   PKG_REUSE_VENV=1              keep an existing PKG_VENV instead of recreating it
#                                 (faster rebuilds; keepgui itself is reinstalled anyway)
#
# Needs only Python 3.11+ (with the venv module) and access to PyPI. The repository is
# never written to except build/ and dist/ (both ignored by git): keepgui is installed
# from a copy of the sources in a temp dir, so stale build/lib or *.egg-info folders of
# the working tree never leak into the package.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

say() { printf '==> %s\n' "$*"; }
die() { printf 'build.sh: error: %s\n' "$*" >&2; exit 1; }

# ------------------------------------------------------------------ python
py_ok() { "$1" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 11) else 1)' >/dev/null 2>&1; }
if [[ -n "${PYTHON:-}" ]]; then
    py_ok "$PYTHON" || die "PYTHON=$PYTHON is not a Python 3.11+ with the venv module"
else
    for candidate in python3.13 python3.12 python3.11 python3; do
        if command -v "$candidate" >/dev/null 2>&1 && py_ok "$candidate"; then PYTHON="$candidate"; break; fi
    done
    [[ -n "${PYTHON:-}" ]] || die "no Python 3.11+ found (set PYTHON=/path/to/python3.11)"
fi
say "python: $(command -v "$PYTHON") ($("$PYTHON" -c 'import sys; print(sys.version.split()[0])'))"

# ------------------------------------------------------------------ venv
VENV="${PKG_VENV:-$ROOT/build/pkg-venv}"
if [[ "${PKG_REUSE_VENV:-0}" != 1 || ! -x "$VENV/bin/python" ]]; then
    say "creating a clean venv in $VENV"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip

# ------------------------------------------------------------------ keepgui + pyinstaller
STAGE="$(mktemp -d "${TMPDIR:-/tmp}/keepgui-pkg-src.XXXXXX")"
trap 'rm -rf "$STAGE"' EXIT
# Exactly what the wheel is built from (see pyproject.toml), without caches.
tar -C "$ROOT" --exclude='__pycache__' --exclude='*.pyc' -cf - pyproject.toml setup.py README.md keepgui resources \
    | tar -C "$STAGE" -xf -
say "installing keepgui and pyinstaller into the venv"
# (pip always reinstalls a local source folder, so a reused venv gets the current code.)
"$VENV/bin/python" -m pip install --quiet "$STAGE" "pyinstaller>=6.6,<7"
"$VENV/bin/python" - <<'EOF'
import importlib.metadata as md
for dist in ("keepgui", "PySide6-Essentials", "pyinstaller", "pyinstaller-hooks-contrib"):
    print(f"    {dist} {md.version(dist)}")
EOF

# ------------------------------------------------------------------ pyinstaller
say "running PyInstaller (packaging/keepgui.spec)"
start=$SECONDS
# The console script, not `python -m PyInstaller`: the latter would put the current
# directory on sys.path and freeze ./keepgui instead of the installed package.
"$VENV/bin/pyinstaller" --noconfirm --clean --log-level WARN \
    --distpath "$ROOT/dist" --workpath "$ROOT/build/pyinstaller" \
    "$ROOT/packaging/keepgui.spec"

APP="$ROOT/dist/keepgui"
[[ -x "$APP/keepgui" ]] || die "PyInstaller finished but $APP/keepgui is missing"
say "built in $((SECONDS - start)) s: $APP ($(du -sh "$APP" | cut -f1))"
say "run it:  $APP/keepgui --demo      check it:  packaging/smoke.sh"
