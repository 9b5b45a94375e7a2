"""Extraction of the wire formats only the HTTP catch-all reads, from documented shapes."""

from __future__ import annotations

import json

from llm_observe import providers
from llm_observe.instrument import http
from llm_observe.instrument.extract import bedrock, cohere, gemini, ollama
from llm_observe.instrument.extract._common import Outcome

# https://ai.google.dev/api/generate-content#generatecontentresponse
GEMINI = {"candidates": [{"content": {"parts": [{"text": "Hi "}, {"text": "there"}],
                                      "role": "model"}, "finishReason": "STOP"}],
          "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3,
                            "thoughtsTokenCount": 2, "totalTokenCount": 12},
          "modelVersion": "gemini-2.0-flash-001", "responseId": "r-1"}


def test_gemini_response() -> None:
    out = Outcome()
    gemini.apply(GEMINI, out)
    assert (out.prompt_tokens, out.completion_tokens) == (7, 5)  # thinking is billed output
    assert out.text == "Hi there" and out.finish_reason == "STOP"
    assert out.response_model == "gemini-2.0-flash-001"


def test_cohere_v2_response_and_stream() -> None:
    # https://docs.cohere.com/reference/chat
    out = Outcome()
    cohere.apply({"id": "c-1", "finish_reason": "COMPLETE",
                  "message": {"role": "assistant", "content": [{"type": "text", "text": "Yo"}]},
                  "usage": {"billed_units": {"input_tokens": 5, "output_tokens": 1},
                            "tokens": {"input_tokens": 70, "output_tokens": 1}}}, out)
    assert (out.prompt_tokens, out.completion_tokens, out.text) == (5, 1, "Yo")
    stream = cohere.ChunkAccumulator()
    for event in ({"type": "message-start", "id": "c-2"},
                  {"type": "content-delta", "delta": {"message": {"content": {"text": "A"}}}},
                  {"type": "content-delta", "delta": {"message": {"content": {"text": "B"}}}},
                  {"type": "message-end", "delta": {"finish_reason": "COMPLETE", "usage": {
                      "billed_units": {"input_tokens": 4, "output_tokens": 2}}}}):
        stream.add(event)
    assert stream.outcome.text == "AB" and stream.outcome.completion_tokens == 2


def test_ollama_ndjson_stream_through_the_line_accumulator() -> None:
    # https://github.com/ollama/ollama/blob/main/docs/api.md (streaming /api/chat)
    lines = [{"model": "llama3.2", "message": {"role": "assistant", "content": "Hel"},
              "done": False},
             {"model": "llama3.2", "message": {"role": "assistant", "content": "lo"},
              "done": False},
             {"model": "llama3.2", "message": {"role": "assistant", "content": ""},
              "done": True, "done_reason": "stop", "prompt_eval_count": 26, "eval_count": 2}]
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    detection = providers.detect("http://localhost:11434/api/chat", {"model": "llama3.2"})
    assert detection is not None
    acc = http.stream_accumulator(detection, "application/x-ndjson", "")
    for start in range(0, len(body), 7):  # bytes arrive in arbitrary pieces
        acc.add(body[start:start + 7])
    out = acc.outcome
    assert (out.text, out.prompt_tokens, out.completion_tokens) == ("Hello", 26, 2)
    one = Outcome()
    ollama.apply(lines[-1], one)
    assert one.finish_reason == "stop"


def test_bedrock_converse_and_invoke_headers() -> None:
    out = Outcome()
    bedrock.apply({"output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
                   "stopReason": "end_turn",
                   "usage": {"inputTokens": 10, "outputTokens": 1, "totalTokens": 11,
                             "cacheReadInputTokens": 4}}, out)
    assert (out.prompt_tokens, out.cache_read, out.completion_tokens) == (14, 4, 1)
    headers = Outcome()
    bedrock.apply_headers({"x-amzn-bedrock-input-token-count": "12",
                           "x-amzn-bedrock-output-token-count": "3"}, headers)
    assert (headers.prompt_tokens, headers.completion_tokens) == (12, 3)


def test_gemini_sse_stream_through_the_line_accumulator() -> None:
    detection = providers.detect(
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash"
        ":streamGenerateContent?alt=sse", None)
    assert detection is not None and detection.streaming
    acc = http.stream_accumulator(detection, "text/event-stream", "")
    first = {**GEMINI, "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 1}}
    acc.add(f"data: {json.dumps(first)}\r\n\r\ndata: {json.dumps(GEMINI)}\r\n\r\n".encode())
    assert acc.outcome.text == "Hi thereHi there"
    assert acc.outcome.completion_tokens == 5  # cumulative usage: the last chunk's


def test_prompt_of_each_wire_format() -> None:
    assert http.prompt_of({"messages": [{"role": "user", "content": "a"}], "system": "s"}) == [
        {"role": "system", "content": "s"}, {"role": "user", "content": "a"}]
    assert http.prompt_of({"contents": [{"role": "user", "parts": [{"text": "g"}]}]}) == [
        {"role": "user", "content": "g"}]
    assert http.prompt_of({"prompt": "p"}) == "p"
    assert http.prompt_of({"input": ["x", "y"]}) == "x y"
    assert http.prompt_of({}) is None
