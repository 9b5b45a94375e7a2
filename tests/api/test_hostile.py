"""Hostile input at the REST door: always a 4xx JSON error (or a 200), never a 500, never a
stalled loop, and the collector keeps serving: /metrics renders, health answers, and a
well-formed record sent afterwards is counted."""

from __future__ import annotations

import asyncio
import functools
import gzip
import json
import time
import zlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from llm_observe.collector.assembly import Collector
from tests.api.conftest import MakeClient, make_collector

GOOD = {"model": "gpt-4o", "provider": "openai", "prompt_tokens": 10, "completion_tokens": 5}
JSON = {"Content-Type": "application/json"}
TOKEN = "s3cret-token"


def spans_total(collector: Collector, service: str) -> float | None:
    """``llm_spans_total`` of a GOOD span of ``service``; rendering /metrics must not fail."""
    text = generate_latest(collector.registry).decode()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "llm_spans_total" and s.labels.get("service_name") == service:
                return float(s.value)
    return None


async def assert_still_serving(api: Any, collector: Collector, service: str) -> None:
    assert (await api.get("/v1/metrics/health")).status == 200
    resp = await api.post("/v1/metrics/record", json={**GOOD, "service_name": service})
    assert resp.status == 200, await resp.text()
    assert spans_total(collector, service) == 1


async def assert_error(resp: Any, status: int, code: str) -> dict[str, Any]:
    assert resp.status == status, await resp.text()
    error: dict[str, Any] = (await resp.json())["error"]
    assert set(error) == {"code", "message", "details"} and error["code"] == code
    return error


# Raw bodies: json.dumps would escape a lone surrogate the same way, but the raw text also
# covers upper-case escapes and keys.
SURROGATES = [
    ("/v1/metrics/record", rb'{"model": "m\ud800", "provider": "openai"}', "$.model"),
    ("/v1/metrics/record", rb'{"model": "m", "provider": "openai", "x\uDFFF": 1}',
     '$["x\\udfff"]'),
    ("/v1/metrics/record-batch",
     b'{"spans": [' + b", ".join([json.dumps(GOOD).encode()] * 3)
     + rb', {"model": "a\udc00\ud800", "provider": "openai"}]}', "$.spans[3].model"),
    ("/v1/sampling/should-sample", rb'{"span_id": "\uD834abc"}', "$.span_id"),
    ("/v1/embeddings/embed", rb'{"texts": ["fine", "\ud83d"]}', "$.texts[1]"),
    ("/v1/pii-injection/scan", rb'{"text": "hi", "x": {"y": [1, {"z": "\ude00"}]}}',
     "$.x.y[1].z"),
]


@pytest.mark.parametrize(("path", "body", "where"), SURROGATES,
                         ids=[f"{p.rsplit('/', 1)[1]}-{w}" for p, _, w in SURROGATES])
async def test_a_lone_surrogate_anywhere_is_400_naming_where(
        make_client: MakeClient, path: str, body: bytes, where: str) -> None:
    collector = make_collector()
    api = await make_client(collector)
    error = await assert_error(await api.post(path, data=body, headers=JSON),
                               400, "invalid_unicode")
    assert error["details"] == {"path": where}
    assert where in error["message"]
    await assert_still_serving(api, collector, "after-surrogate")


async def test_after_a_surrogate_record_the_scrape_endpoint_still_answers(
        make_client: MakeClient) -> None:
    api = await make_client()
    assert (await api.post("/v1/metrics/init", json={"port": 0})).status == 200
    await api.post("/v1/metrics/record", data=SURROGATES[0][1], headers=JSON)
    port = (await (await api.get("/v1/metrics/health")).json())["port"]
    scrape = await api.session.get(f"http://127.0.0.1:{port}/metrics")
    assert scrape.status == 200
    assert "llm_observe_" in await scrape.text()


async def test_a_valid_surrogate_pair_is_an_ordinary_character(
        make_client: MakeClient) -> None:
    collector = make_collector()
    api = await make_client(collector)
    body = rb'{"model": "gpt-4o", "provider": "openai", "service_name": "smile\ud83d\ude00"}'
    assert (await api.post("/v1/metrics/record", data=body, headers=JSON)).status == 200
    assert spans_total(collector, "smile\N{GRINNING FACE}") == 1


LABELS = ["model", "provider", "service_name", "endpoint", "session_id", "finish_reason",
          "error_type", "actual_model"]


@pytest.mark.parametrize("char", ["\x00", "\x1b", "\n", "\x7f", "\x85"], ids=repr)
async def test_control_characters_in_label_fields_are_422_naming_the_field(
        make_client: MakeClient, char: str) -> None:
    collector = make_collector()
    api = await make_client(collector)
    for field in LABELS:
        resp = await api.post("/v1/metrics/record", json={**GOOD, field: f"a{char}b"})
        error = await assert_error(resp, 422, "validation_failed")
        assert [d["field"] for d in error["details"]] == [field]
    resp = await api.post("/v1/metrics/record",
                          json={**GOOD, "attempted_models": ["gpt-4o", f"x{char}"]})
    error = await assert_error(resp, 422, "validation_failed")
    assert error["details"][0]["field"] == "attempted_models[1]"
    # free text keeps its control characters
    resp = await api.post("/v1/metrics/record",
                          json={**GOOD, "prompt": f"line{char}\t\r\n", "completion": char})
    assert resp.status == 200
    await assert_still_serving(api, collector, "after-control")


async def raw_request(api: Any, head: bytes) -> tuple[bytes, bytes]:
    """Send ``head`` (a GET with Connection: close) on a raw socket; (status line, body)."""
    reader, writer = await asyncio.open_connection(api.host, api.port)
    writer.write(head)
    answer = await reader.read()
    writer.close()
    await writer.wait_closed()
    status, _, rest = answer.partition(b"\r\n")
    return status, rest.partition(b"\r\n\r\n")[2]


@pytest.mark.parametrize("value", [b"Bearer \xff\xfe", b"Bearer s\xe9cret",
                                   b"bearer \x80" + TOKEN.encode()])
async def test_an_authorization_header_of_any_bytes_is_401(
        make_client: MakeClient, value: bytes) -> None:
    collector = make_collector(api_token=TOKEN)
    api = await make_client(collector)
    status, body = await raw_request(api, b"GET /v1/version HTTP/1.1\r\nHost: x\r\n"
                                     b"Authorization: " + value + b"\r\nConnection: close\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 401")
    assert json.loads(body)["error"]["code"] == "unauthorized"
    good = await api.get("/v1/version", headers={"Authorization": f"Bearer {TOKEN}"})
    assert good.status == 200


WBITS = {"gzip": 31, "x-gzip": 31, "deflate": 15, "raw-deflate": -15}


@functools.cache
def bomb(encoding: str, mib: int = 1000) -> bytes:
    """``mib`` MiB of zeros compressed to ~1 MB: full flushes make every MiB the same bytes.

    The trailer's check value is left wrong (computing it costs a second): a reader only
    finds that out after inflating all of it, so this is still a bomb to one that tries."""
    z = zlib.compressobj(9, zlib.DEFLATED, WBITS[encoding])
    block = bytes(1 << 20)
    first = z.compress(block) + z.flush(zlib.Z_FULL_FLUSH)
    middle = z.compress(block) + z.flush(zlib.Z_FULL_FLUSH)
    return first + middle * (mib - 2) + z.compress(block) + z.flush()


async def probed(api: Any, send: Any, after_s: float = 0.4) -> tuple[Any, float, list[float]]:
    """Run ``send()`` while GET /v1/metrics/health is probed every 20 ms, until ``after_s``
    past its answer; (response, its seconds, every probe's seconds)."""
    latencies: list[float] = []
    done = asyncio.Event()

    async def probe() -> None:
        while not done.is_set():
            start = time.perf_counter()
            async with api.get("/v1/metrics/health") as resp:
                assert resp.status == 200
            latencies.append(time.perf_counter() - start)
            await asyncio.sleep(0.02)

    prober = asyncio.create_task(probe())
    await asyncio.sleep(0.05)
    start = time.perf_counter()
    resp = await send()
    took = time.perf_counter() - start
    await resp.read()
    await asyncio.sleep(after_s)
    done.set()
    await prober
    return resp, took, latencies


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
async def test_a_compression_bomb_is_413_at_once_and_the_loop_stays_free(
        make_client: MakeClient, encoding: str, chunked: bool) -> None:
    collector = make_collector()
    api = await make_client(collector)
    body = bomb(encoding)
    assert len(body) < collector.settings.max_body_bytes  # it is the inflation that is big

    async def parts() -> AsyncIterator[bytes]:
        for i in range(0, len(body), 65_536):
            yield body[i:i + 65_536]

    headers = {**JSON, "Content-Encoding": encoding.removeprefix("raw-")}
    cpu = time.process_time()
    resp, took, latencies = await probed(api, lambda: api.post(
        "/v1/metrics/record", data=parts() if chunked else body, headers=headers))
    cpu = time.process_time() - cpu
    await assert_error(resp, 413, "payload_too_large")
    assert took < 0.5, took
    assert len(latencies) >= 10 and max(latencies) < 0.1, latencies
    assert cpu < 0.5, cpu  # inflating the whole GiB takes seconds
    await assert_still_serving(api, collector, "after-bomb")


async def test_without_the_token_a_bomb_is_401_unread(make_client: MakeClient) -> None:
    collector = make_collector(api_token=TOKEN)
    api = await make_client(collector)
    cpu = time.process_time()
    resp, took, latencies = await probed(api, lambda: api.post(
        "/v1/metrics/record", data=bomb("gzip"),
        headers={**JSON, "Content-Encoding": "gzip"}))
    cpu = time.process_time() - cpu
    await assert_error(resp, 401, "unauthorized")
    assert took < 0.5 and max(latencies) < 0.1, (took, latencies)
    assert cpu < 0.5, cpu
    assert (await api.get("/v1/metrics/health")).status == 200


@pytest.mark.parametrize("encoding", ["gzip", "x-gzip", "deflate", "raw-deflate"])
async def test_compressed_bodies_up_to_the_limit_are_read(
        make_client: MakeClient, encoding: str) -> None:
    collector = make_collector(max_body_bytes=4096)
    api = await make_client(collector)
    headers = {**JSON, "Content-Encoding": encoding.removeprefix("raw-")}

    def packed(text: str) -> bytes:
        z = zlib.compressobj(6, zlib.DEFLATED, WBITS[encoding])
        return z.compress(json.dumps({"text": text}).encode()) + z.flush()

    fits = await api.post("/v1/pii-injection/scan", data=packed("a" * 4000), headers=headers)
    assert fits.status == 200, await fits.text()
    over = await api.post("/v1/pii-injection/scan", data=packed("a" * 4100), headers=headers)
    await assert_error(over, 413, "payload_too_large")
    cut = await api.post("/v1/pii-injection/scan", data=packed("a" * 100)[:-6], headers=headers)
    await assert_error(cut, 400, "malformed_body")
    record = zlib.compress(json.dumps({**GOOD, "service_name": "zipped"}).encode())
    ok = await api.post("/v1/metrics/record", data=record,
                        headers={**JSON, "Content-Encoding": "deflate"})
    assert ok.status == 200 and spans_total(collector, "zipped") == 1


async def test_a_gzip_body_of_several_members_is_read_whole(make_client: MakeClient) -> None:
    collector = make_collector()
    api = await make_client(collector)
    text = json.dumps({**GOOD, "service_name": "two-members"}).encode()
    body = gzip.compress(text[:20]) + gzip.compress(text[20:])  # as `cat a.gz b.gz` makes
    resp = await api.post("/v1/metrics/record", data=body,
                          headers={**JSON, "Content-Encoding": "gzip"})
    assert resp.status == 200, await resp.text()
    assert spans_total(collector, "two-members") == 1


async def test_an_unknown_content_encoding_is_415(api: Any) -> None:
    resp = await api.post("/v1/metrics/record", data=b"\x28\xb5\x2f\xfd",
                          headers={**JSON, "Content-Encoding": "zstd"})
    await assert_error(resp, 415, "unsupported_encoding")


# Fuzz: each value in each field, alone and inside a batch, as raw JSON text.
HOSTILE = {
    "surrogate": r'"x\ud800"', "nul": '"a\\u0000b"', "huge": '"' + "a" * 1_000_000 + '"',
    "list": "[1, 2]", "object": '{"a": {}}', "bool": "true", "float": "1.5",
    "deep": "[" * 100_000 + "]" * 100_000, "nested-500": "[" * 500 + "]" * 500,
    "1e400": "1e400", "-1e400": "-1e400", "-1": "-1", "2**70": str(2**70),
    "digits": "9" * 5000, "nan": "NaN", "-0.0": "-0.0",
}
FIELDS = ["model", "provider", "prompt_tokens", "latency_ms_total", "retry_count",
          "attempted_models", "prompt", "status", "pii_detected"]


@pytest.mark.parametrize("value", list(HOSTILE))
async def test_fuzz_record_and_batch_never_answer_500(make_client: MakeClient,
                                                      value: str) -> None:
    collector = make_collector()
    api = await make_client(collector)
    good = json.dumps(GOOD)[1:-1]
    for field in FIELDS:
        span = f'{{{good}, "{field}": {HOSTILE[value]}}}'
        for path, body in (("/v1/metrics/record", span),
                           ("/v1/metrics/record-batch", f'{{"spans": [{span}]}}')):
            resp = await api.post(path, data=body.encode(), headers=JSON)
            assert resp.status == 200 or 400 <= resp.status < 500, (field, path, resp.status)
            if resp.status != 200:  # the error body, not aiohttp's plain-text page
                assert set((await resp.json())["error"]) == {"code", "message", "details"}
            generate_latest(collector.registry)  # raises if a bad label got in
    await assert_still_serving(api, collector, f"after-{value}")


async def test_detect_with_a_deeply_nested_body_string_is_answered_not_500(api: Any) -> None:
    nested = "[" * 100_000 + "]" * 100_000
    resp = await api.post("/v1/instrumentation/detect",
                          json={"url": "https://api.openai.com/v1/chat/completions",
                                "body": nested})
    assert resp.status == 200
    body = await resp.json()
    assert body["provider"] == "openai" and body["body_parsed"] is False
