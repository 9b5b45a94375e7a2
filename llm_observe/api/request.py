"""Reading a request: content type (415), size (413), JSON (400), fields (422).

Handlers call :func:`json_object` and then pull typed fields with :class:`Fields`, which
collects every bad field before answering, so a client fixes all of them in one go.

The app is built with :data:`HANDLER_ARGS`: aiohttp hands over gzip/deflate bodies as
sent, and :func:`read_body` inflates them with the bounded inflater every HTTP door shares
(:mod:`llm_observe.httpbody`: small steps, yielding the loop, stopped at the body limit).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

from aiohttp import hdrs, web

from llm_observe import httpbody
from llm_observe.api.errors import ApiError, validation_error
from llm_observe.api.keys import AppKeys
from llm_observe.errors import FieldError

# web.Application(handler_args=HANDLER_ARGS): the raw body reaches read_body untouched.
HANDLER_ARGS: Final[Mapping[str, Any]] = {"auto_decompress": False}
JSON_TYPES = frozenset({"application/json"})
_MISSING: Any = object()
NO_BODY: Any = object()  # an optional body that was not sent (distinct from JSON null)
# Bodies above this run their CPU work (tokenising, scanning) in a thread, so one 1 MiB
# request does not stall every other request on the loop for tens of milliseconds.
OFF_LOOP_BYTES = 32_768
# A lone surrogate can only arrive as an escape (the body is strict UTF-8). Bodies with no
# surrogate escape left once escaped backslashes and valid pairs are cut skip the walk.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_PAIR = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
T = TypeVar("T")


async def off_loop(request: web.Request, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` inline for small bodies; for large ones (and compressed ones, whose
    Content-Length does not tell their size) in a thread behind the ``body`` gate
    (api/offload.py: 503 busy with Retry-After past its bound)."""
    if (request.content_length or 0) <= OFF_LOOP_BYTES \
            and hdrs.CONTENT_ENCODING not in request.headers:
        return fn(*args)
    return await request.app[AppKeys.offload].body.run(request, fn, *args)


def _is_json(content_type: str) -> bool:
    return content_type in JSON_TYPES or (
        content_type.startswith("application/") and content_type.endswith("+json"))


def _too_large(limit: int, what: str) -> ApiError:
    return ApiError(413, "payload_too_large", f"{what}; the limit is {limit} bytes",
                    {"limit_bytes": limit})


async def read_body(request: web.Request) -> bytes:
    """The body, inflated if gzip/deflate (:func:`llm_observe.httpbody.read_body`): 415 for
    another Content-Encoding, 413 once raw or inflated bytes pass the limit, 400 unreadable."""
    limit = request.app[AppKeys.max_body]
    try:
        return await httpbody.read_body(request, limit)
    except httpbody.UnsupportedEncoding as exc:
        raise ApiError(415, "unsupported_encoding", str(exc)) from None
    except httpbody.BodyTooLarge as exc:
        raise ApiError(413, "payload_too_large", str(exc), {"limit_bytes": limit}) from None
    except httpbody.BodyError as exc:
        raise ApiError(400, "malformed_body", str(exc)) from None


async def json_body(request: web.Request, *, optional: bool = False) -> Any:
    """The parsed JSON body. ``optional``: an empty body (any content type) gives NO_BODY.

    Raises ApiError 415 (not JSON, unknown Content-Encoding), 413 (over the app's body
    limit, raw or inflated), 400 (unreadable, malformed, or holding a lone surrogate).
    """
    limit, length = request.app[AppKeys.max_body], request.content_length
    if length is not None and length > limit:
        raise _too_large(limit, f"request body is {length} bytes")
    if optional and not request.body_exists:
        return NO_BODY
    if not _is_json(request.content_type):
        raise ApiError(415, "unsupported_media_type",
                       f"Content-Type must be application/json, got {request.content_type!r}")
    raw = await read_body(request)
    if not raw.strip():
        if optional:
            return NO_BODY
        raise ApiError(400, "malformed_json", "request body is empty; a JSON object is required")
    return await off_loop(request, parse_json, raw)


def parse_json(raw: bytes) -> Any:
    """The JSON value of a UTF-8 body; ApiError 400 if it is not valid JSON or any string
    in it (key or value) holds a lone UTF-16 surrogate, which no encoder downstream (the
    /metrics text, the OTLP protobuf) can write."""
    try:
        data = json.loads(raw.decode("utf-8-sig"), parse_float=_number,
                          parse_constant=_number)
    except UnicodeDecodeError as exc:
        raise ApiError(400, "malformed_json", f"request body is not UTF-8: {exc}") from None
    except ValueError as exc:
        raise ApiError(400, "malformed_json", f"request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise ApiError(400, "malformed_json",
                       "request body is nested too deeply to be a span or a request") from None
    if _SURROGATE_ESCAPE.search(raw) and _SURROGATE_ESCAPE.search(
            _PAIR.sub(b"", raw.replace(b"\\\\", b""))):
        path = _lone_surrogate(data)
        if path is not None:
            raise ApiError(400, "invalid_unicode", f"request body has a lone UTF-16 "
                           f"surrogate at {path}; JSON strings must be valid Unicode",
                           {"path": path})
    return data


def _number(text: str) -> int | float:
    """A JSON number with a fraction or exponent: an int when integral (JSON Schema counts
    ``1.0`` as an integer, so a validator-generated ``"port": 9464.0`` must be accepted).
    ``1e400`` (too large for a float) and Python's ``NaN``/``Infinity`` are refused."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is not a finite number")
    return int(value) if value.is_integer() else value


def _lone_surrogate(data: Any) -> str | None:
    """The JSON path (``$.spans[3].model``) of the first key or string with a lone surrogate."""
    stack: list[tuple[Any, str]] = [(data, "$")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return path
        elif isinstance(value, dict):
            for key, item in reversed(value.items()):
                child = f"{path}.{key}" if _NAME.fullmatch(key) else \
                    f"{path}[{json.dumps(key)}]"
                stack += ((item, child), (key, child))
        elif isinstance(value, list):
            stack += ((value[i], f"{path}[{i}]") for i in range(len(value) - 1, -1, -1))
    return None


async def json_object(request: web.Request, *, optional: bool = False) -> Fields:
    """The body as a JSON object wrapped in :class:`Fields` (422 if it is another JSON type)."""
    data = await json_body(request, optional=optional)
    if data is NO_BODY:
        return Fields({})
    if not isinstance(data, dict):
        raise validation_error([FieldError("$", "must be a JSON object")])
    return Fields(data)


class Fields:
    """Typed reads of a request object's fields; :meth:`check` raises 422 naming all bad ones."""

    __slots__ = ("data", "errors")

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.errors: list[FieldError] = []

    def fail(self, name: str, message: str) -> None:
        self.errors.append(FieldError(name, message))

    def check(self) -> None:
        """Raise the 422 ApiError if any field was bad."""
        if self.errors:
            raise validation_error(self.errors)

    def _get(self, name: str, required: bool) -> Any:
        value = self.data.get(name, _MISSING)
        if value is _MISSING or value is None:
            if required:
                self.fail(name, "is required")
            return _MISSING
        return value

    def string(self, name: str, *, required: bool = False, max_len: int = 256,
               choices: frozenset[str] | None = None, default: str | None = None,
               non_empty: bool = True) -> str | None:
        value = self._get(name, required)
        if value is _MISSING:
            return default
        if not isinstance(value, str):
            self.fail(name, "must be a string")
            return default
        if non_empty and not value:
            self.fail(name, "must not be empty")
            return default
        if len(value) > max_len:
            self.fail(name, f"must be at most {max_len} characters")
            return default
        if choices is not None and value not in choices:
            self.fail(name, f"must be one of {sorted(choices)}")
            return default
        return value

    def integer(self, name: str, *, required: bool = False, minimum: int = 0,
                maximum: int = 2**53 - 1, default: int | None = None) -> int | None:
        value = self._get(name, required)
        if value is _MISSING:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(name, "must be an integer")
            return default
        if not minimum <= value <= maximum:
            self.fail(name, f"must be between {minimum} and {maximum}")
            return default
        return value

    def number(self, name: str, *, minimum: float, maximum: float,
               default: float) -> float:
        value = self._get(name, False)
        if value is _MISSING:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(name, "must be a number")
            return default
        if not minimum <= value <= maximum:
            self.fail(name, f"must be between {minimum:g} and {maximum:g}")
            return default
        return float(value)

    def boolean(self, name: str, *, default: bool = False) -> bool:
        value = self._get(name, False)
        if value is _MISSING:
            return default
        if not isinstance(value, bool):
            self.fail(name, "must be a boolean")
            return default
        return value

    def raw(self, name: str, *, required: bool = False) -> Any:
        """The value as sent (None when absent); the caller checks its type."""
        value = self._get(name, required)
        return None if value is _MISSING else value
