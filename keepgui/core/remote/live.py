"""A followed mirror is polled, with back-off, so remote changes reach the mirror's watcher (no Qt).

A stock machine has no file-change notifier keepgui may rely on, so a follower lists the remote
folder (one round trip, metadata only) every :data:`FAST` seconds after a change, slowing to
:data:`SLOW` while nothing changes, and fetches only what changed (:meth:`Mirror.sync`). The
mirror's files are replaced in place, so the window's watcher (:mod:`keepgui.core.watch`) sees
them exactly as it sees a local agent's writes: the same live reload, inbox and review.

When the machine stops answering, the mirror is marked offline (read-only: every write is
refused) and the follower tries again with a growing pause up to :data:`RETRY_MAX`; the first
listing that works brings the mirror up to date and the source back online.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from keepgui.core.errors import KeepguiError
from keepgui.core.remote.mirror import Mirror

FAST = 0.3
"""Seconds between listings just after a change."""
SLOW = 1.2
"""The longest pause between listings of a folder that answers (a change shows within ~1.5 s)."""
RETRY_MAX = 30.0
"""The longest pause between attempts to reach a machine that does not answer."""


class Follower:
    """Polls one mirror on a daemon thread until :meth:`stop` (see the module docstring).

    ``on_status(mirror)`` is called (on the follower's thread) when the mirror goes offline or
    comes back online.
    """

    def __init__(self, mirror: Mirror, on_status: Callable[[Mirror], None] | None = None) -> None:
        self.mirror = mirror
        self.on_status = on_status
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"keepgui-remote-{mirror.target.machine}", daemon=True)

    def start(self) -> None:
        """Start polling."""
        self._thread.start()

    def stop(self) -> None:
        """Stop polling (returns at once; the thread ends after its current listing)."""
        self._stop.set()

    def _loop(self) -> None:
        delay = FAST
        while not self._stop.is_set():
            was = self.mirror.online
            try:
                synced = self.mirror.sync()
                delay = FAST if synced.changed else min(SLOW, delay * 1.5)
            except (KeepguiError, OSError) as exc:
                self.mirror.online, self.mirror.problem = False, str(exc).splitlines()[0]
                delay = min(RETRY_MAX, max(1.0, delay * 2))
            if was != self.mirror.online and self.on_status is not None:
                try:
                    self.on_status(self.mirror)
                except Exception:  # a failing listener must not end the polling
                    logging.getLogger(__name__).exception("remote status listener failed")
            self._stop.wait(delay)


_followers: dict[str, Follower] = {}
_lock = threading.Lock()


def follow(root: str, on_status: Callable[[Mirror], None] | None = None) -> bool:
    """Poll the mirror holding the folder ``root`` (idempotent); False when ``root`` is in no mirror."""
    from keepgui.core import remote

    mirror = remote.mirror_for(root)
    if mirror is None:
        return False
    with _lock:
        if mirror.local not in _followers:
            follower = Follower(mirror, on_status)
            _followers[mirror.local] = follower
            follower.start()
    return True


def unfollow(root: str) -> None:
    """Stop polling the mirror whose folder is ``root``."""
    from keepgui.core import remote

    mirror = remote.mirror_for(root)
    if mirror is None:
        return
    with _lock:
        follower = _followers.pop(mirror.local, None)
    if follower is not None:
        follower.stop()
