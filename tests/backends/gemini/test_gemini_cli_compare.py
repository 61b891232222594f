"""keepgui's "what the next session sees" against the real Gemini CLI, byte for byte, on generated trees.

For every tree of :mod:`tests.backends.gemini.trees`: keepgui computes both ``<loaded_context>``
elements (reading only: the whole tree, home included, is byte-identical afterwards), then the real
``gemini -p`` runs there against a loopback server and its first main-turn request is read. Both
elements must be equal, and the private folder Gemini then records in ``projects.json`` must be the
one keepgui predicted before Gemini had seen the folder.

The CLI is installed into ``build/gemini-cli/`` when missing (``make gemini-compare``); without npm or
a registry the tests are skipped with the reason. Captures are cached in ``build/gemini-compare/cache``
keyed by a hash of the tree, its paths and the CLI version, so an unchanged tree is not run twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest

from keepgui.backends.gemini import CHECKED_VERSION
from keepgui.backends.gemini.context import session_context
from keepgui.backends.gemini.layout import GeminiEnv, launch_key
from tests.backends.gemini import gemini_cli
from tests.backends.gemini.trees import TREES, Built, Tree

WORK = os.path.join(gemini_cli.ROOT, "build", "gemini-compare")
CACHE = os.path.join(WORK, "cache")


@pytest.fixture(scope="module")
def cli() -> str:
    """The pinned CLI (installed when missing), or a skip saying why it cannot be."""
    try:
        binary, _version, _seconds = gemini_cli.ensure_cli()
    except gemini_cli.Unavailable as exc:
        pytest.skip(str(exc))
    return binary


def digest(root: str) -> str:
    """A hash of every path, link and byte under ``root`` (what "nothing was written" compares)."""
    h = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + files):
            path = os.path.join(folder, name)
            h.update(os.path.relpath(path, root).encode("utf-8", "surrogateescape") + b"\0")
            if os.path.islink(path):
                h.update(b"link:" + os.readlink(path).encode("utf-8", "surrogateescape"))
            elif os.path.isfile(path):
                with open(path, "rb") as fh:
                    h.update(fh.read())
            h.update(b"\0")
    return h.hexdigest()


def build(tree: Tree) -> tuple[str, Built]:
    """The tree built fresh under ``build/gemini-compare/<name>`` (a fixed place, so its capture caches)."""
    root = os.path.join(WORK, "trees", tree.name)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    return root, tree.build(root)


def captured(binary: str, root: str, built: Built, key: str) -> dict:
    """The CLI's elements and projects.json for a built tree (run, or from the cache)."""
    cached = os.path.join(CACHE, key + ".json")
    if os.path.exists(cached):
        with open(cached, encoding="utf-8") as fh:
            return json.load(fh)
    run = gemini_cli.run(built.cwd, built.home, built.env, binary=binary)
    assert run.returncode == 0, f"gemini exited {run.returncode}: {run.stderr[-1500:]}"
    projects_path = os.path.join(built.gemini_dir, "projects.json")
    with open(projects_path, encoding="utf-8") as fh:
        projects = json.load(fh)["projects"]
    result = {
        "system_context": run.system_context,
        "session_context": run.session_context,
        "projects": projects,
        "seconds": run.seconds,
    }
    os.makedirs(CACHE, exist_ok=True)
    with open(cached, "w", encoding="utf-8") as fh:
        json.dump(result, fh)
    return result


@pytest.mark.parametrize("tree", TREES, ids=[t.name for t in TREES])
def test_both_elements_equal_the_real_cli(cli, tree):
    root, built = build(tree)
    before = digest(root)
    env = GeminiEnv.from_environ({"HOME": built.home, "PATH": os.environ.get("PATH", ""), **built.env})
    context = session_context(built.cwd, env)
    assert digest(root) == before, "reading a Gemini home and project wrote something"
    key = hashlib.sha256(f"{CHECKED_VERSION}\0{tree.name}\0{root}\0{before}".encode()).hexdigest()[:24]
    real = captured(cli, root, built, key)
    assert context.system_context == real["system_context"]
    assert context.session_context == real["session_context"]
    slug = real["projects"].get(launch_key(built.cwd))
    assert context.discovery.private.slug == slug, (
        f"keepgui predicted {context.discovery.private.slug}, Gemini used {slug}"
    )


def test_a_fact_kept_for_a_folder_gemini_has_not_seen_loads_in_the_next_real_session(cli, tmp_path):
    """keepgui claims the private folder as a first session would (markers only, projects.json untouched);
    the real CLI then maps the folder to that slug and sends the fact, byte for byte as keepgui predicts."""
    from keepgui.backends.gemini.backend import GeminiSource
    from keepgui.core.history import History

    home = str(tmp_path / "home")
    gemini_cli.make_home(home)
    taken = str(tmp_path / "elsewhere" / "shop")
    os.makedirs(taken)
    put_marker = os.path.join(home, ".gemini", "tmp", "shop", ".project_root")
    os.makedirs(os.path.dirname(put_marker))
    with open(put_marker, "w", encoding="utf-8") as fh:
        fh.write(taken)  # another folder owns the slug "shop": the claim must take "shop-1"
    launch = str(tmp_path / "work" / "shop")
    os.makedirs(launch)
    environ = {"HOME": home, "PATH": os.environ.get("PATH", "")}
    source = GeminiSource(launch, environ=environ, history=History(str(tmp_path / "history")))
    bank = source.bank(source.scan().names[0])
    bank.load()
    bank.keep("Deploys go out on Tuesdays; ask @release-bot for the window")
    assert not os.path.exists(os.path.join(home, ".gemini", "projects.json"))
    predicted = session_context(launch, GeminiEnv.from_environ(environ))
    assert predicted.discovery.private.slug == "shop-1"
    run = gemini_cli.run(launch, home, binary=cli)
    assert run.returncode == 0, run.stderr[-1500:]
    assert run.system_context == predicted.system_context
    assert "- Deploys go out on Tuesdays; ask <!-- Import failed: release-bot" in (run.system_context or "")
    with open(os.path.join(home, ".gemini", "projects.json"), encoding="utf-8") as fh:
        assert json.load(fh)["projects"] == {launch_key(launch): "shop-1"}
