"""OTLP/gRPC to one destination: a ``grpc.aio`` channel and one unary call per attempt
(bytes in, bytes out: the request is never re-parsed), its errors mapped to an
:class:`~.transport.Attempt` by :mod:`.retry`'s rules."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc

from llm_observe.collector.exporters.otlp_forwarder import transport as t
from llm_observe.collector.exporters.otlp_forwarder.retry import (
    RETRYABLE,
    Backoff,
    server_retry_delay,
    too_large,
)
from llm_observe.collector.exporters.otlp_forwarder.transport import Attempt, Tls

EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


class GrpcTransport:
    """See the module docstring. ``endpoint``: ``host:port``, ``http://`` or ``https://``
    (TLS: the system's roots, or ``tls.ca_file`` instead)."""

    def __init__(self, endpoint: str, *, timeout_s: float, backoff: Backoff,
                 compression: grpc.Compression | None = None,
                 headers: Sequence[tuple[str, str]] = (), tls: Tls | None = None) -> None:
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self.backoff = backoff  # the channel's reconnect pace follows the retry pace
        self.compression = compression
        # gRPC metadata keys are lower case (an upper-case key is refused by grpc itself)
        self.headers = tuple((k.lower(), v) for k, v in headers) or None
        self.tls = tls
        self._channel: grpc.aio.Channel | None = None
        self._call: Any = None

    @property
    def is_open(self) -> bool:
        return self._channel is not None

    def open(self) -> None:
        target, secure = _target(self.endpoint)
        ms = int(self.backoff.initial * 1000)
        options = [("grpc.initial_reconnect_backoff_ms", ms), ("grpc.min_reconnect_backoff_ms", ms),
                   ("grpc.max_reconnect_backoff_ms", int(self.backoff.maximum * 1000))]
        self._channel = (grpc.aio.secure_channel(target, _credentials(self.tls), options)
                         if secure or self.tls is not None
                         else grpc.aio.insecure_channel(target, options))
        self._call = self._channel.unary_unary(EXPORT_METHOD)  # bytes in, bytes out

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()

    async def export(self, data: bytes) -> Attempt:
        try:
            response = await self._call(data, timeout=self.timeout_s, metadata=self.headers,
                                        compression=self.compression)
        except grpc.aio.AioRpcError as error:
            code = error.code()
            delay = server_retry_delay(error)
            detail = error.details() or ""
            if delay is None and too_large(error):
                return Attempt(t.TOO_LARGE, code.name, None, b"", detail)
            outcome = t.RETRYABLE if code in RETRYABLE else t.PERMANENT
            return Attempt(outcome, code.name, delay, b"", detail)
        return Attempt(t.OK, "", None, response or b"")


def _credentials(tls: Tls | None) -> grpc.ChannelCredentials:
    def read(path: str | None) -> bytes | None:
        return Path(path).read_bytes() if path else None
    if tls is None:
        return grpc.ssl_channel_credentials()
    return grpc.ssl_channel_credentials(root_certificates=read(tls.ca_file),
                                        private_key=read(tls.key_file),
                                        certificate_chain=read(tls.cert_file))


def _target(endpoint: str) -> tuple[str, bool]:
    """gRPC target and whether to use TLS: ``host:port``, ``http://...`` or ``https://...``."""
    if endpoint.startswith("https://"):
        return endpoint[len("https://"):].rstrip("/"), True
    if endpoint.startswith("http://"):
        return endpoint[len("http://"):].rstrip("/"), False
    return endpoint, False
