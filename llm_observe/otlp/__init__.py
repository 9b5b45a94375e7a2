"""The OTLP codec, shared by every OTLP door and by the forwarder.

- :mod:`.wire` — a wire-compatible mirror of the OTLP trace messages (lazy attribute
  values) and the low-level protobuf helpers;
- :mod:`.values` — attribute values decoded and bounded;
- :mod:`.texts` — prompt/completion texts in every dialect's keys and events;
- :mod:`.dialects` — the one mapping of span attributes to :class:`LlmSpan` fields;
- :mod:`.walk` — a request decoded and sorted into LLM spans, others and rejections;
- :mod:`.encode` — enriched spans back to request bytes; :mod:`.redact` — PII out of
  every text copy of a span.

Imports nothing from the doors (``receiver``, ``api``) or the exporters (``collector``).
"""
