"""One call, one count across workers and replicas: the wrapper memory of agents/dedup.py
kept in Redis (docs/scale-out.md).

``serve --workers N`` spreads connections, not traces, so the two spans of a wrapper pair
exported in two requests may reach two workers, each of which would count its span. With
``redis_url`` set, :class:`SharedWrapperMemory` applies agents/dedup.py's rule with the
memory in Redis:

- a pair inside one batch is found locally (no round trip);
- the other LLM spans of the batch (*lone*: no LLM parent or child in it) go to Redis in
  **one script call per batch**, and only batches holding a lone LLM span make one. The
  script, atomic, marks each span as dedup.py's memory does (its own key a remembered
  parent: a wrapper after its counted child; its parent a remembered counted span: the
  inner span after its counted wrapper, ``wrapper_counted``) and remembers the counted
  ones. So two workers racing with the two halves of a pair count it once: whichever
  script ran first.
- the memory: two generations of :data:`WINDOW_S` seconds (``llm-observe:dedup:<n>``, ``n``
  the wall-clock window; a hash of ``s<trace><span>`` for counted spans and
  ``p<trace><parent>`` -> the counted child's id), each expiring after two windows: a pair
  split by more than 30-60 s is counted twice. About 250 bytes of Redis per lone LLM span,
  for 60-90 s. A pair found inside a batch is not written (a third nesting level arriving
  later elsewhere is then counted on its own, as per process).

Redis down or slow (0.25 s socket timeout): the batch, and every batch for the next
``retry_s``, is marked by this process's own :class:`WrapperMemory` (first arrival per
process, as without Redis), counted in ``llm_observe_shared_state_errors_total{op="dedup"}``
(health shared with the other stores: llm_observe/sharedstate.py). Blocking: the stage runs
in the pipeline's worker thread.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from llm_observe.agents.dedup import WrapperMemory, parent_keys, span_keys, wrapped
from llm_observe.sharedstate import health_for
from llm_observe.span import LlmSpan

PREFIX = "llm-observe:dedup:"
WINDOW_S = 30
SOCKET_TIMEOUT_S = 0.25

# KEYS: this window's hash, the previous one's. ARGV: ttl, then the batch's lone spans as
# one string, a line "trace\tspan\tparent\n" each (parent "" for a root; one argument, not
# three per span: redis-py's encoding per argument was most of the caller's cost). Returns,
# flat, (line number, "w<child id>" | "i<parent id>") for the spans not counted: a wrapper of
# a counted child; the inner span of a counted wrapper. The others are counted: remembered.
MARK = r"""
local cur, prev, out, n = KEYS[1], KEYS[2], {}, 0
for trace, span, parent in string.gmatch(ARGV[2], '([^\t\n]*)\t([^\t\n]*)\t([^\n]*)\n') do
  n = n + 1
  local key, pkey = trace .. span, 's' .. trace .. parent
  local a = redis.call('HMGET', cur, 'p' .. key, pkey)
  local b = redis.call('HMGET', prev, 'p' .. key, pkey)
  local dup = a[1] or b[1]
  if dup then
    dup = 'w' .. dup
  elseif parent ~= '' and (a[2] or b[2]) then
    dup = 'i' .. parent
  elseif parent ~= '' then
    redis.call('HSET', cur, 's' .. key, '1', 'p' .. trace .. parent, span)
  else
    redis.call('HSET', cur, 's' .. key, '1')
  end
  if dup then
    out[#out + 1] = n
    out[#out + 1] = dup
  end
end
redis.call('EXPIRE', cur, ARGV[1])
return out
"""


class SharedWrapperMemory:
    """agents/dedup.py's :class:`~llm_observe.agents.dedup.Memory` over Redis, with a
    per-process :class:`WrapperMemory` as fallback. Thread-safe (redis-py's pool)."""

    blocking = True

    def __init__(self, url: str, registry: CollectorRegistry | None = None, *,
                 window_s: int = WINDOW_S, retry_s: float = 5.0, client: Any = None) -> None:
        import redis

        self.window_s = window_s
        self.local = WrapperMemory()
        self._client = client or redis.Redis.from_url(
            url, socket_timeout=SOCKET_TIMEOUT_S, socket_connect_timeout=SOCKET_TIMEOUT_S)
        self._mark = self._client.register_script(MARK)
        self.health = health_for(registry, retry_s)
        self._duplicates = self._wrapper_counted = 0
        self.round_trips = 0

    @property
    def duplicates(self) -> int:
        return self._duplicates + self.local.duplicates

    @property
    def wrapper_counted(self) -> int:
        return self._wrapper_counted + self.local.wrapper_counted

    def mark(self, batch: Sequence[LlmSpan]) -> None:
        """Set ``duplicate_of`` as agents/dedup.py's memory does, over every worker's spans."""
        if not batch:
            return
        if not self.health.available():
            self.local.mark(batch)
            return
        keys, pkeys = span_keys(batch), parent_keys(batch)
        inner = {} if set(pkeys).isdisjoint(keys) else wrapped(keys, pkeys)
        paired = set(inner.values())
        lone = [i for i, k in enumerate(keys) if k not in inner and i not in paired]
        marks: list[tuple[int, str]] = []
        if lone:
            try:
                marks = self._shared(batch, lone)
            except Exception as exc:  # redis.RedisError, a timeout, a bad reply
                self.health.failed("dedup", exc)
                self.local.mark(batch)
                return
        for i, k in enumerate(keys):
            if k in inner:  # a pair inside the batch: its inner span counts
                marks.append((i, "w" + batch[inner[k]].span_id))
        for i, mark in marks:
            batch[i].duplicate_of = mark[1:]
            self._duplicates += 1
            self._wrapper_counted += mark[0] == "i"

    def _shared(self, batch: Sequence[LlmSpan], lone: list[int]) -> list[tuple[int, str]]:
        """One script call for the ``lone`` spans of ``batch``: (index, reply) of those not
        counted. A span whose ids hold a tab or a newline (no hex id does) would garble the
        lines: it is left out (counted here, not shared)."""
        lines = []
        for i in lone:
            s = batch[i]
            p = s.parent_span_id
            lines.append(f"{s.trace_id}\t{s.span_id}\t{p if p and p != s.span_id else ''}\n")
        text = "".join(lines)
        if text.count("\n") != len(lines) or text.count("\t") != 2 * len(lines):
            lone = [i for i, line in zip(lone, lines, strict=True)
                    if line.count("\t") == 2 and line.count("\n") == 1]
            text = "".join(line for line in lines
                           if line.count("\t") == 2 and line.count("\n") == 1)
            if not lone:
                return []
        n = int(time.time() // self.window_s)
        self.round_trips += 1
        reply = self._mark(keys=[f"{PREFIX}{n}", f"{PREFIX}{n - 1}"],
                           args=[2 * self.window_s, text])
        return [(lone[int(line) - 1], dup.decode())
                for line, dup in zip(reply[::2], reply[1::2], strict=True)]
