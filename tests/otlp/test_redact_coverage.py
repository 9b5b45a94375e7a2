"""No text the collector forwards leaves unscanned or with PII in it, in any dialect.

Each case puts an e-mail address and a card number in one text-bearing key (or event
attribute) of an otherwise clean span of one dialect, built with the real OTel SDK and
encoded by its OTLP encoder; the span goes through the receiver's walk, the scan stage
and the forwarder's encoder. No byte of either secret may be left in the forwarded span,
and every other key must go on byte for byte.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from llm_observe.otlp.encode import Encoder
from llm_observe.otlp.redact import replace_unscanned
from llm_observe.otlp.textkeys import carries_text
from llm_observe.otlp.texts import layout
from llm_observe.otlp.walk import decode_request, walk
from llm_observe.otlp.wire import Request, Span, decode_value
from llm_observe.processors.scan import ScanProcessor
from llm_observe.scan import Scanner, load_patterns
from tests.receiver.conftest import T0, record_spans

SCANNER = Scanner(load_patterns())
EMAIL, CARD = "pat.leak@example.org", "4539 1488 0343 6467"
SECRET = f"write to {EMAIL}, card {CARD}"
# every fragment of the secrets that must not survive
LEAKS = (b"pat.leak", b"example.org", b"4539", b"1488", b"0343", b"6467")
OURS = {"llm_observe.prompt": "hello", "llm_observe.completion": "hi"}
OLLM = {"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "hello",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "hi"}
OI = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
      "llm.input_messages.0.message.role": "user",
      "llm.input_messages.0.message.content": "hello",
      "llm.output_messages.0.message.role": "assistant",
      "llm.output_messages.0.message.content": "hi",
      "input.value": "hello", "output.value": "hi"}


def messages(role: str, *parts: dict[str, Any]) -> str:
    return json.dumps([{"role": role, "parts": list(parts)}])


def text(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


SEMCONV = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
           "gen_ai.input.messages": messages("user", text("hello")),
           "gen_ai.output.messages": messages("assistant", text("hi")),
           "gen_ai.system_instructions": json.dumps([text("be brief")])}
OPENLIT = {"gen_ai.system": "openai", "gen_ai.prompt": "user: hello", "gen_ai.completion": "hi"}
OPENLIT_EVENTS = [("gen_ai.content.prompt", {"gen_ai.prompt": "user: hello"}),
                  ("gen_ai.content.completion", {"gen_ai.completion": "hi"})]
CALL = {"type": "tool_call", "id": "c1", "name": "send"}
TOOL = {"type": "function", "name": "send", "parameters": {"type": "object"}}
OI_TOOL = {"type": "function", "function": {"name": "send", "parameters": {}}}
Event = tuple[str, dict[str, Any]]
# id -> (clean dialect attributes, its events, attributes carrying the secret, events carrying it)
CASES: dict[str, tuple[dict[str, Any], list[Event], dict[str, Any], list[Event]]] = {
    "ours-prompt": (OURS, [], {"llm_observe.prompt": SECRET}, []),
    "ours-completion": (OURS, [], {"llm_observe.completion": SECRET}, []),
    "semconv-input-text": (SEMCONV, [], {
        "gen_ai.input.messages": messages("user", text("hello"), text(SECRET))}, []),
    "semconv-input-tool-call": (SEMCONV, [], {"gen_ai.input.messages": messages(
        "assistant", {**CALL, "arguments": {"to": EMAIL, "card": CARD}})}, []),
    "semconv-input-tool-response": (SEMCONV, [], {"gen_ai.input.messages": messages(
        "tool", {"type": "tool_call_response", "id": "c1", "response": SECRET})}, []),
    "semconv-input-uri": (SEMCONV, [], {"gen_ai.input.messages": messages("user", {
        "type": "uri", "modality": "image", "uri": f"https://x.test/{EMAIL}/{CARD}"})}, []),
    "semconv-output-text": (SEMCONV, [], {
        "gen_ai.output.messages": messages("assistant", text(SECRET))}, []),
    "semconv-output-tool-call": (SEMCONV, [], {"gen_ai.output.messages": messages(
        "assistant", {**CALL, "arguments": json.dumps({"to": EMAIL, "card": CARD})})}, []),
    "semconv-system-instructions": (SEMCONV, [], {
        "gen_ai.system_instructions": json.dumps([text(SECRET)])}, []),
    "semconv-tool-definitions": (SEMCONV, [], {
        "gen_ai.tool.definitions": json.dumps([{**TOOL, "description": SECRET}])}, []),
    "semconv-tool-call-arguments": (SEMCONV, [], {
        "gen_ai.tool.call.arguments": json.dumps({"to": EMAIL, "card": CARD})}, []),
    "semconv-tool-call-result": (SEMCONV, [], {"gen_ai.tool.call.result": SECRET}, []),
    "deprecated-prompt": ({}, [], {"gen_ai.prompt": SECRET, "gen_ai.system": "openai"}, []),
    "deprecated-completion": ({}, [], {"gen_ai.completion": SECRET}, []),
    "deprecated-content-prompt-event": ({}, [], {}, [
        ("gen_ai.content.prompt", {"gen_ai.prompt": SECRET})]),
    "deprecated-content-completion-event": ({}, [], {}, [
        ("gen_ai.content.completion", {"gen_ai.completion": SECRET})]),
    "deprecated-system-message-event": ({}, [], {}, [
        ("gen_ai.system.message", {"gen_ai.system": "openai", "content": SECRET})]),
    "deprecated-user-message-event": ({}, [], {}, [
        ("gen_ai.user.message", {"content": SECRET})]),
    "deprecated-user-message-event-json": ({}, [], {}, [
        ("gen_ai.user.message", {"gen_ai.event.content": json.dumps(
            {"role": "user", "content": SECRET})})]),
    "deprecated-assistant-message-event": ({}, [], {}, [
        ("gen_ai.assistant.message", {"tool_calls": json.dumps([{"id": "c1", "function": {
            "name": "send", "arguments": json.dumps({"to": EMAIL, "card": CARD})}}])})]),
    "deprecated-tool-message-event": ({}, [], {}, [
        ("gen_ai.tool.message", {"id": "c1", "content": SECRET})]),
    "deprecated-choice-event": ({}, [], {}, [
        ("gen_ai.choice", {"index": 0, "finish_reason": "stop",
                           "message": json.dumps({"content": SECRET})})]),
    "openllmetry-prompt": (OLLM, [], {"gen_ai.prompt.1.role": "user",
                                      "gen_ai.prompt.1.content": SECRET}, []),
    "openllmetry-prompt-past-255": (OLLM, [], {"gen_ai.prompt.300.role": "user",
                                               "gen_ai.prompt.300.content": SECRET}, []),
    "openllmetry-completion": (OLLM, [], {"gen_ai.completion.1.content": SECRET}, []),
    "openllmetry-completion-tool-call": (OLLM, [], {
        "gen_ai.completion.0.tool_calls.0.name": "send",
        "gen_ai.completion.0.tool_calls.0.arguments": json.dumps({"to": EMAIL, "c": CARD})},
        []),
    "openllmetry-prompt-tool-call": (OLLM, [], {
        "gen_ai.prompt.1.role": "assistant",
        "gen_ai.prompt.1.tool_calls.0.arguments": json.dumps({"to": EMAIL, "c": CARD})}, []),
    "openllmetry-function-description": (OLLM, [], {
        "llm.request.functions.0.name": "send",
        "llm.request.functions.0.description": SECRET}, []),
    "openllmetry-function-parameters": (OLLM, [], {
        "llm.request.functions.0.parameters": json.dumps({"default": SECRET})}, []),
    "openllmetry-user": (OLLM, [], {"gen_ai.user": SECRET}, []),
    "openinference-input-message": (OI, [], {
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": SECRET}, []),
    "openinference-input-contents": (OI, [], {
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.contents.0.message_content.type": "text",
        "llm.input_messages.1.message.contents.0.message_content.text": SECRET}, []),
    "openinference-input-tool-call": (OI, [], {
        "llm.input_messages.1.message.role": "assistant",
        "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "send",
        "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments":
            json.dumps({"to": EMAIL, "card": CARD})}, []),
    "openinference-output-message": (OI, [], {
        "llm.output_messages.0.message.content": SECRET}, []),
    "openinference-output-tool-call": (OI, [], {
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments":
            json.dumps({"to": EMAIL, "card": CARD})}, []),
    "openinference-input-value-text": (OI, [], {"input.value": SECRET}, []),
    "openinference-input-value-json": (OI, [], {
        "input.value": json.dumps({"messages": [{"role": "user", "content": "hello"}],
                                   "user": EMAIL, "metadata": {"card": CARD}}),
        "input.mime_type": "application/json"}, []),
    "openinference-output-value-json": (OI, [], {
        "output.value": json.dumps({"id": "x1", "choices": [{"message": {
            "role": "assistant", "content": SECRET}}]}),
        "output.mime_type": "application/json"}, []),
    "openinference-prompts": (OI, [], {"llm.prompts": ("hello", SECRET)}, []),
    "openinference-template-variables": (OI, [], {
        "llm.prompt_template.variables": json.dumps({"who": EMAIL, "card": CARD})}, []),
    "openinference-tool-schema": (OI, [], {
        "llm.tools.0.tool.json_schema": json.dumps({**OI_TOOL, "description": SECRET})}, []),
    "openinference-tool-parameters": (OI, [], {
        "tool.parameters": json.dumps({"properties": {"to": {"default": SECRET}}})}, []),
    "openinference-invocation-parameters": (OI, [], {
        "llm.invocation_parameters": json.dumps({"model": "gpt-4o", "user": SECRET})}, []),
    "openlit-prompt-attribute-and-event": (OPENLIT, OPENLIT_EVENTS, {
        "gen_ai.prompt": f"user: {SECRET}"}, [
        ("gen_ai.content.prompt", {"gen_ai.prompt": f"user: {SECRET}"})]),
    "openlit-prompt-event-only": (OPENLIT, OPENLIT_EVENTS, {}, [
        ("gen_ai.content.prompt", {"gen_ai.prompt": f"user: hello {SECRET}"})]),
    "openlit-completion-attribute-and-event": (OPENLIT, OPENLIT_EVENTS, {
        "gen_ai.completion": SECRET}, [
        ("gen_ai.content.completion", {"gen_ai.completion": SECRET})]),
}


def recorded(attrs: dict[str, Any], events: Sequence[Event] = ()) -> Sequence[ReadableSpan]:
    def app(tracer: Any) -> None:
        span = tracer.start_span("chat", kind=SpanKind.CLIENT, start_time=T0,
                                 attributes={"gen_ai.request.model": "gpt-4o", **attrs})
        for name, event_attrs in events:
            span.add_event(name, event_attrs, timestamp=T0 + 1_000_000)
        span.end(end_time=T0 + 1_000_000_000)
    return record_spans(app)


def forward(spans: Sequence[ReadableSpan], scan: ScanProcessor | None = None
            ) -> tuple[Any, Any]:
    """The received wire span and the forwarded one (walk -> scan -> encode)."""
    walked = walk(decode_request(encode_spans(spans).SerializeToString()))
    (scan or ScanProcessor(SCANNER)).process(walked.llm)
    items = Encoder().items(walked.llm, walked)
    [received] = [s for rs in walked.request.resource_spans for ss in rs.scope_spans
                  for s in ss.spans]
    [llm] = walked.llm  # the redactor lays out exactly the text the scanner read
    assert (llm.prompt_text, llm.completion_text) == tuple(
        layout(received, which=w, with_paths=True).text() for w in ("prompt", "completion"))
    [sent] = [s for rs in Request.FromString(b"".join(i.data for i in items)).resource_spans
              for ss in rs.scope_spans for s in ss.spans]
    return received, sent


def event_values(span: Any) -> dict[tuple[int, str], bytes]:
    return {(i, k): v for i, e in enumerate(span.events) for k, v in e.attributes.items()}


@pytest.mark.parametrize("case", CASES)
def test_a_secret_in_any_text_key_is_not_forwarded(case: str) -> None:
    clean, clean_events, dirty, dirty_events = CASES[case]
    names = {name for name, _ in dirty_events}
    events = [e for e in clean_events if e[0] not in names] + dirty_events
    received, sent = forward(recorded({**clean, **dirty}, events))
    data = sent.SerializeToString()
    assert [leak for leak in LEAKS if leak in data] == [], case
    assert sent.attributes["llm_observe.pii_detected"] == b"\x10\x01"
    for key, value in received.attributes.items():  # every clean key byte for byte
        if key not in dirty:
            assert sent.attributes[key] == value, key
    dirty_event_keys = {(name, key) for name, attrs in dirty_events for key in attrs}
    for (i, key), value in event_values(received).items():
        if (received.events[i].name, key) not in dirty_event_keys:
            assert event_values(sent)[(i, key)] == value, key
    for key in dirty:  # the secret's key is rewritten, not dropped
        assert key in sent.attributes and (
            sent.attributes[key] == received.attributes[key] or b"[REDACTED:" in
            sent.attributes[key]), key


@pytest.mark.parametrize("dialect", ["ours", "semconv", "openllmetry", "openinference",
                                     "openlit"])
def test_a_clean_span_of_every_dialect_goes_on_byte_for_byte(dialect: str) -> None:
    clean = {"ours": OURS, "semconv": SEMCONV, "openllmetry": OLLM, "openinference": OI,
             "openlit": OPENLIT}[dialect]
    received, sent = forward(recorded(clean, OPENLIT_EVENTS if dialect == "openlit" else ()))
    assert sent.attributes["llm_observe.pii_detected"] == b"\x10\x00"
    assert {k: v for k, v in sent.attributes.items() if k in received.attributes} == dict(
        received.attributes.items())
    assert event_values(sent) == event_values(received)


def many_messages(n: int, prefix: str, suffix: str) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for i in range(n):
        attrs[f"{prefix}{i}{suffix}.role"] = "user"
        attrs[f"{prefix}{i}{suffix}.content"] = f"message {i}: mail user{i}@example.com"
    return attrs


EMAILS = re.compile(rb"user\d+@example\.com")


@pytest.mark.parametrize("prefix, suffix, kind", [
    ("gen_ai.prompt.", "", {}),
    ("llm.input_messages.", ".message", {"openinference.span.kind": "LLM"}),
], ids=["openllmetry", "openinference"])
def test_a_10000_message_span_forwards_no_email(monkeypatch: pytest.MonkeyPatch, prefix: str,
                                                suffix: str, kind: dict[str, Any]) -> None:
    monkeypatch.setenv("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "30000")  # SDK default: 128
    spans = recorded({**kind, **many_messages(10_000, prefix, suffix)})
    scan = ScanProcessor(SCANNER, max_text_chars=10_000_000)  # every message is scanned
    started = time.perf_counter()
    received, sent = forward(spans, scan)
    elapsed = time.perf_counter() - started
    assert len(EMAILS.findall(received.SerializeToString())) == 10_000
    assert EMAILS.findall(sent.SerializeToString()) == []
    content = sent.attributes[f"{prefix}9999{suffix}.content"]
    assert content.endswith(b"message 9999: mail [REDACTED:EMAIL]")
    assert elapsed < 60, elapsed  # walk + scan + encode of ~400 kB of text: ~0.3 s


def test_system_instructions_are_scanned_with_the_conversation() -> None:
    instructions = json.dumps([text(f"You act for {EMAIL}.")])
    received, sent = forward(recorded({**SEMCONV, "gen_ai.system_instructions": instructions}))
    assert json.loads(decode_value(sent.attributes["gen_ai.system_instructions"])) == [
        text("You act for [REDACTED:EMAIL].")]
    assert sent.attributes["gen_ai.input.messages"] == received.attributes[
        "gen_ai.input.messages"]


@pytest.mark.parametrize("attrs", [
    {"openinference.span.kind": "CHAIN", "input.value": SECRET, "output.value": "ok"},
    {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.arguments": json.dumps(
        {"to": EMAIL}), "gen_ai.tool.call.result": CARD},
    {"gen_ai.operation.name": "invoke_agent",
     "gen_ai.input.messages": messages("user", text(SECRET))},
], ids=["openinference-chain", "semconv-execute-tool", "semconv-invoke-agent"])
def test_the_texts_of_a_span_that_is_no_llm_call_can_be_replaced(attrs: dict[str, Any]
                                                                 ) -> None:
    # Agent, tool and chain spans are not scanned (no LlmSpan); the forwarder must not
    # send their texts raw: these are the helpers it needs (wiring: see the report).
    walked = walk(decode_request(encode_spans(recorded(attrs)).SerializeToString()))
    assert (walked.llm, walked.n_other) == ([], 1)
    span = Span()
    span.CopyFrom(walked.request.resource_spans[0].scope_spans[0].spans[0])
    assert carries_text(span.attributes, span.events)
    replace_unscanned(span)
    assert [leak for leak in LEAKS if leak in span.SerializeToString()] == []
    http = recorded({"http.request.method": "GET", "url.full": "https://x.test/"})
    other = walk(decode_request(encode_spans(http).SerializeToString())).request
    plain = other.resource_spans[0].scope_spans[0].spans[0]
    assert not carries_text(plain.attributes, plain.events)
