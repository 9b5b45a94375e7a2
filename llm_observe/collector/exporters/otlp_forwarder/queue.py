"""The forwarder's in-memory queue: encoded items, bounded by spans and bytes, taken
out in send-sized batches."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from llm_observe.otlp.encode import Item


@dataclass(eq=False, slots=True)
class SendBatch:
    """Bytes of one export request holding ``spans`` spans; ``path`` when it is a spool
    file."""

    data: bytes
    spans: int
    path: Path | None = None


class SendQueue:
    """FIFO of :class:`Item`s. ``spans``/``bytes`` count what is queued *and* taken but
    not yet released (in flight), so the bound covers both. Event-loop thread only."""

    def __init__(self, batch_spans: int, batch_bytes: int) -> None:
        self.batch_spans, self.batch_bytes = batch_spans, batch_bytes
        self._items: deque[Item] = deque()
        self.spans = 0
        self.bytes = 0

    def room(self, n: int, max_spans: int, max_bytes: int) -> bool:
        """Whether ``n`` more spans fit. An empty queue takes any request, so an oversized
        one is not refused forever."""
        return self.spans == 0 or (self.spans + n <= max_spans and self.bytes < max_bytes)

    def put(self, items: list[Item]) -> None:
        self._items.extend(items)
        self.spans += sum(item.spans for item in items)
        self.bytes += sum(len(item.data) for item in items)

    def take(self) -> SendBatch | None:
        """The next send-sized batch (still counted until :meth:`release`)."""
        if not self._items:
            return None
        first = self._items.popleft()
        parts, spans, size = [first.data], first.spans, len(first.data)
        while self._items:
            item = self._items[0]
            if spans + item.spans > self.batch_spans or size + len(item.data) > self.batch_bytes:
                break
            self._items.popleft()
            parts.append(item.data)
            spans += item.spans
            size += len(item.data)
        return SendBatch(b"".join(parts), spans)

    def release(self, batch: SendBatch) -> None:
        """A taken batch is done with (delivered, dropped or handed to the spool)."""
        self.spans -= batch.spans
        self.bytes -= len(batch.data)

    def drain(self) -> list[SendBatch]:
        """Everything still queued, as send-sized batches; the queue is empty after."""
        batches = self.cut(self._items)
        self._items.clear()
        self.spans = self.bytes = 0
        return batches

    def cut(self, items: Iterable[Item]) -> list[SendBatch]:
        """Items as send-sized batches (the same bounds :meth:`take` uses)."""
        batches: list[SendBatch] = []
        parts: list[bytes] = []
        spans = size = 0
        for item in items:
            if parts and (spans + item.spans > self.batch_spans
                          or size + len(item.data) > self.batch_bytes):
                batches.append(SendBatch(b"".join(parts), spans))
                parts, spans, size = [], 0, 0
            parts.append(item.data)
            spans += item.spans
            size += len(item.data)
        if parts:
            batches.append(SendBatch(b"".join(parts), spans))
        return batches
