"""The OTLP/HTTP door against hostile senders: sizes, bombs, bad strings, absurd numbers.

The gRPC door's hostile requests (tests/receiver/test_hostile_otlp.py) are sent over HTTP,
as protobuf and — where the value has a JSON form — as OTLP/JSON; each time the good span
beside the hostile one must be counted and every series stay finite and in bounds.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import AsyncIterator

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.fakes.otlp_sink import OtlpSink
from tests.receiver.conftest import MiB
from tests.receiver.httpdoor import (
    JSON,
    PROTOBUF,
    HttpStack,
    make_http_stack,
    otlp_json,
    status_of,
)
from tests.receiver.test_grpc_server import GOOD, request
from tests.receiver.test_hostile_otlp import (
    BAD_ID,
    GOOD_ID,
    NASTY,
    check_series,
    hostile,
    s,
    with_base,
)

LIMIT = 4 * MiB
LABELS = {"model": "gpt-4o", "provider": "openai", "service_name": "svc", "status": "success",
          "has_retries": "false"}


@pytest.fixture
async def door(sink: OtlpSink) -> AsyncIterator[HttpStack]:
    stack = await make_http_stack(sink, max_message_bytes=LIMIT, max_spans=1000)
    yield stack
    await stack.close()


async def still_serving(door: HttpStack, expected: float) -> None:
    resp = await door.post(request(GOOD).SerializeToString())
    assert resp.status_code == 200
    assert door.metrics()("llm_spans_total", **LABELS) == expected


# --- sizes and bombs ------------------------------------------------------------------

async def test_a_body_over_the_limit_is_413(door: HttpStack) -> None:
    huge = request({**GOOD, "llm_observe.prompt": "a" * LIMIT}).SerializeToString()
    resp = await door.post(huge)
    assert resp.status_code == 413 and f"the limit is {LIMIT} bytes" in status_of(resp).message
    await still_serving(door, 1)


async def test_a_chunked_body_without_length_is_cut_at_the_limit(door: HttpStack) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(8):
            yield b"\x0a" * MiB

    import httpx
    async with httpx.AsyncClient(timeout=30) as client:
        resp = await client.post(door.url + "/v1/traces", content=chunks(),
                                 headers={"content-type": PROTOBUF})
    assert resp.status_code == 413
    await still_serving(door, 1)


@pytest.mark.parametrize(("encoding", "compress"), [
    ("gzip", gzip.compress), ("deflate", zlib.compress),
    ("deflate", lambda d: zlib.compress(d)[2:-4]),  # raw deflate, as some clients send it
], ids=["gzip", "deflate", "raw-deflate"])
async def test_a_compression_bomb_is_413_after_the_limit_not_inflated_whole(
        door: HttpStack, encoding: str, compress: object) -> None:
    bomb = compress(b"\x00" * (256 * MiB))  # type: ignore[operator]
    assert len(bomb) < MiB  # small on the wire
    resp = await door.post(bomb, **{"content-encoding": encoding})
    assert resp.status_code == 413 and "inflates past the limit" in status_of(resp).message
    await still_serving(door, 1)


@pytest.mark.parametrize(("body", "encoding", "said"), [
    (b"not gzip at all", "gzip", "does not match its Content-Encoding"),
    (gzip.compress(b"\x0a\x00" * 1000)[:-20], "gzip", "cut short"),
    (zlib.compress(b"abc") + b"trailing", "deflate", "after the end of the deflate stream"),
], ids=["corrupt", "truncated", "trailing"])
async def test_a_broken_compressed_body_is_400(door: HttpStack, body: bytes, encoding: str,
                                              said: str) -> None:
    resp = await door.post(body, **{"content-encoding": encoding})
    assert resp.status_code == 400 and said in status_of(resp).message


async def test_an_unknown_content_encoding_is_415(door: HttpStack) -> None:
    resp = await door.post(b"\x00", **{"content-encoding": "br"})
    assert resp.status_code == 415 and "'br' is not supported" in status_of(resp).message


async def test_a_request_past_the_span_cap_is_400_and_never_counted(door: HttpStack) -> None:
    many = request(*[GOOD] * 1001)
    for body, content_type in ((many.SerializeToString(), PROTOBUF), (otlp_json(many), JSON)):
        resp = await door.post(body, content_type)
        assert resp.status_code == 400 and "1001 spans" in status_of(resp).message
    assert door.metrics().get("llm_spans_total", **LABELS) is None


# --- strings and numbers --------------------------------------------------------------

async def send(door: HttpStack, data: bytes, sent: int, as_json: bool) -> int:
    """POST a hostile request; the good span is counted, series in bounds; rejected count."""
    resp = await door.post(data, JSON if as_json else PROTOBUF)
    assert resp.status_code == 200, resp.text
    answer = ExportTraceServiceResponse()
    if as_json:
        json_format.Parse(resp.text, answer)
    else:
        answer.ParseFromString(resp.content)
    partial = answer.partial_success
    if partial.rejected_spans:
        assert BAD_ID.hex() in partial.error_message
        assert GOOD_ID.hex() not in partial.error_message
    assert check_series(door.registry) == sent, "the good neighbour was not counted"
    return partial.rejected_spans


def as_json(data: bytes) -> bytes | None:
    """The hostile request as OTLP/JSON, or None when a value has no JSON form (not UTF-8,
    not an AnyValue at all)."""
    try:
        return otlp_json(ExportTraceServiceRequest.FromString(data))
    except Exception:
        return None


@pytest.mark.parametrize("key", ["gen_ai.usage.input_tokens", "gen_ai.request.model",
                                 "gen_ai.response.time_to_first_chunk", "llm_observe.prompt"])
async def test_every_nasty_value_over_http_protobuf_and_json(door: HttpStack, key: str) -> None:
    sent = 0
    for value in NASTY:
        data = hostile({**with_base(), key: value})
        for body, is_json in ((data, False), (as_json(data), True)):
            if body is None:
                continue
            sent += 1
            try:
                await send(door, body, sent, is_json)
            except AssertionError as exc:
                raise AssertionError(f"{key} = {value[:40]!r} json={is_json}: {exc}") from exc


async def test_control_characters_and_bad_utf8_reject_the_span_not_the_request(
        door: HttpStack) -> None:
    assert await send(door, hostile(with_base(gen_ai__request__model=s("gpt\n1"))), 1,
                      False) == 1
    body = as_json(hostile(with_base(gen_ai__provider__name=s("open\x00ai"))))
    assert body is not None and await send(door, body, 2, True) == 1
    bad_utf8 = hostile(with_base(gen_ai__request__model=b"\x0a\x02\xff\xfe"))
    assert await send(door, bad_utf8, 3, False) == 1


@pytest.mark.parametrize(("value", "said"), [
    ('{"intValue": "1e30"}', "must be an integer"),
    ('{"intValue": 18446744073709551616}', "out of range"),
    ('{"doubleValue": "lots"}', "must be a number"),
    ('{"stringValue": "\\udc00"}', "surrogate"),
], ids=["exp-string", "2**64", "double-word", "lone-surrogate"])
async def test_json_values_no_protobuf_can_hold_are_400(door: HttpStack, value: str,
                                                       said: str) -> None:
    body = ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": '
            f'[{{"key": "gen_ai.usage.input_tokens", "value": {value}}}]}}]}}]}}]}}')
    resp = await door.post(body.encode(), JSON)
    assert resp.status_code == 400 and said in status_of(resp).message
    if "surrogate" not in said:  # (the JSON parser refuses that one before any path)
        assert "attributes[0]" in status_of(resp).message
    await still_serving(door, 1)


async def test_absurd_token_counts_in_json_are_rejected_by_name(door: HttpStack) -> None:
    for sent, tokens in enumerate(('"-5"', "1e30", '"9223372036854775807"'), 1):
        body = json.loads(otlp_json(ExportTraceServiceRequest.FromString(hostile(with_base()))))
        attrs = body["resourceSpans"][1]["scopeSpans"][0]["spans"][0]["attributes"]
        attrs.append({"key": "gen_ai.usage.output_tokens",
                      "value": json.loads(f'{{"doubleValue": {tokens}}}')})
        assert await send(door, json.dumps(body).encode(), sent, True) == 1
    assert door.metrics().get("llm_tokens_total", model="hostile", provider="openai",
                              service_name="hostile-svc", token_type="completion") is None


async def test_60k_attributes_in_json_are_served(door: HttpStack) -> None:
    req = request(GOOD)  # (100k, as over gRPC, would pass the 4 MiB limit as JSON)
    span = req.resource_spans[0].scope_spans[0].spans[0]
    for i in range(60_000):
        span.attributes.add(key=f"junk.{i}").value.int_value = i
    resp = await door.post(otlp_json(req), JSON)
    assert resp.status_code == 200
    await still_serving(door, 2)


async def test_a_deeply_nested_value_is_400_not_a_crash(door: HttpStack) -> None:
    value = '{"stringValue": "x"}'
    for _ in range(3000):
        value = '{"arrayValue": {"values": [' + value + "]}}"
    body = ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [{"key": "k", '
            f'"value": {value}}}]}}]}}]}}]}}').encode()
    resp = await door.post(body, JSON)
    assert resp.status_code == 400
    await still_serving(door, 1)
