"""Agent-run state in Redis, shared by every worker and replica (docs/scale-out.md).

``serve --workers N`` spreads one trace's connections over workers, so the spans of one run
can reach several. With ``redis_url`` set, :class:`RedisRunStore` keeps what
agents/runs.py keeps per trace in one Redis hash per trace (``llm-observe:run:<trace>``),
and the same rules (:func:`~llm_observe.agents.runs.owner`, :func:`close`) decide the run:

- **add** (one round trip per batch: one Lua script call for all its traces) writes
  each span's link, member (call or tool: start, end, cost) or run span (agent/workflow),
  bounded by ``max_spans`` per trace (past it: *dropped*, run spans have
  :data:`~llm_observe.agents.runs.MAX_RUN_SPANS` more room). A run span's first arrival
  enters the sorted set ``llm-observe:runs:open`` (score: wall-clock arrival). A trace is
  *held* from its first agent, tool or workflow span (``llm-observe:runs:traces``, score:
  last activity; the hash expires after 2 × ``timeout_s``); the calls of a trace not (yet)
  held expire after :data:`WAIT_S` (the in-process FIFO's place).
- **flush** claims each run that settled with one atomic script: ``ZREM`` from the open set
  (exactly one worker gets 1), mark it closed and read the trace's hash in the same step;
  that worker computes the run and takes its members with ``HDEL`` (a member counts for
  the worker whose ``HDEL`` removed it: a member racing a late check is counted once).
  Traces idle for ``timeout_s`` (or the oldest past ``max_traces``) are claimed the same
  way and deleted, counting *incomplete* runs as in runs.py.
- **late**: a member added to a trace with a closed run is checked (one more round trip,
  for those traces only); if its owner is closed and its ``HDEL`` wins, it is late.

Redis down or slow (0.25 s socket timeout): the batch and everything for the next
``retry_s`` go to this process's own :class:`RunTracker` (its runs are measured per
process, as without Redis), counted in ``llm_observe_shared_state_errors_total{op}`` and
``llm_agent_run_degraded_spans_total``, logged once a minute (llm_observe/sharedstate.py).
A batch whose pipeline failed mid-way may be in both (a run measured twice, at worst); a
claim whose reply was lost is a run not measured. Blocking: call it off the event loop.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from llm_observe.agents.classify import AGENT, TOOL, WORKFLOW, AgentOp
from llm_observe.agents.runs import (
    MAX_RUN_SPANS,
    MAX_SPANS,
    MAX_TRACES,
    SETTLE_S,
    TIMEOUT_S,
    Counts,
    Member,
    Run,
    RunTracker,
    TraceState,
    close,
    owner,
)
from llm_observe.agents.runstore_lua import ADD, CLAIM, SWEEP
from llm_observe.sharedstate import health_for

PREFIX = "llm-observe:run:"
OPEN = "llm-observe:runs:open"
TRACES = "llm-observe:runs:traces"
WAIT_S = 300  # the calls of a trace with no agent, tool or workflow span yet
SOCKET_TIMEOUT_S = 0.25
CLAIM_BATCH = 256  # runs (and idle traces) claimed per flush and kind

_KIND = {AGENT: "a", WORKFLOW: "w", TOOL: "t"}


class RedisRunStore:
    """The :class:`~llm_observe.agents.runs.RunStore` contract over Redis, with a
    per-process :class:`RunTracker` as fallback."""

    blocking = True

    def __init__(self, url: str, registry: CollectorRegistry | None = None, *,
                 settle_s: float = SETTLE_S, timeout_s: float = TIMEOUT_S,
                 max_traces: int = MAX_TRACES, max_spans: int = MAX_SPANS,
                 retry_s: float = 5.0, client: Any = None) -> None:
        import redis

        self.settle_s, self.timeout_s = settle_s, timeout_s
        self.max_traces, self.max_spans = max_traces, max_spans
        self.local = RunTracker(settle_s, timeout_s, max_traces, max_spans)
        self.own = Counts()
        self._client = client or redis.Redis.from_url(
            url, socket_timeout=SOCKET_TIMEOUT_S, socket_connect_timeout=SOCKET_TIMEOUT_S)
        self._add, self._claim, self._sweep = (self._client.register_script(s)
                                               for s in (ADD, CLAIM, SWEEP))
        self.health = health_for(registry, retry_s)  # shared with processors/chainstore.py
        self.degraded = Counter("llm_agent_run_degraded_spans",
                                "Spans kept for agent runs in this process's own state "
                                "because Redis was unavailable", registry=registry)

    @property
    def counts(self) -> Counts:
        a, b = self.own, self.local.counts
        return Counts(a.late + b.late, a.incomplete + b.incomplete, a.dropped + b.dropped)

    def add(self, now: float, links: Iterable[tuple[str, str, str]],
            calls: Iterable[tuple[str, str, str, int, int, int]], ops: Iterable[AgentOp]) -> None:
        links, calls, ops = list(links), list(calls), list(ops)
        per: dict[str, list[str]] = {}
        for op in ops:
            kind = _KIND.get(op.kind)
            if kind is not None:
                parent = op.parent_id.hex()
                payload = (f"t,{op.start_ns},{op.end_ns},0" if kind == "t" else json.dumps(
                    [op.kind, op.name, op.service_name, parent, op.start_ns, op.end_ns]))
                per.setdefault(op.trace_id.hex(), []).extend(
                    (kind, op.span_id.hex(), parent, payload))
        for trace, span, parent, start, end, cost in calls:
            if parent:
                per.setdefault(trace, []).extend(("c", span, parent, f"c,{start},{end},{cost}"))
        for trace, span, parent in links:
            per.setdefault(trace, []).extend(("l", span, parent, ""))
        if not per:
            return
        if self.health.available():
            try:
                self._add_shared(self._wall(now), per)
                return
            except Exception as exc:  # redis.RedisError, a timeout, a bad reply
                self.health.failed("run_add", exc)
        self.degraded.inc(sum(len(v) // 4 for v in per.values()))
        self.local.add(now, links, calls, ops)

    def flush(self, now: float) -> list[Run]:
        """Runs this worker claimed and closed, and those of its fallback tracker."""
        out = self.local.flush(now)
        if self.health.available():
            try:
                out += self._flush_shared(self._wall(now))
            except Exception as exc:
                self.health.failed("run_flush", exc)
        return out

    # --- internals ----------------------------------------------------------------------
    @staticmethod
    def _wall(now: float) -> float:
        """The caller's monotonic ``now`` (plus any pretend delay) as wall-clock time, the
        one clock every worker and replica shares."""
        return now + (time.time() - time.monotonic())

    def _add_shared(self, wall: float, per: dict[str, list[str]]) -> None:
        traces = list(per)
        args: list[Any] = [wall, int(2 * self.timeout_s), WAIT_S, self.max_spans,
                           MAX_RUN_SPANS]
        for trace in traces:
            args += [trace, len(per[trace]) // 4, *per[trace]]
        reply = self._add(keys=[OPEN, TRACES, *(PREFIX + t for t in traces)], args=args)
        recheck = []
        for trace, dropped, closed in zip(traces, reply[::2], reply[1::2], strict=True):
            self.own.dropped += int(dropped)
            if int(closed):
                recheck.append(trace)
        if recheck:  # members may belong to runs already measured: late
            self._late(recheck, per)

    def _late(self, traces: list[str], per: dict[str, list[str]]) -> None:
        pipe = self._client.pipeline(transaction=False)
        for trace in traces:
            pipe.hgetall(PREFIX + trace)
        late: list[tuple[str, str]] = []
        for trace, fields in zip(traces, pipe.execute(), strict=True):
            t = _state(fields)
            items = per[trace]
            for i in range(0, len(items), 4):
                span = items[i + 1]
                member = t.members.get(span)
                if items[i] in "ct" and member is not None and owner(t, span,
                                                                      member) in t.closed:
                    late.append((trace, span))
        self.own.late += self._take(late)

    def _take(self, members: list[tuple[str, str]]) -> int:
        return len(self._took(members))

    def _took(self, members: list[tuple[str, str]]) -> set[tuple[str, str]]:
        """HDEL each (trace, member); those this worker removed (each counts once)."""
        if not members:
            return set()
        pipe = self._client.pipeline(transaction=False)
        for trace, span in members:
            pipe.hdel(PREFIX + trace, "m:" + span)
        return {m for m, r in zip(members, pipe.execute(), strict=True) if int(r)}

    def _flush_shared(self, wall: float) -> list[Run]:
        client = self._client
        pipe = client.pipeline(transaction=False)
        pipe.zrangebyscore(OPEN, "-inf", wall - self.settle_s, start=0, num=CLAIM_BATCH)
        pipe.zrangebyscore(TRACES, "-inf", wall - self.timeout_s, start=0, num=CLAIM_BATCH)
        pipe.zcard(TRACES)
        settled, idle, n_traces = pipe.execute()
        if n_traces > self.max_traces:  # the idlest past the bound
            idle += client.zrange(TRACES, 0, min(n_traces - self.max_traces, CLAIM_BATCH) - 1)
        if not settled and not idle:
            return []
        pipe = client.pipeline(transaction=False)
        keys = [k.decode() for k in settled]
        for key in keys:
            trace, span = key.rsplit(":", 1)
            self._claim(keys=[PREFIX + trace, OPEN], args=[key, span], client=pipe)
        sweeps = list(dict.fromkeys(t.decode() for t in idle))
        for trace in sweeps:
            self._sweep(keys=[PREFIX + trace, OPEN, TRACES], args=[trace], client=pipe)
        replies = pipe.execute()
        runs = self._close_claimed(keys, replies[:len(keys)])
        for reply in replies[len(keys):]:
            if reply:
                evicted, fields = reply
                t = _state(_pairs(fields))
                self.own.incomplete += int(evicted)
                if any(owner(t, s, m) is None for s, m in t.members.items()):
                    self.own.incomplete += 1
        return runs

    def _close_claimed(self, keys: list[str], replies: list[Any]) -> list[Run]:
        """Close the runs this worker claimed with the members its ``HDEL`` removed."""
        claimed: list[tuple[TraceState, str, list[tuple[str, str]]]] = []
        for key, fields in zip(keys, replies, strict=True):
            trace, span = key.rsplit(":", 1)
            if not fields:
                continue  # another worker's, or the trace expired
            t = _state(_pairs(fields))
            if span in t.agents or span in t.workflows:
                claimed.append((t, span, [(trace, s) for s, m in t.members.items()
                                          if owner(t, s, m) == span]))
        won = self._took([m for *_, mine in claimed for m in mine])
        out = []
        for t, span, mine in claimed:
            t.members = {s: t.members[s] for trace, s in mine if (trace, s) in won}
            run = close(t, span)
            if run is not None:
                out.append(run)
        return out


def _pairs(flat: Any) -> dict[bytes, bytes]:
    """HGETALL as a script returns it (a flat list) → a dict."""
    if isinstance(flat, dict):
        return flat
    return dict(zip(flat[::2], flat[1::2], strict=True))


def _state(fields: dict[bytes, bytes]) -> TraceState:
    """A trace's hash as the in-process state :func:`owner` and :func:`close` read."""
    t = TraceState()
    for k, v in fields.items():
        key, val = k.decode(), v.decode()
        tag, span = key[:2], key[2:]
        if tag == "l:":
            t.links[span] = val
        elif tag == "m:":
            kind, start, end, cost = val.split(",")
            t.members[span] = Member(TOOL if kind == "t" else "call", int(start), int(end),
                                     int(cost))
        elif tag == "o:":
            op_kind, name, service, parent, start_ns, end_ns = json.loads(val)
            op = AgentOp(op_kind, name, 0.0, service_name=service,
                         parent_id=bytes.fromhex(parent), start_ns=start_ns, end_ns=end_ns)
            (t.agents if op_kind == AGENT else t.workflows)[span] = op
        elif tag == "c:":
            t.closed.add(span)
    return t
