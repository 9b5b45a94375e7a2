"""Latency and time to first token of an OTLP span, each within its bound or rejected.

The rule (docs/receiver.md, "Bounds"): 0 <= TTFT <= total latency <= MAX_LATENCY_MS, and
every timestamp an LLM span carries is at most MAX_TIME_NS. A value outside it rejects
the whole span (:class:`SpanRejected`, named in the partial success), never just the
field: one impossible number means the sender's clock or encoder is broken, and we
cannot tell which of its numbers is the lie; a rejection is visible to the sender, a
dropped field is not.
"""

from __future__ import annotations

from typing import Any

from llm_observe import semconv as sc
from llm_observe.otlp.values import SpanRejected, integer, seconds_ms
from llm_observe.span import MAX_LATENCY_MS

# Timestamps are unsigned 64-bit nanoseconds in OTLP, but Go backends (Tempo, Jaeger)
# and our own transition spans (start + latency) work in int64: past 2**63 - 1 (the year
# 2262) a time is garbage, and left in it would overflow downstream.
MAX_TIME_NS = 2**63 - 1
_MS = 1_000_000  # ns

# Span events whose first occurrence marks the first streamed token.
_FIRST_TOKEN_EVENTS = frozenset({sc.OI_FIRST_TOKEN_EVENT, sc.OLLM_COMPLETION_CHUNK_EVENT,
                                 sc.OLLM_GEN_AI_COMPLETION_CHUNK_EVENT})
_EXPLICIT_FIRST_TOKEN = frozenset({sc.OI_FIRST_TOKEN_EVENT})  # emitted once, at the token


def latencies(span: Any, a: Any, latency_key: str | None, ttft_key: str | None,
              ttft_per_second: int = 0, ttft: int | None = None
              ) -> tuple[int | None, int | None]:
    """(total latency, TTFT) in whole ms, None where unknown; SpanRejected past a bound.

    The latency is our attribute when present, else end - start; the TTFT is ``ttft``
    when the caller read it already (Langfuse's completion start), else an attribute
    (``ttft_per_second``: 0 for our whole ms, 1 for ms as a double, 1000 for seconds),
    else the first first-token event's offset from the start, which must lie within
    the span.
    """
    start, end = span.start_time_unix_nano, span.end_time_unix_nano
    if start > MAX_TIME_NS:
        raise SpanRejected("start_time_unix_nano", f"is past {MAX_TIME_NS} (int64 ns)")
    if end > MAX_TIME_NS:
        raise SpanRejected("end_time_unix_nano", f"is past {MAX_TIME_NS} (int64 ns)")
    if start and end and end < start:
        raise SpanRejected("end_time_unix_nano", "is before start_time_unix_nano")
    if latency_key:
        latency: int | None = integer(a, latency_key, MAX_LATENCY_MS)
    elif start and end:
        latency = (end - start + _MS // 2) // _MS
        if latency > MAX_LATENCY_MS:
            raise SpanRejected("end_time_unix_nano", f"gives a latency over {MAX_LATENCY_MS} ms")
    else:
        latency = None
    if ttft is not None:
        pass
    elif ttft_key:
        ttft = (seconds_ms(a, ttft_key, ttft_per_second) if ttft_per_second
                else integer(a, ttft_key, MAX_LATENCY_MS))
    else:
        events = span.events
        ttft = event_ttft(events, start, end, span.dropped_events_count) \
            if events and start else None
    if ttft is not None and latency is not None and ttft > latency:
        raise SpanRejected("time to first token", f"({ttft} ms) exceeds the latency ({latency} ms)")
    return latency, ttft


def event_ttft(events: Any, start: int, end: int = 0, dropped_events: int = 0) -> int | None:
    """TTFT from the first first-token / chunk event (OpenInference, OpenLLMetry).

    The event must lie in [start, end] (end when known) and at most MAX_LATENCY_MS after
    the start. SDKs keep the newest 128 events and drop the oldest: when the span says
    events were dropped, the first chunk event left is not the first chunk, so only
    OpenInference's one-off first-token event is trusted then.
    """
    names = _FIRST_TOKEN_EVENTS if not dropped_events else _EXPLICIT_FIRST_TOKEN
    for event in events:
        if event.name in names:
            at = event.time_unix_nano
            if at < start:
                raise SpanRejected(f"event {event.name!r}", "is before the span's start")
            if end and at > end:
                raise SpanRejected(f"event {event.name!r}", "is after the span's end")
            ttft: int = (at - start + _MS // 2) // _MS
            if ttft > MAX_LATENCY_MS:
                raise SpanRejected(f"event {event.name!r}",
                                   f"gives a time to first token over {MAX_LATENCY_MS} ms")
            return ttft
    return None
