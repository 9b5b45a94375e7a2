"""Optional bearer-token auth: when ``LLM_OBSERVE_API_TOKEN`` is set, /v1 needs it.

The spec shows no scheme (section 5); we use ``Authorization: Bearer <token>`` (RFC 6750)
compared in constant time, on the header's bytes as received: a header of any other bytes,
UTF-8 or not, is a wrong token, 401, never an encoding error (500). The check runs
before any handler, so an unauthenticated body is never read, let alone inflated.
``GET /v1/metrics/health`` stays open so load balancers and container health checks need
no secret. Unknown /v1 paths answer 401 before 404, so an unauthenticated caller cannot
map the routes.
"""

from __future__ import annotations

import hmac

from aiohttp import web

from llm_observe.api.errors import ApiError, Handler
from llm_observe.api.keys import AppKeys

OPEN_PATHS = frozenset({"/v1/metrics/health"})
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="llm-observe"'}


def token_ok(header: str | bytes | None, token: str) -> bool:
    """True if ``header`` is ``Bearer <token>``; the comparison takes constant time.

    Best given the raw header bytes; a str is taken as UTF-8 with aiohttp's surrogateescape
    decoding undone. The token is printable ASCII (``Settings.validate``).
    """
    raw, expected = _utf8(header), _utf8(token)
    if not raw or not expected:
        return False
    scheme, _, value = raw.partition(b" ")
    if scheme.lower() != b"bearer":
        return False
    return hmac.compare_digest(value.strip(), expected)


def _utf8(text: str | bytes | None) -> bytes | None:
    if not isinstance(text, str):
        return text
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate no byte string stands for
        return None


def _authorization(request: web.Request) -> bytes | None:
    """The Authorization header's raw bytes; None if absent or sent more than once."""
    values = [v for k, v in request.raw_headers if k.lower() == b"authorization"]
    return values[0] if len(values) == 1 else None


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Reject /v1 requests without the configured token (401); no token configured = open."""
    token = request.app[AppKeys.settings].api_token
    if token and request.path.startswith("/v1") and request.path not in OPEN_PATHS \
            and not token_ok(_authorization(request), token):
        raise ApiError(401, "unauthorized",
                       "missing or wrong bearer token (Authorization: Bearer <token>)",
                       headers=_CHALLENGE)
    return await handler(request)
