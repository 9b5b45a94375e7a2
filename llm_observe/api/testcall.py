"""The outbound calls behind test-call and test-stream-call (spec 4.4, 4.8).

One small chat call to ``openai`` or ``anthropic`` through the client the caller picks
(``sdk``: the vendor SDK; ``httpx`` / ``requests``: the raw HTTP API, recorded by the
library's HTTP catch-all). Base URL and key come from settings
(``LLM_OBSERVE_OPENAI_BASE_URL`` ...) or the vendor SDKs' own variables
(``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``ANTHROPIC_BASE_URL``, ``ANTHROPIC_API_KEY``).
Everything here is blocking and runs in a worker thread; a failed call is a result
(``ok: false`` with what happened), never an exception.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from llm_observe.collector.settings import Settings

OPENAI = "openai"
ANTHROPIC = "anthropic"
PROVIDERS = frozenset({OPENAI, ANTHROPIC})
METHODS = frozenset({"httpx", "requests", "sdk"})
DEFAULT_MODELS = {OPENAI: "gpt-4o-mini", ANTHROPIC: "claude-3-5-haiku-latest"}
DEFAULT_PROMPT = "Reply with the single word: pong"
MAX_TOKENS = 32
# Anthropic requires a version header on the raw HTTP API (docs.anthropic.com/en/api/versioning).
ANTHROPIC_VERSION = "2023-06-01"


@dataclass(frozen=True, slots=True)
class Target:
    """Where a test call goes and with which credentials."""

    provider: str
    base_url: str
    api_key: str | None
    model: str

    @property
    def url(self) -> str:
        """The chat endpoint: OpenAI's base URL ends in /v1, Anthropic's does not."""
        if self.provider == OPENAI:
            return self.base_url.rstrip("/") + "/chat/completions"
        return self.base_url.rstrip("/") + "/v1/messages"


def target_for(settings: Settings, provider: str, model: str | None,
               environ: dict[str, str] | None = None) -> Target:
    """Resolve base URL, key and model for ``provider`` from settings, then the SDK env vars."""
    env = os.environ if environ is None else environ
    if provider == OPENAI:
        base = settings.openai_base_url or env.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        key = settings.openai_api_key or env.get("OPENAI_API_KEY")
    else:
        base = settings.anthropic_base_url or env.get("ANTHROPIC_BASE_URL") \
            or "https://api.anthropic.com"
        key = settings.anthropic_api_key or env.get("ANTHROPIC_API_KEY")
    return Target(provider, base, key, model or DEFAULT_MODELS[provider])


@dataclass(slots=True)
class CallResult:
    """What happened on the wire, as the caller of the test saw it."""

    ok: bool = False
    status_code: int | None = None
    error_type: str | None = None
    error_message: str | None = None
    reply: str = ""
    chunks: int = 0
    ttft_ms: float | None = None
    latency_ms: float = 0.0
    notes: list[str] = field(default_factory=list)

    def fail(self, exc: BaseException) -> None:
        self.ok = False
        self.error_type = f"{type(exc).__module__}.{type(exc).__qualname__}"
        self.error_message = str(exc)[:500]
        status = getattr(exc, "status_code", None)
        if status is None:
            response = getattr(exc, "response", None)
            status = getattr(response, "status_code", None)
        if isinstance(status, int):
            self.status_code = status


def _body(target: Target, prompt: str, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": target.model, "max_tokens": MAX_TOKENS,
                            "messages": [{"role": "user", "content": prompt}]}
    if stream:
        body["stream"] = True
    return body


# Without a configured key the call is still made: the provider's 401 (and the error span
# it produces) is the clearest answer to "is my key set?".
NO_KEY = "not-configured"


def _headers(target: Target) -> dict[str, str]:
    key = target.api_key or NO_KEY
    if target.provider == OPENAI:
        return {"Authorization": f"Bearer {key}"}
    return {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION}


def _reply_of(provider: str, data: Any) -> str:
    """The text of a non-streamed answer (OpenAI choices / Anthropic content blocks)."""
    try:
        if provider == OPENAI:
            return str(data["choices"][0]["message"]["content"] or "")
        return "".join(b.get("text", "") for b in data["content"] if isinstance(b, dict))
    except (KeyError, IndexError, TypeError):
        return ""


def _delta_of(provider: str, event: Any) -> str:
    """The text a streamed event adds (OpenAI chunk delta / Anthropic content_block_delta)."""
    if not isinstance(event, dict):
        return ""
    if provider == OPENAI:
        choices = event.get("choices") or []
        delta = choices[0].get("delta") if choices and isinstance(choices[0], dict) else None
        return str((delta or {}).get("content") or "")
    if event.get("type") == "content_block_delta":
        return str((event.get("delta") or {}).get("text") or "")
    return ""


def _sse_events(lines: Iterator[str]) -> Iterator[Any]:
    """JSON payloads of ``data:`` lines of a server-sent event stream ([DONE] ends it)."""
    for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            yield json.loads(data)
        except ValueError:
            continue


class _Clock:
    def __init__(self, result: CallResult) -> None:
        self.result = result
        self.reset()

    def reset(self) -> None:  # after client set-up, which is not the provider's latency
        self.start = time.perf_counter()

    def chunk(self, text: str) -> None:
        if not text:
            return
        self.result.chunks += 1
        self.result.reply += text
        if self.result.ttft_ms is None:
            self.result.ttft_ms = (time.perf_counter() - self.start) * 1000

    def stop(self) -> None:
        self.result.latency_ms = (time.perf_counter() - self.start) * 1000


def _via_httpx(target: Target, prompt: str, stream: bool, timeout: float,
               clock: _Clock) -> None:
    import httpx

    body, headers = _body(target, prompt, stream), _headers(target)
    with httpx.Client(timeout=timeout) as client:
        if not stream:
            response = client.post(target.url, json=body, headers=headers)
            clock.result.status_code = response.status_code
            response.raise_for_status()
            clock.chunk(_reply_of(target.provider, response.json()))
            return
        with client.stream("POST", target.url, json=body, headers=headers) as response:
            clock.result.status_code = response.status_code
            response.raise_for_status()
            for event in _sse_events(response.iter_lines()):
                clock.chunk(_delta_of(target.provider, event))


def _via_requests(target: Target, prompt: str, stream: bool, timeout: float,
                  clock: _Clock) -> None:
    import requests

    body, headers = _body(target, prompt, stream), _headers(target)
    with requests.post(target.url, json=body, headers=headers, timeout=timeout,
                       stream=stream) as response:
        clock.result.status_code = response.status_code
        response.raise_for_status()
        if not stream:
            clock.chunk(_reply_of(target.provider, response.json()))
            return
        for event in _sse_events(response.iter_lines(decode_unicode=True)):
            clock.chunk(_delta_of(target.provider, event))


def _via_sdk(target: Target, prompt: str, stream: bool, timeout: float, clock: _Clock) -> None:
    key = target.api_key or NO_KEY  # the SDKs refuse to start without one
    body = _body(target, prompt, stream)
    if target.provider == OPENAI:
        import openai

        oa = openai.OpenAI(base_url=target.base_url, api_key=key, max_retries=0,
                           timeout=timeout)
        with oa:
            completions = oa.chat.completions  # loaded lazily, ~250 ms the first time
            clock.reset()
            answer = completions.create(**body)
            clock.result.status_code = 200
            if not stream:
                clock.chunk(answer.choices[0].message.content or "")
                return
            for chunk in answer:
                if chunk.choices:
                    clock.chunk(chunk.choices[0].delta.content or "")
        return
    import anthropic

    an = anthropic.Anthropic(base_url=target.base_url, api_key=key, max_retries=0,
                             timeout=timeout)
    with an:
        messages = an.messages
        clock.reset()
        message = messages.create(**body)
        clock.result.status_code = 200
        if not stream:
            clock.chunk("".join(getattr(b, "text", "") for b in message.content))
            return
        for event in message:
            if event.type == "content_block_delta":
                clock.chunk(getattr(event.delta, "text", "") or "")


_CLIENTS = {"httpx": _via_httpx, "requests": _via_requests, "sdk": _via_sdk}


def run_call(target: Target, method: str, prompt: str, *, stream: bool,
             timeout: float) -> CallResult:
    """Make the call (blocking). Never raises: failures are in the result."""
    result = CallResult()
    try:
        # else the first call's latency is the SDK's import time (over a second: openai)
        importlib.import_module(method if method != "sdk" else target.provider)
    except Exception as exc:
        result.fail(exc)
        return result
    clock = _Clock(result)
    try:
        _CLIENTS[method](target, prompt, stream, timeout, clock)
        result.ok = True
    except Exception as exc:
        result.fail(exc)
    finally:
        clock.stop()
    result.reply = result.reply[:1000]
    return result


T = TypeVar("T")


def in_daemon_thread(fn: Callable[[], T]) -> asyncio.Future[T]:
    """Run ``fn`` in a daemon thread of its own; the returned future resolves on this loop.

    Test calls block on a provider for up to their timeout (120 s at most): in the
    loop's shared executor they would starve the requests that need it, and an
    executor's threads are joined at exit, so SIGTERM would wait for a slow provider.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():
            return  # the request was cancelled (client gone, shutdown)
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def target() -> None:
        try:
            outcome: tuple[Any, BaseException | None] = (fn(), None)
        except BaseException as exc:  # handed to the awaiting request, not lost
            outcome = (None, exc)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:
            pass  # the loop has closed: nobody is waiting any more

    threading.Thread(target=target, name="llm-observe-test-call", daemon=True).start()
    return future
