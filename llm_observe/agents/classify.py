"""Which OTLP spans are agent runs, tool calls, workflows or MCP operations, and their labels.

One rule table per producer, tried in order; the first that matches decides
(docs/attribute-mapping.md, "Agents, tools, workflows, MCP", with sources):

1. MCP (semconv ``mcp.method.name``; the MCP Python SDK's own spans carry it): a SERVER
   span is a server operation, any other kind a client one. Tool name ``gen_ai.tool.name``,
   else (the SDK's client span has none) from a ``tools/call`` span's name.
2. GenAI semconv ``gen_ai.operation.name``: ``invoke_agent`` (``gen_ai.agent.name``),
   ``execute_tool`` (``gen_ai.tool.name``, ``gen_ai.tool.type``), ``invoke_workflow``
   (``gen_ai.workflow.name``).
3. OpenInference ``openinference.span.kind``: ``AGENT`` with ``agent.name`` is an agent run;
   ``AGENT`` without it is the openai-agents trace root ("Agent workflow": a workflow,
   named by the span); ``TOOL`` (``tool.name``); ``RETRIEVER`` (a tool of type
   ``datastore``); ``CHAIN`` only as a trace root (LangGraph's graph run; a nested CHAIN is
   a step, not measured).
4. OpenLLMetry ``traceloop.span.kind``: ``workflow``, ``agent``, ``tool``, named by
   ``traceloop.entity.name`` (``task`` is a step, not measured).
5. Without a kind: ``ai.toolCall.name`` (Vercel AI SDK tool call), then
   ``gen_ai.tool.name``, then ``gen_ai.agent.name`` (Pydantic AI / Logfire runs and tools).

Names are labels: read as strings of at most MAX_NAME_CHARS (the exporter guards and
budgets them); a missing name is ``unknown``. Ids (conversation, call, agent id) are never
read. Never raises: a bad value names nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

AGENT, TOOL, WORKFLOW, MCP_CLIENT, MCP_SERVER = (
    "agent", "tool", "workflow", "mcp_client", "mcp_server")
KINDS = (AGENT, TOOL, WORKFLOW, MCP_CLIENT, MCP_SERVER)
TOOL_LIKE = frozenset({TOOL, MCP_CLIENT, MCP_SERVER})  # their output is a tool's
UNKNOWN = "unknown"
OTHER_ERROR = "_OTHER"
MAX_NAME_CHARS = 256
MAX_DURATION_NS = 86_400 * 10**9  # a day: longer is a clock error, not a run
SPAN_KIND_SERVER = 2

MCP_METHOD = "mcp.method.name"
OPERATION = "gen_ai.operation.name"
OI_KIND = "openinference.span.kind"
OLLM_KIND = "traceloop.span.kind"
OLLM_ENTITY = "traceloop.entity.name"
AGENT_NAME = "gen_ai.agent.name"
TOOL_NAME = "gen_ai.tool.name"
TOOL_TYPE = "gen_ai.tool.type"
WORKFLOW_NAME = "gen_ai.workflow.name"
OI_AGENT_NAME = "agent.name"
OI_TOOL_NAME = "tool.name"
VERCEL_TOOL = "ai.toolCall.name"
ERROR_TYPE = "error.type"
MARKERS = (MCP_METHOD, OPERATION, OI_KIND, OLLM_KIND, VERCEL_TOOL, TOOL_NAME, AGENT_NAME)

_OPERATIONS = {"invoke_agent": (AGENT, AGENT_NAME), "execute_tool": (TOOL, TOOL_NAME),
               "invoke_workflow": (WORKFLOW, WORKFLOW_NAME)}
_OLLM_KINDS = {"workflow": WORKFLOW, "agent": AGENT, "tool": TOOL}


@dataclass(frozen=True, slots=True)
class AgentOp:
    """One measured agent, tool, workflow or MCP span."""

    kind: str  # one of KINDS
    name: str  # agent / tool / workflow name (MCP: the tool name, or "" for no tool)
    duration_s: float
    error_type: str = ""  # "" on success
    tool_type: str = ""  # tools only: gen_ai.tool.type ("function", "datastore", ...)
    method: str = ""  # MCP only: mcp.method.name
    service_name: str = "default"
    # where the span sits, for the run it belongs to and the marks the forwarder sets
    # (never labels): ids as sent, (resource, scope, span) index in its request
    trace_id: bytes = b""
    span_id: bytes = b""
    parent_id: bytes = b""
    position: tuple[int, int, int] | None = None
    start_ns: int = 0
    end_ns: int = 0


Decode = Callable[[bytes], Any]


def _text(a: Any, key: str, decode: Decode) -> str | None:
    if key not in a:
        return None
    try:
        value = decode(a[key])
    except Exception:  # undecodable bytes name nothing
        return None
    if type(value) is not str:
        return None
    value = value.strip()
    return value[:MAX_NAME_CHARS] or None


def _mcp_target(span_name: str, method: str) -> str:
    """The tool of a ``tools/call`` span that names it only in the span name: the MCP SDK's
    client span is ``MCP send tools/call <tool>`` (mcp 2.3 ``shared/jsonrpc_dispatcher.py``),
    semconv's ``{mcp.method.name} {target}``."""
    if method != "tools/call":
        return ""
    name = span_name.removeprefix("MCP send ")
    return name[len(method) + 1:][:MAX_NAME_CHARS] if name.startswith(method + " ") else ""


def _kind_and_name(span: Any, a: Any, decode: Decode) -> tuple[str, str | None, str] | None:
    """(kind, name, tool type) of a span, or None when it is none of ours."""
    method = _text(a, MCP_METHOD, decode)
    if method is not None:
        kind = MCP_SERVER if span.kind == SPAN_KIND_SERVER else MCP_CLIENT
        return kind, _text(a, TOOL_NAME, decode) or _mcp_target(span.name, method), ""
    op = _text(a, OPERATION, decode)
    if op in _OPERATIONS:
        kind, key = _OPERATIONS[op]
        tool_type = (_text(a, TOOL_TYPE, decode) or "") if kind == TOOL else ""
        return kind, _text(a, key, decode), tool_type
    oi = _text(a, OI_KIND, decode)
    if oi is not None:
        oi = oi.upper()
        if oi == "AGENT":
            name = _text(a, OI_AGENT_NAME, decode)
            return (AGENT, name, "") if name else (WORKFLOW, span.name[:MAX_NAME_CHARS], "")
        if oi == "TOOL":
            return TOOL, _text(a, OI_TOOL_NAME, decode) or span.name[:MAX_NAME_CHARS], "function"
        if oi == "RETRIEVER":
            return TOOL, span.name[:MAX_NAME_CHARS], "datastore"
        if oi == "CHAIN" and not span.parent_span_id:
            return WORKFLOW, span.name[:MAX_NAME_CHARS], ""
        return None
    ollm = _text(a, OLLM_KIND, decode)
    if ollm is not None:
        mapped = _OLLM_KINDS.get(ollm)
        if mapped is None:
            return None
        return mapped, _text(a, OLLM_ENTITY, decode) or span.name[:MAX_NAME_CHARS], \
            "function" if mapped == TOOL else ""
    if op is not None:  # another operation (chat, embeddings, create_agent): not ours
        return None
    for key, kind in ((VERCEL_TOOL, TOOL), (TOOL_NAME, TOOL), (AGENT_NAME, AGENT)):
        name = _text(a, key, decode)
        if name is not None:
            return kind, name, (_text(a, TOOL_TYPE, decode) or "") if kind == TOOL else ""
    return None


def classify(span: Any, service_name: str, decode: Decode,
             is_error: Callable[[bytes], bool],
             position: tuple[int, int, int] | None = None) -> AgentOp | None:
    """The AgentOp of an OTLP span (a ``wire.Span``) that is no LLM call, or None.

    ``decode`` reads one raw AnyValue and ``is_error`` a raw Status (the codec's, passed in
    by otlp.walk: this package does not import the codec, which imports it)."""
    a = span.attributes
    if not (MCP_METHOD in a or OPERATION in a or OI_KIND in a or OLLM_KIND in a
            or VERCEL_TOOL in a or TOOL_NAME in a or AGENT_NAME in a):
        return None
    try:
        found = _kind_and_name(span, a, decode)
    except Exception:  # hostile shapes: the span is forwarded, just not measured
        return None
    if found is None:
        return None
    kind, name, tool_type = found
    duration = span.end_time_unix_nano - span.start_time_unix_nano
    if not 0 <= duration <= MAX_DURATION_NS:
        return None
    error = _text(a, ERROR_TYPE, decode) or (OTHER_ERROR if is_error(span.status) else "")
    method = (_text(a, MCP_METHOD, decode) or "") if kind in (MCP_CLIENT, MCP_SERVER) else ""
    return AgentOp(kind, UNKNOWN if name is None else name, duration / 1e9, error,
                   tool_type, method, service_name, span.trace_id, span.span_id,
                   span.parent_span_id, position, span.start_time_unix_nano,
                   span.end_time_unix_nano)
