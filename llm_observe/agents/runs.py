"""Agent runs: the model calls, tool calls and cost inside one agent span, whatever order
and request its spans arrive in.

A *run* is one agent span (``invoke_agent``, OpenInference ``AGENT`` with a name,
OpenLLMetry ``agent``: agents/classify.py). Its *members* are its LLM calls (of a wrapper
pair the inner span, whichever came first: agents/dedup.py) and tool spans it owns:

- the owner of a span is its nearest enclosing agent span, found by parent ids through any
  spans of the trace (OpenInference's ``turn`` chains sit between);
- when the nearest run span above it is a workflow (OpenLLMetry puts an agent's calls and
  tools beside the agent, under the workflow, on the Responses API), the innermost agent
  span directly under that workflow whose time range holds the span's (agents/consumers.py
  uses the same rule); no agent at all above it: the *outermost* workflow, which is then a
  run of its own, named by the workflow (a LangGraph graph run: OpenInference's root
  ``CHAIN`` over its ``agent`` node spans, ``AGENT`` kind without a name: workflows too).

A run closes :data:`SETTLE_S` after its agent span arrived (children end and are exported
before their parent; the wait takes a child sent later or by another exporter). A member
arriving after its run closed is *late*: counted, not added. A trace idle for
:data:`TIMEOUT_S` is dropped; if it held members whose owner never arrived (the agent span
was lost, or the run cut by a restart), it counts one *incomplete* run.
Bounds: :data:`MAX_TRACES` traces (the idlest dropped first, counted as above) and
:data:`MAX_SPANS` spans per trace (past it, spans are not held and count as *dropped*: a run
with 100,000 children costs a bounded amount). A trace is held from its first agent, tool
or workflow span; the calls and chain spans before it wait in a FIFO of :data:`MAX_WAITING`
entries (agents/waiting.py; a plain LLM app's calls only pass through it).

The per-process store: ``serve --workers N`` spreads one trace over workers, so with
``LLM_OBSERVE_REDIS_URL`` agents/runstore.py keeps this state in Redis by the same rules
(:func:`owner`, :func:`close`): one worker closes each run whole (docs/scale-out.md). Both
are a :class:`RunStore`. Not thread-safe: one caller at a time.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from llm_observe.agents.classify import AGENT, TOOL, WORKFLOW, AgentOp
from llm_observe.agents.dedup import wrapped
from llm_observe.agents.waiting import Waiting

SETTLE_S = 5.0
TIMEOUT_S = 600.0
MAX_TRACES = 10_000
MAX_SPANS = 20_000
MAX_DEPTH = 256
MAX_RUN_SPANS = 1024  # agent and workflow spans held past MAX_SPANS in a full trace
MAX_WAITING = 200_000  # calls and links waiting for their trace's first agent/tool span


@dataclass(frozen=True, slots=True)
class Run:
    """One closed run, for the metrics."""

    agent: str
    service_name: str
    cost_usd_micro: int
    model_calls: int
    tool_calls: int


@dataclass(slots=True)
class Member:
    kind: str  # "call" or TOOL
    start: int
    end: int
    cost: int = 0


@dataclass(slots=True)
class TraceState:
    links: dict[str, str] = field(default_factory=dict)  # span id -> parent id
    members: dict[str, Member] = field(default_factory=dict)
    agents: dict[str, AgentOp] = field(default_factory=dict)
    workflows: dict[str, AgentOp] = field(default_factory=dict)
    arrived: dict[str, float] = field(default_factory=dict)  # open agent -> arrival time
    closed: set[str] = field(default_factory=set)
    last: float = 0.0


@dataclass(slots=True)
class Counts:
    """What happened besides closed runs (read by the metrics after each flush)."""

    late: int = 0
    incomplete: int = 0
    dropped: int = 0


class RunStore(Protocol):
    """What the exporter (collector/exporters/agent_runs.py) needs of a run store."""

    settle_s: float
    blocking: bool  # True: add/flush do network round trips (call them off the event loop)

    @property
    def counts(self) -> Counts: ...

    def add(self, now: float, links: Iterable[tuple[str, str, str]],
            calls: Iterable[tuple[str, str, str, int, int, int]],
            ops: Iterable[AgentOp]) -> None: ...

    def flush(self, now: float) -> list[Run]: ...


class RunTracker:
    """Collects spans per trace; :meth:`flush` closes runs that settled."""

    blocking = False

    def __init__(self, settle_s: float = SETTLE_S, timeout_s: float = TIMEOUT_S,
                 max_traces: int = MAX_TRACES, max_spans: int = MAX_SPANS) -> None:
        self.settle_s, self.timeout_s = settle_s, timeout_s
        self.max_traces, self.max_spans = max_traces, max_spans
        self.traces: OrderedDict[str, TraceState] = OrderedDict()  # by last activity
        self.open: dict[tuple[str, str], None] = {}  # (trace, agent span) of waiting runs
        # calls and links of traces with no agent, tool or workflow span yet, as add() took
        # them: held whole once one comes, else forgotten, oldest first (agents/waiting.py)
        self.waiting = Waiting(MAX_WAITING)
        self.counts = Counts()

    def add(self, now: float, links: Iterable[tuple[str, str, str]],
            calls: Iterable[tuple[str, str, str, int, int, int]], ops: Iterable[AgentOp]) -> None:
        """Take one request's spans: ``links`` (trace, span, parent) of spans that are no
        call, ``calls`` (trace, span, parent, start, end, cost) of its counted LLM calls,
        ``ops`` its agent/tool/workflow spans (hex ids: ``AgentOp`` ids are bytes)."""
        touched: dict[str, TraceState] = {}
        for op in ops:
            if op.kind not in (AGENT, TOOL, WORKFLOW):
                continue
            trace, span = op.trace_id.hex(), op.span_id.hex()
            t = touched.get(trace) or self._trace(trace, touched)
            # a run's own span has room past the members' bound: a full trace still closes
            if not self._hold(t, span, op.parent_id.hex(),
                              MAX_RUN_SPANS if op.kind != TOOL else 0):
                continue
            if op.kind == AGENT:
                t.agents[span] = op
                t.arrived.setdefault(span, now)
            elif op.kind == WORKFLOW:
                t.workflows[span] = op
                t.arrived.setdefault(span, now)  # a run only if it owns a member
            else:
                self._member(t, span, Member(TOOL, op.start_ns, op.end_ns))
        traces = self.traces
        calls, links = list(calls), list(links)
        if not touched and self.waiting.take_all(traces, calls, links):
            return  # a plain app's request: every call and link waits, in C loops
        for call in calls:
            trace, span, parent, start, end, cost = call
            if not parent:
                continue  # a root call is in no run
            held = touched.get(trace) or traces.get(trace)
            if held is None:
                self.waiting.add(trace, call)
                continue
            touched[trace] = held
            if self._hold(held, span, parent):
                self._member(held, span, Member("call", start, end, cost))
        for link in links:
            trace, span, parent = link
            held_by = touched.get(trace) or traces.get(trace)
            if held_by is None:  # a chain span before any agent span of its trace
                self.waiting.add(trace, link)
            elif span not in held_by.links:
                self._hold(held_by, span, parent, count=False)
        for trace, t in touched.items():  # keep the dict ordered by activity
            t.last = now
            if trace in traces:
                traces.move_to_end(trace)
            else:
                traces[trace] = t
            for span in t.arrived:
                self.open.setdefault((trace, span), None)
        while len(traces) > self.max_traces:
            self._drop(next(iter(traces)))

    def flush(self, now: float) -> list[Run]:
        """Close every run whose agent span arrived ``settle_s`` ago; drop idle traces."""
        out: list[Run] = []
        for key in list(self.open):  # the runs waiting: few, however many traces
            trace, span = key
            t = self.traces.get(trace)
            if t is None or span not in t.arrived:
                del self.open[key]
            elif now - t.arrived[span] >= self.settle_s:
                del self.open[key], t.arrived[span]
                run = close(t, span)
                if run is not None:
                    out.append(run)
        traces = self.traces
        while traces:  # ordered by activity: the idle ones come first
            trace, t = next(iter(traces.items()))
            if now - t.last < self.timeout_s or t.arrived:
                break
            self._drop(trace)
        return out

    # --- internals --------------------------------------------------------------
    def _trace(self, trace: str, touched: dict[str, TraceState]) -> TraceState:
        """The trace's state, created (with what waited for it) by its first agent, tool or
        workflow span."""
        t = self.traces.get(trace)
        if t is None:
            t = TraceState()
            for item in self.waiting.pop(trace):  # as add() took them: links, calls
                if len(item) == 3:
                    self._hold(t, item[1], item[2], count=False)
                elif self._hold(t, item[1], item[2]):
                    t.members[item[1]] = Member("call", *item[3:])
        touched[trace] = t
        return t

    def _hold(self, t: TraceState, span: str, parent: str, room: int = 0,
              count: bool = True) -> bool:
        """Hold a span's link; False (a run span or member counted as dropped) when the
        trace is full."""
        if span in t.links:
            t.links[span] = parent
            return True
        if len(t.links) >= self.max_spans + room:
            self.counts.dropped += count
            return False
        t.links[span] = parent
        return True

    def _member(self, t: TraceState, span: str, member: Member) -> None:
        if t.closed and owner(t, span, member) in t.closed:
            self.counts.late += 1  # its run was measured without it
            return
        t.members[span] = member

    def _drop(self, trace: str) -> None:
        t = self.traces.pop(trace)
        self.counts.incomplete += len(t.arrived)  # evicted before they settled
        if any(owner(t, s, m) is None for s, m in t.members.items()):
            self.counts.incomplete += 1


def close(t: TraceState, agent: str) -> Run | None:
    """Close run ``agent``: take its members out of ``t``; None for a workflow without any."""
    op = t.agents.get(agent) or t.workflows[agent]
    cost = calls = tools = 0
    mine = [(s, m) for s, m in t.members.items() if owner(t, s, m) == agent]
    ids = [s for s, m in mine if m.kind != TOOL]  # a wrapper pair: the inner is the call
    wrappers = wrapped(ids, [t.links.get(s) for s in ids])
    for span, member in mine:
        del t.members[span]
        if member.kind == TOOL:
            tools += 1
        elif span not in wrappers:
            calls += 1
            cost += member.cost
    t.closed.add(agent)
    if op.kind == WORKFLOW and not (calls or tools):
        return None  # its agents' runs hold its calls: not a run of its own
    return Run(op.name, op.service_name, cost, calls, tools)


def owner(t: TraceState, span: str, member: Member) -> str | None:
    """The agent (else outermost workflow) span id owning ``span`` (module docstring),
    or None: no run span above it, or an ancestor not (yet) here."""
    seen = {span}
    key = t.links.get(span, "")
    outer: str | None = None  # the outermost workflow passed, while no agent is found
    for _ in range(MAX_DEPTH):
        if not key or key in seen:
            return outer  # the root (or a cycle): nothing above
        seen.add(key)
        if key in t.agents:
            return key
        if key in t.workflows:
            beside = _beside(t, key, member)
            if beside is not None:
                return beside
            outer = key
        if key not in t.links:
            return None  # an ancestor not (yet) here: undecided
        key = t.links[key]
    return None


def _beside(t: TraceState, workflow: str, member: Member) -> str | None:
    best: tuple[int, str] | None = None
    for span, op in t.agents.items():
        if (op.parent_id.hex() == workflow and op.start_ns <= member.start
                and member.end <= op.end_ns and (best is None or op.start_ns > best[0])):
            best = (op.start_ns, span)
    return best[1] if best else None
