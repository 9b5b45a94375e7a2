"""What the forwarder sends: PII redacted in every copy of the text each dialect carries,
the original span otherwise intact."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan

from llm_observe.otlp.encode import Encoder
from llm_observe.otlp.redact import MARGIN, UNSCANNED, needs_redaction, redact_span, redact_texts
from llm_observe.otlp.walk import decode_request, walk
from llm_observe.otlp.wire import Request, Span
from llm_observe.processors.scan import ScanProcessor
from llm_observe.scan import Scanner, load_patterns
from llm_observe.span import LlmSpan
from tests.fakes.otlp_sink import attributes
from tests.receiver.conftest import llm_span, record_spans

SCAN = ScanProcessor(Scanner(load_patterns()))


def attributes_of(message: Any) -> dict[str, Any]:
    """A wire span's attributes, decoded."""
    from llm_observe.otlp.wire import decode_value
    return {key: decode_value(value) for key, value in message.attributes.items()}


def forwarded(spans: Sequence[ReadableSpan], redact_pii: bool = True) -> list[Any]:
    """Receive the spans, scan them, encode them as the forwarder does; decode the result."""
    walked = walk(decode_request(encode_spans(spans).SerializeToString()))
    SCAN.process(walked.llm)
    received = walked.request.SerializeToString()
    items = Encoder(redact_pii=redact_pii).items(walked.llm, walked)
    assert walked.request.SerializeToString() == received  # the batch is never mutated
    request = ExportTraceServiceRequest.FromString(b"".join(i.data for i in items))
    return [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]


def test_openlit_attribute_and_event_copies_are_both_redacted() -> None:
    def app(tracer: Any) -> None:
        span = tracer.start_span("chat", attributes={
            "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
            "gen_ai.prompt": "user: write to jane.doe@example.com", "gen_ai.completion": "ok"})
        span.add_event("gen_ai.content.prompt",
                       {"gen_ai.prompt": "user: write to jane.doe@example.com"})
        span.end()

    [out] = forwarded(record_spans(app))
    assert attributes(out)["gen_ai.prompt"] == "user: write to [REDACTED:EMAIL]"
    assert attributes(out)["gen_ai.completion"] == "ok"
    event = {kv.key: kv.value.string_value for kv in out.events[0].attributes}
    assert event == {"gen_ai.prompt": "user: write to [REDACTED:EMAIL]"}


def test_openinference_messages_and_the_raw_json_body_are_redacted_at_offsets() -> None:
    body = json.dumps({"messages": [{"role": "user", "content": "call +1 415 555 0100"}]})
    [out] = forwarded(record_spans(lambda t: llm_span(t, "ChatCompletion", {
        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "be brief",
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": "my card is 4111 1111 1111 1111",
        "input.value": body, "input.mime_type": "application/json"})))
    a = attributes(out)
    assert a["llm.input_messages.0.message.content"] == "be brief"
    assert "4111" not in a["llm.input_messages.1.message.content"]
    assert a["llm.input_messages.1.message.content"].startswith("my card is [REDACTED:")
    # the JSON body is scanned leaf by leaf (its text differs from the messages here)
    assert json.loads(a["input.value"]) == {"messages": [
        {"role": "user", "content": "call [REDACTED:PHONE_NUMBER]"}]}
    assert a["llm_observe.pii_detected"] is True


def test_semconv_json_messages_stay_valid_json_with_only_the_secret_replaced() -> None:
    messages = [{"role": "system", "parts": [{"type": "text", "content": "be kind"}]},
                {"role": "user", "parts": [{"type": "text", "content": "I am bob@corp.io"},
                                           {"type": "image", "uri": "https://x/y.png"}]}]
    [out] = forwarded(record_spans(lambda t: llm_span(t, "chat", {
        "gen_ai.request.model": "gpt-4o", "gen_ai.input.messages": json.dumps(messages)})))
    sent = json.loads(attributes(out)["gen_ai.input.messages"])
    assert sent[0] == messages[0] and sent[1]["parts"][1] == messages[1]["parts"][1]
    assert sent[1]["parts"][0]["content"] == "I am [REDACTED:EMAIL]"


def test_messages_after_a_tool_call_without_content_are_scanned_and_redacted() -> None:
    # OpenLLMetry and OpenInference leave .content out of an assistant message that only
    # calls tools; the messages after it are still the prompt.
    for prefix, suffix in (("gen_ai.prompt.", ""), ("llm.input_messages.", ".message")):
        kind = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o"} \
            if prefix.startswith("llm") else {"gen_ai.request.model": "gpt-4o"}
        [out] = forwarded(record_spans(lambda t, p=prefix, s=suffix, k=kind: llm_span(
            t, "chat", {**k, f"{p}0{s}.role": "user", f"{p}0{s}.content": "weather?",
                        f"{p}1{s}.role": "assistant",
                        f"{p}2{s}.role": "tool", f"{p}2{s}.content": "sunny",
                        f"{p}3{s}.role": "user", f"{p}3{s}.content": "mail jane@example.com"})))
        a = attributes(out)
        assert a["llm_observe.pii_detected"] is True, prefix
        assert a[f"{prefix}3{suffix}.content"] == "mail [REDACTED:EMAIL]"
        assert a[f"{prefix}2{suffix}.content"] == "sunny"


def test_tool_call_arguments_and_results_are_scanned_and_redacted() -> None:
    messages = [
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "send",
                                         "arguments": {"to": "bob@corp.io", "n": 2}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1",
                                    "response": "sent to bob@corp.io"}]}]
    [out] = forwarded(record_spans(lambda t: llm_span(t, "chat", {
        "gen_ai.request.model": "gpt-4o", "gen_ai.input.messages": json.dumps(messages)})))
    a = attributes(out)
    sent = json.loads(a["gen_ai.input.messages"])
    assert a["llm_observe.pii_detected"] is True
    assert sent[0]["parts"][0]["arguments"] == {"to": "[REDACTED:EMAIL]", "n": 2}
    assert sent[1]["parts"][0]["response"] == "sent to [REDACTED:EMAIL]"


def test_pii_flagged_by_the_sender_without_offsets_replaces_the_texts() -> None:
    [out] = forwarded(record_spans(lambda t: llm_span(t, "chat", {
        "gen_ai.request.model": "gpt-4o", "llm_observe.pii_detected": True,
        "llm_observe.prompt": "nothing our patterns know", "llm_observe.completion": "fine"})))
    a = attributes(out)
    assert (a["llm_observe.prompt"], a["llm_observe.completion"]) == ("[REDACTED:PII]",) * 2


def test_clean_text_and_other_attributes_go_on_untouched() -> None:
    [out] = forwarded(record_spans(lambda t: llm_span(t, "chat", {
        "gen_ai.request.model": "gpt-4o", "llm_observe.prompt": "what is 2+2?",
        "custom.key": "kept", "custom.list": ("a", "b")})))
    a = attributes(out)
    assert (a["llm_observe.prompt"], a["custom.key"], a["custom.list"]) == (
        "what is 2+2?", "kept", ["a", "b"])
    assert a["llm_observe.pii_detected"] is False


def test_a_request_too_large_to_forward_whole_is_cut_into_bounded_items() -> None:
    spans = record_spans(lambda t: [llm_span(t, f"chat {i}", {
        "gen_ai.request.model": "gpt-4o", "llm_observe.prompt": "x" * 1000}) for i in range(50)])
    walked = walk(decode_request(encode_spans(spans).SerializeToString()))
    items = Encoder(max_spans=512, max_bytes=10_000).items(walked.llm, walked)
    assert len(items) > 1 and all(len(i.data) <= 10_000 + 2_000 for i in items)
    assert sum(i.spans for i in items) == 50
    names = [s.name for i in items for rs in ExportTraceServiceRequest.FromString(i.data)
             .resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert names == [f"chat {i}" for i in range(50)]


def test_without_redaction_the_text_goes_on_as_sent() -> None:
    [out] = forwarded(record_spans(lambda t: llm_span(t, "chat", {
        "gen_ai.request.model": "gpt-4o", "llm_observe.prompt": "jane.doe@example.com"})),
        redact_pii=False)
    assert attributes(out)["llm_observe.prompt"] == "jane.doe@example.com"
    assert attributes(out)["llm_observe.pii_detected"] is True


# --- text the scan stage did not read is not forwarded raw ---------------------------

EMAILS = re.compile(r"user\d+@example\.com")


def received_and_scanned(attrs: dict[str, Any], max_text_chars: int) -> tuple[Any, LlmSpan]:
    """The received wire span (a copy) and its LlmSpan after a scan cut at the bound."""
    walked = walk(decode_request(encode_spans(record_spans(lambda t: llm_span(
        t, "chat", {"gen_ai.request.model": "gpt-4o", **attrs}))).SerializeToString()))
    ScanProcessor(SCAN.scanner, max_text_chars=max_text_chars).process(walked.llm)
    message = Span()
    message.CopyFrom(walked.request.resource_spans[0].scope_spans[0].spans[0])
    return message, walked.llm[0]


def conversation(n: int) -> dict[str, Any]:
    return {key: value for i in range(n) for key, value in (
        (f"gen_ai.prompt.{i}.role", "user"),
        (f"gen_ai.prompt.{i}.content", f"message {i}: mail user{i}@example.com"))}


def test_messages_past_the_scanned_bound_are_replaced() -> None:
    message, span = received_and_scanned(conversation(60), max_text_chars=1_000)
    assert len(span.prompt_text or "") > 2_000  # the SDK keeps 128 attributes a span
    redact_texts(message, span.findings, scanned={"prompt": 1_000})
    a = attributes_of(message)
    assert EMAILS.findall(json.dumps(a)) == []
    assert a["gen_ai.prompt.0.content"] == "message 0: mail [REDACTED:EMAIL]"
    assert a["gen_ai.prompt.59.content"] == UNSCANNED
    assert a["gen_ai.prompt.59.role"] == "user"  # roles are names, not text


def test_a_text_across_the_bound_keeps_its_scanned_head() -> None:
    text = "mail user1@example.com " + "x" * 4_900 + " mail user2@example.com"
    message, span = received_and_scanned({"llm_observe.prompt": text}, max_text_chars=3_000)
    redact_texts(message, span.findings, scanned={"prompt": 3_000})
    sent = attributes_of(message)["llm_observe.prompt"]
    head = 3_000 - MARGIN  # a secret the bound cut in two is dropped with the margin
    assert sent == "mail [REDACTED:EMAIL] " + "x" * (head - 23) + UNSCANNED


class ScannedSpan(LlmSpan):
    """An LlmSpan with the scan extent the forwarder reads (``scanned_chars``)."""


def with_extent(span: LlmSpan, **scanned: int) -> Any:
    copy: Any = ScannedSpan(**{f.name: getattr(span, f.name) for f in fields(LlmSpan)})
    copy.scanned_chars = scanned
    return copy


def test_a_clean_span_cut_by_the_bound_still_needs_redaction() -> None:
    message, span = received_and_scanned(
        {"llm_observe.prompt": "x " * 2_000 + "mail user1@example.com"}, max_text_chars=1_000)
    assert not span.pii_detected
    cut = with_extent(span, prompt=1_000)
    assert needs_redaction(cut)
    redact_span(message, cut)
    assert attributes_of(message)["llm_observe.prompt"] == UNSCANNED  # the head is margin
    whole = with_extent(span, prompt=len(span.prompt_text or ""))
    assert not needs_redaction(whole)


def test_a_span_the_scan_stage_failed_on_forwards_no_text() -> None:
    message, span = received_and_scanned(
        {"llm_observe.prompt": "hello", "llm_observe.completion": "hi"}, max_text_chars=100)
    span.errors.append("scan")
    assert needs_redaction(span)
    redact_span(message, span)
    a = attributes_of(message)
    assert (a["llm_observe.prompt"], a["llm_observe.completion"]) == (UNSCANNED, UNSCANNED)


def test_the_forwarder_replaces_what_the_scan_stage_did_not_read() -> None:
    spans = record_spans(lambda t: llm_span(t, "chat", {
        "gen_ai.request.model": "gpt-4o", **conversation(60)}))
    walked = walk(decode_request(encode_spans(spans).SerializeToString()))
    ScanProcessor(SCAN.scanner, max_text_chars=1_000).process(walked.llm)
    data = b"".join(i.data for i in Encoder().items(walked.llm, walked))
    assert EMAILS.findall(data.decode(errors="replace")) == []


# --- hostile and unusual values -----------------------------------------------------

def test_json_nested_too_deep_is_scanned_as_plain_text() -> None:
    deep: Any = "mail user1@example.com"
    for _ in range(100):
        deep = [deep]
    [out] = forwarded(record_spans(lambda t: llm_span(t, "chat", {
        "gen_ai.request.model": "gpt-4o", "gen_ai.input.messages": json.dumps(deep)})))
    sent = attributes(out)["gen_ai.input.messages"]
    assert "example.com" not in sent and "[REDACTED:EMAIL]" in sent


def test_a_text_that_is_not_utf8_is_still_scanned() -> None:
    spans = record_spans(lambda t: llm_span(t, "chat", {
        "gen_ai.request.model": "gpt-4o", "llm_observe.prompt": "placeholder"}))
    request = Request.FromString(encode_spans(spans).SerializeToString())
    raw = b"mail user1@example.com \xff\xfe tail"
    request.resource_spans[0].scope_spans[0].spans[0].attributes["llm_observe.prompt"] = (
        b"\x0a" + bytes([len(raw)]) + raw)
    walked = walk(decode_request(request.SerializeToString()))
    SCAN.process(walked.llm)
    assert walked.llm[0].pii_detected
    data = b"".join(i.data for i in Encoder().items(walked.llm, walked))
    assert b"user1@example.com" not in data and b"[REDACTED:EMAIL]" in data


def test_base64_data_urls_are_not_read_as_text() -> None:
    image = "data:image/png;base64," + "iVBORw0KGgo" * 50
    [out] = forwarded(record_spans(lambda t: llm_span(t, "chat", {
        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.contents.0.message_content.text": "what is this?",
        "llm.input_messages.0.message.contents.1.message_content.image.image.url": image})))
    a = attributes(out)
    assert a["llm.input_messages.0.message.contents.1.message_content.image.image.url"] == image
    assert a["llm_observe.pii_detected"] is False


def test_a_message_index_too_long_for_int_is_still_read() -> None:
    key = "gen_ai.prompt." + "9" * 6_000 + ".content"  # int() refuses over 4,300 digits
    [out] = forwarded(record_spans(lambda t: llm_span(t, "chat", {
        "gen_ai.request.model": "gpt-4o", "gen_ai.prompt.0.content": "hello",
        key: "mail user1@example.com"})))
    assert attributes(out)[key] == "mail [REDACTED:EMAIL]"
    assert attributes(out)["gen_ai.prompt.0.content"] == "hello"
