"""Optional bearer-token auth: when ``LLM_OBSERVE_API_TOKEN`` is set, /v1 needs it.

The spec shows no scheme (section 5); we use ``Authorization: Bearer <token>`` (RFC 6750)
compared in constant time. ``GET /v1/metrics/health`` stays open so load balancers and
container health checks need no secret. Unknown /v1 paths answer 401 before 404, so an
unauthenticated caller cannot map the routes.
"""

from __future__ import annotations

import hmac

from aiohttp import web

from llm_observe.api.errors import ApiError, Handler
from llm_observe.api.keys import AppKeys

OPEN_PATHS = frozenset({"/v1/metrics/health"})
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="llm-observe"'}


def token_ok(header: str | None, token: str) -> bool:
    """True if ``header`` is ``Bearer <token>``; the comparison takes constant time."""
    if not header:
        return False
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(value.strip().encode("utf-8"), token.encode("utf-8"))


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Reject /v1 requests without the configured token (401); no token configured = open."""
    token = request.app[AppKeys.settings].api_token
    if token and request.path.startswith("/v1") and request.path not in OPEN_PATHS \
            and not token_ok(request.headers.get("Authorization"), token):
        raise ApiError(401, "unauthorized",
                       "missing or wrong bearer token (Authorization: Bearer <token>)",
                       headers=_CHALLENGE)
    return await handler(request)
