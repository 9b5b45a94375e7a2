"""Tool-call chains (spec 4.14): cumulative cost per trace across tool-call turns.

A span finishing with ``tool_calls`` opens (or extends) its trace's chain; the
next LLM span of the same trace carries the chain's cumulative cost in
``trace_cost_usd_micro``. State is bounded: least-recently-used traces are
evicted past ``max_traces`` and idle traces expire after ``ttl_s``. The REST
endpoints ``/v1/tool-call/track`` and ``/clear`` share the same tracker, so both
doors see one state.

Each ``tool_calls`` span also gets a *transition span* (``span.transition``):
a child of the LLM span that marks the hand-over from the model to the tools, so
Grafana's trace view shows where each turn of the chain ends and what the chain
had cost so far. The forwarder sends it to Tempo; it is no LLM call, so it never
touches the LLM metrics.

Costs are bounded: one step costs at most MAX_STEP_COST_USD_MICRO (the REST door
answers 422 above it) and a chain's cumulative cost saturates at
MAX_TRACE_COST_USD_MICRO instead of growing past what an int64 attribute, a JSON
reader or a float can hold exactly (docs/receiver.md, "Bounds").
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from llm_observe import semconv
from llm_observe.span import LlmSpan, TransitionSpan

TOOL_CALLS = semconv.FINISH_TOOL_CALLS  # "tool_call" (GenAI semconv) is normalised onto it
# $1M for one LLM call: 100M tokens (span.MAX_TOKENS) at the dearest list price is a
# few $10k, so only garbage reaches it.
MAX_STEP_COST_USD_MICRO = 10**12
# $1B for one trace: 1,000 steps at the step maximum. Below 2**53, so the sum is exact
# as a JSON number and a float, and far below int64 (the forwarded attribute).
MAX_TRACE_COST_USD_MICRO = 10**15


def transition_for(span: LlmSpan, state: ChainState) -> TransitionSpan:
    """The transition span for a ``tool_calls`` span, at the moment the LLM call ended."""
    start = span.start_time_ns if span.start_time_ns is not None else time.time_ns()
    end_of_call = start + (span.latency_ms_total or 0) * 1_000_000
    span_id = hashlib.sha256(f"transition:{span.span_id}".encode()).hexdigest()[:16]
    return TransitionSpan(
        trace_id=span.trace_id, parent_span_id=span.span_id, span_id=span_id,
        name=f"tool calls (turn {state.tool_call_turns})",
        start_time_ns=end_of_call, end_time_ns=end_of_call,
        attributes={
            semconv.TRANSITION: True,
            semconv.TOOL_CALL_TURN: state.tool_call_turns,
            semconv.TOOL_CALL_FROM_SPAN: span.span_id,
            semconv.TRACE_COST_USD_MICRO: state.cumulative_cost_usd_micro,
            semconv.GEN_AI_REQUEST_MODEL: span.model,
            semconv.SERVICE: span.service_name,
        })


@dataclass(slots=True)
class ChainState:
    trace_id: str
    steps: int = 0  # LLM spans seen in this chain
    tool_call_turns: int = 0  # of which finished with tool_calls
    cumulative_cost_usd_micro: int = 0  # saturates at MAX_TRACE_COST_USD_MICRO
    last_span_id: str | None = None
    updated_at: float = 0.0

    @property
    def cost_saturated(self) -> bool:
        """The cumulative cost hit its maximum: the true sum is at least that."""
        return self.cumulative_cost_usd_micro >= MAX_TRACE_COST_USD_MICRO

    def as_dict(self) -> dict[str, object]:
        return {"trace_id": self.trace_id, "steps": self.steps,
                "tool_call_turns": self.tool_call_turns,
                "cumulative_cost_usd_micro": self.cumulative_cost_usd_micro,
                "cost_saturated": self.cost_saturated,
                "last_span_id": self.last_span_id}


class ToolChainTracker:
    """LRU + TTL map of trace id → ChainState. Thread-safe: the REST endpoints use it on the
    event loop while the pipeline may run the toolchain stage in its worker thread."""

    def __init__(self, max_traces: int = 10_000, ttl_s: float = 3600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_traces = max_traces
        self.ttl_s = ttl_s
        self._clock = clock
        self._chains: OrderedDict[str, ChainState] = OrderedDict()
        self.evicted = 0
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._chains)

    def get(self, trace_id: str) -> ChainState | None:
        with self._lock:
            return self._get(trace_id)

    def _get(self, trace_id: str) -> ChainState | None:
        state = self._chains.get(trace_id)
        if state is not None and self._clock() - state.updated_at > self.ttl_s:
            del self._chains[trace_id]
            self.evicted += 1
            return None
        return state

    def track(self, trace_id: str, cost_usd_micro: int | None, *, span_id: str | None = None,
              finish_reason: str | None = None, open_chain: bool = True) -> ChainState | None:
        """Add one LLM span to its trace's chain and return the updated state.

        A trace with no chain yet starts one only when the span ends in
        ``tool_calls`` (or ``open_chain`` is forced by the REST track call). The cost
        adds up saturating at MAX_TRACE_COST_USD_MICRO; a negative cost adds nothing.
        """
        with self._lock:
            return self._track(trace_id, cost_usd_micro, span_id, finish_reason, open_chain)

    def _track(self, trace_id: str, cost_usd_micro: int | None, span_id: str | None,
               finish_reason: str | None, open_chain: bool) -> ChainState | None:
        state = self._get(trace_id)
        if state is None:
            if not (open_chain or finish_reason == TOOL_CALLS):
                return None
            state = self._chains[trace_id] = ChainState(trace_id)
            if len(self._chains) > self.max_traces:
                self._chains.popitem(last=False)
                self.evicted += 1
        self._chains.move_to_end(trace_id)
        state.steps += 1
        if finish_reason == TOOL_CALLS:
            state.tool_call_turns += 1
        if cost_usd_micro is not None and cost_usd_micro > 0:
            state.cumulative_cost_usd_micro = min(
                state.cumulative_cost_usd_micro + cost_usd_micro, MAX_TRACE_COST_USD_MICRO)
        state.last_span_id = span_id
        state.updated_at = self._clock()
        return state

    def track_many(self, items: Sequence[tuple[str, int | None, str | None, str | None, bool]]
                   ) -> list[ChainState | None]:
        """``track`` for (trace, cost, span id, finish reason, open_chain) items, in order;
        each state as it was after its own item (a copy: later items change the chain)."""
        with self._lock:
            return [None if state is None else dataclasses.replace(state)
                    for state in (self._track(*item) for item in items)]

    def clear(self, trace_id: str | None = None) -> int:
        """Forget one trace's chain (or all with None); return how many were removed."""
        with self._lock:
            if trace_id is None:
                n = len(self._chains)
                self._chains.clear()
                return n
            return 1 if self._chains.pop(trace_id, None) is not None else 0


class ToolchainProcessor:
    """Feeds LLM spans to the tracker, stamps the cumulative trace cost on them and
    attaches a transition span to every ``tool_calls`` span.

    With the shared (Redis) tracker the stage does network I/O: it runs in the pipeline's
    worker thread (``blocking``), one round trip per batch."""

    name = "toolchain"

    def __init__(self, tracker: Any, *, blocking: bool = False) -> None:
        self.tracker = tracker
        self.blocking = blocking

    def process(self, batch: list[LlmSpan]) -> None:
        # a call two instrumentations describe is one step of the chain (agents.dedup)
        batch = [span for span in batch if span.duplicate_of is None]
        states = self.tracker.track_many([
            (span.trace_id, span.cost_usd_micro, span.span_id, span.finish_reason, False)
            for span in batch])
        for span, state in zip(batch, states, strict=True):
            if state is not None:
                span.trace_cost_usd_micro = state.cumulative_cost_usd_micro
                if span.finish_reason == TOOL_CALLS:
                    span.transition = transition_for(span, state)
