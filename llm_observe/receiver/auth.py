"""Optional bearer token on the OTLP door (``Settings.otlp_token``; off when None).

An Export call must carry the gRPC metadata ``authorization: Bearer <token>``: what the
OTel SDKs send for ``OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20<token>`` or the
exporter's ``headers=``, and the OTel Collector's ``bearertokenauth`` extension. The
scheme is case-insensitive (RFC 7235); the token bytes are compared in constant time; an
``authorization`` entry sent twice is refused. The REST door's rule is the same
(api/auth.py), written again here because receiver/ may not import the API.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from typing import Any

AUTHORIZATION = "authorization"  # gRPC metadata keys are lower case on the wire
CHALLENGE = "missing or wrong bearer token (metadata authorization: Bearer <token>)"


def bearer_ok(metadata: Iterable[Any] | None, token: bytes) -> bool:
    """True when ``metadata`` holds one ``authorization`` entry, ``Bearer <token>``."""
    values = [value for key, value in metadata or () if key == AUTHORIZATION]
    if len(values) != 1:
        return False
    value = values[0]
    try:
        raw = value if isinstance(value, bytes) else value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate no byte string stands for: wrong token
        return False
    scheme, _, given = raw.partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), token)
