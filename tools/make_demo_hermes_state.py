"""Write resources/demo/hermes/state.db: one stored session that a resume would replay, made by the real Hermes.

Run from the repository root, with the pinned Hermes installed (``make hermes-agent``):
``.venv/bin/python tools/make_demo_hermes_state.py``. It copies the demo's Hermes home into a private
HOME, takes it back to how its memory stood a few days earlier (before the NAS address was corrected and
the git identity noted), runs ``hermes -z`` there against a loopback model
server (nothing reaches the network), and keeps the ``state.db`` Hermes wrote: its session's stored
system prompt holds that older memory, so the demo's preview shows "memory changes this session will
not see" beside the prompt of the next new session.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.backends.hermes import hermes_cli  # noqa: E402

DEMO = os.path.join(ROOT, "resources", "demo", "hermes")
SEPARATOR = "\n§\n"


def older(entries: list[str]) -> list[str]:
    """The demo's MEMORY.md entries as they stood a few days earlier."""
    out = []
    for entry in entries:
        if entry.startswith("The user's Git identity"):
            continue  # written since
        out.append(entry.replace("192.168.1.20", "192.168.1.10"))  # corrected since
    return out


def main() -> int:
    hermes_cli.ensure_hermes()
    work = tempfile.mkdtemp(prefix="keepgui-hermes-state-")
    model = hermes_cli.FakeModel()
    try:
        home = os.path.join(work, "home")
        hermes_home = os.path.join(home, ".hermes")
        project = os.path.join(home, "src", "nightjar")
        os.makedirs(project)
        shutil.copytree(DEMO, hermes_home, ignore=shutil.ignore_patterns("pending", "profiles", "state.db*"))
        with open(os.path.join(DEMO, "config.yaml"), encoding="utf-8") as fh:
            memory_settings = fh.read().split("memory:", 1)[1].replace("write_approval: true", "write_approval: false")
        with open(os.path.join(hermes_home, "config.yaml"), "w", encoding="utf-8") as fh:
            fh.write(hermes_cli.config_yaml(model.base_url, "memory:" + memory_settings))
        path = os.path.join(hermes_home, "memories", "MEMORY.md")
        with open(path, encoding="utf-8") as fh:
            entries = fh.read().split(SEPARATOR)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(SEPARATOR.join(older(entries)))
        hermes_cli.run_session(project, home, "What is on the NAS for Nightjar?")
        for name in ("state.db-wal", "state.db-shm"):
            if os.path.exists(os.path.join(hermes_home, name)):
                raise SystemExit(f"Hermes left {name}: its sessions are not all in state.db")
        db = sqlite3.connect(os.path.join(hermes_home, "state.db"))
        try:
            count = db.execute("SELECT count(*) FROM sessions WHERE system_prompt LIKE '%192.168.1.10%'").fetchone()[0]
        finally:
            db.close()
        if count != 1:
            raise SystemExit(f"expected one stored session with the older memory, found {count}")
        shutil.copyfile(os.path.join(hermes_home, "state.db"), os.path.join(DEMO, "state.db"))
        print("wrote", os.path.join(DEMO, "state.db"))
    finally:
        model.close()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
