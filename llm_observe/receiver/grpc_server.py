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
from google.rpc import code_pb2, error_details_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)
from prometheus_client import CollectorRegistry

from llm_observe.otlp.walk import Walked
from llm_observe.pipeline import Pipeline, on_loop
from llm_observe.pipeline.cpu import cpu_executor
from llm_observe.pipeline.selfmetrics import ReceiverMetrics, receiver_metrics
from llm_observe.receiver.auth import CHALLENGE, metadata_ok
from llm_observe.receiver.export import (
    DEFAULT_MAX_SPANS,
    ExportCore,
    Kind,
    Outcome,
)
from llm_observe.receiver.status import rpc_status

log = logging.getLogger(__name__)

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
METHOD = "Export"
FLAVOUR = "aio"  # chosen by measurement: docs/receiver.md


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
    status = rpc_status(code.value[0], message, delay_s)
    info = error_details_pb2.RetryInfo()
    status.details[0].Unpack(info)
    return (("grpc-status-details-bin", status.SerializeToString()),
            ("google.rpc.retryinfo-bin", info.SerializeToString()))


assert grpc.StatusCode.RESOURCE_EXHAUSTED.value[0] == code_pb2.RESOURCE_EXHAUSTED
_CODES = {Kind.INVALID: grpc.StatusCode.INVALID_ARGUMENT,
          Kind.TOO_LARGE: grpc.StatusCode.RESOURCE_EXHAUSTED,
          Kind.UNAUTHENTICATED: grpc.StatusCode.UNAUTHENTICATED,
          Kind.BACKPRESSURE: grpc.StatusCode.RESOURCE_EXHAUSTED,
          Kind.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE}


def answer(outcome: Outcome) -> Answer:
    """An outcome in gRPC terms: RetryInfo trailers with backpressure only (as before the
    HTTP door: an unexpected failure is UNAVAILABLE, which SDKs retry with their backoff)."""
    if outcome.kind is Kind.OK:
        if not outcome.rejected:
            return Answer()
        return Answer(body=ExportTraceServiceResponse(partial_success=ExportTracePartialSuccess(
            rejected_spans=outcome.rejected, error_message=outcome.message)).SerializeToString())
    code = _CODES[outcome.kind]
    if outcome.kind is Kind.UNAUTHENTICATED:
        return Answer(code, CHALLENGE)
    if outcome.kind is Kind.BACKPRESSURE:
        return Answer(code, outcome.message,
                      retry_trailers(code, outcome.message, outcome.retry_after_s))
    return Answer(code, outcome.message)


class TraceService:
    """The Export handler: the shared :class:`ExportCore` (decode + map on any thread,
    the pipeline on the event loop) with gRPC's metadata and status codes around it."""

    def __init__(self, pipeline: Pipeline, metrics: ReceiverMetrics,
                 loop: asyncio.AbstractEventLoop | None = None,
                 max_spans: int = DEFAULT_MAX_SPANS, token: str | None = None) -> None:
        self.core = ExportCore(pipeline, metrics, max_spans, token)
        self.loop = loop

    def refuse(self, context: Any) -> Answer | None:
        """UNAUTHENTICATED when a token is configured and the call lacks it, else None."""
        token = self.core.token
        if token is None or metadata_ok(context.invocation_metadata(), token):
            return None
        return answer(self.core.unauthenticated())

    async def export(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        """The grpc.aio handler (on the loop)."""
        got: Walked | Answer | None = self.refuse(context)
        if got is None:  # a large request is decoded and sorted off the loop
            got = (self.receive(request) if on_loop(len(request)) else await
                   asyncio.get_running_loop().run_in_executor(cpu_executor(), self.receive,
                                                              request))
        result = got if isinstance(got, Answer) else await self.handle(got)
        if result.code is not None:
            await context.abort(result.code, result.message, trailing_metadata=result.trailers)
        return result.body

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
        got = self.core.receive(request)
        return answer(got) if isinstance(got, Outcome) else got

    async def handle(self, walked: Walked) -> Answer:
        """Run the pipeline on a sorted request and say what to answer."""
        return answer(await self.core.handle(walked))


async def start_receiver(pipeline: Pipeline, registry: CollectorRegistry, host: str, port: int,
                         max_message_bytes: int, *, flavour: str = FLAVOUR,
                         threads: int = 4, max_spans: int = DEFAULT_MAX_SPANS,
                         token: str | None = None, reuse_port: bool = False) -> Receiver:
    """Start the OTLP/gRPC TraceService on ``host:port`` (0 = any free port).

    ``flavour`` "aio" serves on the running event loop; "threads" uses a thread-pool
    server that maps spans in its threads and runs the pipeline on this loop. With a
    ``token``, every call must carry ``authorization: Bearer <token>`` metadata.
    ``reuse_port``: share the port with the other workers of ``serve --workers N``.
    """
    loop = asyncio.get_running_loop()
    service = TraceService(pipeline, receiver_metrics(registry), loop, max_spans, token)
    options = [("grpc.max_receive_message_length", max_message_bytes),
               # a second receiver on the port must fail, not share, unless it is a worker
               ("grpc.so_reuseport", 1 if reuse_port else 0)]
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
