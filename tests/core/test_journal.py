"""The journal: versions stored whole or as deltas and read back exactly, deletions as versions,
keepgui's own writes marked through fsio, and the bound that never drops an unreviewed change's base."""

from __future__ import annotations

import os

from keepgui.core import fsio
from keepgui.core.history import file_key
from keepgui.core.inbox import accept, changes, diff_entries
from keepgui.core.journal import Journal, Tracked, _hook


def test_every_version_reads_back_and_a_growing_file_costs_its_growth(tmp_path):
    journal = Journal(tmp_path / "journal")
    path = file_key(tmp_path / "big.md")
    body = "".join(f"- memory number {n} with some words\n" for n in range(5000)).encode()
    versions = []
    for n in range(40):
        body = body.replace(b"number 7 ", b"number seven ") if n == 20 else body + f"- new {n}\n".encode()
        versions.append(body)
        journal.record(path, body)
    journal.record(path, None)
    stored = journal.versions(path)
    assert [journal.read(v, stored) for v in stored] == [*versions, b""]
    assert stored[-1].gone
    assert journal.size() < 4 * len(body)  # not 40 copies


def test_keepguis_writes_through_fsio_are_its_own_and_an_agents_version_before_is_kept(tmp_path):
    journal = Journal(tmp_path / "journal")
    path = str(tmp_path / "keep.md")
    with open(path, "w") as fh:
        fh.write("- a\n")
    journal.track([Tracked("toy", str(tmp_path), "b", file_key(path))])
    journal.sync_file(file_key(path), baseline=True)
    hook = _hook(journal)
    fsio.on_write(hook)
    try:
        with open(path, "a") as fh:
            fh.write("- by the agent\n")  # not yet seen when keepgui writes
        _data, stamp = fsio.read_stamped(path)
        fsio.atomic_write(path, b"- a\n- by the agent\n- by keepgui\n", expect=stamp)
    finally:
        fsio._WRITE_HOOKS.remove(hook)
    found = changes(journal)
    assert len(found) == 1 and found[0].version is not None and found[0].version.seq == 1
    assert [v.own for v in journal.versions(file_key(path))] == [True, False, True]


def test_the_bound_drops_oldest_first_and_never_the_base_of_an_unreviewed_change(tmp_path):
    journal = Journal(tmp_path / "journal")
    path = file_key(tmp_path / "m.md")
    journal.track([Tracked("toy", str(tmp_path), "b", path)])
    for n in range(30):
        journal.record(path, os.urandom(3000), own=n == 0)
    found = changes(journal)
    accept(journal, [i for i in found if i.version is not None and i.version.seq < 25])
    freed = journal.thin(cap=1)
    kept = journal.versions(path)
    assert freed > 0
    assert [v.seq for v in kept] == [24, 25, 26, 27, 28, 29]  # 24: the base of unreviewed 25
    assert all(len(journal.read(v, kept)) == 3000 for v in kept)
    assert len(changes(journal)) == 5


def test_entries_are_added_removed_edited_and_merged():
    old = [("", "Uses Postgres 16 for the main database"), ("", "Runs migrations with alembic"), ("", "Dog is Biscuit")]
    new = [("", "Uses Postgres 16 for the main database, migrations with alembic"), ("", "Dog is Biscuit, a beagle")]
    found = [(c.kind, c.before, c.after) for c in diff_entries(old, new)]
    assert found == [
        ("merged", tuple(t for _k, t in old[:2]), (new[0][1],)),
        ("edited", ("Dog is Biscuit",), ("Dog is Biscuit, a beagle",)),
    ]
    assert [c.kind for c in diff_entries([("a", "x")], [("a", "y"), ("b", "z")])] == ["edited", "added"]


def test_keepguis_history_store_is_not_told_to_the_journal_and_other_threads_still_are(tmp_path):
    """A first sight of 5,000 topic files stored 5,000 versions in keepgui's history and told the
    journal of each blob and index line (20,000 calls, each resolving the path's links)."""
    import threading

    from keepgui.core.history import History

    told: list[tuple[str, str]] = []

    def hook(stage, path, _data):
        told.append((stage, path))

    fsio.on_write(hook)
    try:
        History(str(tmp_path / "history")).record(str(tmp_path / "a.md"), b"one")
        assert told == []  # the blob and its index line: keepgui's own store
        with fsio.untold():
            with fsio.untold():
                fsio.atomic_write(str(tmp_path / "x"), b"x")
            fsio.atomic_write(str(tmp_path / "y"), b"y")  # still inside the outer block
            other = threading.Thread(target=fsio.atomic_write, args=(str(tmp_path / "z"), b"z"))
            other.start()
            other.join()
        assert told == [("before", str(tmp_path / "z")), ("after", str(tmp_path / "z"))]  # that thread's
        fsio.atomic_write(str(tmp_path / "w"), b"w")
        assert told[-1] == ("after", str(tmp_path / "w"))  # told again after the block
    finally:
        fsio._WRITE_HOOKS.remove(hook)
