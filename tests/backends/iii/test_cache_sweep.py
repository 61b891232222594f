"""The log cache is swept as it is written (issue 15): entries of logs that are gone, entries not used
for a month and the oldest used past the folder's cap are removed, leftover temporary files too, and
``keepgui doctor`` says how big the cache is. Real files and real CLI processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from keepgui.backends.iii.cache import SWEEP_UNUSED_DAYS, LogCache, cache_entries, cache_size, sweep
from keepgui.backends.iii.log import MemoryLog
from keepgui.core import fsio
from tests.bench.synth import make_bank

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DAY_S = 86_400


@pytest.fixture
def data_dir(tmp_path):
    folder = tmp_path / "data"
    for n, name in enumerate(("alpha", "beta", "gamma")):
        make_bank(str(folder / name), memories=120, lines=300, seed=20 + n)
    return folder


def keepgui(home, data_dir, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, KEEPGUI_HOME=str(home), PYTHONPATH=ROOT)
    return subprocess.run(
        [sys.executable, "-m", "keepgui", "--data-dir", str(data_dir), *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def folder_of(home) -> str:
    return os.path.join(str(home), "cache", "iii-logs")


def cached_logs(home) -> set[str]:
    return {os.path.basename(os.path.dirname(e.log_path or "")) for e in cache_entries(folder_of(home))}


def age(home, bank_dir, days: float) -> None:
    """Make the cache entry of ``bank_dir``'s log look last used ``days`` ago."""
    cache = LogCache(MemoryLog(str(bank_dir / "memories.jsonl")), folder=folder_of(home))
    when = time.time() - days * DAY_S
    for path in (cache.log_file, cache.index_file):
        if os.path.exists(path):
            os.utime(path, (when, when))


def test_the_cache_of_a_removed_bank_is_swept_on_the_next_write(tmp_path, data_dir):
    home = tmp_path / "home"
    for bank in ("alpha", "beta"):
        assert keepgui(home, data_dir, "preview", "deploy", "--bank", bank, "--json").returncode == 0
    assert cached_logs(home) == {"alpha", "beta"}
    shutil.rmtree(data_dir / "alpha")
    assert keepgui(home, data_dir, "memories", "gamma", "--json").returncode == 0  # writes gamma's cache
    assert cached_logs(home) == {"beta", "gamma"}
    assert sorted(os.listdir(folder_of(home))) == sorted(
        f for e in cache_entries(folder_of(home)) for f in map(os.path.basename, e.files)
    )


def test_entries_not_used_for_a_month_are_swept_and_a_use_keeps_one(tmp_path, data_dir):
    home = tmp_path / "home"
    for bank in ("alpha", "beta"):
        assert keepgui(home, data_dir, "preview", "deploy", "--bank", bank, "--json").returncode == 0
    age(home, data_dir / "alpha", SWEEP_UNUSED_DAYS + 1)
    age(home, data_dir / "beta", SWEEP_UNUSED_DAYS + 1)
    # beta is used (answered from its cache) before the next write: that use keeps it
    assert keepgui(home, data_dir, "preview", "deploy", "--bank", "beta", "--json").returncode == 0
    assert keepgui(home, data_dir, "memories", "gamma", "--json").returncode == 0
    assert cached_logs(home) == {"beta", "gamma"}


def test_past_the_cap_the_oldest_used_go_first_never_the_one_written(tmp_path, data_dir):
    home = tmp_path / "home"
    for bank in ("alpha", "beta", "gamma"):
        assert keepgui(home, data_dir, "memories", bank, "--json").returncode == 0
    for days, bank in ((3, "alpha"), (2, "gamma"), (1, "beta")):
        age(home, data_dir / bank, days)
    entries = {os.path.basename(os.path.dirname(e.log_path or "")): e for e in cache_entries(folder_of(home))}
    gamma = entries["gamma"]
    cap = entries["beta"].size + gamma.size
    removed = sweep(folder_of(home), keep=gamma.key, max_bytes=cap)
    assert [e.key for e in removed] == [entries["alpha"].key]  # beta, used after alpha, fits under the cap
    assert cached_logs(home) == {"beta", "gamma"}
    removed = sweep(folder_of(home), keep=gamma.key, max_bytes=1)
    assert [e.key for e in removed] == [entries["beta"].key] and cached_logs(home) == {"gamma"}  # kept though over


def test_leftover_temporary_files_and_foreign_entries_by_age(tmp_path, data_dir):
    home = tmp_path / "home"
    assert keepgui(home, data_dir, "memories", "alpha", "--json").returncode == 0
    folder = folder_of(home)
    stale = fsio.temp_name_for(os.path.join(folder, "x.log"))
    fresh = fsio.temp_name_for(os.path.join(folder, "y.log"))
    fsio.atomic_write(os.path.join(folder, "f" * 40 + ".log"), b"keepgui-log-cache 999 old format\n")
    for path in (stale, fresh):
        with open(path, "wb") as fh:  # what a crashed atomic write leaves behind
            fh.write(b"partial")
    long_ago = time.time() - 2 * DAY_S
    os.utime(stale, (long_ago, long_ago))
    sweep(folder)
    assert not os.path.exists(stale) and os.path.exists(fresh)
    assert os.path.exists(os.path.join(folder, "f" * 40 + ".log"))  # another format, used recently: kept
    os.utime(os.path.join(folder, "f" * 40 + ".log"), (0, 0))
    sweep(folder)
    assert not os.path.exists(os.path.join(folder, "f" * 40 + ".log"))


def test_doctor_says_how_big_the_cache_is(tmp_path, data_dir):
    home = tmp_path / "home"
    for bank in ("alpha", "beta"):
        assert keepgui(home, data_dir, "memories", bank, "--json").returncode == 0
    files = [os.path.join(folder_of(home), f) for f in os.listdir(folder_of(home))]
    size = sum(os.path.getsize(f) for f in files)
    done = keepgui(home, data_dir, "doctor", "--json")
    assert json.loads(done.stdout)["cache"] == {"folder": folder_of(home), "entries": 2, "bytes": size}
    assert cache_size(folder_of(home)) == (2, size)
    human = keepgui(home, data_dir, "doctor").stdout
    assert f"log cache: 2 banks, {size / 2**20:.1f} MiB in {folder_of(home)}" in human
