"""A fake LLM provider on 127.0.0.1 speaking the real OpenAI and Anthropic wire formats.

Threaded (stdlib ``http.server``), so one instance serves sync and async tests alike
without touching their event loop::

    with FakeProvider() as fake:
        client = openai.OpenAI(base_url=fake.openai_base_url, api_key="k")
        anthropic.Anthropic(base_url=fake.base_url, api_key="k")

Routes: ``POST .../chat/completions`` (OpenAI chat completions JSON, or SSE with
``"stream": true`` — a final usage chunk only when ``stream_options.include_usage`` is
asked for, as OpenAI does), ``POST .../messages`` (Anthropic Messages JSON, or its SSE
event stream: message_start … message_stop). Wire shapes follow
https://platform.openai.com/docs/api-reference/chat and
https://docs.anthropic.com/en/api/messages-streaming.

Behaviour is set on ``fake.settings`` (reply text, usage, delays) and per request with
``fake.fail_next(status, times)``, ``fake.break_stream_after(n)``. Every request is kept
in ``fake.requests`` for assertions.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from requests.structures import CaseInsensitiveDict


@dataclass
class Settings:
    """What the fake answers. ``reply=None`` echoes: "You said: <last user text>"."""

    reply: str | None = None
    prompt_tokens: int = 11
    completion_tokens: int | None = None  # None: one token per streamed chunk / reply word
    finish_reason: str = "stop"  # OpenAI value; Anthropic answers "end_turn" for it
    model_suffix: str = ""  # appended to the request model in the answer ("-2024-08-06")
    delay_s: float = 0.0  # before the response headers
    chunk_delay_s: float = 0.0  # between streamed chunks
    retry_after_ms: int = 5  # sent with 429/5xx so SDK retries stay fast
    # merged into the answer's usage object (e.g. completion_tokens_details, cache_creation)
    # and into the answer itself (e.g. OpenAI's service_tier)
    usage_extra: dict[str, Any] = field(default_factory=dict)
    response_extra: dict[str, Any] = field(default_factory=dict)
    # an agent's tool turn: (function name, JSON arguments) answered, not streamed, with
    # finish_reason "tool_calls" while the conversation holds no tool result yet
    tool_call: tuple[str, str] | None = None


@dataclass
class Recorded:
    method: str
    path: str
    headers: CaseInsensitiveDict[str]  # HTTP names are case-insensitive (httpx2 sends lower case)
    body: dict[str, Any]


@dataclass
class _Failure:
    status: int
    body: dict[str, Any] = field(default_factory=dict)


class _QuietServer(ThreadingHTTPServer):
    """A client that stops reading mid-stream (``break``, ``close()``) is what the stream
    tests exercise: the broken pipe it leaves is expected, not worth a traceback."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


class FakeProvider:
    """Start/stop a fake provider; also a context manager returning itself."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.requests: list[Recorded] = []
        self._failures: deque[_Failure] = deque()
        self._break_after: deque[int] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------
    def start(self) -> FakeProvider:
        handler = type("Handler", (_Handler,), {"fake": self})
        server = _QuietServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True,
                                        kwargs={"poll_interval": 0.05})
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeProvider is not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """Root URL (what Anthropic clients take as base_url)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """``base_url + "/v1"`` (what OpenAI clients take as base_url)."""
        return self.base_url + "/v1"

    # -- scripting ---------------------------------------------------------------
    def fail_next(self, status: int = 500, times: int = 1, message: str = "fake failure") -> None:
        """Answer the next ``times`` requests with ``status`` and a provider-shaped error."""
        body = {"error": {"message": message, "type": "server_error", "code": None},
                "type": "error"}
        with self._lock:
            self._failures.extend(_Failure(status, body) for _ in range(times))

    def break_stream_after(self, chunks: int) -> None:
        """Cut the connection of the next stream after ``chunks`` chunks (mid-stream error)."""
        with self._lock:
            self._break_after.append(chunks)

    def reset(self) -> None:
        with self._lock:
            self.settings = Settings()
            self.requests.clear()
            self._failures.clear()
            self._break_after.clear()

    def _take(self, queue: deque[Any]) -> Any:
        with self._lock:
            return queue.popleft() if queue else None


class _Handler(BaseHTTPRequestHandler):
    fake: FakeProvider
    protocol_version = "HTTP/1.1"
    timeout = 10  # idle keep-alive connections end on their own

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        fake = self.fake
        headers = CaseInsensitiveDict(self.headers.items())
        fake.requests.append(Recorded("POST", self.path, headers, body))
        settings = fake.settings
        if settings.delay_s:
            time.sleep(settings.delay_s)
        failure = fake._take(fake._failures)
        if failure is not None:
            self._json(failure.status, failure.body,
                       {"retry-after-ms": str(settings.retry_after_ms)})
            return
        path = self.path.split("?", 1)[0]
        if path.endswith("/chat/completions"):
            self._openai(body, settings)
        elif path.endswith("/responses") and not body.get("stream"):
            self._responses(body, settings)
        elif path.endswith("/messages"):
            self._anthropic(body, settings)
        else:
            self._json(404, {"error": {"message": f"no route {path}"}})

    # -- OpenAI ----------------------------------------------------------------------
    def _openai(self, body: dict[str, Any], s: Settings) -> None:
        model = str(body.get("model", "unknown")) + s.model_suffix
        words = _reply(body, s).split(" ")
        completion_tokens = s.completion_tokens if s.completion_tokens is not None else len(words)
        usage = {"prompt_tokens": s.prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": s.prompt_tokens + completion_tokens,
                 "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                 **s.usage_extra}
        base = {"id": "chatcmpl-fake", "created": int(time.time()), "model": model,
                "system_fingerprint": "fp_fake", **s.response_extra}
        had_tool = any(isinstance(m, dict) and m.get("role") == "tool"
                       for m in body.get("messages") or [])
        if s.tool_call is not None and not had_tool and not body.get("stream"):
            name, arguments = s.tool_call
            self._json(200, {**base, "object": "chat.completion", "usage": usage, "choices": [{
                "index": 0, "logprobs": None, "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": None, "refusal": None,
                            "tool_calls": [{"id": "call_1", "type": "function", "function": {
                                "name": name, "arguments": arguments}}]}}]})
            return
        if not body.get("stream"):
            self._json(200, {**base, "object": "chat.completion", "usage": usage, "choices": [{
                "index": 0, "logprobs": None, "finish_reason": s.finish_reason,
                "message": {"role": "assistant", "content": " ".join(words), "refusal": None}}]})
            return
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunk = {**base, "object": "chat.completion.chunk"}
        if include_usage:
            chunk["usage"] = None

        def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**chunk, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                          "finish_reason": finish}]}

        events = [choice({"role": "assistant", "content": "", "refusal": None})]
        events += [choice({"content": w if i == 0 else " " + w}) for i, w in enumerate(words)]
        events.append(choice({}, s.finish_reason))
        if include_usage:
            events.append({**chunk, "choices": [], "usage": usage})
        self._sse([(None, e) for e in events] + [(None, "[DONE]")], s)

    def _responses(self, body: dict[str, Any], s: Settings) -> None:
        """OpenAI's Responses API, not streamed: text, or ``s.tool_call`` as a function
        call while the input holds no function call output yet."""
        items = body.get("input") if isinstance(body.get("input"), list) else []
        had_tool = any(isinstance(i, dict) and i.get("type") == "function_call_output"
                       for i in items)
        words = (s.reply or "Hello from the fake.").split(" ")
        output_tokens = s.completion_tokens if s.completion_tokens is not None else len(words)
        output: list[dict[str, Any]] = [{
            "type": "message", "id": "msg_fake", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": " ".join(words), "annotations": []}]}]
        if s.tool_call is not None and not had_tool:
            name, arguments = s.tool_call
            output = [{"type": "function_call", "id": "fc_1", "call_id": "call_1",
                       "name": name, "arguments": arguments, "status": "completed"}]
        self._json(200, {
            "id": "resp_fake", "object": "response", "created_at": int(time.time()),
            "model": str(body.get("model", "unknown")) + s.model_suffix, "status": "completed",
            "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": s.prompt_tokens, "output_tokens": output_tokens,
                      "total_tokens": s.prompt_tokens + output_tokens,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}})

    # -- Anthropic -------------------------------------------------------------------
    def _anthropic(self, body: dict[str, Any], s: Settings) -> None:
        model = str(body.get("model", "unknown")) + s.model_suffix
        words = _reply(body, s).split(" ")
        output_tokens = s.completion_tokens if s.completion_tokens is not None else len(words)
        stop_reason = {"stop": "end_turn", "length": "max_tokens",
                       "tool_calls": "tool_use"}.get(s.finish_reason, s.finish_reason)
        usage = {"input_tokens": s.prompt_tokens, "output_tokens": output_tokens,
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                 **s.usage_extra}
        message = {"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                   "stop_sequence": None}
        if not body.get("stream"):
            self._json(200, {**message, "content": [{"type": "text", "text": " ".join(words)}],
                             "stop_reason": stop_reason, "usage": usage})
            return
        start_usage = {**usage, "output_tokens": 1}
        events: list[tuple[str | None, Any]] = [
            ("message_start", {"type": "message_start", "message": {
                **message, "content": [], "stop_reason": None, "usage": start_usage}}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
            ("ping", {"type": "ping"}),
        ]
        events += [("content_block_delta", {
            "type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": w if i == 0 else " " + w}})
            for i, w in enumerate(words)]
        events += [
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                               "usage": {"output_tokens": output_tokens}}),
            ("message_stop", {"type": "message_stop"}),
        ]
        self._sse(events, s)

    # -- wire helpers ------------------------------------------------------------------
    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: list[tuple[str | None, Any]], s: Settings) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        cut = self.fake._take(self.fake._break_after)
        for index, (name, payload) in enumerate(events):
            if cut is not None and index >= cut:
                # No terminating chunk: the client sees an incomplete body, as when a
                # provider's connection drops mid-answer.
                self.wfile.flush()
                self.close_connection = True
                return
            data = payload if isinstance(payload, str) else json.dumps(payload)
            text = (f"event: {name}\n" if name else "") + f"data: {data}\n\n"
            encoded = text.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(encoded), encoded))
            self.wfile.flush()
            if s.chunk_delay_s:
                time.sleep(s.chunk_delay_s)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _reply(body: dict[str, Any], s: Settings) -> str:
    if s.reply is not None:
        return s.reply
    return "You said: " + last_user_text(body)


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message of an OpenAI or Anthropic request body."""
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""
