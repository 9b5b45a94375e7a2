"""The one bearer-token rule of every door: REST API, /metrics, OTLP (gRPC metadata).

``Authorization: Bearer <token>`` (RFC 6750; the scheme case-insensitive, RFC 7235),
compared in constant time on the bytes as received: a value of any other bytes, UTF-8 or
not, is a wrong token — 401 / UNAUTHENTICATED, never an encoding error. The header (or
metadata entry) must be sent exactly once. A leaf module, so every door may import it.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable


def bearer_ok(values: Iterable[str | bytes], token: bytes) -> bool:
    """True when ``values`` (every ``authorization`` value received) is one ``Bearer
    <token>``. A str is taken as UTF-8 with surrogateescape decoding undone (aiohttp, grpc)."""
    found = list(values)
    if len(found) != 1:
        return False
    raw = _bytes(found[0])
    if raw is None:
        return False
    scheme, _, given = raw.partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), token)


def _bytes(value: str | bytes) -> bytes | None:
    if isinstance(value, bytes):
        return value
    try:
        return value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate no byte string stands for: wrong token
        return None
