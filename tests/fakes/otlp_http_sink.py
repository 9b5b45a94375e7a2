"""A real OTLP/HTTP trace endpoint on loopback (aiohttp), standing in for a vendor: it
records the spans it takes and can be told to misbehave the way backends do: answer one
status forever, hang, close the connection mid-answer, serve TLS with a given
certificate. With ``langfuse=(public_key, secret_key)`` it checks what Langfuse's
``POST /api/public/otel/v1/traces`` checks (langfuse/langfuse
``web/src/pages/api/public/otel/v1/traces/index.ts`` and ``apiAuth.ts``): the path, POST,
``Authorization: Basic base64(public:secret)`` (401 otherwise), a Content-Type holding
``application/x-protobuf`` or ``application/json`` (400 otherwise), gzip when
``Content-Encoding`` says so, a body that parses (400), ``x-langfuse-ingestion-version``
at most 4; and answers ``{}`` as JSON, as Langfuse does.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

LANGFUSE_PATH = "/api/public/otel/v1/traces"


@dataclass
class HttpSink:
    path: str = "/v1/traces"
    langfuse: tuple[str, str] | None = None
    ssl_context: ssl.SSLContext | None = None
    status: int | None = None  # answer every call with this status (and no spans taken)
    retry_after: str | None = None
    hang_s: float = 0.0  # sleep this long before answering
    close_next: int = 0  # the next N calls: headers and part of a body, then closed
    calls: int = 0
    span_ids: list[int] = field(default_factory=list)
    requests: list[ExportTraceServiceRequest] = field(default_factory=list)  # as taken
    headers: list[dict[str, str]] = field(default_factory=list)
    _runner: Any = None
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0

    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=self.ssl_context)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def url(self) -> str:
        scheme = "https" if self.ssl_context else "http"
        return f"{scheme}://127.0.0.1:{self.port}{self.path}"

    async def wait_for_spans(self, n: int, timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout):
            while len(self.span_ids) < n:
                self._arrived.clear()
                await self._arrived.wait()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.calls += 1
        self.headers.append(dict(request.headers))
        if self.hang_s:
            await asyncio.sleep(self.hang_s)
        if self.close_next > 0:
            self.close_next -= 1
            response = web.StreamResponse(status=200, headers={"Content-Length": "1000"})
            await response.prepare(request)
            await response.write(b"\x0a\x05")  # a few bytes of the 1000 announced
            assert request.transport is not None
            request.transport.close()
            return response
        if self.status is not None:
            headers = {"Retry-After": self.retry_after} if self.retry_after else {}
            return web.json_response({"error": "told to refuse"}, status=self.status,
                                     headers=headers)
        if request.path != self.path:
            return web.json_response({"error": "not found"}, status=404)
        if request.method != "POST":
            return web.json_response({"error": "method not allowed"}, status=405)
        if self.langfuse is not None and not self._langfuse_auth(request):
            return web.json_response({"message": "Invalid credentials. Confirm that you've "
                                      "configured the correct host."}, status=401)
        try:
            body = await request.read()  # aiohttp inflates a gzip Content-Encoding itself
        except Exception:
            return web.json_response({"error": "Failed to decompress request body"}, status=400)
        kind = request.headers.get("Content-Type", "").lower()
        if "application/x-protobuf" not in kind:  # JSON is Langfuse's too; we send protobuf
            return web.json_response({"error": "Invalid content type"}, status=400)
        version = request.headers.get("x-langfuse-ingestion-version")
        if version is not None and (not version.isdigit() or int(version) > 4):
            return web.json_response({"error": "Unsupported x-langfuse-ingestion-version"},
                                     status=400)
        try:
            decoded = ExportTraceServiceRequest.FromString(body)
        except Exception:
            return web.json_response({"error": "Failed to parse OTel Protobuf Trace"},
                                     status=400)
        self.requests.append(decoded)
        self.span_ids.extend(int.from_bytes(s.span_id, "big") for rs in decoded.resource_spans
                             for ss in rs.scope_spans for s in ss.spans)
        self._arrived.set()
        return web.json_response({})

    def _langfuse_auth(self, request: web.Request) -> bool:
        assert self.langfuse is not None
        header = request.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        return (user, password) == self.langfuse
