"""The HTTP catch-all: raw httpx, httpx2 and requests calls to known provider URLs."""

from __future__ import annotations

import gc
import gzip
import json
import zlib
from typing import Any

import httpx
import httpx2
import pytest
import requests

from llm_observe import instrument, semconv
from llm_observe.instrument.targets import httpx as httpx_target
from tests.fakes import FakeProvider
from tests.instrument.conftest import Spans

BODY = {"model": "gpt-4o", "messages": [{"role": "user", "content": "raw call"}]}
STREAM_BODY = {**BODY, "stream": True, "stream_options": {"include_usage": True}}
CLAUDE = {"model": "claude-x", "max_tokens": 9, "messages": [{"role": "user", "content": "raw"}]}


def chat_url(fake: FakeProvider) -> str:
    return fake.openai_base_url + "/chat/completions"


def check_openai(attrs: dict[str, Any], streamed: bool = False) -> None:
    assert attrs[semconv.GEN_AI_PROVIDER_NAME] == "openai"
    assert attrs[semconv.GEN_AI_REQUEST_MODEL] == "gpt-4o"
    assert attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 11
    assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 4
    assert attrs[semconv.COMPLETION_TEXT] == "You said: raw call"
    assert attrs[semconv.STATUS] == semconv.STATUS_SUCCESS
    assert (semconv.LATENCY_MS_TTFT in attrs) is streamed


@pytest.mark.parametrize("lib", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_sync_post(instrumented: Spans, known_url: FakeProvider, lib: Any) -> None:
    with lib.Client() as client:
        assert client.post(chat_url(known_url), json=BODY).status_code == 200
    check_openai(instrumented.one())


@pytest.mark.parametrize("lib", [httpx, httpx2], ids=["httpx", "httpx2"])
async def test_async_post(instrumented: Spans, known_url: FakeProvider, lib: Any) -> None:
    async with lib.AsyncClient() as client:
        await client.post(chat_url(known_url), json=BODY)
    check_openai(instrumented.one())


@pytest.mark.parametrize("lib", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_sync_sse_stream(instrumented: Spans, known_url: FakeProvider, lib: Any) -> None:
    with lib.Client() as client, client.stream("POST", chat_url(known_url),
                                               json=STREAM_BODY) as response:
        lines = list(response.iter_lines())
    assert lines[-2] == "data: [DONE]" or lines[-1] == "data: [DONE]"
    check_openai(instrumented.one(), streamed=True)


@pytest.mark.parametrize("lib", [httpx, httpx2], ids=["httpx", "httpx2"])
async def test_async_sse_stream(instrumented: Spans, known_url: FakeProvider, lib: Any) -> None:
    async with lib.AsyncClient() as client, client.stream(
            "POST", chat_url(known_url), json=STREAM_BODY) as response:
        body = b"".join([chunk async for chunk in response.aiter_bytes()])
    assert b"[DONE]" in body
    check_openai(instrumented.one(), streamed=True)


def test_anthropic_wire_over_httpx(instrumented: Spans, known_url: FakeProvider) -> None:
    httpx.post(known_url.base_url + "/anthropic/v1/messages", json=CLAUDE)
    attrs = instrumented.one()
    assert attrs[semconv.GEN_AI_PROVIDER_NAME] == "anthropic"
    assert attrs[semconv.FINISH_REASON] == "stop"
    assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 3


def test_anthropic_sse_over_httpx(instrumented: Spans, known_url: FakeProvider) -> None:
    with httpx.stream("POST", known_url.base_url + "/anthropic/v1/messages",
                      json={**CLAUDE, "stream": True}) as response:
        response.read()
    attrs = instrumented.one()
    assert attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 11
    assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 3
    assert attrs[semconv.COMPLETION_TEXT] == "You said: raw"


def test_requests_post(instrumented: Spans, known_url: FakeProvider) -> None:
    assert requests.post(chat_url(known_url), json=BODY, timeout=10).ok
    check_openai(instrumented.one())


def test_requests_stream_full(instrumented: Spans, known_url: FakeProvider) -> None:
    with requests.post(chat_url(known_url), json=STREAM_BODY, stream=True, timeout=10) as r:
        lines = [line for line in r.iter_lines() if line]
    assert lines[-1] == b"data: [DONE]"
    check_openai(instrumented.one(), streamed=True)


def test_requests_stream_break_then_close(instrumented: Spans, known_url: FakeProvider) -> None:
    response = requests.post(chat_url(known_url), json=STREAM_BODY, stream=True, timeout=10)
    for _line in response.iter_lines(chunk_size=16):
        break
    response.close()
    gc.collect()  # the abandoned iter_lines generator is closed by the collector
    attrs = instrumented.one()
    assert attrs[semconv.STATUS] == semconv.STATUS_SUCCESS
    assert semconv.LATENCY_MS_TTFT in attrs


def test_requests_stream_read(instrumented: Spans, known_url: FakeProvider) -> None:
    response = requests.post(chat_url(known_url), json=STREAM_BODY, stream=True, timeout=10)
    assert b"[DONE]" in response.raw.read()
    check_openai(instrumented.one(), streamed=True)


def test_requests_stream_error_mid_stream(instrumented: Spans, known_url: FakeProvider) -> None:
    known_url.break_stream_after(2)
    with pytest.raises(requests.exceptions.ChunkedEncodingError), requests.post(
            chat_url(known_url), json=STREAM_BODY, stream=True, timeout=10) as response:
        list(response.iter_content(chunk_size=8))
    attrs = instrumented.one()
    assert attrs[semconv.STATUS] == semconv.STATUS_ERROR


def test_httpx_stream_error_mid_stream(instrumented: Spans, known_url: FakeProvider) -> None:
    known_url.break_stream_after(2)
    with pytest.raises(httpx.RemoteProtocolError), httpx.stream(
            "POST", chat_url(known_url), json=STREAM_BODY) as response:
        response.read()
    assert instrumented.one()[semconv.ERROR_TYPE] == "httpx.RemoteProtocolError"


def test_httpx_stream_closed_early(instrumented: Spans, known_url: FakeProvider) -> None:
    with httpx.Client() as client:
        response = client.send(client.build_request("POST", chat_url(known_url),
                                                    json=STREAM_BODY), stream=True)
        next(response.iter_raw())
        response.close()
    assert instrumented.one()[semconv.STATUS] == semconv.STATUS_SUCCESS


def test_http_error_status_is_an_error_span(instrumented: Spans, known_url: FakeProvider) -> None:
    known_url.fail_next(503)
    assert httpx.post(chat_url(known_url), json=BODY).status_code == 503
    attrs = instrumented.one()
    assert attrs[semconv.STATUS] == semconv.STATUS_ERROR
    assert attrs[semconv.ERROR_TYPE] == "503"


def test_unknown_urls_and_non_llm_paths_are_ignored(instrumented: Spans,
                                                    fake: FakeProvider) -> None:
    httpx.post(chat_url(fake), json=BODY)  # fake server not registered: unknown host
    assert instrumented.all() == []


def test_non_llm_path_on_known_host_is_ignored(instrumented: Spans,
                                               known_url: FakeProvider) -> None:
    httpx.post(known_url.openai_base_url + "/models", json={})
    assert instrumented.all() == []


def test_uninstrument_restores_send(spans: Spans, known_url: FakeProvider) -> None:
    originals = [vars(httpx.Client)["send"], vars(httpx.AsyncClient)["send"],
                 vars(httpx2.Client)["send"], vars(requests.Session)["send"]]
    instrument.init_auto_instrumentation()
    httpx.post(chat_url(known_url), json=BODY)
    assert len(spans.all()) == 1
    instrument.uninstrument_all()
    assert [vars(httpx.Client)["send"], vars(httpx.AsyncClient)["send"],
            vars(httpx2.Client)["send"], vars(requests.Session)["send"]] == originals
    spans.clear()
    httpx.post(chat_url(known_url), json=BODY)
    requests.post(chat_url(known_url), json=BODY, timeout=10)
    assert spans.all() == []


def test_request_parts_reads_httpx_requests() -> None:
    request = httpx.Request("POST", "https://api.openai.com/v1/chat/completions?x=1", json=BODY)
    scheme, host, port, path, query, body = httpx_target.request_parts((request,), {})
    assert (scheme, host, port, path, query) == ("https", "api.openai.com", None,
                                                 "/v1/chat/completions", "x=1")
    assert b'"gpt-4o"' in body


def _sse(words: list[str], usage: bool) -> bytes:
    base = {"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o"}
    events = [{**base, "choices": [{"index": 0, "delta": {"content": w},
                                    "finish_reason": None}]} for w in words]
    if usage:
        events.append({**base, "choices": [],
                       "usage": {"prompt_tokens": 7, "completion_tokens": len(words)}})
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) \
        + b"data: [DONE]\n\n"


@pytest.mark.parametrize(("encoding", "compress"), [
    ("gzip", gzip.compress), ("deflate", zlib.compress)], ids=["gzip", "deflate"])
def test_compressed_sse_is_read_through_its_content_encoding(
        instrumented: Spans, encoding: str, compress: Any) -> None:
    # The catch-all sees the raw (still compressed) stream; the user gets it decoded.
    body = compress(_sse(["Hello", " world"], usage=True))

    class Chunks(httpx.SyncByteStream):
        def __iter__(self) -> Any:
            yield body[:40]
            yield body[40:]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream",
                                            "content-encoding": encoding}, stream=Chunks())

    client = httpx.Client(transport=httpx.MockTransport(handler))
    with client.stream("POST", "https://api.openai.com/v1/chat/completions",
                       json={**BODY, "stream": True}) as response:
        received = b"".join(response.iter_bytes())
    assert received.startswith(b"data: ")
    attrs = instrumented.one()
    assert attrs[semconv.COMPLETION_TEXT] == "Hello world"
    assert (attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS],
            attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS]) == (7, 2)
