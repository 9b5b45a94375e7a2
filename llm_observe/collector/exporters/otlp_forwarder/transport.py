"""What one export attempt came to, whatever the protocol: the contract between the
sender's retry loop (:mod:`.sender`) and a transport (:mod:`.grpc_transport`,
:mod:`.http_transport`).

A transport makes one attempt and says how it ended; it never retries, sleeps or counts.
It must not raise for anything the backend or the network does (a refusal, a timeout, a
connection closed mid-answer, a certificate that does not verify): those are attempts
that ended ``retryable`` or ``permanent``.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

OK, RETRYABLE, PERMANENT, TOO_LARGE = "ok", "retryable", "permanent", "too_large"


class Attempt(NamedTuple):
    """The end of one attempt. ``code`` is a bounded label: a gRPC status name, or
    ``http_<status>``, ``timeout``, ``connect``, ``tls``, ``closed`` for OTLP/HTTP."""

    outcome: str  # OK | RETRYABLE | PERMANENT | TOO_LARGE (split it and send the halves)
    code: str = ""
    delay: float | None = None  # the server's own retry delay (RetryInfo, Retry-After)
    response: bytes = b""  # an ExportTraceServiceResponse on OK (may be empty)
    detail: str = ""  # what the backend or the network said, for the log


class Transport(Protocol):
    """One connection (channel, HTTP client) to one destination. Event-loop thread only."""

    @property
    def is_open(self) -> bool: ...

    def open(self) -> None:
        """Create the channel or client (no I/O until the first attempt)."""

    async def close(self) -> None: ...

    async def export(self, data: bytes) -> Attempt:
        """Send ``data`` (an ExportTraceServiceRequest) once, within the timeout."""


class Tls(NamedTuple):
    """TLS towards a destination: extra trust (``ca_file``, PEM), a client certificate
    (``cert_file`` + ``key_file``), or no verification at all (``insecure``, OTLP/HTTP
    only: for a test backend, never in production)."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    insecure: bool = False
