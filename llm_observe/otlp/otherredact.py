"""The forwarded copy of a non-LLM span: its scan verdicts, its texts redacted, its mark.

Mirror of what :class:`otlp.encode.Encoder` does for an LLM call (``_enrich``): every span
whose texts were read (agents/untrusted.py) gets ``llm_observe.pii_detected`` and
``llm_observe.injection_attempt``; its texts are redacted by the same rule (PII at its
offsets, text past the scanned bound and text nobody scanned replaced). The agent or
workflow span that consumed a tool output flagged as an injection attempt gets
``llm_observe.tool_output_flagged = true`` (agents/consumers.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llm_observe import semconv as sc
from llm_observe.agents.untrusted import OtherText
from llm_observe.otlp.redact import needs_redaction, redact_span
from llm_observe.otlp.textkeys import CONTENT_EVENTS, classify
from llm_observe.otlp.wire import encode_value

_TRUE, _FALSE = encode_value(True), encode_value(False)
Position = tuple[int, int, int]


def enrich_others(resource_spans: Any, others: Sequence[OtherText], marked: Sequence[Position],
                  redact_pii: bool) -> None:
    """Apply each record to its span in ``resource_spans`` (the request copy being sent)."""
    for other in others:
        r, s, i = other.position
        message = resource_spans[r].scope_spans[s].spans[i]
        a = message.attributes
        a[sc.PII_DETECTED] = _TRUE if other.pii_detected else _FALSE
        a[sc.INJECTION_ATTEMPT] = _TRUE if other.injection_attempt else _FALSE
        if redact_pii and needs_redaction(other):
            try:
                redact_span(message, other)
            except Exception:  # a value the redactor cannot rewrite is not sent at all
                strip_texts(message)
    for r, s, i in marked:
        resource_spans[r].scope_spans[s].spans[i].attributes[sc.TOOL_OUTPUT_FLAGGED] = _TRUE


def strip_texts(message: Any) -> None:
    """Remove every text-bearing attribute and content event of a span (last resort)."""
    attrs = message.attributes
    for key in [k for k in attrs if classify(k) is not None]:
        del attrs[key]
    events = message.events
    for i in reversed([i for i, e in enumerate(events) if e.name in CONTENT_EVENTS]):
        del events[i]
