"""OTLP/HTTP (protobuf) to one destination, on ``httpx``'s async client, after the OTLP
specification's "OTLP/HTTP" section and the OTel SDKs' exporters:

- ``POST`` the ExportTraceServiceRequest bytes to the endpoint URL (``/v1/traces`` unless
  the destination gives a path), ``Content-Type: application/x-protobuf``, the
  destination's headers, optionally gzip;
- 2xx: taken (a protobuf body may carry a partial success);
- 429, 502, 503, 504 (the spec's retryable codes) and 408: retryable, honouring
  ``Retry-After`` (seconds or an HTTP date), as is every network failure: a timeout, a
  refused or reset connection, a connection closed mid-answer, a certificate that does not
  verify (it may be renewed; a wrong one is retried at the backoff's slowest pace, counted
  under ``tls``);
- 413: too large (the sender halves the request);
- any other status: permanent (the batch is dropped and counted; retrying the same bytes
  cannot succeed: 400 bad request, 401/403 wrong key, 404 wrong path).
"""

from __future__ import annotations

import asyncio
import gzip
import ssl
import time
from collections.abc import Sequence
from email.utils import parsedate_to_datetime
from functools import partial

import httpx

from llm_observe.collector.exporters.otlp_forwarder.retry import MAX_SERVER_DELAY_S
from llm_observe.collector.exporters.otlp_forwarder.transport import (
    OK,
    PERMANENT,
    RETRYABLE,
    TOO_LARGE,
    Attempt,
    Tls,
)
from llm_observe.pipeline.cpu import cpu_executor

RETRY_STATUS = frozenset({408, 429, 502, 503, 504})
PROTOBUF = "application/x-protobuf"
DETAIL_CHARS = 300  # of a refusal's body, in the log line
# Bodies larger than this are gzipped on the CPU thread: a 4 MiB batch takes tens of ms at
# level 6, which the event loop (and every door on it) would otherwise wait out.
GZIP_OFF_LOOP_BYTES = 64 * 1024


class HttpTransport:
    """See the module docstring. ``url``: the full ``http(s)://host:port/path``."""

    def __init__(self, url: str, *, timeout_s: float, gzip_body: bool = False,
                 headers: Sequence[tuple[str, str]] = (), tls: Tls | None = None) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self.gzip_body = gzip_body
        self.headers = {**dict(headers), "Content-Type": PROTOBUF}
        if gzip_body:
            self.headers["Content-Encoding"] = "gzip"
        self.tls = tls
        self._client: httpx.AsyncClient | None = None

    @property
    def is_open(self) -> bool:
        return self._client is not None

    def open(self) -> None:
        # No retries of httpx's own (the sender's loop counts and paces them); a pool of
        # keep-alive connections for the forwarder's concurrent workers.
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(self.timeout_s), verify=_verify(self.tls),
            trust_env=False, follow_redirects=False)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    async def export(self, data: bytes) -> Attempt:
        assert self._client is not None
        body = await _gzip(data) if self.gzip_body else data
        try:
            answer = await self._client.post(self.url, content=body, headers=self.headers)
        except httpx.TimeoutException as exc:
            return Attempt(RETRYABLE, "timeout", None, b"", _say(exc))
        except httpx.ConnectError as exc:
            code = "tls" if _is_tls(exc) else "connect"
            return Attempt(RETRYABLE, code, None, b"", _say(exc))
        except httpx.TransportError as exc:  # closed mid-answer, reset, bad framing
            return Attempt(RETRYABLE, "closed", None, b"", _say(exc))
        status = answer.status_code
        if 200 <= status < 300:
            taken = answer.content if PROTOBUF in answer.headers.get("content-type", "") else b""
            return Attempt(OK, "", None, taken)
        code = f"http_{status}"
        detail = answer.text[:DETAIL_CHARS] if answer.content else answer.reason_phrase
        if status in RETRY_STATUS:
            return Attempt(RETRYABLE, code, retry_after(answer.headers.get("retry-after")),
                           b"", detail)
        return Attempt(TOO_LARGE if status == 413 else PERMANENT, code, None, b"", detail)


async def _gzip(data: bytes) -> bytes:
    if len(data) <= GZIP_OFF_LOOP_BYTES:
        return gzip.compress(data, compresslevel=6)
    return await asyncio.get_running_loop().run_in_executor(
        cpu_executor(), partial(gzip.compress, data, compresslevel=6))


def retry_after(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta-seconds or an HTTP date), capped."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value) if value.isdigit() else (
            parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return min(max(seconds, 0.0), MAX_SERVER_DELAY_S)


def _verify(tls: Tls | None) -> ssl.SSLContext | bool:
    if tls is None:
        return True
    if tls.insecure:
        return False
    context = ssl.create_default_context(cafile=tls.ca_file)
    if tls.cert_file:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    return context


def _is_tls(exc: Exception) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return True
        seen = seen.__cause__ or seen.__context__
    return "CERTIFICATE" in str(exc).upper() or "SSL" in str(exc).upper()


def _say(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"[:DETAIL_CHARS]
