"""Optional bearer-token auth: when ``LLM_OBSERVE_API_TOKEN`` is set, /v1 needs it.

The spec shows no scheme (section 5); we use ``Authorization: Bearer <token>`` (RFC 6750),
the one rule of every door (:mod:`llm_observe.bearer`): compared in constant time on the
header's bytes as received, any other bytes a wrong token, 401, never a 500. The check runs
before any handler, so an unauthenticated body is never read, let alone inflated.
``GET /v1/metrics/health`` stays open so load balancers and container health checks need
no secret. Unknown /v1 paths answer 401 before 404, so an unauthenticated caller cannot
map the routes.
"""

from __future__ import annotations

from aiohttp import web

from llm_observe.api.errors import ApiError, Handler
from llm_observe.api.keys import AppKeys
from llm_observe.bearer import bearer_ok

OPEN_PATHS = frozenset({"/v1/metrics/health"})
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="llm-observe"'}


def _authorization(request: web.Request) -> list[bytes]:
    """Every Authorization header's raw bytes (the rule wants exactly one)."""
    return [v for k, v in request.raw_headers if k.lower() == b"authorization"]


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Reject /v1 requests without the configured token (401); no token configured = open."""
    token = request.app[AppKeys.settings].api_token
    if token and request.path.startswith("/v1") and request.path not in OPEN_PATHS \
            and not bearer_ok(_authorization(request), token.encode()):
        raise ApiError(401, "unauthorized",
                       "missing or wrong bearer token (Authorization: Bearer <token>)",
                       headers=_CHALLENGE)
    return await handler(request)
