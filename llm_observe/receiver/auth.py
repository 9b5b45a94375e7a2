"""Optional bearer token on the OTLP door (``Settings.otlp_token``; off when None).

An Export call must carry the gRPC metadata ``authorization: Bearer <token>``: what the
OTel SDKs send for ``OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20<token>`` or the
exporter's ``headers=``, and the OTel Collector's ``bearertokenauth`` extension. The
scheme is case-insensitive (RFC 7235); the token bytes are compared in constant time; an
``authorization`` entry sent twice is refused: the one rule of every door
(:mod:`llm_observe.bearer`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from llm_observe.bearer import bearer_ok

AUTHORIZATION = "authorization"  # gRPC metadata keys are lower case on the wire
CHALLENGE = "missing or wrong bearer token (metadata authorization: Bearer <token>)"


def metadata_ok(metadata: Iterable[Any] | None, token: bytes) -> bool:
    """True when ``metadata`` holds one ``authorization`` entry, ``Bearer <token>``."""
    return bearer_ok((value for key, value in metadata or () if key == AUTHORIZATION), token)
