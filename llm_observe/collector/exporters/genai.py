"""The OTel GenAI semantic-convention client metrics, beside the spec's eight llm_* series.

Followed: open-telemetry/semantic-conventions ``docs/gen-ai/gen-ai-metrics.md`` (the
release with ``gen_ai.provider.name`` and ``gen_ai.client.operation.time_to_first_chunk``,
tag not verified offline), exposed per the OTel "Prometheus and OpenMetrics Compatibility" spec
(specification/compatibility/prometheus_and_openmetrics.md): dots become underscores in
metric and label names, the unit ``s`` appends ``_seconds``, an annotation unit in braces
(``{token}``) is dropped.

- ``gen_ai_client_token_usage``: one observation per span and token type (``input`` =
  ``prompt_tokens``, ``output`` = ``completion_tokens``);
- ``gen_ai_client_operation_duration_seconds``: ``latency_ms_total``/1000, with
  ``error_type`` (``LlmSpan.error_type`` or ``_OTHER``) on error spans;
- ``gen_ai_client_operation_time_to_first_chunk_seconds``: ``latency_ms_ttft``/1000.

Label sets are created, guarded and budgeted in ``label_sets.py`` (``genai_sets``), and
observations are added once per label set per batch, as for the eight families.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

from prometheus_client import CollectorRegistry, Histogram

from llm_observe.collector.exporters.buckets import observe_batch
from llm_observe.span import LlmSpan

__all__ = ["DURATION_BUCKETS_S", "OPERATION", "OTHER_ERROR", "TOKEN_BUCKETS", "GenAiMetrics",
           "GenAiSet", "GenAiTally", "observe_tokens"]

TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
                 16777216, 67108864)
DURATION_BUCKETS_S = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24,
                      20.48, 40.96, 81.92)
# The same bounds in ms, exact integers: spans carry ms, so a value is bucketed in ms
# (no float rounding at a bound) and divided by 1000 once per batch for the sum.
_DURATION_BOUNDS_MS = (*(round(b * 1000) for b in DURATION_BUCKETS_S), float("inf"))
_PROMPT, _COMPLETION = attrgetter("prompt_tokens"), attrgetter("completion_tokens")
OPERATION = "chat"
OTHER_ERROR = "_OTHER"
LABELS = ("gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model",
          "gen_ai_response_model")


class GenAiMetrics:
    """The three GenAI histogram families on one registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.tokens = Histogram(
            "gen_ai_client_token_usage", "Number of input and output tokens used",
            [*LABELS, "gen_ai_token_type"], buckets=TOKEN_BUCKETS, registry=registry)
        self.duration = Histogram(
            "gen_ai_client_operation_duration", "GenAI operation duration",
            [*LABELS, "error_type"], buckets=DURATION_BUCKETS_S, unit="seconds",
            registry=registry)
        self.ttft = Histogram(
            "gen_ai_client_operation_time_to_first_chunk",
            "Time to receive the first chunk of a streamed response",
            list(LABELS), buckets=DURATION_BUCKETS_S, unit="seconds", registry=registry)


class GenAiSet:
    """The children of one (request model, provider, response model, error type)."""

    __slots__ = ("duration", "input", "output", "ttft")

    def __init__(self, m: GenAiMetrics, labels: tuple[str, str, str, str],
                 error_type: str) -> None:
        self.input = m.tokens.labels(*labels, "input")
        self.output = m.tokens.labels(*labels, "output")
        self.duration = m.duration.labels(*labels, error_type)
        self.ttft = m.ttft.labels(*labels)


class GenAiTally:
    """One GenAI label set's spans over a batch; read into observations at flush."""

    __slots__ = ("spans",)

    def __init__(self) -> None:
        self.spans: list[LlmSpan] = []

    def flush(self, s: GenAiSet, batched: bool) -> None:
        spans = self.spans
        observe_tokens(s, spans, batched)
        observe_batch(s.duration, [x.latency_ms_total for x in spans
                                   if x.latency_ms_total is not None],
                      batched, _DURATION_BOUNDS_MS, 1000)
        observe_batch(s.ttft, [x.latency_ms_ttft for x in spans
                               if x.latency_ms_ttft is not None],
                      batched, _DURATION_BOUNDS_MS, 1000)


def observe_tokens(s: GenAiSet, spans: Sequence[LlmSpan], batched: bool) -> None:
    """The token histogram's observations of ``spans``: input and output counts."""
    # 0 is what a span without a reported count carries: no usage to observe (filter(None)
    # drops it); map/attrgetter/filter run in C
    observe_batch(s.input, list(filter(None, map(_PROMPT, spans))), batched, narrow=True)
    observe_batch(s.output, list(filter(None, map(_COMPLETION, spans))), batched, narrow=True)
