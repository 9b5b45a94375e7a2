"""The transport-neutral core of an OTLP trace Export: what happened, not how to say it.

Both doors (:mod:`receiver.grpc_server`, :mod:`receiver.http_server`) run one
:class:`ExportCore`: ``receive`` decodes and sorts a request (CPU only, any thread),
``handle`` runs the pipeline on it (on the event loop). Each returns an :class:`Outcome`
that the door maps to its transport: a gRPC status with trailers, or an HTTP status with
a ``google.rpc.Status`` / ``ExportTraceServiceResponse`` body. Counting happens here, once,
so the two doors share ``llm_observe_receiver_*`` and cannot drift apart.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import Any

from llm_observe.errors import PermanentError
from llm_observe.otlp.walk import RequestInvalid, Walked, count_spans, decode_request, walk
from llm_observe.pipeline import Backpressure, Batch, Pipeline
from llm_observe.pipeline.selfmetrics import ReceiverMetrics

log = logging.getLogger(__name__)

DEFAULT_MAX_SPANS = 20_000  # per request (Settings.otlp_max_spans_per_request)


class Kind(enum.Enum):
    """The outcomes an Export can have; each door has one answer per kind."""

    OK = "ok"  # accepted; ``rejected`` > 0 makes it a partial success
    INVALID = "invalid"  # not an OTLP request, or over the span cap: do not retry
    TOO_LARGE = "too_large"  # over the size limit (after decompression): do not retry
    UNAUTHENTICATED = "unauthenticated"  # the bearer token is missing or wrong
    BACKPRESSURE = "backpressure"  # an exporter's queue is full: retry after a delay
    UNAVAILABLE = "unavailable"  # an unexpected failure: retry


@dataclass(frozen=True, slots=True)
class Outcome:
    """What to tell the sender. ``message`` is the error text, or for a partial success
    the message naming the rejected spans; ``retry_after_s`` goes with BACKPRESSURE."""

    kind: Kind
    message: str = ""
    retry_after_s: float = 0.0
    rejected: int = 0

    @property
    def retryable(self) -> bool:
        return self.kind in (Kind.BACKPRESSURE, Kind.UNAVAILABLE)


ACCEPTED = Outcome(Kind.OK)
TOKEN_MESSAGE = "missing or wrong bearer token"


class ExportCore:
    """Decode, sort and submit Export requests; count every outcome. One per door."""

    def __init__(self, pipeline: Pipeline, metrics: ReceiverMetrics,
                 max_spans: int = DEFAULT_MAX_SPANS, token: str | None = None) -> None:
        self.pipeline = pipeline
        self.metrics = metrics
        self.max_spans = max_spans
        self.token = token.encode("utf-8") if token else None

    def unauthenticated(self, message: str = TOKEN_MESSAGE) -> Outcome:
        """The answer to a call without the token (counted; nothing decoded)."""
        self.metrics.requests.labels("unauthenticated").inc()
        return Outcome(Kind.UNAUTHENTICATED, message)

    def invalid(self, message: str, kind: Kind = Kind.INVALID) -> Outcome:
        """A request refused whole before any span was counted (bad bytes, too large)."""
        self.metrics.requests.labels("invalid").inc()
        return Outcome(kind, message)

    def receive(self, request: bytes) -> Walked | Outcome:
        """Decode and sort request bytes (CPU only; never touches the pipeline)."""
        try:
            decoded = decode_request(request)
        except RequestInvalid as exc:
            return self.invalid(str(exc))
        return self.receive_decoded(decoded)

    def receive_decoded(self, decoded: Any) -> Walked | Outcome:
        """Sort an already decoded request (a ``wire.Request``)."""
        n = count_spans(decoded)
        if n > self.max_spans:  # mapping and enriching it would hold the loop for seconds
            return self.invalid(f"request holds {n} spans; at most {self.max_spans} are "
                                "taken per request: export smaller batches")
        try:
            walked = walk(decoded)
        except RequestInvalid as exc:
            return self.invalid(str(exc))
        self.metrics.received_llm.inc(len(walked.llm) + len(walked.rejected))
        self.metrics.received_other.inc(walked.n_other)
        return walked

    async def handle(self, walked: Walked) -> Outcome:
        """Run the pipeline on a sorted request and say what to answer."""
        m = self.metrics
        n_llm, n_other, n_bad = len(walked.llm), walked.n_other, len(walked.rejected)
        failed = await self._submit(walked)
        if failed is not None:
            m.refused.labels("backpressure" if failed.kind is Kind.BACKPRESSURE
                             else "error").inc(n_llm + n_other)
            return failed
        m.accepted_llm.inc(n_llm)
        m.accepted_other.inc(n_other)
        if not n_bad:
            m.ok.inc()
            return ACCEPTED
        m.requests.labels("partial").inc()
        m.refused.labels("invalid").inc(n_bad)
        return Outcome(Kind.OK, walked.rejection_message(), rejected=n_bad)

    async def _submit(self, walked: Walked) -> Outcome | None:
        """Hand the spans on; an error outcome when the sender must retry (or give up)."""
        m = self.metrics
        try:
            # The request is the batch's origin: exporters that forward traces send its
            # other spans on too. Room for all of them is asked before any work, so a
            # refused request has changed nothing and its retry is not counted twice.
            await self.pipeline.submit(Batch(walked.llm, walked))
        except Backpressure as exc:
            m.requests.labels("refused").inc()
            return Outcome(Kind.BACKPRESSURE, str(exc), exc.retry_after_s)
        except PermanentError as exc:
            m.requests.labels("invalid").inc()
            return Outcome(Kind.INVALID, str(exc))
        except Exception:
            log.exception("OTLP export failed inside the pipeline")
            m.requests.labels("error").inc()
            return Outcome(Kind.UNAVAILABLE, "internal error; retry later", 1.0)
        return None
