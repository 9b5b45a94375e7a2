"""The one error middleware: every non-2xx answer is ``{"error": {code, message, details}}``.

Statuses (ARCHITECTURE "Errors"): 400 malformed JSON, 401 missing/wrong token, 404, 405,
409 (a resource is taken, e.g. the scrape port), 413 body or batch too large, 415 not JSON,
422 field validation naming the field, 503 not ready / backpressure. Anything unexpected
is logged with its traceback and answered 500 with a generic message: a traceback never
reaches the client.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from aiohttp import web

from llm_observe.errors import FieldError, PermanentError, RetryableError, SpanValidationError

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# aiohttp's own HTTP exceptions (router, body size) -> our error codes.
_HTTP_CODES: dict[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_failed",
    429: "too_many_requests",
    503: "unavailable",
}


class ApiError(Exception):
    """An error answer: HTTP status, stable machine code, human message, optional details."""

    def __init__(self, status: int, code: str, message: str, details: Any = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers or {}


def validation_error(errors: Sequence[FieldError], message: str | None = None) -> ApiError:
    """422 naming every bad field: details is ``[{"field", "message"}, ...]``."""
    text = message or "; ".join(f"{e.field}: {e.message}" for e in errors)
    return ApiError(422, "validation_failed", text, [e.as_dict() for e in errors])


def unavailable(code: str, message: str, retry_after_s: float | None = None) -> ApiError:
    """503 with an optional Retry-After (whole seconds, at least 1)."""
    headers = {}
    if retry_after_s is not None:
        headers["Retry-After"] = str(max(1, round(retry_after_s)))
    return ApiError(503, code, message, None, headers)


def error_response(status: int, code: str, message: str, details: Any = None,
                   headers: dict[str, str] | None = None) -> web.Response:
    """The JSON error body every non-2xx answer carries."""
    body = json.dumps({"error": {"code": code, "message": message, "details": details}})
    return web.Response(status=status, text=body, content_type="application/json",
                        headers=headers)


def _from_http(exc: web.HTTPException) -> web.Response:
    status = exc.status
    code = _HTTP_CODES.get(status, "error")
    message = exc.reason
    details: Any = None
    headers: dict[str, str] = {}
    if isinstance(exc, web.HTTPMethodNotAllowed):
        allowed = sorted(exc.allowed_methods)
        headers["Allow"] = ", ".join(allowed)
        message = f"method {exc.method} is not allowed here; allowed: {', '.join(allowed)}"
        details = {"allowed": allowed}
    elif isinstance(exc, web.HTTPNotFound):
        message = "no such route"
    elif isinstance(exc, web.HTTPRequestEntityTooLarge):
        message = f"request body is too large ({exc.text or 'over the limit'})"
    if "Retry-After" in exc.headers:
        headers["Retry-After"] = exc.headers["Retry-After"]
    return error_response(status, code, message, details, headers)


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Map domain errors and aiohttp's HTTP errors to the JSON error body.

    An error answered before the body was read to its end (too large, undecodable)
    closes the connection: aiohttp would otherwise read the rest to keep the connection
    alive, and a broken body then fails there, after our answer, dropping it.
    """
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:  # redirects and the like pass through untouched
            raise
        response = _from_http(exc)
    except Exception as exc:
        response = _error_answer(request, exc)
    if request.body_exists and not request.content.is_eof():
        response.force_close()
    return response


def _error_answer(request: web.Request, exc: Exception) -> web.Response:
    if isinstance(exc, ApiError):
        return error_response(exc.status, exc.code, exc.message, exc.details, exc.headers)
    if isinstance(exc, SpanValidationError):
        return error_response(422, "validation_failed", str(exc),
                              [e.as_dict() for e in exc.errors])
    if isinstance(exc, PermanentError):
        return error_response(422, "invalid_request", str(exc))
    if isinstance(exc, RetryableError):
        retry = getattr(exc, "retry_after_s", 1.0)
        return error_response(503, "unavailable", str(exc), None,
                              {"Retry-After": str(max(1, round(retry)))})
    log.error("unhandled error on %s %s", request.method, request.path, exc_info=exc)
    return error_response(500, "internal", "internal error; see the collector log")
