"""Reading a request: content type (415), size (413), JSON (400), fields (422).

Handlers call :func:`json_object` and then pull typed fields with :class:`Fields`, which
collects every bad field before answering, so a client fixes all of them in one go.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, TypeVar

from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

from llm_observe.api.errors import ApiError, validation_error
from llm_observe.api.keys import AppKeys
from llm_observe.errors import FieldError

JSON_TYPES = frozenset({"application/json"})
_MISSING: Any = object()
NO_BODY: Any = object()  # an optional body that was not sent (distinct from JSON null)
# Bodies above this run their CPU work (tokenising, scanning) in a thread, so one 1 MiB
# request does not stall every other request on the loop for tens of milliseconds.
OFF_LOOP_BYTES = 32_768
T = TypeVar("T")


async def off_loop(request: web.Request, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` inline for small bodies, in the default executor for large ones."""
    if (request.content_length or 0) <= OFF_LOOP_BYTES:
        return fn(*args)
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


def _is_json(content_type: str) -> bool:
    return content_type in JSON_TYPES or (
        content_type.startswith("application/") and content_type.endswith("+json"))


async def json_body(request: web.Request, *, optional: bool = False) -> Any:
    """The parsed JSON body. ``optional``: an empty body (any content type) gives NO_BODY.

    Raises ApiError 415 (not JSON), 413 (over the app's body limit), 400 (malformed).
    """
    limit = request.app[AppKeys.max_body]
    length = request.content_length
    if length is not None and length > limit:
        raise ApiError(413, "payload_too_large",
                       f"request body is {length} bytes; the limit is {limit}",
                       {"limit_bytes": limit})
    if optional and not request.body_exists:
        return NO_BODY
    if not _is_json(request.content_type):
        raise ApiError(415, "unsupported_media_type",
                       f"Content-Type must be application/json, got {request.content_type!r}")
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise ApiError(413, "payload_too_large", f"request body is over the limit of {limit} "
                       "bytes", {"limit_bytes": limit}) from None
    except RequestPayloadError as exc:  # e.g. a Content-Encoding the bytes do not match
        raise ApiError(400, "malformed_body", f"request body cannot be read: "
                       f"{getattr(exc, 'message', exc)}") from None
    if not raw.strip():
        if optional:
            return NO_BODY
        raise ApiError(400, "malformed_json", "request body is empty; a JSON object is required")
    try:
        return json.loads(raw, parse_float=_number)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, "malformed_json", f"request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise ApiError(400, "malformed_json",
                       "request body is nested too deeply to be a span or a request") from None


def _number(text: str) -> int | float:
    """A JSON number with a fraction or exponent: an int when integral (JSON Schema counts
    ``1.0`` as an integer, so a validator-generated ``"port": 9464.0`` must be accepted)."""
    value = float(text)
    return int(value) if value.is_integer() else value


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
