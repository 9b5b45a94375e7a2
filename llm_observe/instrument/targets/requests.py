"""requests: ``Session.send`` (every ``requests.get/post`` goes through a Session).

A streamed response (``stream=True``) has its ``raw`` urllib3 response wrapped: requests
reads bodies through ``raw.stream()`` (``iter_content``/``iter_lines``) or ``raw.read()``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from llm_observe.instrument import http
from llm_observe.instrument.patching import TablePatcher, Wrap
from llm_observe.instrument.record import LlmCall
from llm_observe.instrument.streams import StreamProxy
from llm_observe.providers import Detection


def request_parts(args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> tuple[str, str, int | None, str, str, Any]:
    request = args[0] if args else kwargs["request"]
    parts = urlsplit(request.url)
    return (parts.scheme, (parts.hostname or "").lower(), parts.port, parts.path, parts.query,
            request.body)


class RawStream(StreamProxy):
    """Wraps ``response.raw``: chunks read through ``stream()`` or ``read()`` are observed."""

    def stream(self, *args: Any, **kwargs: Any) -> Iterator[bytes]:
        try:
            for chunk in self.__wrapped__.stream(*args, **kwargs):
                self._self_item(chunk)
                yield chunk
        except GeneratorExit:
            self._self_finish()
            raise
        except BaseException as exc:
            self._self_finish(exc)
            raise
        self._self_finish()

    def read(self, amt: int | None = None, *args: Any, **kwargs: Any) -> Any:
        try:
            data = self.__wrapped__.read(amt, *args, **kwargs)
        except BaseException as exc:
            self._self_finish(exc)
            raise
        if data:
            self._self_item(data)
        if not data or amt is None:
            self._self_finish()
        return data


def after(call: LlmCall, detection: Detection, response: Any, kwargs: dict[str, Any],
          is_async: bool) -> Any:
    if http.finish_unless_streamed(call, detection, response, kwargs):
        return response
    # urllib3 decodes gzip for stream(decode_content=True), which is what requests asks for.
    accumulator = http.stream_accumulator(
        detection, response.headers.get("content-type", ""), "")
    response.raw = RawStream(response.raw, call, accumulator)
    return response


PATCHER = TablePatcher("requests", "requests", [
    Wrap("requests.sessions", "Session", "send", http.sync_send(request_parts, after)),
])
