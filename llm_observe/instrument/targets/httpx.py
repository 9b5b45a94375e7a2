"""httpx and httpx2 (sync and async ``Client.send``): the HTTP catch-all.

``send`` is where every request of a client goes — ``get``/``post``/``stream`` and
every SDK built on httpx (openai 1.x-2.x, LiteLLM) or httpx2 (anthropic 2.x, openai
3.x). The two libraries share the API, so one table serves both, as two patchers that
are installed (and skipped) independently.
"""

from __future__ import annotations

from typing import Any

from llm_observe.instrument import http
from llm_observe.instrument.patching import TablePatcher, Wrap
from llm_observe.instrument.record import LlmCall
from llm_observe.instrument.streams import AsyncStream, SyncStream
from llm_observe.providers import Detection


def request_parts(args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> tuple[str, str, int | None, str, str, Any]:
    request = args[0] if args else kwargs["request"]
    url = request.url
    query = url.query
    try:
        body = request.content  # raises for a streaming upload that was not read
    except Exception:
        body = None
    return (url.scheme, url.host, url.port, url.path,
            query.decode("ascii", "replace") if isinstance(query, bytes) else query, body)


def after(call: LlmCall, detection: Detection, response: Any, kwargs: dict[str, Any],
          is_async: bool) -> Any:
    if http.finish_unless_streamed(call, detection, response, kwargs):
        return response
    wrap_body(call, detection, response, is_async)
    return response


def wrap_body(call: LlmCall, detection: Detection, response: Any, is_async: bool) -> None:
    """Record ``call`` from ``response``'s body (an unread httpx/httpx2 response) as it is
    read: SSE/NDJSON events or one JSON document, through its Content-Encoding."""
    headers = response.headers
    accumulator = http.stream_accumulator(
        detection, headers.get("content-type", ""), headers.get("content-encoding", ""))
    shell = AsyncStream if is_async else SyncStream
    response.stream = shell(response.stream, call, accumulator)


def table(module: str) -> list[Wrap]:
    return [
        Wrap(module, "Client", "send", http.sync_send(request_parts, after)),
        Wrap(module, "AsyncClient", "send", http.async_send(request_parts, after)),
    ]


HTTPX = TablePatcher("httpx", "httpx", table("httpx"))
HTTPX2 = TablePatcher("httpx2", "httpx2", table("httpx2"))
