"""Several destinations as one exporter: each batch to every destination's forwarder,
encoded once per (text policy, span filter), each forwarder with its own queue, spool and
workers. The encodings run one after the other in text order — ``full``, then
``redacted``, then ``none`` — because the encoder rewrites the received request in place
and texts only go that way (:mod:`otlp.inplace`).

The rule that keeps a slow or dead destination from stalling the others
(docs/forwarding.md, "When a destination is full"): the doors are told to back off only
when *every* destination is full (``has_room``), so nothing has been committed anywhere
and the sender's retry duplicates nothing. A destination that is full while another has
room does not take its copy: those spans are counted in
``llm_observe_otlp_dropped_spans_total{destination, reason="destination_full"}``. So a
dead destination first fills its spool (1 GiB by default: hours of traffic), then loses
spans counted, while the live ones go on. Likewise a write-ahead destination whose disk
refuses the batch: dropped there and counted, unless every destination refused.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from llm_observe.collector.exporters.otlp_forwarder.forwarder import OtlpForwarder
from llm_observe.otlp.encode import Item
from llm_observe.otlp.inplace import RANK
from llm_observe.pipeline import Backpressure, Batch
from llm_observe.span import LlmSpan

log = logging.getLogger(__name__)


class Fanout:
    """The exporter over several :class:`OtlpForwarder`; see the module docstring."""

    name = "otlp"

    def __init__(self, forwarders: Sequence[OtlpForwarder]) -> None:
        self.forwarders = list(forwarders)
        # forwarders whose encoders make the same bytes share one encoding of a batch
        self._groups: dict[tuple[int, str], list[OtlpForwarder]] = {}
        for f in sorted(self.forwarders, key=lambda f: RANK[f.encoder.text]):
            e = f.encoder
            self._groups.setdefault((RANK[e.text], e.spans), []).append(f)

    def has_room(self, n: int) -> bool:
        return any(f.has_room(n) for f in self.forwarders)

    async def start(self) -> None:
        for f in self.forwarders:
            await f.start()

    async def export(self, batch: Sequence[LlmSpan]) -> None:
        n = batch.size if isinstance(batch, Batch) else len(batch)
        taking = [f for f in self.forwarders if f.has_room(n)]
        if not taking:
            raise Backpressure(self.name)
        groups = [[f for f in group if f in taking] for group in self._groups.values()]
        groups = [group for group in groups if group]
        made = [await group[0].encode(batch, last=k == len(groups) - 1)
                for k, group in enumerate(groups)]  # in text order: one request, in place
        encoded: dict[int, list[Item]] = {id(f): items for group, items in zip(
            groups, made, strict=True) for f in group}
        results = await asyncio.gather(*(f.deliver(encoded[id(f)]) for f in taking),
                                       return_exceptions=True)
        refused = [f for f, r in zip(taking, results, strict=True) if r is not None]
        if len(refused) == len(taking):
            raise Backpressure(self.name)  # nothing was committed anywhere: retry all
        for f in self.forwarders:
            if f not in taking or f in refused:
                f.metrics.dropped.labels("destination_full").inc(n)
        for f, r in zip(taking, results, strict=True):
            if r is not None and not isinstance(r, Backpressure):
                log.error("destination %s failed on a batch (%r); %d spans dropped there",
                          f.destination, r, n)

    async def shutdown(self, timeout: float) -> None:
        """Every forwarder drains within the same ``timeout``, side by side."""
        await asyncio.gather(*(f.shutdown(timeout) for f in self.forwarders))

    @property
    def queued_spans(self) -> int:
        return sum(f.queued_spans for f in self.forwarders)

    @property
    def spooled_spans(self) -> int:
        return sum(f.spooled_spans for f in self.forwarders)
