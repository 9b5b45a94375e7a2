"""Agent, tool, workflow and MCP duration histograms, from the spans ``agents.classify`` found.

Names follow the OTel GenAI and MCP semantic conventions (open-telemetry/
semantic-conventions-genai ``model/gen-ai/metrics.yaml``: ``gen_ai.invoke_agent.duration``,
``gen_ai.execute_tool.duration``, ``gen_ai.invoke_workflow.duration`` — renamed from
``gen_ai.workflow.duration`` by semantic-conventions-genai#341 —; ``model/mcp/metrics.yaml``:
``mcp.client.operation.duration``, ``mcp.server.operation.duration``), exposed by the same
rules as the GenAI client metrics (genai.py): dots become underscores, unit ``s`` appends
``_seconds``.

Labels: the agent, tool or workflow name, the tool type, the MCP method, ``error_type``
(``error.type``, ``_OTHER`` for an error status without one, empty on success). Never an
id. Each name label has a guard (``LabelLimits.models`` distinct values, cut at 128
characters, then ``__overflow__``) and each family a label-set budget of
``LabelLimits.label_sets`` units, like the eight ``llm_*`` families (label_sets.py): past it a
new set is counted in the family's all-``__overflow__`` set, and each refusal in
``llm_observe_label_overflow_total``. Event-loop thread only.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from llm_observe.agents.classify import AGENT, MCP_CLIENT, MCP_SERVER, TOOL, WORKFLOW, AgentOp
from llm_observe.collector.exporters.genai import DURATION_BUCKETS_S
from llm_observe.collector.exporters.label_sets import RAW_CACHE_MAX, LabelLimits
from llm_observe.collector.exporters.labels import OVERFLOW, LabelBudget, LabelGuard, label_units
from llm_observe.pipeline.contracts import Batch

__all__ = ["AGENT_BUCKETS_S", "AgentExporter", "AgentMetrics"]

# Agent runs and workflows last minutes: the GenAI client bounds, doubled up to ~11 min.
AGENT_BUCKETS_S = (*DURATION_BUCKETS_S, 163.84, 327.68, 655.36)
MAX_TOOL_TYPES = 20  # semconv: function, extension, datastore; room for a few more
MAX_MCP_METHODS = 100  # the MCP spec has ~25 methods

# kind -> (family name, help, name label, extra labels)
_FAMILIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    AGENT: ("gen_ai_invoke_agent_duration", "Duration of one agent invocation",
            ("gen_ai_agent_name", "error_type")),
    TOOL: ("gen_ai_execute_tool_duration", "Duration of one tool execution",
           ("gen_ai_tool_name", "gen_ai_tool_type", "error_type")),
    WORKFLOW: ("gen_ai_invoke_workflow_duration", "Duration of one GenAI workflow",
               ("gen_ai_workflow_name", "error_type")),
    MCP_CLIENT: ("mcp_client_operation_duration",
                 "Duration of an MCP request or notification as seen by the client",
                 ("mcp_method_name", "gen_ai_tool_name", "error_type")),
    MCP_SERVER: ("mcp_server_operation_duration",
                 "Duration of an MCP request or notification as seen by the server",
                 ("mcp_method_name", "gen_ai_tool_name", "error_type")),
}


def _name_label(kind: str) -> str:
    """The family's name label: the first label, after the method for MCP."""
    return _FAMILIES[kind][2][1 if kind in (MCP_CLIENT, MCP_SERVER) else 0]


class AgentMetrics:
    """The five histogram families on one registry; ``overflow`` is
    ``llm_observe_label_overflow`` (LlmMetrics.label_overflow), shared with the eight."""

    def __init__(self, registry: CollectorRegistry, limits: LabelLimits, overflow: Any) -> None:
        self.families = {kind: Histogram(name, help_, list(labels), buckets=AGENT_BUCKETS_S,
                                         unit="seconds", registry=registry)
                         for kind, (name, help_, labels) in _FAMILIES.items()}
        # tool/retriever/MCP outputs and agent/chain texts flagged by the untrusted scan
        self.flags = Counter("llm_untrusted_text_flags",
                             "Non-LLM spans whose texts the scan flagged: tool outputs and "
                             "agent or chain texts (processors/untrusted.py)",
                             ["span_kind", "finding"], registry=registry)
        self._flag = {(k, f): self.flags.labels(k, f)
                      for k in ("tool", "other") for f in ("pii", "injection")}
        self._overflow = overflow
        self._budgets = {kind: LabelBudget(limits.label_sets) for kind in _FAMILIES}
        self._names = {kind: LabelGuard(limits.models, partial(self._overflowed, _name_label(kind)))
                       for kind in _FAMILIES}
        self._error = LabelGuard(limits.error_types, partial(self._overflowed, "error_type"))
        self._tool_type = LabelGuard(MAX_TOOL_TYPES,
                                     partial(self._overflowed, "gen_ai_tool_type"))
        self._method = LabelGuard(MAX_MCP_METHODS, partial(self._overflowed, "mcp_method_name"))
        self._sets: dict[tuple[str, ...], Any] = {}  # by exposed labels (kind first)
        self._by_raw: dict[tuple[str, ...], Any] = {}

    def record(self, ops: Sequence[AgentOp]) -> None:
        """Observe each op's duration in its family, under its (guarded) labels."""
        for op in ops:
            raw = (op.kind, op.name, op.tool_type, op.method, op.error_type)
            child = self._by_raw.get(raw)
            if child is None:
                child = self._child(op)
                if len(self._by_raw) < RAW_CACHE_MAX:
                    self._by_raw[raw] = child
            child.observe(op.duration_s)

    def record_flags(self, texts: Sequence[Any]) -> None:
        """Count each non-LLM span's flags (``agents.untrusted.OtherText``), by span kind."""
        for other in texts:
            if other.pii_detected or other.injection_attempt:
                kind = "tool" if other.tool_like else "other"
                if other.pii_detected:
                    self._flag[kind, "pii"].inc()
                if other.injection_attempt:
                    self._flag[kind, "injection"].inc()

    def _child(self, op: AgentOp) -> Any:
        kind = op.kind
        error = self._error(op.error_type) if op.error_type else ""
        name = self._names[kind](op.name) if op.name else ""
        if kind == TOOL:
            labels: tuple[str, ...] = (
                name, self._tool_type(op.tool_type) if op.tool_type else "", error)
        elif kind in (MCP_CLIENT, MCP_SERVER):
            labels = (self._method(op.method), name, error)
        else:
            labels = (name, error)
        key = (kind, *labels)
        child = self._sets.get(key)
        if child is not None:
            return child
        exempt = all(v in (OVERFLOW, "") for v in labels)
        if exempt or self._budgets[kind].take(label_units(*labels)):
            child = self._sets[key] = self.families[kind].labels(*labels)
            return child
        self._overflowed("agent_label_set")
        over = (kind, *(OVERFLOW for _ in labels))
        child = self._sets.get(over)
        if child is None:
            child = self._sets[over] = self.families[kind].labels(*over[1:])
        return child

    def _overflowed(self, label: str) -> None:
        self._overflow.labels(label).inc()


class AgentExporter:
    """Exporter adapter: records the agent ops of an OTLP batch's origin; never blocks."""

    name = "agents"

    def __init__(self, metrics: AgentMetrics) -> None:
        self.metrics = metrics

    def has_room(self, n: int) -> bool:
        return True

    async def start(self) -> None:
        return None

    async def export(self, batch: Batch) -> None:
        ops = getattr(batch.origin, "agents", None)
        if ops:
            self.metrics.record(ops)
        texts = getattr(batch.origin, "texts", None)
        if texts:
            self.metrics.record_flags(texts)

    async def shutdown(self, timeout: float) -> None:
        return None
