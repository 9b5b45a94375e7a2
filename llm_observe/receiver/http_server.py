"""The OTLP/HTTP receiver: ``POST /v1/traces`` on :4318, protobuf or JSON, gzip or deflate.

An aiohttp app on the collector's event loop, beside the gRPC door and sharing its core
(:class:`~receiver.export.ExportCore`: same pipeline, span cap, bearer token, counters).
Per request: the token (before the body is read: ``Authorization: Bearer <token>``, or
Basic with the token as password), the Content-Type (``application/x-protobuf`` or
``application/json``, else 415), the body (inflated in bounded steps, 413 past
``otlp_max_message_bytes`` raw or inflated: :mod:`llm_observe.httpbody`), protobuf decoded
to the mirror schema, or JSON built straight into it (:mod:`llm_observe.otlp.jsonmirror`),
then the gRPC door's walk → pipeline. A large body is decoded and walked in a thread.
Answers: :mod:`.http_answers`. Slow clients and the body bytes held across connections
are bounded by :mod:`.http_guard` (header and body timeouts, 503 past the in-flight bound).

Also served: ``/api/public/otel/v1/traces`` (the path the Langfuse SDKs post to, as an
alias), and ``/v1/metrics`` / ``/v1/logs`` (taken and discarded: :mod:`.signals`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import hdrs, web
from google.rpc import code_pb2
from prometheus_client import CollectorRegistry

from llm_observe import httpbody
from llm_observe.otlp.jsonmirror import to_request
from llm_observe.otlp.walk import RequestInvalid, Walked
from llm_observe.pipeline import Pipeline, on_loop
from llm_observe.pipeline.cpu import cpu_executor
from llm_observe.pipeline.selfmetrics import receiver_metrics
from llm_observe.receiver.auth import header_ok
from llm_observe.receiver.export import (
    DEFAULT_MAX_SPANS,
    ExportCore,
    Kind,
    Outcome,
)
from llm_observe.receiver.http_answers import (
    CONTENT_TYPES,
    JSON,
    PROTOBUF,
    error_response,
    http_error,
    message_response,
    trace_answer,
    wants_json,
)
from llm_observe.receiver.http_guard import (
    KEEPALIVE_MARGIN_S,
    BodyBudget,
    HeaderTimer,
    Hold,
    HttpLimits,
    guard_metrics,
)
from llm_observe.receiver.signals import SIGNALS, Signal

log = logging.getLogger(__name__)

TRACES = "/v1/traces"
LANGFUSE_TRACES = "/api/public/otel/v1/traces"  # langfuse-python _client/span_processor.py
# JSON costs ~30x more CPU per byte than protobuf to decode: a smaller body leaves the loop
JSON_INLINE_MAX_BYTES = 64 * 1024
T = TypeVar("T")
TOKEN_HINT = ("missing or wrong token (header Authorization: Bearer <token>, or Basic "
              "with the token as password)")


@dataclass
class HttpReceiver:
    """A running OTLP/HTTP receiver: ``port`` is the bound port (so port 0 works)."""

    port: int
    runner: web.AppRunner
    server: asyncio.Server
    timer: HeaderTimer

    async def stop(self, grace: float) -> None:
        """Stop taking requests; in-flight ones get the runner's shutdown grace."""
        del grace  # fixed when the runner was made (aiohttp takes it there)
        self.server.close()  # no new connections; aiohttp closes the open ones
        await self.runner.cleanup()
        self.timer.close()


class OtlpHttp:
    """The handlers: HTTP in, :class:`ExportCore` outcomes out."""

    def __init__(self, core: ExportCore, max_bytes: int, limits: HttpLimits,
                 budget: BodyBudget) -> None:
        self.core = core
        self.max_bytes = max_bytes
        self.limits = limits
        self.budget = budget

    async def traces(self, request: web.Request) -> web.StreamResponse:
        as_json = wants_json(request)
        with self.budget.hold() as hold:  # the body's bytes count until the answer
            body = await self._take(request, as_json, hold)
            if isinstance(body, web.StreamResponse):
                return body
            got = await _maybe_off_loop(self._receive, body, as_json)
            del body
            outcome = got if isinstance(got, Outcome) else await self.core.handle(got)
        return trace_answer(outcome, as_json)

    def _receive(self, body: bytes, as_json: bool) -> Walked | Outcome:
        if not as_json:
            return self.core.receive(body)
        try:
            request = to_request(body)
        except RequestInvalid as exc:
            return self.core.invalid(str(exc))
        return self.core.receive_decoded(request)

    def signal(self, signal: Signal) -> Callable[[web.Request], Any]:
        async def handler(request: web.Request) -> web.StreamResponse:
            as_json = wants_json(request)
            with self.budget.hold() as hold:
                body = await self._take(request, as_json, hold)
                if isinstance(body, web.StreamResponse):
                    return body
                try:
                    n, answer = await _maybe_off_loop(signal.discard, body, as_json)
                except RequestInvalid as exc:
                    return trace_answer(self.core.invalid(str(exc)), as_json)
            self.core.metrics.discarded.labels(signal.name).inc(n)
            return message_response(answer, as_json)
        return handler

    async def _take(self, request: web.Request, as_json: bool,
                    hold: Hold) -> bytes | web.StreamResponse:
        """The body, or the answer refusing it: token, Content-Type, encoding, size,
        in-flight bytes (503), time (408)."""
        token = self.core.token
        if token is not None and not header_ok(request.headers.getall(hdrs.AUTHORIZATION, ()),
                                               token):
            return trace_answer(self.core.unauthenticated(TOKEN_HINT), as_json)
        if request.content_type not in CONTENT_TYPES:
            self.core.metrics.requests.labels("invalid").inc()
            return http_error(415, f"Content-Type must be {PROTOBUF} or {JSON}, got "
                              f"{request.content_type[:100]!r}", as_json)
        try:
            return await httpbody.read_body(request, self.max_bytes, reserve=hold.reserve,
                                            timeout_s=self.limits.body_timeout_s)
        except httpbody.BodyBusy as exc:
            self.core.metrics.requests.labels("refused").inc()
            return error_response(503, code_pb2.UNAVAILABLE, str(exc), as_json, 1.0)
        except httpbody.BodyTimeout as exc:
            self.budget.metrics.timeouts.labels("body").inc()
            self.core.metrics.requests.labels("invalid").inc()
            return await _cut(request, http_error(408, str(exc), as_json))
        except httpbody.UnsupportedEncoding as exc:
            self.core.metrics.requests.labels("invalid").inc()
            return http_error(415, str(exc), as_json)
        except httpbody.BodyTooLarge as exc:
            return trace_answer(self.core.invalid(str(exc), Kind.TOO_LARGE), as_json)
        except httpbody.BodyError as exc:
            return trace_answer(self.core.invalid(str(exc)), as_json)


async def _cut(request: web.Request, answer: web.Response) -> web.Response:
    """Send ``answer`` and close the connection at once: a slow client gets no lingering
    read of the rest of its body."""
    answer.force_close()
    await answer.prepare(request)
    await answer.write_eof()
    if request.transport is not None:
        request.transport.close()
    return answer


async def _maybe_off_loop(fn: Callable[[bytes, bool], T], body: bytes, as_json: bool) -> T:
    """``fn(body, as_json)`` inline for a small body, in the CPU thread for a large one."""
    if (len(body) <= JSON_INLINE_MAX_BYTES) if as_json else on_loop(len(body)):
        return fn(body, as_json)
    return await asyncio.get_running_loop().run_in_executor(cpu_executor(), fn, body, as_json)


@web.middleware
async def _errors(request: web.Request, handler: Callable[[web.Request], Any]) -> Any:
    """Router and aiohttp errors (404, 405, 413 ...) as Status bodies; never a traceback."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        answer = http_error(exc.status, exc.reason, wants_json(request))
        if hdrs.ALLOW in exc.headers:
            answer.headers[hdrs.ALLOW] = exc.headers[hdrs.ALLOW]
        return answer
    except Exception:
        log.exception("OTLP/HTTP request failed")
        return http_error(500, "internal error", wants_json(request))


def create_app(core: ExportCore, max_bytes: int, limits: HttpLimits | None = None,
               timer: HeaderTimer | None = None,
               registry: CollectorRegistry | None = None) -> web.Application:
    """The OTLP/HTTP app over ``core`` (bodies are inflated by us: auto_decompress off).
    ``timer`` hears of every request whose headers arrived (the header timeout)."""
    limits = limits or HttpLimits()

    @web.middleware
    async def headers_arrived(request: web.Request, handler: Callable[[web.Request], Any]) -> Any:
        if timer is not None:
            timer.headers_done(request.protocol)
        return await handler(request)

    app = web.Application(middlewares=[headers_arrived, _errors], client_max_size=max_bytes,
                          handler_args={"auto_decompress": False})
    metrics = guard_metrics(registry if registry is not None else CollectorRegistry())
    door = OtlpHttp(core, max_bytes, limits, BodyBudget(limits.inflight_max_bytes, metrics))
    for path in (TRACES, LANGFUSE_TRACES):
        app.router.add_post(path, door.traces)
    for name, signal in SIGNALS.items():
        app.router.add_post(f"/v1/{name}", door.signal(signal))
    return app


async def start_http_receiver(pipeline: Pipeline, registry: CollectorRegistry, host: str,
                              port: int, max_message_bytes: int, *,
                              max_spans: int = DEFAULT_MAX_SPANS, token: str | None = None,
                              grace_s: float = 5.0, reuse_port: bool = False,
                              limits: HttpLimits | None = None) -> HttpReceiver:
    """Start the OTLP/HTTP receiver on ``host:port`` (0 = any free port). With a ``token``,
    every request must carry it (Bearer, or Basic password). ``reuse_port``: share the
    port with the other workers of ``serve --workers N``. ``limits``: :mod:`.http_guard`."""
    limits = limits or HttpLimits()
    core = ExportCore(pipeline, receiver_metrics(registry), max_spans, token)
    timer = HeaderTimer(limits.header_timeout_s, guard_metrics(registry))
    # aiohttp's keep-alive timer closes a connection idle between requests; it runs from
    # the connection's start too, so it fires just after ours (which counts) on the first
    runner = web.AppRunner(create_app(core, max_message_bytes, limits, timer, registry),
                           access_log=None, handle_signals=False, shutdown_timeout=grace_s,
                           keepalive_timeout=limits.header_timeout_s + KEEPALIVE_MARGIN_S)
    await runner.setup()
    assert runner.server is not None
    try:
        # our own listener around aiohttp's protocol factory: the timer sees each connection
        server = await asyncio.get_running_loop().create_server(
            timer.factory(runner.server), host, port, reuse_port=reuse_port or None,
            backlog=128)
    except OSError as exc:
        await runner.cleanup()
        raise OSError(exc.errno, f"cannot listen for OTLP/HTTP on {host}:{port}: "
                      f"{exc.strerror or exc}") from None
    bound = server.sockets[0].getsockname()[1]
    log.info("OTLP/HTTP receiver listening on %s:%d", host, bound)
    return HttpReceiver(bound, runner, server, timer)
