#!/usr/bin/env bash
# Smoke test of the frozen keepgui built by packaging/build.sh.
#
#   packaging/smoke.sh [APP_DIR]      (default: dist/keepgui)
#
# Checks, each with a clear message and a non-zero exit on failure:
#   1. the bundle holds its resources (demo data, .desktop entry, metainfo, app icons);
#   2. `keepgui --version` prints exactly "keepgui <__version__ of keepgui/__init__.py>";
#   3. `keepgui --demo --screenshot demo.png` (QT_QPA_PLATFORM=offscreen) exits 0 and writes
#      a valid PNG (signature, IHDR first, IEND last, sane size) larger than 50 KB, i.e.
#      a real rendering of the window rather than a blank one;
#   4. `keepgui --demo banks --json` lists the three demo banks (blog, coding, main);
#   5. a program keepgui starts (the reload command after `keepgui --demo save`) does not
#      inherit the bundle's LD_LIBRARY_PATH / QT_PLUGIN_PATH / QML2_IMPORT_PATH.
# The frozen app runs with an empty environment of its own (KEEPGUI_HOME in a temp dir,
# no DISPLAY), so it never touches the user's settings or a running keepgui.
# Needs only POSIX tools (sh, od, grep, sed, wc, timeout): no Python.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
APP_DIR="${1:-$ROOT/dist/keepgui}"
BIN="$APP_DIR/keepgui"
MIN_PNG_BYTES=$((50 * 1024))
TIMEOUT="${SMOKE_TIMEOUT:-180}"

fail() { printf 'smoke.sh: FAIL: %s\n' "$*" >&2; exit 1; }
ok() { printf 'smoke.sh: ok: %s\n' "$*"; }

[[ -x "$BIN" ]] || fail "$BIN is missing or not executable (run packaging/build.sh first)"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/keepgui-smoke.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/home"

# Run the frozen binary from a neutral directory with a private KEEPGUI_HOME.
run() {
    (cd "$TMP" && env -u DISPLAY -u WAYLAND_DISPLAY KEEPGUI_HOME="$TMP/home" \
        QT_QPA_PLATFORM=offscreen timeout "$TIMEOUT" "$BIN" "$@")
}

# ------------------------------------------------------------------ 1. bundle contents
RES="$APP_DIR/_internal/keepgui/resources"
[[ -d "$RES" ]] || RES="$APP_DIR/keepgui/resources"  # PyInstaller < 6 layout
for f in demo/iii/blog/bank.yaml demo/iii/coding/bank.yaml demo/iii/main/bank.yaml \
         demo/nanobot/keep.md demo/nanobot/memory/.cursor \
         io.github.keepgui.keepgui.desktop io.github.keepgui.keepgui.metainfo.xml \
         icons/keepgui.svg icons/hicolor/scalable/apps/io.github.keepgui.keepgui.svg \
         icons/hicolor/256x256/apps/io.github.keepgui.keepgui.png; do
    [[ -f "$RES/$f" ]] || fail "bundle is missing resources/$f (looked in $RES)"
done
ok "bundle carries the demo data, .desktop entry, metainfo and icons"

# ------------------------------------------------------------------ 2. --version
expected="$(sed -n 's/^__version__ *= *["'\'']\([^"'\'']*\)["'\''].*/\1/p' "$ROOT/keepgui/__init__.py")"
[[ -n "$expected" ]] || fail "could not read __version__ from keepgui/__init__.py"
if ! version_out="$(run --version 2>"$TMP/version.err")"; then
    cat "$TMP/version.err" >&2
    fail "'keepgui --version' exited non-zero"
fi
[[ "$version_out" == "keepgui $expected" ]] \
    || fail "'keepgui --version' printed '$version_out', expected 'keepgui $expected'"
ok "keepgui --version -> $version_out"

# ------------------------------------------------------------------ 3. screenshot
PNG="$TMP/demo.png"
if ! run --demo --screenshot "$PNG" >"$TMP/shot.out" 2>"$TMP/shot.err"; then
    cat "$TMP/shot.out" "$TMP/shot.err" >&2
    fail "'keepgui --demo --screenshot' exited non-zero"
fi
[[ -f "$PNG" ]] || { cat "$TMP/shot.err" >&2; fail "'keepgui --demo --screenshot' exited 0 but wrote no $PNG"; }
bytes_at() { od -An -v -tx1 -j "$1" -N "$2" "$PNG" | tr -d ' \n'; }
size=$(wc -c <"$PNG" | tr -d ' ')
[[ "$(bytes_at 0 8)" == "89504e470d0a1a0a" ]] || fail "demo.png does not start with the PNG signature"
[[ "$(bytes_at 12 4)" == "49484452" ]] || fail "demo.png: first chunk is not IHDR"
[[ "$(bytes_at $((size - 8)) 4)" == "49454e44" ]] || fail "demo.png: does not end with an IEND chunk (truncated?)"
width=$((16#$(bytes_at 16 4)))
height=$((16#$(bytes_at 20 4)))
((width >= 400 && height >= 300)) || fail "demo.png is only ${width}x${height} pixels"
((size > MIN_PNG_BYTES)) || fail "demo.png is only $size bytes (expected > $MIN_PNG_BYTES for a real rendering)"
if grep -q "Traceback (most recent call last)" "$TMP/shot.err"; then
    cat "$TMP/shot.err" >&2
    fail "'keepgui --demo --screenshot' printed a Python traceback"
fi
ok "screenshot: ${width}x${height} PNG, $size bytes"
if [[ -n "${SMOKE_KEEP_PNG:-}" ]]; then cp "$PNG" "$SMOKE_KEEP_PNG" && ok "screenshot kept at $SMOKE_KEEP_PNG"; fi

# ------------------------------------------------------------------ 4. a CLI command
if ! banks="$(run --demo banks --json 2>"$TMP/banks.err")"; then
    cat "$TMP/banks.err" >&2
    fail "'keepgui --demo banks --json' exited non-zero"
fi
for bank in blog coding main; do
    grep -q "\"name\": *\"$bank\"" <<<"$banks" \
        || { printf '%s\n' "$banks" >&2; fail "'keepgui --demo banks --json' does not list the demo bank '$bank'"; }
done
count=$(grep -o '"name": *"[^"]*"' <<<"$banks" | wc -l | tr -d ' ')
[[ "$count" == 3 ]] || { printf '%s\n' "$banks" >&2; fail "expected 3 demo banks, 'banks --json' lists $count"; }
ok "keepgui --demo banks --json lists blog, coding, main"

# ------------------------------------------------------------------ 5. clean child environment
# A write runs the worker's reload command; it must get the user's environment, not the
# bundle's library and plugin paths (packaging/keepgui_launcher.py restores them).
if ! run --demo --reload-command "sh -c 'env > \"$TMP/child.env\"'" save main "smoke test fact" \
        >"$TMP/save.out" 2>"$TMP/save.err"; then
    cat "$TMP/save.out" "$TMP/save.err" >&2
    fail "'keepgui --demo save main ...' exited non-zero"
fi
[[ -f "$TMP/child.env" ]] || fail "the reload command of 'keepgui save' did not run"
APP_REAL="$(cd "$APP_DIR" && pwd -P)"
if leaked="$(grep -E "^(LD_LIBRARY_PATH|QT_PLUGIN_PATH|QML2_IMPORT_PATH)=" "$TMP/child.env" | grep -F "$APP_REAL")"; then
    fail "programs started by keepgui inherit the bundle's paths: $leaked"
fi
ok "programs started by keepgui get a clean environment (no bundle LD_LIBRARY_PATH/QT_PLUGIN_PATH)"

printf 'smoke.sh: all checks passed (%s)\n' "$APP_DIR"
