"""When to try a spool again after a write failed (disk full, read-only, quota).

Why not a fixed pause: the disk gets room back when something is deleted, and the
senders were told to retry in about a second, so the spool should be tried again soon
after. A failed write leaves the spool out for ``FIRST_S``, doubling up to ``MAX_S``
while writes keep failing (at most one refused request's work a ``MAX_S`` while the disk
stays full); a write that succeeds, or a spool file the forwarder deletes (room on that
very disk), ends the pause at once. Ingest is so answered OK within about ``MAX_S`` plus
one retry of the sender after the disk has room.
"""

from __future__ import annotations

import time

FIRST_S = 0.1
MAX_S = 1.0


class SpaceProbe:
    """The pause after a failed spool write. Event-loop thread only."""

    __slots__ = ("_pause", "_until")

    def __init__(self) -> None:
        self._until = 0.0  # monotonic time before which the spool is not tried
        self._pause = 0.0

    def usable(self) -> bool:
        return time.monotonic() >= self._until

    def failed(self) -> float:
        """A write failed: leave the spool out for the next pause; return it (seconds)."""
        self._pause = min(MAX_S, self._pause * 2) if self._pause else FIRST_S
        self._until = time.monotonic() + self._pause
        return self._pause

    def succeeded(self) -> None:
        """A write went through, or a spool file was deleted: try again at once."""
        self._pause = self._until = 0.0
