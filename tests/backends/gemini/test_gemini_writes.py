"""Writes that survive the agent: keep, edit, forget, restore, documents; conflicts, undo, styles, locks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from keepgui.backends.gemini import writes
from keepgui.backends.gemini.bank import FORGOTTEN, REVIEW
from keepgui.backends.gemini.context import session_context
from keepgui.backends.gemini.layout import GeminiEnv
from keepgui.core.errors import Conflict, ReadOnly
from tests.backends.gemini.test_gemini_cli_compare import digest
from tests.backends.gemini.trees import put


def read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def test_keep_for_a_folder_gemini_has_not_seen_claims_its_slug_and_leaves_projects_json_alone(place):
    bank = place.bank()
    private = bank.discovery().private
    assert private.how == "new" and private.slug == "api"
    change = bank.keep("The API  runs on\nport 8000")
    memory = os.path.join(private.memory, "MEMORY.md")
    assert read(memory) == b"- The API runs on port 8000\n"
    assert read(os.path.join(place.gd, "tmp", "api", ".project_root")) == private.launch.encode()
    assert read(os.path.join(place.gd, "history", "api", ".project_root")) == private.launch.encode()
    assert not os.path.exists(os.path.join(place.gd, "projects.json"))
    context = session_context(place.cwd, GeminiEnv.from_environ(place.environ))
    assert "- The API runs on port 8000" in (context.system_context or "")
    assert context.discovery.private.how == "recovered"  # Gemini's next start finds the marker
    change.undo()
    assert not os.path.exists(memory)


def test_keep_appends_as_gemini_did_keeping_crlf_and_a_missing_final_newline(place):
    bank = place.bank()
    memory = os.path.join(bank.discovery().private.memory, "MEMORY.md")
    bank.keep("first")
    put(memory, b"- a\r\n- b")
    bank.load()
    bank.keep("- third fact")
    assert read(memory) == b"- a\r\n- b\r\n- third fact\r\n"


def test_reading_a_home_writes_nothing(place):
    before = digest(os.path.dirname(place.home))
    source = place.source(place.gd)
    for name in source.scan().names:
        bank = source.bank(name)
        bank.load()
        bank.summary()
        bank.preview("")
        docs = bank.documents()
        for doc, _title in docs.list():
            docs.read(doc)
    place.bank().preview("")
    assert digest(os.path.dirname(place.home)) == before


def test_edit_forget_restore_and_their_undo(place):
    bank = place.bank()
    path = os.path.join(place.gd, "GEMINI.md")
    row = next(r for r in bank.rows() if r.text == "Use tabs.")
    bank.edit(row.id, "text", "Use four spaces.")
    assert read(path) == b"# Prefs\n- Answer briefly.\n- Use four spaces.\n"
    row = next(r for r in bank.rows() if r.text == "Answer briefly.")
    forget = bank.set_live([row.id], False)
    assert read(path) == b"# Prefs\n- Use four spaces.\n"
    gone = next(r for r in bank.rows() if r.id.startswith(FORGOTTEN))
    assert gone.text == "Answer briefly." and gone.invalid_at
    bank.set_live([gone.id], True)
    assert read(path) == b"# Prefs\n- Answer briefly.\n- Use four spaces.\n"
    assert not any(r.id.startswith(FORGOTTEN) for r in bank.rows())
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("- Added by the agent.\n")
    with pytest.raises(Conflict):
        forget.undo()  # the file changed since that forget: refused, nothing overwritten
    assert read(path) == b"# Prefs\n- Answer briefly.\n- Use four spaces.\n- Added by the agent.\n"


def test_a_save_is_refused_when_the_agent_wrote_meanwhile(place):
    bank = place.bank()
    docs = bank.documents()
    name = os.path.join(place.repo, "GEMINI.md")
    doc = docs.read(name)
    with open(name, "a", encoding="utf-8") as fh:  # the agent, with its own tools
        fh.write("- Deploy on Fridays never.\n")
    with pytest.raises(Conflict):
        docs.save(doc, doc.text + "- mine\n")
    assert read(name) == b"- Run make test.\n- Deploy on Fridays never.\n"


def test_saving_keeps_bom_crlf_and_mode_and_writes_through_a_link(place, tmp_path):
    target = os.path.join(place.repo, "REAL.md")
    put(target, b"\xef\xbb\xbf- one\r\n")
    os.chmod(target, 0o600)
    os.unlink(os.path.join(place.repo, "GEMINI.md"))
    os.symlink(target, os.path.join(place.repo, "GEMINI.md"))
    bank = place.bank()
    docs = bank.documents()
    doc = docs.read(os.path.join(place.repo, "GEMINI.md"))
    assert doc.text == "- one\n"
    change = docs.save(doc, "- one\n- two\n")
    assert read(target) == b"\xef\xbb\xbf- one\r\n- two\r\n"
    assert os.path.islink(os.path.join(place.repo, "GEMINI.md")) and os.stat(target).st_mode & 0o777 == 0o600
    change.undo()
    assert read(target) == b"\xef\xbb\xbf- one\r\n"


def test_a_file_that_is_not_utf8_is_shown_read_only(place):
    put(os.path.join(place.repo, "GEMINI.md"), b"caf\xe9\n")
    doc = place.bank().documents().read(os.path.join(place.repo, "GEMINI.md"))
    assert "not valid UTF-8" in doc.read_only
    with pytest.raises(ReadOnly):
        place.bank().documents().save(doc, "cafe\n")


STALE_WRITER = r"""
import sys, time
path = sys.argv[1]
with open(path, encoding="utf-8") as fh:
    loaded = fh.read()          # the session's copy, taken at its start
print("loaded", flush=True)
sys.stdin.readline()            # ... the session works while keepgui keeps a fact ...
with open(path, "w", encoding="utf-8") as fh:   # truncate-and-write, as Gemini's write_file does
    fh.write(loaded + "- Agent note from the session.\n")
"""


def test_a_running_session_writing_its_stale_copy_is_caught_and_restored(place):
    bank = place.bank()
    bank.keep("First fact")
    memory = os.path.join(bank.discovery().private.memory, "MEMORY.md")
    session = subprocess.Popen(
        [sys.executable, "-c", STALE_WRITER, memory], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert session.stdout.readline().strip() == "loaded"
    bank.keep("Kept while the session ran")
    session.communicate("go\n", timeout=30)
    assert "Kept while the session ran" not in read(memory).decode()  # lost to the stale copy
    change = bank.load()
    assert change.reviews == (REVIEW,)
    plan = bank.plan(REVIEW)
    assert [op.after for op in plan.operations] == [("- Kept while the session ran",)]
    assert plan.default_selection() == {plan.operations[0].id}
    applied = bank.apply_plan(plan, plan.default_selection(), "Restore")
    assert read(memory) == b"- First fact\n- Kept while the session ran\n- Agent note from the session.\n"
    assert bank.load().reviews == ()
    applied.undo()
    assert read(memory) == b"- First fact\n- Agent note from the session.\n"


def test_accepting_a_review_stops_it(place):
    bank = place.bank()
    bank.keep("One")
    memory = os.path.join(bank.discovery().private.memory, "MEMORY.md")
    put(memory, "- something else\n")
    assert bank.load().reviews == (REVIEW,)
    bank.accept_review(bank.plan(REVIEW))
    assert bank.load().reviews == ()


HOLDER = r"""
import json, os, sys, time
from datetime import datetime, timezone
path = sys.argv[1]
fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
os.write(fd, json.dumps({"pid": os.getpid(), "startedAt": datetime.now(timezone.utc).isoformat()}).encode())
os.close(fd)
print("held", flush=True)
sys.stdin.readline()
os.unlink(path)
"""


def test_a_proposal_to_a_long_memory_file_is_listed_at_once(place):
    from keepgui.core.approvals import approvals_of

    bank = place.bank()
    bank.keep("seed")
    memory = bank.discovery().private.memory
    put(os.path.join(memory, "MEMORY.md"), "".join(f"- fact {i}\n" for i in range(20_000)))
    put(
        os.path.join(memory, ".inbox", "private", "extraction.patch"),
        f"--- {memory}/MEMORY.md\n+++ {memory}/MEMORY.md\n@@ -20000 +20000,2 @@\n - fact 19999\n+- proposed\n",
    )
    queue = approvals_of(place.source())
    assert queue is not None
    began = time.perf_counter()
    [pending] = queue.pending()
    assert time.perf_counter() - began < 3  # each line of the file was looked for in the file split anew: ~20 s
    assert "add to MEMORY.md: “proposed”" in pending.summary and pending.after.endswith("- fact 19999\n- proposed\n")


def test_the_inbox_is_not_touched_while_a_live_extraction_holds_its_lock(place):
    from keepgui.core.approvals import approvals_of

    bank = place.bank()
    bank.keep("seed")
    memory = bank.discovery().private.memory
    put(
        os.path.join(memory, ".inbox", "private", "extraction.patch"),
        f"--- {memory}/MEMORY.md\n+++ {memory}/MEMORY.md\n@@ -1 +1,2 @@\n - seed\n+- proposed\n",
    )
    queue = approvals_of(place.source())
    assert queue is not None
    [pending] = queue.pending()
    assert pending.after == "- seed\n- proposed\n" and pending.applicable
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, os.path.join(memory, writes.LOCK_NAME)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    before = digest(memory)
    with pytest.raises(ReadOnly, match="extraction is running"):
        queue.approve([pending.id])
    with pytest.raises(ReadOnly):
        queue.reject([pending.id])
    assert digest(memory) == before
    holder.communicate("done\n", timeout=30)
    change = queue.approve([pending.id])
    assert read(os.path.join(memory, "MEMORY.md")) == b"- seed\n- proposed\n"
    assert queue.pending() == [] and not os.path.exists(os.path.join(memory, writes.LOCK_NAME))
    change.undo()
    assert read(os.path.join(memory, "MEMORY.md")) == b"- seed\n"
    assert [p.id for p in queue.pending()] == [pending.id]
    rejected = queue.reject([pending.id])
    assert queue.pending() == []
    rejected.undo()
    assert [p.id for p in queue.pending()] == [pending.id]


def test_a_stale_lock_of_a_dead_process_is_taken_over(place):
    bank = place.bank()
    memory = bank.discovery().private.memory
    os.makedirs(memory, exist_ok=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    started = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    put(os.path.join(memory, writes.LOCK_NAME), json.dumps({"pid": int(dead.stdout), "startedAt": started}))
    assert writes.lock_holder(memory) is None
    with writes.ExtractionLock(memory):
        info = json.loads(read(os.path.join(memory, writes.LOCK_NAME)))
        assert info["pid"] == os.getpid()
        assert writes.lock_holder(memory) is not None  # our own live pid: any other writer stays away
    assert not os.path.exists(os.path.join(memory, writes.LOCK_NAME))
