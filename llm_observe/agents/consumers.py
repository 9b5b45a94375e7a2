"""Which agent span consumed a tool output flagged as an injection attempt.

A tool, retriever or MCP span whose output the scan flagged (an indirect injection planted
in a tool result or a retrieved page) hands that output to the agent that called it. The
rule: the *nearest enclosing* agent span is marked. When the nearest run span above the tool
is a workflow (OpenLLMetry puts an agent's tools beside it, under the workflow, on the
Responses API), the innermost agent span directly under that workflow whose time range holds
the tool span's is marked; failing that, the workflow span. The ancestry is followed by
parent ids through any spans of the request (OpenInference's ``turn`` chains sit between a
tool and its agent).

Across requests: when the walk up leaves the request (an agent span usually ends, and is
exported, after its tools), the missing ancestor is remembered; a later request holding it
continues the walk there. Bounded: :data:`MAX_PENDING` remembered ancestors, the oldest
forgotten first, each for :data:`PENDING_TTL_S` (while one is remembered, each request's span
ids are looked up: one pass, no parent map unless one is found); a walk stops after
:data:`MAX_DEPTH` parents or on a cycle. Per process (trace-affine routing keeps a trace on
one replica), or in Redis across workers with ``redis_url`` (agents/consumerstore.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from llm_observe.agents.classify import AGENT, WORKFLOW, AgentOp

MAX_PENDING = 4096
PENDING_TTL_S = 600.0  # an awaited ancestor is forgotten after this (agents.runs.TIMEOUT_S)
MAX_DEPTH = 256
Key = tuple[bytes, bytes]  # (trace id, span id)
Position = tuple[int, int, int]


class Consumers:
    """Finds the spans to mark; one per pipeline (its memory is shared by its batches)."""

    blocking = False  # agents/consumerstore.py's shared memory does network round trips

    def __init__(self, max_pending: int = MAX_PENDING, ttl_s: float = PENDING_TTL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_pending, self.ttl_s, self.clock = max_pending, ttl_s, clock
        self._pending: dict[Key, float] = {}  # key -> when remembered; oldest first
        self._lock = threading.Lock()  # batches run on the loop or the worker thread

    def marks(self, request: Any, ops: Sequence[AgentOp],
              flagged: Iterable[tuple[bytes, bytes, int, int]]) -> list[Position]:
        """Positions of the agent/workflow spans of ``request`` to mark, given the
        (trace, parent id, start, end) of each flagged tool span in it."""
        starts = [((trace, parent), (start, end)) for trace, parent, start, end in flagged
                  if parent]
        with self._lock:
            found = self._found(request, ops)
            if not starts and not found:
                return []
            starts += [(key, (0, 0)) for key in found]
            parents = _parents(request)
            runs = {(op.trace_id, op.span_id): op for op in ops
                    if op.kind in (AGENT, WORKFLOW) and op.position is not None}
            out: dict[Position, None] = {}
            left: list[Key] = []  # ancestors not in this request: continue when they come
            for start, span in starts:
                self._climb(start, span, parents, runs, out, left)
            if left:
                self._remember(left)
            return list(out)

    def _found(self, request: Any, ops: Sequence[AgentOp]) -> list[Key]:
        """The remembered ancestors ``request`` holds, forgotten as they are returned
        (agents/consumerstore.py keeps them in Redis instead)."""
        pending = self._pending
        now = self.clock()
        while pending and now - next(iter(pending.values())) > self.ttl_s:
            del pending[next(iter(pending))]  # its agent never came: forget it
        if not pending:
            return []
        found = []
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    key = (span.trace_id, span.span_id)
                    if key in pending:
                        del pending[key]
                        found.append(key)
        return found

    def _climb(self, key: Key, span: tuple[int, int], parents: dict[Key, bytes],
               runs: dict[Key, AgentOp], out: dict[Position, None], left: list[Key]) -> None:
        workflow: AgentOp | None = None
        seen: set[Key] = set()
        for _ in range(MAX_DEPTH):
            if key in seen:
                break  # a cycle of parent ids: nothing above it
            seen.add(key)
            op = runs.get(key)
            if op is not None:
                if op.kind == AGENT:
                    out[op.position] = None  # type: ignore[index]
                    return
                workflow = workflow or op
            parent = parents.get(key)
            if parent is None:  # not in this request: continue when it arrives
                if workflow is None:
                    left.append(key)
                    return
                break
            if not parent or parent == key[1]:
                break  # a root (or a self-parenting span)
            key = (key[0], parent)
        if workflow is not None:
            agent = _agent_beside(workflow, span, runs)
            out[(agent or workflow).position] = None  # type: ignore[index]

    def _remember(self, keys: list[Key]) -> None:
        pending = self._pending
        now = self.clock()
        for key in keys:
            pending[key] = now
        while len(pending) > self.max_pending:
            del pending[next(iter(pending))]


def _agent_beside(workflow: AgentOp, span: tuple[int, int], runs: dict[Key, AgentOp]
                  ) -> AgentOp | None:
    """The innermost agent span directly under ``workflow`` whose time range holds
    ``span`` (start, end in ns; (0, 0) when unknown: none)."""
    start, end = span
    if not end:
        return None
    best: AgentOp | None = None
    for op in runs.values():
        if (op.kind == AGENT and op.trace_id == workflow.trace_id
                and op.parent_id == workflow.span_id and op.start_ns <= start
                and end <= op.end_ns and (best is None or op.start_ns > best.start_ns)):
            best = op
    return best


def _parents(request: Any) -> dict[Key, bytes]:
    """(trace, span id) -> parent span id of every span of a request."""
    return {(span.trace_id, span.span_id): span.parent_span_id
            for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans}
