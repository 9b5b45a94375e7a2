"""Decode an OTLP trace request and sort its spans: LLM calls, pass-through, rejected.

The LLM spans become :class:`LlmSpan`s whose ``position`` is their (resource, scope,
span) index in the request. The sorted request (:class:`Walked`) is the origin of the
pipeline batch: read-only for the processors. The forwarder applies the enrichment of
each LLM span at its position (on the request itself when it holds LLM spans only,
:mod:`otlp.inplace`; on a copy otherwise), leaves the rejected spans out and sends it on
in one serialization: the spans go to Tempo as received, plus our attributes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llm_observe import semconv as sc
from llm_observe.agents.classify import TOOL_LIKE, AgentOp, classify
from llm_observe.agents.untrusted import OtherText
from llm_observe.errors import PermanentError
from llm_observe.otlp.dialects import SpanRejected, map_span
from llm_observe.otlp.othertexts import read_other
from llm_observe.otlp.values import small
from llm_observe.otlp.wire import Request, Resource, decode_value, is_error_status
from llm_observe.span import LlmSpan

DEFAULT_SERVICE = "default"
MAX_NAMED_REJECTIONS = 5  # bad spans named in the partial-success message


class RequestInvalid(PermanentError):
    """The request bytes are not an OTLP ExportTraceServiceRequest (INVALID_ARGUMENT)."""


@dataclass(slots=True, eq=False)
class ScopeGroup:
    """One resource + instrumentation scope of a request, as received (raw bytes)."""

    resource: bytes
    resource_schema_url: str
    scope: bytes
    scope_schema_url: str


Position = tuple[int, int, int]  # (resource_spans, scope_spans, spans) indexes


@dataclass(slots=True)
class Walked:
    """A request sorted: LLM spans, how many others, rejections (and where they sit).

    The origin of a pipeline :class:`~llm_observe.pipeline.Batch`: no processor mutates
    ``request``; the forwarder may rewrite it in place (:mod:`otlp.inplace`), ``shaped``
    saying how far it went.
    """

    request: Any
    llm: list[LlmSpan] = field(default_factory=list)
    n_other: int = 0
    rejected: list[str] = field(default_factory=list)
    bad: list[Position] = field(default_factory=list)  # rejected spans, in request order
    agents: list[AgentOp] = field(default_factory=list)  # agent/tool/workflow/MCP spans
    texts: list[OtherText] = field(default_factory=list)  # non-LLM spans' texts (scanned)
    marked: list[Position] = field(default_factory=list)  # agents that took flagged output
    shaped: int = -1  # the forwarder's in-place rewrite: -1 none, else otlp.inplace.RANK

    @property
    def text_chars(self) -> int:
        """Characters of the non-LLM spans' texts (the pipeline's inline-or-thread rule)."""
        return sum(t.chars for t in self.texts)

    @property
    def n_accepted(self) -> int:
        return len(self.llm) + self.n_other

    def group(self, r: int, s: int) -> ScopeGroup:
        """The resource + scope of the spans at ``request.resource_spans[r].scope_spans[s]``."""
        rs = self.request.resource_spans[r]
        ss = rs.scope_spans[s]
        return ScopeGroup(rs.resource, rs.schema_url, ss.scope, ss.schema_url)

    def rejection_message(self) -> str:
        """The partial-success message: how many spans were rejected and why (first few)."""
        shown = "; ".join(self.rejected[:MAX_NAMED_REJECTIONS])
        more = len(self.rejected) - MAX_NAMED_REJECTIONS
        tail = f"; and {more} more" if more > 0 else ""
        return (f"rejected {len(self.rejected)} LLM span(s) with invalid attributes "
                f"(not counted, not forwarded): {shown}{tail}")


def decode_request(data: bytes) -> Any:
    """Parse request bytes (a ``wire.Request``); RequestInvalid when they are not OTLP."""
    try:
        return Request.FromString(data)
    except Exception as exc:  # upb raises DecodeError; anything else is as bad
        raise RequestInvalid(f"not a valid OTLP ExportTraceServiceRequest: {exc}") from None


_services: dict[bytes, str] = {}
MAX_CACHED_RESOURCE = 8192  # bytes; SDK resources are well under 1 KiB


def service_name(resource: bytes) -> str:
    """``service.name`` of a serialized Resource (cached: senders repeat their resource)."""
    name = _services.get(resource)
    if name is not None:
        return name
    name = DEFAULT_SERVICE
    try:
        attrs = Resource.FromString(resource).attributes
        if sc.SERVICE_NAME in attrs:
            value = decode_value(attrs[sc.SERVICE_NAME])
            if isinstance(value, str) and value.strip():
                name = value.strip()[:256]
    except Exception:  # a broken resource names no service; the spans still count
        pass
    if len(resource) <= MAX_CACHED_RESOURCE:  # a sender must not pin megabytes of keys
        if len(_services) >= 256:
            _services.clear()
        _services[resource] = name
    return name


def walk(request: Any) -> Walked:
    """Sort every span of a decoded request (never raises for one bad span)."""
    out = Walked(request)
    llm, rejected = out.llm, out.rejected
    n_other = 0
    for r, rs in enumerate(request.resource_spans):
        service = service_name(rs.resource)
        for s, ss in enumerate(rs.scope_spans):
            for index, span in enumerate(ss.spans):
                try:
                    mapped = map_span(span, service, (r, s, index))
                except SpanRejected as exc:
                    rejected.append(f"span {span.span_id.hex() or '?'} "
                                    f"({span.name[:60]!r}): {exc}")
                    out.bad.append((r, s, index))
                    continue
                if mapped is None:
                    n_other += 1
                    op = classify(span, service, small, is_error_status, (r, s, index))
                    if op is not None:  # forwarded like any other span, and measured
                        out.agents.append(op)
                    other = _other_text(span, (r, s, index),
                                        op is not None and op.kind in TOOL_LIKE)
                    if other is not None:  # scanned and redacted like an LLM call's text
                        out.texts.append(other)
                else:
                    llm.append(mapped)
    out.n_other = n_other
    return out


def _other_text(span: Any, position: Position, tool_like: bool) -> OtherText | None:
    """A non-LLM span's texts; a span the reader fails on is forwarded with every text
    replaced (an OtherText with no text, still marked unscanned), never raw."""
    try:
        return read_other(span, position, tool_like)
    except Exception:
        return OtherText(position, span.trace_id, span.span_id, span.parent_span_id, tool_like)


def count_spans(request: Any) -> int:
    """How many spans a decoded request holds (no span is walked)."""
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)


def groups(request: Any) -> list[tuple[ScopeGroup, list[Any]]]:
    """Every span of a request under its resource + scope (to re-pack a large request)."""
    return [(ScopeGroup(rs.resource, rs.schema_url, ss.scope, ss.schema_url), list(ss.spans))
            for rs in request.resource_spans for ss in rs.scope_spans]
