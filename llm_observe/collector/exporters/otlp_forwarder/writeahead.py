"""Write-ahead mode's commit: a batch is in the spool, fsynced, before ``export`` returns
(and so before the door answers OK), as with the OTel Collector's persistent queue.

Group commit, as a database does with its log: exports arriving while a round is being
written wait for the next one, which writes them all together, in send-sized files,
with one executor trip and one directory fsync. Rounds run one at a time, in order. The
commit runs on the collector's event loop; the file I/O in an executor thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from llm_observe.collector.exporters.otlp_forwarder.queue import SendBatch
from llm_observe.collector.exporters.otlp_forwarder.spool import Spool
from llm_observe.otlp.encode import Item

log = logging.getLogger(__name__)


class GroupCommit:
    """Writes items to the spool for concurrent callers; see the module docstring."""

    def __init__(self, spool: Spool, cut: Callable[[Iterable[Item]], list[SendBatch]]) -> None:
        self.spool = spool
        self._cut = cut  # items -> send-sized batches: one file is one request to the backend
        self._pending: list[tuple[list[Item], asyncio.Future[bool]]] = []
        self.pending_bytes = 0  # accepted for writing, not yet on disk (counts against room)
        self._task: asyncio.Task[None] | None = None

    async def write(self, items: list[Item]) -> bool:
        """True once ``items`` are on disk; False if the spool could not be written."""
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._pending.append((items, done))
        self.pending_bytes += sum(len(item.data) for item in items)
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="otlp-spool-commit")
        return await done

    async def wait(self) -> None:
        """Until every write asked for so far has finished (shutdown)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                round_, self._pending = self._pending, []
                items = [item for batch, _ in round_ for item in batch]
                files = [(b.spans, b.data) for b in self._cut(items)]
                try:
                    await loop.run_in_executor(None, self.spool.write_many, files)
                    ok = True
                except Exception as exc:  # OSError; RuntimeError if the executor is gone
                    # one line, no traceback: a full disk fails a round every probe
                    log.error("cannot write %d spans to the spool %s: %s",
                              sum(spans for spans, _ in files), self.spool.directory, exc)
                    ok = False
                finally:
                    self.pending_bytes -= sum(len(item.data) for item in items)
                for _, done in round_:
                    if not done.done():  # a caller cancelled meanwhile: its spans are kept
                        done.set_result(ok)
        finally:
            self._task = None
