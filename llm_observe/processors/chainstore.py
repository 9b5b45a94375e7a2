"""Tool-call chain state in Redis, shared by every worker and replica (docs/scale-out.md).

Routing by trace id sends a trace's spans to one replica, but workers on one host share
their ports (SO_REUSEPORT spreads connections, not traces), and a client may switch
replica between two turns of a chain. With ``redis_url`` set, a chain's steps, tool-call
turns and cumulative cost live in one Redis hash per trace (``llm-observe:chain:<trace>``),
updated atomically by a Lua script (the same rules as :class:`ToolChainTracker`: a chain
opens on ``tool_calls``, the cost saturates at MAX_TRACE_COST_USD_MICRO, idle chains expire
after ``ttl_s``). A batch is one round trip (a pipeline of script calls).

Redis down or slow (a 0.25 s socket timeout): the spans of that batch fall back to this
process's own tracker — enrichment degrades to per-process chains, ingest and metrics go on
— counted in ``llm_observe_shared_state_errors_total`` and logged at most once a minute, and
Redis is not asked again for ``retry_s`` (by this store nor agents/runstore.py:
llm_observe/sharedstate.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from llm_observe.processors.toolchain import (
    MAX_TRACE_COST_USD_MICRO,
    TOOL_CALLS,
    ChainState,
    ToolChainTracker,
)
from llm_observe.sharedstate import health_for

PREFIX = "llm-observe:chain:"
SOCKET_TIMEOUT_S = 0.25

# KEYS[1] the chain's hash; ARGV: cost (>= 0), is_tool_calls (0/1), open_chain (0/1),
# span id, ttl (s), max cost. Returns {steps, turns, cost, last span id} or nil (no chain).
_TRACK = """
local key = KEYS[1]
if redis.call('EXISTS', key) == 0 and ARGV[2] == '0' and ARGV[3] == '0' then
  return nil
end
local steps = redis.call('HINCRBY', key, 'steps', 1)
local turns = redis.call('HINCRBY', key, 'turns', tonumber(ARGV[2]))
local cost = tonumber(redis.call('HGET', key, 'cost') or '0') + tonumber(ARGV[1])
if cost > tonumber(ARGV[6]) then cost = tonumber(ARGV[6]) end
redis.call('HSET', key, 'cost', string.format('%d', cost), 'last', ARGV[4])
redis.call('EXPIRE', key, tonumber(ARGV[5]))
return {steps, turns, string.format('%d', cost), ARGV[4]}
"""

Item = tuple[str, int | None, str | None, str | None, bool]  # trace, cost, span, finish, open


class RedisChainTracker:
    """The :class:`ToolChainTracker` interface over Redis, with a local fallback."""

    def __init__(self, url: str, registry: CollectorRegistry | None = None, *,
                 ttl_s: float = 3600.0, retry_s: float = 5.0, client: Any = None) -> None:
        import redis

        self.ttl_s = ttl_s
        self.local = ToolChainTracker(ttl_s=ttl_s)
        self._client = client or redis.Redis.from_url(
            url, socket_timeout=SOCKET_TIMEOUT_S, socket_connect_timeout=SOCKET_TIMEOUT_S)
        self._script = self._client.register_script(_TRACK)
        self.health = health_for(registry, retry_s)  # shared with agents/runstore.py
        self.errors = self.health.errors
        self.degraded = Counter("llm_observe_shared_state_degraded_spans",
                                "Spans enriched with per-process chain state because Redis "
                                "was unavailable", registry=registry)

    # --- the ToolChainTracker interface -------------------------------------------------

    def track(self, trace_id: str, cost_usd_micro: int | None, *, span_id: str | None = None,
              finish_reason: str | None = None, open_chain: bool = True) -> ChainState | None:
        (state,) = self.track_many([(trace_id, cost_usd_micro, span_id, finish_reason,
                                     open_chain)])
        return state

    def track_many(self, items: Sequence[Item]) -> list[ChainState | None]:
        """Track spans in order, one Redis round trip; local state if Redis fails."""
        if not items:
            return []
        if self._available():
            try:
                pipe = self._client.pipeline(transaction=False)
                for trace_id, cost, span_id, finish, open_chain in items:
                    self._script(keys=[PREFIX + trace_id], client=pipe, args=[
                        max(cost or 0, 0), int(finish == TOOL_CALLS), int(open_chain),
                        span_id or "", int(self.ttl_s), MAX_TRACE_COST_USD_MICRO])
                replies = pipe.execute()
                return [self._state(t[0], r) for t, r in zip(items, replies, strict=True)]
            except Exception as exc:  # redis.RedisError, a timeout, a bad reply
                self._failed("track", exc)
        self.degraded.inc(len(items))
        return [self.local.track(trace_id, cost, span_id=span_id, finish_reason=finish,
                                 open_chain=open_chain)
                for trace_id, cost, span_id, finish, open_chain in items]

    def get(self, trace_id: str) -> ChainState | None:
        if self._available():
            try:
                fields = self._client.hgetall(PREFIX + trace_id)
                if not fields:
                    return None
                return self._state(trace_id, [fields[b"steps"], fields.get(b"turns", b"0"),
                                              fields.get(b"cost", b"0"),
                                              fields.get(b"last", b"")])
            except Exception as exc:
                self._failed("get", exc)
        return self.local.get(trace_id)

    def clear(self, trace_id: str | None = None) -> int:
        """Forget one chain (or all of them); local state too. Returns how many."""
        n = self.local.clear(trace_id)
        if not self._available():
            return n
        try:
            if trace_id is not None:
                return max(n, int(self._client.delete(PREFIX + trace_id)))
            removed = 0
            for keys in _chunks(self._client.scan_iter(match=PREFIX + "*", count=500), 500):
                removed += int(self._client.delete(*keys))
            return max(n, removed)
        except Exception as exc:
            self._failed("clear", exc)
            return n

    # --- internals ----------------------------------------------------------------------

    def _state(self, trace_id: str, reply: Any) -> ChainState | None:
        if reply is None:
            return None
        steps, turns, cost, last = reply
        return ChainState(trace_id, steps=int(steps), tool_call_turns=int(turns),
                          cumulative_cost_usd_micro=int(cost),
                          last_span_id=(last.decode() if isinstance(last, bytes) else last)
                          or None, updated_at=time.monotonic())

    def _available(self) -> bool:
        return self.health.available()

    def _failed(self, op: str, exc: Exception) -> None:
        self.health.failed(op, exc)


def _chunks(it: Any, n: int) -> Any:
    batch: list[Any] = []
    for item in it:
        batch.append(item)
        if len(batch) == n:
            yield batch
            batch = []
    if batch:
        yield batch
