"""The forwarder's encoder rewriting the received request in place (otlp/inplace.py):
whatever the mix of destinations' text policies and span filters, each gets exactly what
the copy-based encoding makes (a rejected span and an unsampled one included), so a
``full`` destination still gets the text as received, a ``redacted`` one no e-mail address
and a ``none`` one no text; a request with spans that are no LLM call, read again after
the forwarder, is left as received."""

from __future__ import annotations

import functools
import itertools
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from llm_observe.otlp.encode import Encoder
from llm_observe.otlp.inplace import RANK, OutOfOrder
from llm_observe.otlp.policy import SPAN_FILTERS, TEXT_POLICIES
from llm_observe.otlp.walk import Walked, decode_request, walk
from llm_observe.otlp.wire import Request
from tests.otlp.test_encode import SCAN
from tests.receiver.conftest import record_spans

SECRET = "jane.doe@example.com"
PAIRS = list(itertools.product(TEXT_POLICIES, SPAN_FILTERS))


def calls(tracer: Any) -> None:
    for i in range(4):
        span = tracer.start_span(f"chat {i}", attributes={
            "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
            "gen_ai.usage.input_tokens": -5 if i == 2 else 10,  # chat 2 is rejected
            "gen_ai.prompt": f"user: write to {SECRET}" if i % 2 else "user: hello",
            "gen_ai.completion": "done"})
        span.add_event("gen_ai.content.prompt", {"gen_ai.prompt": f"user: {SECRET}"})
        span.end()


def with_an_agent(tracer: Any) -> None:
    with tracer.start_as_current_span("agent run", attributes={"gen_ai.prompt": SECRET}):
        calls(tracer)


@functools.cache
def request_bytes(app: Any) -> bytes:
    """The request, recorded once (span ids and times would differ between recordings)."""
    data: bytes = encode_spans(record_spans(app)).SerializeToString()
    return data


def received(app: Any = calls) -> Walked:
    walked = walk(decode_request(request_bytes(app)))
    SCAN.process(walked.llm)
    walked.llm[0].is_sampled = True
    return walked


def encoded(pairs: list[tuple[str, str]], in_place: bool, app: Any = calls) -> dict[Any, bytes]:
    """Each destination's bytes, encoded in text order as the fan-out does."""
    walked = received(app)
    order = sorted(pairs, key=lambda pair: RANK[pair[0]])
    return {pair: b"".join(item.data for item in Encoder(text=pair[0], spans=pair[1]).items(
        walked.llm, walked, in_place=in_place, last=k == len(order) - 1))
        for k, pair in enumerate(order)}


def spans_of(data: bytes) -> list[Any]:
    request = ExportTraceServiceRequest.FromString(data)
    return [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]


def texts(data: bytes) -> str:
    return repr([[kv.value.string_value for kv in s.attributes]
                 + [kv.value.string_value for e in s.events for kv in e.attributes]
                 for s in spans_of(data)])


@pytest.mark.parametrize("pairs", [[p] for p in PAIRS] + [list(c) for c in itertools.combinations(
    PAIRS, 2)] + [PAIRS], ids=lambda pairs: "+".join(f"{t}/{s}" for t, s in pairs))
def test_every_destination_gets_what_a_copy_would_have_given_it(
        pairs: list[tuple[str, str]]) -> None:
    # compared as messages: the attribute map's entries may be serialized in another order
    ours, reference = encoded(pairs, in_place=True), encoded(pairs, in_place=False)
    assert ours.keys() == reference.keys()
    for pair, data in ours.items():
        assert Request.FromString(data) == Request.FromString(reference[pair]), pair
        assert len(spans_of(data)) == len(spans_of(reference[pair])), pair


def test_full_redacted_and_none_each_get_their_text() -> None:
    out = encoded(list(itertools.product(TEXT_POLICIES, ["all"])), in_place=True)
    full, redacted, none = (out[text, "all"] for text in ("full", "redacted", "none"))
    assert f"user: write to {SECRET}" in texts(full)
    assert SECRET not in texts(redacted) and "[REDACTED:EMAIL]" in texts(redacted)
    assert "write to" not in texts(none) and "hello" not in texts(none)
    for data in (full, redacted, none):  # the rejected span left out, our attributes on
        names = sorted(s.name for s in spans_of(data))
        assert names == ["chat 0", "chat 1", "chat 3"]
        assert all(any(kv.key == "llm_observe.pii_detected" for kv in s.attributes)
                   for s in spans_of(data))


def test_the_request_is_rewritten_in_place_only_when_it_holds_llm_spans_alone() -> None:
    walked = received()
    before = walked.request.SerializeToString()
    Encoder(text="redacted").items(walked.llm, walked, in_place=True)
    assert walked.request.SerializeToString() != before  # enriched, redacted, chat 2 out
    walked = received(with_an_agent)
    before = walked.request.SerializeToString()
    Encoder(text="none", spans="llm").items(walked.llm, walked, in_place=True)
    assert walked.request.SerializeToString() == before  # the agent run exporter reads it


def test_a_destination_encoded_out_of_text_order_is_refused() -> None:
    walked = received()
    Encoder(text="redacted").items(walked.llm, walked, in_place=True, last=False)
    with pytest.raises(OutOfOrder):
        Encoder(text="full").items(walked.llm, walked, in_place=True)


def test_no_destination_may_follow_the_last_once_it_left_spans_out() -> None:
    walked = received()  # chat 2 is rejected: the last encoding deletes it in place
    Encoder(text="none").items(walked.llm, walked, in_place=True, last=True)
    with pytest.raises(OutOfOrder):
        Encoder(text="none").items(walked.llm, walked, in_place=True)
