"""OTLP/JSON → protobuf: every field of a trace request survives, both parsers agree."""

from __future__ import annotations

import json

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList

from llm_observe.otlp import jsonwire
from llm_observe.otlp.jsonstream import stream
from llm_observe.otlp.walk import RequestInvalid
from tests.receiver.httpdoor import otlp_json


def full_request() -> ExportTraceServiceRequest:
    """A request using every kind of field: ids, enums, fixed64, links, events, values."""
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add(schema_url="https://opentelemetry.io/schemas/1.30.0")
    rs.resource.attributes.add(key="service.name", value=AnyValue(string_value="svc"))
    rs.resource.dropped_attributes_count = 2
    ss = rs.scope_spans.add()
    ss.scope.name, ss.scope.version = "openai", "1.2"
    span = ss.spans.add(trace_id=bytes(range(16)), span_id=bytes(range(8)),
                        parent_span_id=b"\xff" * 8, name="chat ü", kind=3, flags=257,
                        trace_state="a=b", start_time_unix_nano=2**64 - 1,
                        end_time_unix_nano=1_750_000_000_000_000_000)
    span.status.code, span.status.message = 2, "boom"
    values = [AnyValue(string_value="x"), AnyValue(int_value=-(2**63)),
              AnyValue(double_value=-0.5), AnyValue(bool_value=False),
              AnyValue(bytes_value=b"\x00\xff"),
              AnyValue(array_value=ArrayValue(values=[AnyValue(int_value=1)])),
              AnyValue(kvlist_value=KeyValueList(values=[KeyValue(
                  key="k", value=AnyValue(string_value="v"))]))]
    span.attributes.extend(KeyValue(key=f"a{i}", value=v) for i, v in enumerate(values))
    span.events.add(time_unix_nano=5, name="gen_ai.content.completion.chunk")
    span.links.add(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, flags=1)
    span.dropped_attributes_count = 7
    return req


def test_every_field_round_trips_through_both_parsers() -> None:
    req = full_request()
    body = otlp_json(req)
    assert ExportTraceServiceRequest.FromString(jsonwire.to_protobuf(body)) == req
    assert ExportTraceServiceRequest.FromString(stream(body, jsonwire._REQUEST)) == req


def test_the_spec_leniencies_are_taken() -> None:
    body = json.dumps({"resource_spans": [{"scopeSpans": [{"spans": [{
        "traceId": "5B8EFFF798038103D269B633813FC60C", "span_id": "eee19b7ec3c1b174",
        "kind": "SPAN_KIND_CLIENT", "startTimeUnixNano": "1750000000000000000",
        "endTimeUnixNano": 1.75e18, "status": {"code": "STATUS_CODE_ERROR"},
        "unknownField": [1, {"x": None}], "attributes": [
            {"key": "d", "value": {"doubleValue": "NaN"}},
            {"key": "i", "value": {"intValue": "-12"}}]}]}]}]}).encode()
    span = ExportTraceServiceRequest.FromString(jsonwire.to_protobuf(body)) \
        .resource_spans[0].scope_spans[0].spans[0]
    assert span.trace_id.hex() == "5b8efff798038103d269b633813fc60c"
    assert (span.kind, span.status.code) == (3, 2)
    assert span.end_time_unix_nano == 1_750_000_000_000_000_000
    assert span.attributes[1].value.int_value == -12


@pytest.mark.parametrize(("body", "said"), [
    ({"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "AAECAwQFBgc="}]}]}]},
     "resourceSpans[0].scopeSpans[0].spans[0].spanId: must be hex"),
    ({"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [
        {"key": "t", "value": {"intValue": 1e30}}]}]}]}]},
     "spans[0].attributes[0].intValue: 1000000000000000019884624838656 is out of range"),
    ({"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "-1"}]}]}]},
     "startTimeUnixNano: -1 is out of range"),
    ({"resourceSpans": [{"scopeSpans": [{"spans": [{"name": 12}]}]}]},
     "name: must be a string"),
    ({"resourceSpans": [{"scopeSpans": [{"spans": [{"kind": "SPAN_KIND_NOPE"}]}]}]},
     "kind: must be an integer"),
    ({"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [
        {"key": "b", "value": {"boolValue": "yes"}}]}]}]}]}, "boolValue: must be true or false"),
    ([1, 2], "body: must be an object"),
], ids=["base64-id", "huge-int", "negative-time", "name-int", "enum-name", "bool", "array"])
def test_a_bad_value_names_where_it_is_in_both_parsers(body: object, said: str) -> None:
    data = json.dumps(body).encode()
    with pytest.raises(RequestInvalid, match=None) as small:
        jsonwire.to_protobuf(data)
    assert said in str(small.value)
    padded = data if isinstance(body, list) else json.dumps(
        {**body, "pad": "x" * jsonwire.STREAM_MIN_BYTES}).encode()  # type: ignore[dict-item]
    with pytest.raises(RequestInvalid) as large:
        jsonwire.to_protobuf(padded)
    assert said.removeprefix("body: ") in str(large.value)


@pytest.mark.parametrize("text", [b'{"resourceSpans": [', b"\xff\xfe", b'{"a": NaN}',
                                  b'{"a": 1} extra',
                                  b'{"resourceSpans": [{"schemaUrl": "\\ud800"}]}'])
def test_not_json_is_refused_by_both_parsers(text: bytes) -> None:
    # (a lone surrogate is refused where it would be used; the stream parser skips the
    # values of unknown fields unread)
    for body in (text, text.replace(b"{", b'{"pad": "' + b"x" * 2**20 + b'", ', 1)):
        with pytest.raises(RequestInvalid):
            jsonwire.to_protobuf(body)


def test_nesting_too_deep_is_refused_not_a_crash() -> None:
    value = '{"stringValue": "x"}'
    for _ in range(5000):
        value = '{"arrayValue": {"values": [' + value + "]}}"
    body = ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [{"key": "k", '
            f'"value": {value}}}]}}]}}]}}]}}').encode()
    with pytest.raises(RequestInvalid):
        jsonwire.to_protobuf(body)


def test_metrics_requests_use_the_same_codec() -> None:
    req = ExportMetricsServiceRequest()
    metric = req.resource_metrics.add().scope_metrics.add().metrics.add(name="m")
    point = metric.exponential_histogram.data_points.add(scale=-3, count=2)
    point.positive.offset = -7  # a sint32
    table = jsonwire.message_table(ExportMetricsServiceRequest.DESCRIPTOR)
    assert ExportMetricsServiceRequest.FromString(
        jsonwire.to_protobuf(otlp_json(req), table)) == req
