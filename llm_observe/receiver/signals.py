"""``/v1/metrics`` and ``/v1/logs`` on the OTLP/HTTP door: taken, counted, discarded — and said.

llm-observe ingests traces only. A 404 or 405 here makes every OTel SDK that exports all
three signals to one endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT``) log an export failure
every interval (Arize-ai/phoenix#7212 asks for exactly this fix), while a silent 200
would hide the loss. So a well-formed request is answered 200 with ``partial_success``
naming how many data points / log records were rejected and why — the spec's way to
reject part of a request (opentelemetry-proto docs/specification.md, "Partial Success";
the client must not retry it) — and counted in
``llm_observe_receiver_discarded_total{signal}``. A malformed body is still a 400.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsPartialSuccess,
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsPartialSuccess,
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)

from llm_observe.otlp.jsonwire import message_table, to_protobuf
from llm_observe.otlp.walk import RequestInvalid


def _data_points(request: Any) -> int:
    n = 0
    for rm in request.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                kind = metric.WhichOneof("data")
                if kind is not None:
                    n += len(getattr(metric, kind).data_points)
    return n


def _log_records(request: Any) -> int:
    return sum(len(sl.log_records) for rl in request.resource_logs for sl in rl.scope_logs)


def _metrics_answer(n: int, message: str) -> Message:
    return ExportMetricsServiceResponse(partial_success=ExportMetricsPartialSuccess(
        rejected_data_points=n, error_message=message)) if n else ExportMetricsServiceResponse()


def _logs_answer(n: int, message: str) -> Message:
    return ExportLogsServiceResponse(partial_success=ExportLogsPartialSuccess(
        rejected_log_records=n, error_message=message)) if n else ExportLogsServiceResponse()


@dataclass(frozen=True, slots=True)
class Signal:
    """One signal we take and discard: its request type, what it counts, its answer."""

    name: str  # the ``signal`` label: metrics, logs
    items: str  # what is counted, for the message
    request: Any
    count: Callable[[Any], int]
    answer: Callable[[int, str], Message]

    @property
    def table(self) -> Any:
        return message_table(self.request.DESCRIPTOR)

    def discard(self, body: bytes, as_json: bool) -> tuple[int, Message]:
        """Decode ``body`` (RequestInvalid if it is not this signal's request) and build
        the answer: how many items were discarded, and the response saying so."""
        data = to_protobuf(body, self.table) if as_json else body
        try:
            decoded = self.request.FromString(data)
        except Exception as exc:  # upb raises DecodeError; anything else is as bad
            raise RequestInvalid(f"not a valid OTLP {self.request.__name__}: {exc}") from None
        n = self.count(decoded)
        message = (f"llm-observe ingests traces only (POST /v1/traces); {n} {self.items} "
                   "were discarded")
        return n, self.answer(n, message)


SIGNALS = {"metrics": Signal("metrics", "metric data points", ExportMetricsServiceRequest,
                             _data_points, _metrics_answer),
           "logs": Signal("logs", "log records", ExportLogsServiceRequest, _log_records,
                          _logs_answer)}
_TABLES = [signal.table for signal in SIGNALS.values()]  # read now: a gap fails at import
