"""On-disk spool for the OTLP forwarder: what memory cannot hold survives a restart.

One file per batch, named ``<sequence>-<spans>.otlp``, holding the bytes of an
``ExportTraceServiceRequest`` (the forwarder's items concatenated). A file is
written to a temporary name (``.tmp``, never read: removed at start), fsynced and
renamed, then the directory is fsynced, so a crash leaves either the whole batch or
nothing; it is deleted only once the backend has taken it. Blocking file I/O: the
forwarder calls these methods from an executor thread.

One process owns a spool directory (:mod:`llm_observe.dirlock`, taken before anything is
read or deleted): a second collector on it stops at start with DirectoryBusy instead of
numbering over the first one's files, and every ``.tmp`` found at start is a dead
owner's interrupted write, never a live process's.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from llm_observe.dirlock import DirLock

log = logging.getLogger(__name__)

SUFFIX = ".otlp"


class Spool:
    """A bounded directory of pending batches, oldest first. Thread-safe."""

    def __init__(self, directory: str | os.PathLike[str], max_bytes: int,
                 lock_wait_s: float = 0.0) -> None:
        """Take the directory (DirectoryBusy if another process holds it after
        ``lock_wait_s``), then list what a previous owner left."""
        self.directory = Path(directory)
        self.owner = DirLock(self.directory, "spool directory", lock_wait_s)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._files: OrderedDict[Path, tuple[int, int]] = OrderedDict()  # path -> spans, bytes
        self._next = 0
        self.spans = 0  # totals over the files, kept current under the lock
        self.bytes = 0
        for path in sorted(self.directory.glob(f"*{SUFFIX}")):
            try:
                seq, spans = path.stem.split("-")
                self._add(path, int(spans), path.stat().st_size)
                self._next = max(self._next, int(seq) + 1)
            except (ValueError, OSError):
                log.warning("ignoring unexpected file in the spool directory: %s", path)
        for tmp in self.directory.glob("*.tmp"):  # a dead owner's interrupted write
            tmp.unlink(missing_ok=True)
        if self._files:
            log.info("spool %s holds %d spans from a previous run", self.directory, self.spans)

    def close(self) -> None:
        """Give the directory up (the next owner may start); the files stay."""
        self.owner.release()

    def _add(self, path: Path, spans: int, size: int) -> None:
        self._files[path] = (spans, size)
        self.spans += spans
        self.bytes += size

    def __len__(self) -> int:
        return len(self._files)

    def has_room(self, pending: int = 0) -> bool:
        """Whether more fits: ``pending`` bytes on their way in count as written. An empty
        spool takes anything, so an oversized batch is not refused forever."""
        return self.bytes + pending < self.max_bytes or not self._files

    def write(self, spans: int, data: bytes) -> Path:
        """Store one batch durably; returns its path. Raises OSError on I/O failure."""
        return self.write_many([(spans, data)])[0]

    def write_many(self, batches: Sequence[tuple[int, bytes]]) -> list[Path]:
        """Store batches (spans, request bytes) durably, one file each, with one directory
        fsync for all; returns their paths once every one is on disk. Raises OSError on
        I/O failure: then none was written, or (a failed rename or directory sync, rarely)
        some were and will be sent."""
        with self._lock:
            first = self._next
            self._next += len(batches)
        paths = [self.directory / f"{first + i:016d}-{spans}{SUFFIX}"
                 for i, (spans, _) in enumerate(batches)]
        tmps = [path.with_suffix(".tmp") for path in paths]
        try:
            for tmp, (_, data) in zip(tmps, batches, strict=True):
                with open(tmp, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
            for tmp, path, (spans, data) in zip(tmps, paths, batches, strict=True):
                os.replace(tmp, path)  # the whole batch appears at once, or not at all
                with self._lock:
                    self._add(path, spans, len(data))
            _sync_directory(self.directory)  # the renames survive a power cut too
        except OSError:
            for tmp in tmps:
                tmp.unlink(missing_ok=True)
            raise
        return paths

    def oldest(self, skip: set[Path]) -> tuple[Path, int] | None:
        """The oldest batch not in ``skip`` (those being sent): (path, spans)."""
        with self._lock:
            for path, (spans, _) in self._files.items():
                if path not in skip:
                    return path, spans
        return None

    def read(self, path: Path) -> bytes:
        return path.read_bytes()

    def remove(self, path: Path) -> None:
        """Forget a delivered (or permanently refused) batch and delete its file."""
        self.forget(path)
        self.delete(path)

    def delete(self, path: Path) -> None:
        """Delete the file of a forgotten batch."""
        try:
            path.unlink(missing_ok=True)
        except OSError:
            log.warning("cannot delete the sent spool file %s: a restart sends it again", path)

    def forget(self, path: Path) -> None:
        """Drop a batch from the listing (no I/O: safe on the event loop); its file is
        deleted by the caller. Never handed out by :meth:`oldest` again."""
        with self._lock:
            entry = self._files.pop(path, None)
            if entry is not None:
                self.spans -= entry[0]
                self.bytes -= entry[1]


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
