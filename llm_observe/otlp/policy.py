"""A destination's choice of what leaves: its text policy and its span filter, applied by
the encoder (:mod:`otlp.encode`) to what it sends: the received request itself, rewritten
in place in text order (:mod:`otlp.inplace`), or a copy.

Text policies: ``redacted`` (PII and unscanned text replaced: :mod:`otlp.redact`),
``full`` (the texts as received: encoded before any redaction, so nothing is kept longer
than the batch), ``none`` (every
text-bearing key the reader knows, of every span, removed: attributes, and the content
attributes of content events; no text is parsed, so it costs less than redacting).
Span filters: ``all``, ``llm`` (LLM spans only: agent, tool and other spans of the request
are left out), ``sampled`` (LLM spans the sampling stage kept: ``llm_observe.is_sampled``).
"""

from __future__ import annotations

from typing import Any, Final

from llm_observe.otlp import texts
from llm_observe.otlp.redact import SIDES
from llm_observe.otlp.textkeys import EVENT_METADATA

TEXT_POLICIES: Final = ("redacted", "full", "none")
SPAN_FILTERS: Final = ("all", "llm", "sampled")


def keeps(span: Any, spans: str) -> bool:
    """Whether the LLM span ``span`` (an ``LlmSpan``) passes the filter ``spans``."""
    return spans != "sampled" or bool(span.is_sampled)


def drop_texts(message: Any) -> None:
    """Remove every text-bearing key of a wire span (attributes and content events)."""
    attrs = message.attributes
    sides = texts.both_sides(attrs)
    for which in SIDES:
        for _, family in sides[which]:
            for key, _ in family.keys:
                if key in attrs:
                    del attrs[key]
    if message.events:
        for found in texts.content_events(message, message.events).values():
            for _, event in found:
                for key in [k for k in event.attributes if k not in EVENT_METADATA]:
                    del event.attributes[key]


def drop_other_texts(request: Any, done: set[tuple[int, int, int]]) -> None:
    """:func:`drop_texts` on every span of a request but those at ``done`` (the LLM spans,
    emptied as they were enriched)."""
    for r, rs in enumerate(request.resource_spans):
        for s, ss in enumerate(rs.scope_spans):
            for i, span in enumerate(ss.spans):
                if (r, s, i) not in done:
                    drop_texts(span)


def filter_spans(request: Any, keep: set[tuple[int, int, int]]) -> int:
    """Delete every span of ``request`` whose position is not in ``keep``; the kept count."""
    kept = 0
    for r, rs in enumerate(request.resource_spans):
        for s, ss in enumerate(rs.scope_spans):
            spans = ss.spans
            for i in range(len(spans) - 1, -1, -1):
                if (r, s, i) in keep:
                    kept += 1
                else:
                    del spans[i]
    return kept
