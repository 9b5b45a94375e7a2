"""One owner per directory: an exclusive ``flock`` on ``<directory>/.llm-observe.lock``.

Why: a spool directory holds files numbered from its owner's counter and temporaries it
deletes at start; two collectors on one directory overwrite and delete each other's
acknowledged batches. The kernel releases a ``flock`` when its holder exits, however it
exits (SIGKILL and OOM included), so a lock left by a dead process never blocks anyone
and no stale-lock heuristics are needed. The holder writes its pid into the file so a
refused process can name it. A leaf module: the spool and the supervisor both use it.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from pathlib import Path

log = logging.getLogger(__name__)

LOCK_NAME = ".llm-observe.lock"
_POLL_S = 0.05


class DirectoryBusy(Exception):
    """Another live process holds the directory; ``str(exc)`` is the one line to print."""

    def __init__(self, directory: Path, pid: int | None, what: str) -> None:
        holder = f"process {pid}" if pid else "another process"
        super().__init__(f"{what} {directory} is in use by {holder} (one collector per "
                         "directory: give each its own, or stop the other first)")
        self.directory, self.pid = directory, pid


class DirLock:
    """An exclusive lock on ``directory`` (created if missing), held until :meth:`release`
    or the process exits. ``wait_s`` > 0: wait that long for the holder to let go (a
    predecessor draining before it exits) before DirectoryBusy."""

    def __init__(self, directory: str | os.PathLike[str], what: str = "directory",
                 wait_s: float = 0.0) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / LOCK_NAME
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline, told = time.monotonic() + wait_s, False
        try:
            while not _try_lock(fd):
                holder = holder_pid(self.path)
                if time.monotonic() >= deadline:
                    raise DirectoryBusy(self.directory, holder, what)
                if not told:
                    log.warning("%s %s is held by process %s; waiting up to %.0f s for it "
                                "to finish", what, self.directory, holder or "?", wait_s)
                    told = True
                time.sleep(_POLL_S)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd: int | None = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Let go (idempotent). The file stays: deleting it would race a waiter's open."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # closing the only descriptor releases the flock


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def holder_pid(path: Path) -> int | None:
    """The pid written in a lock file, if any (the holder may still be writing it)."""
    for _ in range(3):
        try:
            text = path.read_text().strip()
        except OSError:
            return None
        if text.isdigit():
            return int(text)
        time.sleep(0.01)
    return None
