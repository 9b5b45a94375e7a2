"""Consumer marks across workers and replicas: agents/consumers.py's awaited ancestors kept
in Redis (docs/scale-out.md).

A flagged tool output whose agent span has not arrived leaves its missing ancestor
(trace, span) awaited; the request that holds it continues the walk and marks the agent.
``serve --workers N`` may deliver that request to another worker, so with ``redis_url`` set
:class:`SharedConsumers` keeps the awaited keys in one sorted set
(``llm-observe:consumers``: 24-byte trace+span ids, scored by wall-clock time):

- **remember** (only a request whose walk left it: a flagged tool whose agent is
  elsewhere): one script call adds the keys, forgets those older than ``ttl_s`` and, past
  ``max_pending``, the oldest;
- **find** (only a request holding an agent or workflow span, which is what can be marked):
  one script call takes (``ZREM``) every awaited key among the request's span ids, so
  exactly one worker continues each walk. A request without an agent or workflow span is
  not looked up: an awaited chain span (OpenInference's ``turn``) arriving alone, with its
  agent in a third request, ends that walk (per process it continues).

Redis down or slow (0.25 s socket timeout): this process's own memory, counted in
``llm_observe_shared_state_errors_total{op="consumers"}`` (llm_observe/sharedstate.py).
Blocking: the stage that calls it runs in the pipeline's worker thread.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from llm_observe.agents.classify import AGENT, WORKFLOW, AgentOp
from llm_observe.agents.consumers import Consumers, Key
from llm_observe.sharedstate import health_for

KEY = "llm-observe:consumers"
SOCKET_TIMEOUT_S = 0.25
WIDTH = 24  # trace id (16 bytes) + span id (8)

# KEYS: the set. ARGV: oldest score kept, the candidates packed (WIDTH bytes each). Returns
# the candidates that were awaited, now taken.
TAKE = r"""
local out, ids, oldest = {}, ARGV[2], tonumber(ARGV[1])
for i = 1, #ids, 24 do
  local id = string.sub(ids, i, i + 23)
  local score = redis.call('ZSCORE', KEYS[1], id)
  if score and redis.call('ZREM', KEYS[1], id) == 1 and tonumber(score) >= oldest then
    out[#out + 1] = id
  end
end
return out
"""

# KEYS: the set. ARGV: now, oldest score kept, max entries, ttl (s), keys packed.
PUT = r"""
local ids = ARGV[5]
for i = 1, #ids, 24 do
  redis.call('ZADD', KEYS[1], ARGV[1], string.sub(ids, i, i + 23))
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[2])
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3])
if over > 0 then redis.call('ZREMRANGEBYRANK', KEYS[1], 0, over - 1) end
redis.call('EXPIRE', KEYS[1], ARGV[4])
return 0
"""


class SharedConsumers(Consumers):
    """:class:`Consumers` with its awaited ancestors in Redis; its own memory as fallback."""

    blocking = True

    def __init__(self, url: str, registry: CollectorRegistry | None = None, *,
                 retry_s: float = 5.0, client: Any = None, **kw: Any) -> None:
        import redis

        super().__init__(**kw)
        self._client = client or redis.Redis.from_url(
            url, socket_timeout=SOCKET_TIMEOUT_S, socket_connect_timeout=SOCKET_TIMEOUT_S)
        self._take, self._put = (self._client.register_script(s) for s in (TAKE, PUT))
        self.health = health_for(registry, retry_s)
        self.round_trips = 0

    def _found(self, request: Any, ops: Sequence[AgentOp]) -> list[Key]:
        local = super()._found(request, ops)  # what it awaited while Redis was down
        if not any(op.kind in (AGENT, WORKFLOW) for op in ops) or not self.health.available():
            return local
        ids = b"".join(span.trace_id + span.span_id for rs in request.resource_spans
                       for ss in rs.scope_spans for span in ss.spans
                       if len(span.trace_id) == 16 and len(span.span_id) == 8)
        if not ids:
            return local
        try:
            self.round_trips += 1
            taken = self._take(keys=[KEY], args=[time.time() - self.ttl_s, ids])
        except Exception as exc:  # redis.RedisError, a timeout, a bad reply
            self.health.failed("consumers", exc)
            return local
        return local + [(bytes(k[:16]), bytes(k[16:])) for k in taken]

    def _remember(self, keys: list[Key]) -> None:
        shared = [k for k in keys if len(k[0]) == 16 and len(k[1]) == 8]
        if shared and self.health.available():
            now = time.time()
            try:
                self.round_trips += 1
                self._put(keys=[KEY], args=[now, now - self.ttl_s, self.max_pending,
                                            int(self.ttl_s) + 1, b"".join(t + s for t, s in
                                                                          shared)])
                keys = [k for k in keys if k not in set(shared)]
            except Exception as exc:
                self.health.failed("consumers", exc)
        if keys:
            super()._remember(keys)
