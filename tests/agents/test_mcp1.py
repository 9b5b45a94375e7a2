"""mcp 1.x has no OpenTelemetry of its own; OpenLLMetry's opentelemetry-instrumentation-mcp
0.62.4 traces its client (it fails on import with mcp 2.x). Its spans, captured from a real
mcp 1.30 stdio client and server (scripts/capture_mcp1_spans.py), are mapped: the tool call
is a tool span of its own name, measured, and its output scanned and redacted."""

from __future__ import annotations

from pathlib import Path

from llm_observe.otlp.walk import decode_request
from tests.agents.helpers import DATA, Run
from tests.agents.test_untrusted import forwarded

CAPTURE = DATA / "mcp" / "mcp1_openllmetry_client.pb"
EMAIL = "jane.doe@example.com"


def test_an_mcp1_tool_call_traced_by_openllmetry_is_measured_and_redacted() -> None:
    assert Path(CAPTURE).read_bytes().count(EMAIL.encode()) >= 1  # the capture holds it
    run = Run()
    w = run.send(decode_request(CAPTURE.read_bytes()))
    assert [(op.kind, op.name) for op in w.agents] == [("tool", "lookup_order")]
    assert run.value("gen_ai_execute_tool_duration_seconds_count",
                     gen_ai_tool_name="lookup_order") == 1
    assert run.value("llm_untrusted_text_flags_total", span_kind="tool", finding="pii") == 1
    spans = forwarded(w)
    assert set(spans) == {"initialize.mcp", "lookup_order.tool", "tools/list.mcp"}
    assert EMAIL not in str(spans)  # the tool result, redacted before forwarding
    assert "[REDACTED:EMAIL]" in spans["lookup_order.tool"]["traceloop.entity.output"]
    assert run.value("llm_spans_total") == 0  # no model call here
