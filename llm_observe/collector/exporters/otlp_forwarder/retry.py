"""Retry policy of the OTLP forwarder: which codes are retried, backoff, RetryInfo.

Retryable codes per the OTLP specification ("Failures": the server may ask to retry
with these; RESOURCE_EXHAUSTED is retried, as the issue asks, except for gRPC's
"message larger than max", which no retry can cure: the forwarder splits that request);
every other code is permanent. A server's ``google.rpc.RetryInfo`` delay wins over our
backoff.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import grpc
from google.rpc import error_details_pb2, status_pb2

# Retryable per the OTLP spec ("Failures" in otlp.md); everything else is permanent.
RETRYABLE = frozenset({
    grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED, grpc.StatusCode.ABORTED,
    grpc.StatusCode.OUT_OF_RANGE, grpc.StatusCode.DATA_LOSS,
})
MAX_SERVER_DELAY_S = 300.0  # a RetryInfo delay is honoured up to this


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff with jitter: ``initial * multiplier**attempt``, capped, ±jitter."""

    initial: float = 0.5
    maximum: float = 5.0
    multiplier: float = 2.0
    jitter: float = 0.5

    def delay(self, attempt: int) -> float:
        base = min(self.maximum, self.initial * self.multiplier ** min(attempt, 30))
        return base * random.uniform(1 - self.jitter, 1 + self.jitter)


def server_retry_delay(error: grpc.aio.AioRpcError) -> float | None:
    """The RetryInfo delay an error carries (status details or the bare trailer), if any."""
    info = None
    for key, value in error.trailing_metadata() or ():
        try:
            if key == "google.rpc.retryinfo-bin":
                info = error_details_pb2.RetryInfo.FromString(value)
            elif key == "grpc-status-details-bin":
                for detail in status_pb2.Status.FromString(value).details:
                    if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                        info = error_details_pb2.RetryInfo()
                        detail.Unpack(info)
        except Exception:  # a malformed trailer is ignored, not fatal
            continue
    if info is None:
        return None
    seconds = float(info.retry_delay.seconds + info.retry_delay.nanos / 1e9)
    return min(max(seconds, 0.0), MAX_SERVER_DELAY_S)


def too_large(error: grpc.aio.AioRpcError) -> bool:
    """Whether the backend refused the request for its size (gRPC's max receive length:
    "Received message larger than max (N vs. M)" in C-core, "grpc: received message
    larger than max" in grpc-go, e.g. Tempo and the OTel Collector at 4 MiB by default)."""
    return (error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            and "larger than max" in (error.details() or "").lower())
