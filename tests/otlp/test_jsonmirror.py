"""OTLP/JSON straight into the mirror schema: the same request, or the same error, as the
general path (JSON → protobuf bytes → mirror parse), for every shape a sender may send."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from llm_observe.otlp.jsonmirror import to_request
from llm_observe.otlp.jsonwire import to_protobuf
from llm_observe.otlp.walk import RequestInvalid, decode_request
from tests.otlp.test_jsonwire import full_request
from tests.receiver.httpdoor import otlp_json


def outcome(body: bytes, convert: Any) -> tuple[str, Any]:
    try:
        got = convert(body)
    except RequestInvalid as exc:
        return "invalid", str(exc)
    return "ok", got


def assert_same(body: bytes) -> None:
    """The direct path and the general path agree: equal mirror requests (so equal
    forwarded spans), or the same error naming the same place."""
    direct = outcome(body, to_request)
    general = outcome(body, lambda b: decode_request(to_protobuf(b)))
    assert direct[0] == general[0], (body[:300], direct, general)
    if direct[0] == "invalid":
        assert direct[1] == general[1]
        return
    assert direct[1] == general[1], body[:300]
    official = [ExportTraceServiceRequest.FromString(r.SerializeToString())
                for r in (direct[1], general[1])]
    assert official[0] == official[1]


def span_body(**span: Any) -> bytes:
    base: dict[str, Any] = {
        "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
        "parentSpanId": "eee19b7ec3c1b175", "name": "chat gpt-4o", "kind": 3,
        "startTimeUnixNano": "1750000000000000000", "endTimeUnixNano": "1750000001000000000",
        "attributes": [{"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
                       {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}},
                       {"key": "gen_ai.request.temperature", "value": {"doubleValue": 0.5}}],
        "status": {"code": "STATUS_CODE_OK"}}
    base.update(span)
    base = {k: v for k, v in base.items() if v != "<absent>"}
    return json.dumps({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "s"}}]},
        "scopeSpans": [{"scope": {"name": "x"}, "spans": [base, {"name": "neighbour"}]}]}]}
        ).encode()


def test_every_field_of_a_full_request() -> None:
    assert_same(otlp_json(full_request()))


ODD_SPANS: list[dict[str, Any]] = [
    {}, {"traceId": None, "name": None, "kind": None, "status": None, "attributes": None},
    {"trace_id": "00" * 16}, {"traceId": "AB" * 16}, {"traceId": "zz"}, {"traceId": 5},
    {"spanId": "eee19b7e c3c1b174"}, {"kind": "SPAN_KIND_SERVER"}, {"kind": "NOPE"},
    {"kind": -1}, {"kind": 2**31}, {"kind": True}, {"kind": 2.0}, {"kind": "3"},
    {"startTimeUnixNano": 1.75e18}, {"startTimeUnixNano": -1}, {"startTimeUnixNano": 2**64},
    {"startTimeUnixNano": "18446744073709551615"}, {"endTimeUnixNano": "1_0"},
    {"endTimeUnixNano": " 12"}, {"endTimeUnixNano": "²"}, {"endTimeUnixNano": True},
    {"name": 12}, {"name": ""}, {"name": "ü" * 200}, {"status": {"code": 2, "message": "x"}},
    {"status": {"code": True}}, {"status": {"code": "STATUS_CODE_ERROR"}}, {"status": 1},
    {"status": {}}, {"status": {"code": 0}}, {"status": {"code": 7}},
    {"flags": 257, "traceState": "a=b", "droppedAttributesCount": 0, "droppedEventsCount": 2,
     "droppedLinksCount": 0, "events": [], "links": []},
    {"events": [{"timeUnixNano": "5", "name": "gen_ai.content.prompt", "attributes": [
        {"key": "gen_ai.prompt", "value": {"stringValue": "hi"}}]}]},
    {"links": [{"traceId": "01" * 16, "spanId": "02" * 8}]}, {"events": "no"},
    {"dropped_events_count": 3}, {"start_time_unix_nano": "5", "startTimeUnixNano": "6"},
    {"unknownField": {"deep": [1, 2]}},
]
ODD_ATTRIBUTES: list[Any] = [
    [], "nope", {"key": "k"}, [1], [{"value": {"stringValue": "v"}}], [{"key": "k"}],
    [{"key": 1, "value": {"stringValue": "v"}}], [{"key": "k", "value": None}],
    [{"key": "k", "value": {}}], [{"key": "k", "value": {"stringValue": 1}}],
    [{"key": "k", "value": {"stringValue": None}}], [{"key": "k", "value": {"intValue": "-5"}}],
    [{"key": "k", "value": {"intValue": "²"}}], [{"key": "k", "value": {"intValue": 2**63}}],
    [{"key": "k", "value": {"intValue": "9223372036854775807"}}],
    [{"key": "k", "value": {"intValue": 7}}], [{"key": "k", "value": {"intValue": 1.5}}],
    [{"key": "k", "value": {"doubleValue": 1}}], [{"key": "k", "value": {"doubleValue": "NaN"}}],
    [{"key": "k", "value": {"boolValue": True}}], [{"key": "k", "value": {"boolValue": 1}}],
    [{"key": "k", "value": {"bytesValue": "AAE="}}],
    [{"key": "k", "value": {"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": 1}]}}}],
    [{"key": "k", "value": {"kvlistValue": {"values": [{"key": "a", "value": {}}]}}}],
    [{"key": "k", "value": {"stringValue": "a", "intValue": "1"}}],
    [{"key": "k", "value": {"string_value": "snake"}}],
    [{"key": "k", "value": {"stringValue": "first"}}, {"key": "k", "value": {"intValue": 2}}],
    [{"key": "ü", "value": {"stringValue": "é" * 300}}], [{"key": "k", "value": "v"}],
    *([{"key": "k", "value": {"arrayValue": array}}] for array in (
        {"values": [{"stringValue": "stop"}]}, {"values": [{"stringValue": "a"}] * 3},
        {"values": []}, {}, {"values": None}, {"values": "ab"}, {"values": {"a": 1}}, [],
        {"values": [{"stringValue": "x" * 200}]}, {"values": [{"stringValue": "x"}] * 30},
        {"values": [{"stringValue": None}]}, {"values": [{"stringValue": 1}]},
        {"values": [{"stringValue": "\ud800"}]}, {"values": [["stringValue"]]},
        {"values": [{"stringValue": "a", "intValue": "1"}]}, {"values": [{}]},
        {"values": [{"stringValue": "a"}], "other": 1})),
]


@pytest.mark.parametrize("span", ODD_SPANS, ids=[str(i) for i in range(len(ODD_SPANS))])
def test_odd_spans_match_the_general_path(span: dict[str, Any]) -> None:
    assert_same(span_body(**span))


@pytest.mark.parametrize("attributes", ODD_ATTRIBUTES,
                         ids=[str(i) for i in range(len(ODD_ATTRIBUTES))])
def test_odd_attributes_match_the_general_path(attributes: Any) -> None:
    assert_same(span_body(attributes=attributes))


@pytest.mark.parametrize("request_", [
    [], {"resourceSpans": {}}, {"resourceSpans": [1]}, {"resource_spans": [{}]},
    {"resourceSpans": [{"scopeSpans": [{"spans": [1]}]}]},
    {"resourceSpans": [{"scopeSpans": [{}], "scope_spans": [{"spans": [{}]}]}]},
    {"resourceSpans": [{"schemaUrl": 5}]}, {"resourceSpans": [{"schema_url": "a",
                                                               "schemaUrl": "b"}]},
    {"resourceSpans": [{"resource": {"attributes": 3}}]},
    {"resourceSpans": [{"scopeSpans": [{"scope": {"name": 1}}]}]},
], ids=[str(i) for i in range(10)])
def test_odd_requests_match_the_general_path(request_: Any) -> None:
    assert_same(json.dumps(request_).encode())


def test_random_values_in_every_place_match_the_general_path() -> None:
    r = random.Random(12)
    values = [None, 0, -1, 1, 2**31, 2**64, 1.5, True, "", "x", "12", "ab" * 8, "NaN",
              "SPAN_KIND_CLIENT", [], [{}], {}, {"code": 1}, {"stringValue": "s"}]
    keys = ["traceId", "spanId", "parentSpanId", "name", "kind", "startTimeUnixNano",
            "endTimeUnixNano", "status", "flags", "events", "droppedAttributesCount"]
    for _ in range(400):
        span = {r.choice(keys): r.choice(values) for _ in range(r.randint(1, 3))}
        if r.random() < 0.5:
            span["attributes"] = [{"key": r.choice(["k", "", 1, None]),
                                   "value": {r.choice(["stringValue", "intValue",
                                                       "doubleValue", "boolValue"]):
                                             r.choice(values)}}]
        assert_same(span_body(**span))
