"""The HTTP catch-all: an LLM span for any request to a known provider URL.

Shared by the httpx, httpx2 and requests targets. The URL is matched against the
provider table (``llm_observe.providers``, the same one the REST API's detect uses);
anything else passes through after one dict lookup. Under an SDK-level span (``ACTIVE``
set) the request is only counted as an attempt — that is how one SDK call with retries
stays one span with ``retry_count``. Responses are read per wire format; streamed
bodies are wrapped so SSE / NDJSON events are folded as they pass.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Mapping
from typing import Any

from llm_observe import providers
from llm_observe.instrument._guard import dont_throw, report
from llm_observe.instrument.calls import Wrapper
from llm_observe.instrument.context import ACTIVE, otel_suppressed, run_active, run_active_async
from llm_observe.instrument.extract import anthropic, bedrock, cohere, gemini, ollama, openai
from llm_observe.instrument.extract._common import (
    Accumulator,
    Outcome,
    TextAccumulator,
    content_text,
    get,
)
from llm_observe.instrument.record import LlmCall

ResponseFn = Callable[[Any, Outcome], None]

WIRES: dict[str, tuple[ResponseFn, Callable[[], Accumulator]]] = {
    "openai": (openai.response, openai.ChunkAccumulator),
    "anthropic": (anthropic.response, anthropic.EventAccumulator),
    "gemini": (gemini.apply, gemini.ChunkAccumulator),
    "cohere": (cohere.apply, cohere.ChunkAccumulator),
    "ollama": (ollama.apply, ollama.ChunkAccumulator),
    "bedrock": (bedrock.apply, TextAccumulator),  # binary event stream: not decoded
}
MAX_BUFFERED_BODY = 8 * 1024 * 1024  # a streamed JSON body larger than this is not parsed


def prompt_of(body: Mapping[str, Any]) -> Any:
    """The prompt of a request body in any supported wire format (for text and counting)."""
    messages = body.get("messages")
    if isinstance(messages, list):
        system = body.get("system")  # Anthropic
        if system:
            return [{"role": "system", "content": content_text(system)}, *messages]
        return messages
    contents = body.get("contents")  # Gemini
    if isinstance(contents, list):
        return [{"role": get(c, "role") or "user",
                 "content": content_text(get(c, "parts") or ())} for c in contents]
    # completions / Ollama generate, responses / embeddings, Cohere v1
    for key in ("prompt", "input", "message"):
        value = body.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            return value if all(isinstance(v, dict) for v in value) else " ".join(map(str, value))
    return None


@dont_throw
def begin(scheme: str, host: str, port: int | None, path: str, query: str, raw_body: Any,
          provider: str | None = None) -> tuple[LlmCall, providers.Detection] | None:
    """Start a call for an LLM request; None for any other request (or on our failure)."""
    if provider is None:
        entry = providers.detect_request(scheme, host, port, path, query, None)
        if entry is None or entry.operation not in providers.LLM_OPERATIONS:
            return None
        provider, wire = entry.provider, entry.wire
    else:
        wire = providers.wire_of(provider)
    body = providers.parse_body(raw_body if isinstance(raw_body, (bytes, str, dict)) else None)
    detection = providers.detect_parts(provider, path, query, body, wire=wire)
    if not detection.is_llm_call:
        return None
    call = LlmCall(detection.provider, detection.model, detection.operation, prompt_of(body))
    return call, detection


def finish_unless_streamed(call: LlmCall, detection: providers.Detection, response: Any,
                           kwargs: dict[str, Any]) -> bool:
    """End the span of a non-streamed or failed response (``requests`` and ``httpx``
    responses alike); False when a stream remains to be wrapped."""
    status = response.status_code
    if not kwargs.get("stream"):
        finish_response(call, detection, status, response.headers, response.content)
        return True
    if status >= 400:
        call.finish(None, error_type=str(status))
        return True
    return False


def finish_response(call: LlmCall, detection: providers.Detection, status: int,
                    headers: Mapping[str, str], content: bytes | None) -> None:
    """Finish a call from a fully read response."""
    if status >= 400:
        call.finish(None, error_type=str(status))
        return
    call.finish(_outcome(detection, headers, content))


@dont_throw
def _outcome(detection: providers.Detection, headers: Mapping[str, str],
             content: bytes | None) -> Outcome:
    out = Outcome()
    if content:
        data = json.loads(content)
        WIRES.get(detection.wire, WIRES["openai"])[0](data, out)
    if detection.provider == "bedrock":
        bedrock.apply_headers(headers, out)
    return out


def stream_accumulator(detection: providers.Detection, content_type: str,
                       content_encoding: str) -> Accumulator:
    """An accumulator for a streamed response body, by its content type."""
    response_fn, accumulator = WIRES.get(detection.wire, WIRES["openai"])
    inner: Accumulator
    if "event-stream" in content_type:
        inner = LineAccumulator(accumulator(), sse=True)
    elif "ndjson" in content_type or detection.wire == "ollama":
        inner = LineAccumulator(accumulator(), sse=False)
    else:
        inner = BodyAccumulator(response_fn)
    encoding = content_encoding.strip().lower()
    if encoding in ("", "identity"):
        return inner
    if encoding in ("gzip", "x-gzip", "deflate"):
        return Decompressing(inner)
    return TimingOnly()  # br, zstd ...: the stream is timed, its tokens counted locally


class Decompressing:
    """gzip/deflate bytes as the catch-all sees them (the raw stream) in, plain bytes on
    to ``inner``."""

    __slots__ = ("_inner", "_zlib")

    def __init__(self, inner: Accumulator) -> None:
        self._inner = inner
        self._zlib = zlib.decompressobj(32 + zlib.MAX_WBITS)  # gzip or zlib header, detected

    @property
    def outcome(self) -> Outcome:
        return self._inner.outcome

    def add(self, chunk: Any) -> None:
        data = self._zlib.decompress(chunk)
        if data:
            self._inner.add(data)


class TimingOnly:
    """A body we cannot read (an encoding we do not decode): nothing is gathered."""

    __slots__ = ("outcome",)

    def __init__(self) -> None:
        self.outcome = Outcome()

    def add(self, chunk: Any) -> None:
        pass


class LineAccumulator:
    """Bytes in, one JSON event per SSE ``data:`` line (or per NDJSON line) out."""

    __slots__ = ("_buffer", "_inner", "_sse")

    def __init__(self, inner: Accumulator, *, sse: bool) -> None:
        self._inner = inner
        self._sse = sse
        self._buffer = b""

    @property
    def outcome(self) -> Outcome:
        return self._inner.outcome

    def add(self, chunk: Any) -> None:
        lines = (self._buffer + bytes(chunk)).split(b"\n")
        self._buffer = lines.pop()
        for line in lines:
            if self._sse:
                if not line.startswith(b"data:"):
                    continue
                line = line[5:]
            line = line.strip()
            if line[:1] == b"{":  # every event is an object: skips "[DONE]" and comments
                self._inner.add(json.loads(line))


class BodyAccumulator:
    """A streamed but non-SSE body (one JSON document): buffered, parsed at the end."""

    __slots__ = ("_parts", "_response", "_size")

    def __init__(self, response_fn: ResponseFn) -> None:
        self._response = response_fn
        self._parts: list[bytes] = []
        self._size = 0

    def add(self, chunk: Any) -> None:
        self._size += len(chunk)
        if self._size <= MAX_BUFFERED_BODY:
            self._parts.append(bytes(chunk))

    @property
    def outcome(self) -> Outcome:
        out = Outcome()
        if self._parts and self._size <= MAX_BUFFERED_BODY:
            body = b"".join(self._parts)
            if body[:2] == b"\x1f\x8b":
                body = zlib.decompress(body, 47)
            self._response(json.loads(body), out)
        return out


# -- shells shared by the HTTP targets ---------------------------------------------------
# parts(args, kwargs) -> (scheme, host, port, path, query, body) of the request
Parts = Callable[[tuple[Any, ...], dict[str, Any]],
                 "tuple[str, str, int | None, str, str, Any] | None"]
# after(call, detection, response, kwargs, is_async) -> the response the user receives
After = Callable[[LlmCall, providers.Detection, Any, dict[str, Any], bool], Any]


def _start(parts: Parts, args: tuple[Any, ...], kwargs: dict[str, Any],
           provider: str | None) -> tuple[LlmCall, providers.Detection] | None:
    active = ACTIVE.get()
    if active is not None:
        active.note_attempt(http=True)
        return None
    if otel_suppressed():
        return None
    found = _parts(parts, args, kwargs)
    return begin(*found, provider=provider) if found is not None else None


@dont_throw
def _parts(parts: Parts, args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> tuple[str, str, int | None, str, str, Any] | None:
    return parts(args, kwargs)


def _after(after: After, call: LlmCall, detection: providers.Detection, response: Any,
           kwargs: dict[str, Any], is_async: bool) -> Any:
    try:
        return after(call, detection, response, kwargs, is_async)
    except Exception:
        report("http.after")
        call.finish(None)
        return response


def sync_send(parts: Parts, after: After, provider: str | None = None) -> Wrapper:
    """A wrapt wrapper for a sync ``send``-like method of an HTTP client."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
        started = _start(parts, args, kwargs, provider)
        if started is None:
            return wrapped(*args, **kwargs)
        call, detection = started
        response = run_active(call, wrapped, args, kwargs)
        return _after(after, call, detection, response, kwargs, False)

    return wrapper


def async_send(parts: Parts, after: After, provider: str | None = None) -> Wrapper:
    """A wrapt wrapper for an async ``send``-like method of an HTTP client."""

    async def run(wrapped: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                  call: LlmCall, detection: providers.Detection) -> Any:
        response = await run_active_async(call, wrapped, args, kwargs)
        return _after(after, call, detection, response, kwargs, True)

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
        started = _start(parts, args, kwargs, provider)
        if started is None:
            return wrapped(*args, **kwargs)
        return run(wrapped, args, kwargs, *started)

    return wrapper
