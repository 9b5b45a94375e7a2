"""On-disk spool for the OTLP forwarder: what memory cannot hold survives a restart.

One file per batch, named ``<sequence>-<spans>.otlp``, holding the bytes of an
``ExportTraceServiceRequest`` (the forwarder's items concatenated). A file is
written to a temporary name, fsynced and renamed, so a crash leaves either the
whole batch or nothing; it is deleted only once the backend has taken it.
Blocking file I/O: the forwarder calls these methods from an executor thread.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from pathlib import Path

log = logging.getLogger(__name__)

SUFFIX = ".otlp"


class Spool:
    """A bounded directory of pending batches, oldest first. Thread-safe."""

    def __init__(self, directory: str | os.PathLike[str], max_bytes: int) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
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
        for tmp in self.directory.glob("*.tmp"):  # a write interrupted by a crash
            tmp.unlink(missing_ok=True)
        if self._files:
            log.info("spool %s holds %d spans from a previous run", self.directory, self.spans)

    def _add(self, path: Path, spans: int, size: int) -> None:
        self._files[path] = (spans, size)
        self.spans += spans
        self.bytes += size

    def __len__(self) -> int:
        return len(self._files)

    def has_room(self) -> bool:
        return self.bytes < self.max_bytes

    def write(self, spans: int, data: bytes) -> Path:
        """Store one batch durably; returns its path. Raises OSError on I/O failure."""
        with self._lock:
            seq = self._next
            self._next += 1
        path = self.directory / f"{seq:016d}-{spans}{SUFFIX}"
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        with self._lock:
            self._add(path, spans, len(data))
        return path

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
        """Forget a delivered (or permanently refused) batch."""
        with self._lock:
            entry = self._files.pop(path, None)
            if entry is not None:
                self.spans -= entry[0]
                self.bytes -= entry[1]
        path.unlink(missing_ok=True)
