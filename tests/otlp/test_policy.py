"""A destination's text policy and span filter, on what the encoder sends: ``none`` leaves
no text on any span (attributes and content events, LLM or not), ``full`` the text as
received, ``llm`` only the LLM spans, ``sampled`` only the sampled ones; the received
request is never changed."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from llm_observe.otlp.encode import Encoder
from llm_observe.otlp.walk import decode_request, walk
from tests.otlp.test_encode import SCAN
from tests.receiver.conftest import record_spans

SECRET = "jane.doe@example.com"


def app(tracer: Any) -> None:
    with tracer.start_as_current_span("agent run", attributes={"gen_ai.prompt": SECRET}):
        for i in range(3):
            span = tracer.start_span(f"chat {i}", attributes={
                "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
                "gen_ai.prompt": f"user: write to {SECRET}", "gen_ai.completion": "done"})
            span.add_event("gen_ai.content.prompt", {"gen_ai.prompt": f"user: {SECRET}"})
            span.end()


def sent(text: str, spans: str, sampled: tuple[int, ...] = ()) -> list[Any]:
    walked = walk(decode_request(encode_spans(record_spans(app)).SerializeToString()))
    SCAN.process(walked.llm)
    for i in sampled:
        walked.llm[i].is_sampled = True
    received = walked.request.SerializeToString()
    items = Encoder(text=text, spans=spans).items(walked.llm, walked)
    assert walked.request.SerializeToString() == received  # never mutated, whatever the policy
    request = ExportTraceServiceRequest.FromString(b"".join(i.data for i in items))
    return [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]


def texts(spans: list[Any]) -> str:
    return json.dumps([[kv.value.string_value for kv in s.attributes]
                       + [kv.value.string_value for e in s.events for kv in e.attributes]
                       for s in spans])


def test_none_leaves_no_text_on_any_span() -> None:
    out = sent("none", "all")
    assert len(out) == 4  # the agent span too
    assert SECRET not in texts(out) and "done" not in texts(out) and "write to" not in texts(out)


def test_full_keeps_the_text_as_received_and_redacted_does_not() -> None:
    assert f"user: write to {SECRET}" in texts(sent("full", "all"))
    redacted = texts([s for s in sent("redacted", "all") if s.name.startswith("chat")])
    assert SECRET not in redacted and "[REDACTED:EMAIL]" in redacted


def test_llm_keeps_the_llm_spans_and_sampled_the_sampled_ones() -> None:
    assert sorted(s.name for s in sent("redacted", "llm")) == ["chat 0", "chat 1", "chat 2"]
    assert [s.name for s in sent("redacted", "sampled", sampled=(1,))] == ["chat 1"]
    assert sent("redacted", "sampled") == []
