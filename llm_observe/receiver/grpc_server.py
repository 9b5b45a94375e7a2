"""The OTLP/gRPC trace receiver: any OpenTelemetry SDK can export to it on :4317.

A ``grpc.aio`` server on the collector's event loop (chosen by measurement, see
docs/receiver.md: the full pipeline runs on the loop anyway, and a thread-pool
server only adds a hand-off per request). The method handler takes the raw
request bytes, so decoding is ours: garbage answers INVALID_ARGUMENT instead of
grpc's generic INTERNAL, and the fast mirror schema of :mod:`receiver.wire` is
used. gzip is accepted (grpc decompresses); the size limit is grpc's own
(RESOURCE_EXHAUSTED beyond ``max_message_bytes``, after decompression).

Answers: UNAUTHENTICATED without the configured bearer token (checked before any
decoding, see :mod:`receiver.auth`); OK; OK with ``partial_success`` naming the
rejected LLM spans; INVALID_ARGUMENT for undecodable bytes; RESOURCE_EXHAUSTED with
RetryInfo when an exporter's queue is full (the SDK retries later); UNAVAILABLE otherwise.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)
from prometheus_client import CollectorRegistry

from llm_observe.errors import PermanentError
from llm_observe.otlp.walk import RequestInvalid, Walked, count_spans, decode_request, walk
from llm_observe.pipeline import Backpressure, Batch, Pipeline
from llm_observe.pipeline.selfmetrics import ReceiverMetrics, receiver_metrics
from llm_observe.receiver.auth import CHALLENGE, metadata_ok

log = logging.getLogger(__name__)

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
METHOD = "Export"
FLAVOUR = "aio"  # chosen by measurement: docs/receiver.md
DEFAULT_MAX_SPANS = 20_000  # per request (Settings.otlp_max_spans_per_request)
# Requests larger than this are decoded and sorted in a thread, so one big request does not
# hold the loop (the API, /metrics, other senders) while it is walked.
INLINE_MAX_BYTES = 256 * 1024


@dataclass
class Receiver:
    """A running receiver: ``port`` is the bound port (so port 0 works)."""

    port: int
    server: Any  # grpc.aio.Server, or grpc.Server for the thread-pool flavour

    async def stop(self, grace: float) -> None:
        """Stop taking requests; in-flight ones get ``grace`` seconds to finish."""
        if isinstance(self.server, grpc.aio.Server):
            await self.server.stop(grace)
        else:
            done = self.server.stop(grace)
            await asyncio.get_running_loop().run_in_executor(None, done.wait)


@dataclass(frozen=True, slots=True)
class Answer:
    """What to tell the sender: OK with ``body``, or an error ``code`` with trailers."""

    code: grpc.StatusCode | None = None
    message: str = ""
    trailers: tuple[tuple[str, bytes], ...] = ()
    body: bytes = b""


def retry_trailers(code: grpc.StatusCode, message: str,
                   delay_s: float) -> tuple[tuple[str, bytes], ...]:
    """Trailing metadata carrying RetryInfo: as google.rpc.Status details (OTel Collector,
    Go SDK) and as the bare ``google.rpc.retryinfo-bin`` the Python SDK reads."""
    seconds = int(delay_s)
    info = error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(
        seconds=seconds, nanos=int((delay_s - seconds) * 1e9)))
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=code.value[0], message=message, details=[detail])
    return (("grpc-status-details-bin", status.SerializeToString()),
            ("google.rpc.retryinfo-bin", info.SerializeToString()))


assert grpc.StatusCode.RESOURCE_EXHAUSTED.value[0] == code_pb2.RESOURCE_EXHAUSTED


class TraceService:
    """The Export handler: ``receive`` (decode + map, any thread), then ``handle`` (the
    pipeline, on the event loop). One instance per receiver."""

    def __init__(self, pipeline: Pipeline, metrics: ReceiverMetrics,
                 loop: asyncio.AbstractEventLoop | None = None,
                 max_spans: int = DEFAULT_MAX_SPANS, token: str | None = None) -> None:
        self.pipeline = pipeline
        self.metrics = metrics
        self.max_spans = max_spans
        self.loop = loop
        self.token = token.encode("utf-8") if token else None

    def refuse(self, context: Any) -> Answer | None:
        """UNAUTHENTICATED when a token is configured and the call lacks it, else None."""
        if self.token is None or metadata_ok(context.invocation_metadata(), self.token):
            return None
        self.metrics.requests.labels("unauthenticated").inc()
        return Answer(grpc.StatusCode.UNAUTHENTICATED, CHALLENGE)

    async def export(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        """The grpc.aio handler (on the loop)."""
        got: Walked | Answer | None = self.refuse(context)
        if got is None:  # a large request is decoded and sorted off the loop (~15 µs a kB)
            got = (self.receive(request) if len(request) <= INLINE_MAX_BYTES else await
                   asyncio.get_running_loop().run_in_executor(None, self.receive, request))
        answer = got if isinstance(got, Answer) else await self.handle(got)
        if answer.code is not None:
            await context.abort(answer.code, answer.message, trailing_metadata=answer.trailers)
        return answer.body

    def export_in_thread(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        """The thread-pool handler: map here, run the pipeline on the loop."""
        got = self.refuse(context) or self.receive(request)
        if not isinstance(got, Answer):
            assert self.loop is not None
            got = asyncio.run_coroutine_threadsafe(self.handle(got), self.loop).result()
        if got.code is not None:
            context.set_trailing_metadata(got.trailers)
            context.abort(got.code, got.message)
        return got.body

    def receive(self, request: bytes) -> Walked | Answer:
        """Decode and sort a request (CPU only; never touches the pipeline)."""
        try:
            decoded = decode_request(request)
            n = count_spans(decoded)
            if n > self.max_spans:  # mapping and enriching it would hold the loop for seconds
                raise RequestInvalid(f"request holds {n} spans; at most {self.max_spans} are "
                                     "taken per request: export smaller batches")
            walked = walk(decoded)
        except RequestInvalid as exc:
            self.metrics.requests.labels("invalid").inc()
            return Answer(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        self.metrics.received_llm.inc(len(walked.llm) + len(walked.rejected))
        self.metrics.received_other.inc(walked.n_other)
        return walked

    async def handle(self, walked: Walked) -> Answer:
        """Run the pipeline on a sorted request and say what to answer."""
        m = self.metrics
        n_llm, n_other, n_bad = len(walked.llm), walked.n_other, len(walked.rejected)
        failed = await self._process(walked)
        if failed is not None:
            m.refused.labels("backpressure" if failed.trailers else "error").inc(n_llm + n_other)
            return failed
        m.accepted_llm.inc(n_llm)
        m.accepted_other.inc(n_other)
        if not n_bad:
            m.ok.inc()
            return Answer()
        m.requests.labels("partial").inc()
        m.refused.labels("invalid").inc(n_bad)
        body: bytes = ExportTraceServiceResponse(partial_success=ExportTracePartialSuccess(
            rejected_spans=n_bad, error_message=walked.rejection_message())).SerializeToString()
        return Answer(body=body)

    async def _process(self, walked: Walked) -> Answer | None:
        """Hand the spans on; an error answer when the sender must retry (or give up)."""
        m = self.metrics
        try:
            # The request is the batch's origin: exporters that forward traces send its
            # other spans on too. Room for all of them is asked before any work, so a
            # refused request has changed nothing and its retry is not counted twice.
            await self.pipeline.submit(Batch(walked.llm, walked))
        except Backpressure as exc:
            m.requests.labels("refused").inc()
            code = grpc.StatusCode.RESOURCE_EXHAUSTED
            return Answer(code, str(exc), retry_trailers(code, str(exc), exc.retry_after_s))
        except PermanentError as exc:
            m.requests.labels("invalid").inc()
            return Answer(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except Exception:
            log.exception("OTLP export failed inside the pipeline")
            m.requests.labels("error").inc()
            return Answer(grpc.StatusCode.UNAVAILABLE, "internal error; retry later")
        return None


async def start_receiver(pipeline: Pipeline, registry: CollectorRegistry, host: str, port: int,
                         max_message_bytes: int, *, flavour: str = FLAVOUR,
                         threads: int = 4, max_spans: int = DEFAULT_MAX_SPANS,
                         token: str | None = None) -> Receiver:
    """Start the OTLP/gRPC TraceService on ``host:port`` (0 = any free port).

    ``flavour`` "aio" serves on the running event loop; "threads" uses a thread-pool
    server that maps spans in its threads and runs the pipeline on this loop. With a
    ``token``, every call must carry ``authorization: Bearer <token>`` metadata.
    """
    loop = asyncio.get_running_loop()
    service = TraceService(pipeline, receiver_metrics(registry), loop, max_spans, token)
    options = [("grpc.max_receive_message_length", max_message_bytes),
               ("grpc.so_reuseport", 0)]  # a second receiver on the port must fail, not share
    if flavour == "threads":
        server: Any = grpc.server(ThreadPoolExecutor(threads, "llm-observe-otlp"),
                                  options=options)
        handler = grpc.unary_unary_rpc_method_handler(service.export_in_thread)
    elif flavour == "aio":
        server = grpc.aio.server(options=options)
        handler = grpc.unary_unary_rpc_method_handler(service.export)  # raw bytes in/out
    else:
        raise ValueError(f"flavour must be 'aio' or 'threads', not {flavour!r}")
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        SERVICE, {METHOD: handler}),))
    try:
        bound = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError as exc:
        raise OSError(f"cannot listen for OTLP on {host}:{port}: {exc}") from None
    if not bound:
        raise OSError(f"cannot listen for OTLP on {host}:{port}")
    if flavour == "aio":
        await server.start()
    else:
        server.start()
    log.info("OTLP receiver (%s) listening on %s:%d", flavour, host, bound)
    return Receiver(bound, server)
