"""Optional bearer token on the OTLP doors (``Settings.otlp_token``; off when None).

An Export call must carry the gRPC metadata ``authorization: Bearer <token>``: what the
OTel SDKs send for ``OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20<token>`` or the
exporter's ``headers=``, and the OTel Collector's ``bearertokenauth`` extension. The
scheme is case-insensitive (RFC 7235); the token bytes are compared in constant time; an
``authorization`` entry sent twice is refused: the one rule of every door
(:mod:`llm_observe.bearer`). The HTTP door also takes the token as a Basic-auth password
(:func:`header_ok`), so the Langfuse SDKs' own header passes.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Iterable
from typing import Any

from llm_observe.bearer import bearer_ok

AUTHORIZATION = "authorization"  # gRPC metadata keys are lower case on the wire
CHALLENGE = "missing or wrong bearer token (metadata authorization: Bearer <token>)"


def metadata_ok(metadata: Iterable[Any] | None, token: bytes) -> bool:
    """True when ``metadata`` holds one ``authorization`` entry, ``Bearer <token>``."""
    return bearer_ok((value for key, value in metadata or () if key == AUTHORIZATION), token)


def header_ok(values: Iterable[str], token: bytes) -> bool:
    """The OTLP/HTTP rule: one ``Authorization`` header, either ``Bearer <token>`` (every
    door's rule) or ``Basic base64(<any user>:<token>)`` — the header the Langfuse SDKs
    send, with the secret key as password (langfuse-python ``_client/span_processor.py``:
    ``"Basic " + b64encode(f"{public_key}:{secret_key}")``). Compared in constant time."""
    found = list(values)
    if len(found) != 1:
        return False
    if bearer_ok(found, token):
        return True
    try:
        raw = found[0].encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    scheme, _, credentials = raw.partition(b" ")
    if scheme.lower() != b"basic":
        return False
    try:
        decoded = base64.b64decode(credentials.strip(), validate=True)
    except binascii.Error:
        return False
    _, colon, password = decoded.partition(b":")
    return bool(colon) and hmac.compare_digest(password, token)
