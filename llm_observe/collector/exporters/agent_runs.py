"""Agent run cost and calls per run, from the runs ``agents.runs`` closes.

Families (docs/metrics.md, "Agent runs"):

- ``llm_agent_run_cost_usd_micro`` (histogram): the sum of the costs of the LLM calls of one
  run, micro-USD, by ``gen_ai_agent_name``; ``llm_agent_cost_usd_total`` the same in USD as
  a counter;
- ``gen_ai_invoke_agent_inference_calls`` and ``gen_ai_invoke_agent_tool_calls``
  (histograms): model calls and tool calls per run — OTel GenAI ``metrics.yaml``
  ``gen_ai.invoke_agent.inference_calls`` / ``.tool_calls`` (unit ``{call}``: no suffix);
- ``llm_agent_runs_incomplete_total``, ``llm_agent_run_late_spans_total``,
  ``llm_agent_run_spans_dropped_total``: runs whose agent span never came, members that
  came after their run closed, spans past the per-trace bound.

The agent name is guarded (``LabelLimits.models`` values, then ``__overflow__``) and takes
label-set budget once for the four families. Never an id. Event-loop thread only.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from operator import attrgetter, countOf
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from llm_observe.agents.runs import Run, RunStore, RunTracker
from llm_observe.collector.exporters.label_sets import LabelLimits
from llm_observe.collector.exporters.labels import OVERFLOW, LabelBudget, LabelGuard, label_units
from llm_observe.otlp.othertexts import GATE
from llm_observe.pipeline.contracts import Batch

COST_BUCKETS_MICRO = (100, 1_000, 5_000, 10_000, 50_000, 100_000, 500_000, 1_000_000,
                      5_000_000, 10_000_000, 100_000_000)  # $0.0001 .. $100 a run
CALL_BUCKETS = (1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50, 100, 200)
TICK_S = 1.0
NAME = "gen_ai_agent_name"
_DUPLICATE = attrgetter("duplicate_of")


class RunMetrics:
    """The run families on one registry; ``overflow`` is ``llm_observe_label_overflow``."""

    def __init__(self, registry: CollectorRegistry, limits: LabelLimits, overflow: Any) -> None:
        def hist(name: str, help_: str, buckets: Sequence[float]) -> Histogram:
            return Histogram(name, help_, [NAME], buckets=buckets, registry=registry)
        self.cost = hist("llm_agent_run_cost_usd_micro",
                         "Cost of one agent run: the sum of its LLM calls (micro-USD)",
                         COST_BUCKETS_MICRO)
        self.usd = Counter("llm_agent_cost_usd", "Cost of agent runs (USD)", [NAME],
                           registry=registry)
        self.calls = hist("gen_ai_invoke_agent_inference_calls",
                          "Model calls of one agent run", CALL_BUCKETS)
        self.tools = hist("gen_ai_invoke_agent_tool_calls", "Tool calls of one agent run",
                          CALL_BUCKETS)
        self.incomplete = Counter("llm_agent_runs_incomplete",
                                  "Traces dropped with LLM or tool spans whose agent span "
                                  "never arrived", registry=registry)
        self.late = Counter("llm_agent_run_late_spans",
                            "LLM or tool spans that arrived after their run was measured",
                            registry=registry)
        self.dropped = Counter("llm_agent_run_spans_dropped",
                               "Spans not held for run accounting: past the per-trace bound",
                               registry=registry)
        self._overflow = overflow
        self._guard = LabelGuard(limits.models, partial(self._overflowed, NAME))
        self._budget = LabelBudget(limits.label_sets)
        self._children: dict[str, tuple[Any, Any, Any, Any]] = {}
        self._seen = (0, 0, 0)

    def record(self, runs: Iterable[Run], counts: Any) -> None:
        for run in runs:
            cost, usd, calls, tools = self._child(run.agent)
            cost.observe(run.cost_usd_micro)
            usd.inc(run.cost_usd_micro / 1e6)
            calls.observe(run.model_calls)
            tools.observe(run.tool_calls)
        now = (counts.incomplete, counts.late, counts.dropped)
        for counter, new, old in zip((self.incomplete, self.late, self.dropped), now,
                                     self._seen, strict=True):
            if new > old:
                counter.inc(new - old)
        self._seen = now

    def _child(self, agent: str) -> tuple[Any, Any, Any, Any]:
        name = self._guard(agent) if agent else ""
        child = self._children.get(name)
        if child is None:
            if name not in (OVERFLOW, "") and not self._budget.take(label_units(name)):
                self._overflowed("agent_label_set")
                name = OVERFLOW
            child = self._children.get(name)
            if child is None:
                child = self._children[name] = (
                    self.cost.labels(name), self.usd.labels(name), self.calls.labels(name),
                    self.tools.labels(name))
        return child

    def _overflowed(self, label: str) -> None:
        self._overflow.labels(label).inc()


class AgentRunExporter:
    """Feeds each batch to a run store (:class:`RunTracker`, or agents/runstore.py's Redis
    store shared by workers) and records the runs it closes: on each export and every
    ``tick_s`` (a task between ``start`` and ``shutdown``). Never refuses; a blocking store
    runs off the event loop, one call at a time."""

    name = "agent_runs"

    def __init__(self, metrics: RunMetrics, tracker: RunStore | None = None,
                 clock: Callable[[], float] = time.monotonic, tick_s: float = TICK_S) -> None:
        self.metrics = metrics
        self.tracker: RunStore = tracker or RunTracker()
        self._lock = asyncio.Lock()
        self.clock = clock
        self.tick_s = tick_s
        self._task: asyncio.Task[None] | None = None

    def has_room(self, n: int) -> bool:
        return True

    async def start(self) -> None:
        self._task = asyncio.create_task(self._tick())

    async def export(self, batch: Batch) -> None:
        origin = batch.origin
        ops = getattr(origin, "agents", None) or ()
        calls = [(s.trace_id, s.span_id, s.parent_span_id, start := s.start_time_ns or 0,
                  start + (s.latency_ms_total or 0) * 1_000_000, s.cost_usd_micro or 0)
                 for s in batch if s.parent_span_id]  # duplicate_of spans too: the run
        # takes the inner span of a wrapper pair whatever their arrival order (agents.runs)
        request = getattr(origin, "request", None)
        # the links of spans that are no call (a chain between calls and their agent); a
        # request of LLM calls only has none beyond the calls' own (and may have been
        # rewritten in place by the forwarder: otlp/inplace.py)
        chain = (links(request) if origin is not None and request is not None and origin.n_other
                 else [])
        # a root wrapper (in no run) still links its call's ancestry
        if countOf(map(_DUPLICATE, batch), None) != len(batch):
            chain += [(s.trace_id, s.span_id, "") for s in batch
                      if s.duplicate_of is not None and not s.parent_span_id]
        if not self.tracker.blocking:
            if ops or calls or chain:
                self.tracker.add(self.clock(), chain, calls, ops)
            self.flush()
            return
        if ops or calls or chain:  # one round trip; runs close on the tick
            async with self._lock:
                await asyncio.get_running_loop().run_in_executor(
                    None, self.tracker.add, self.clock(), chain, calls, ops)

    def flush(self, late_by: float = 0.0) -> None:
        """Record the runs that closed (``late_by``: pretend that much more time passed)."""
        self.metrics.record(self.tracker.flush(self.clock() + late_by), self.tracker.counts)

    async def aflush(self, late_by: float = 0.0) -> None:
        """:meth:`flush`, off the event loop for a blocking store."""
        if not self.tracker.blocking:
            self.flush(late_by)
            return
        async with self._lock:
            await asyncio.get_running_loop().run_in_executor(None, self.flush, late_by)

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.tick_s)
            await self.aflush()

    async def shutdown(self, timeout: float) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.aflush(late_by=self.tracker.settle_s)  # runs whose agent span came


def links(request: Any) -> list[tuple[str, str, str]]:
    """(trace, span, parent) of the spans of a request a GenAI or agent producer made (hex,
    as ``LlmSpan`` ids are): the chain spans between calls and their agent (OpenInference's
    ``turn``, LangGraph's nodes) carry such a key; a plain HTTP or database span is skipped
    by one C-level pass over its keys and is not held."""
    gate = GATE
    return [(span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex())
            for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans
            if not gate.isdisjoint(span.attributes)]
