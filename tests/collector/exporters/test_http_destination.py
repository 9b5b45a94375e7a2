"""OTLP/HTTP destinations against a real loopback endpoint, and every way one misbehaves:
4xx forever (counted, dropped by the documented rule, not retried), a hang (the timeout),
a connection closed mid-answer, a certificate from the wrong authority; Langfuse's path and
auth against a stand-in that checks what Langfuse checks; a wrong certificate over gRPC too;
and a dead destination beside a live one."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from llm_observe.collector.exporters.otlp_forwarder import Backoff
from llm_observe.collector.exporters.otlp_forwarder.configure import forwarder
from llm_observe.collector.exporters.otlp_forwarder.destinations import load
from llm_observe.collector.exporters.otlp_forwarder.fanout import Fanout
from llm_observe.collector.exporters.otlp_forwarder.forwarder import OtlpForwarder
from llm_observe.collector.settings import Settings
from tests.collector.exporters.test_otlp_forwarder import sample, spans
from tests.fakes.certs import make_ca, server_context
from tests.fakes.otlp_http_sink import LANGFUSE_PATH, HttpSink

FAST = Backoff(initial=0.02, maximum=0.1)


@pytest.fixture
async def sink() -> AsyncIterator[HttpSink]:
    s = HttpSink()
    await s.start()
    yield s
    await s.stop()


def make(tmp_path: Path, entry: str, registry: CollectorRegistry, env: dict[str, str] | None = None,
         **settings: Any) -> OtlpForwarder:
    path = tmp_path / "destinations.yaml"
    path.write_text(entry)
    (d,) = load(path, env or {})
    return forwarder(d, Settings(**settings), registry, backoff=FAST)


async def until(check: Any, timeout: float = 10.0) -> None:
    """Poll ``check`` (a metric: nothing to wait on) until it holds."""
    async with asyncio.timeout(timeout):
        while not check():  # noqa: ASYNC110
            await asyncio.sleep(0.02)


async def test_spans_arrive_with_the_headers_and_gzip(sink: HttpSink, tmp_path: Path) -> None:
    registry = CollectorRegistry()
    fwd = make(tmp_path, f"- {{name: vendor, endpoint: 'http://127.0.0.1:{sink.port}', "
                         "protocol: http/protobuf, compression: gzip, "
                         "headers: {x-api-key: '${KEY}'}}", registry, {"KEY": "k-123"})
    await fwd.export(spans(7))
    await sink.wait_for_spans(7)
    await fwd.shutdown(5)
    assert sorted(sink.span_ids) == list(range(7))
    assert sink.headers[0]["x-api-key"] == "k-123"
    assert sink.headers[0]["Content-Encoding"] == "gzip"
    assert sample(registry, "llm_observe_otlp_exported_spans_total", destination="vendor") == 7


@pytest.mark.parametrize("status", [400, 401, 403, 404])
async def test_a_4xx_forever_is_counted_and_dropped_not_retried(
        sink: HttpSink, tmp_path: Path, status: int) -> None:
    sink.status = status
    registry = CollectorRegistry()
    fwd = make(tmp_path, f"- {{name: v, endpoint: 'http://127.0.0.1:{sink.port}', "
                         "protocol: http/protobuf}", registry, spool_dir=str(tmp_path / "s"))
    await fwd.export(spans(10))
    await until(lambda: sample(registry, "llm_observe_otlp_dropped_spans_total",
                               destination="v", reason="permanent_error") == 10)
    await asyncio.sleep(0.3)  # time for retries, had there been any
    await fwd.shutdown(5)
    assert sink.calls == 1, "a permanent refusal is not retried"
    assert sample(registry, "llm_observe_otlp_export_failures_total", destination="v",
                  code=f"http_{status}") == 1
    assert sample(registry, "llm_observe_otlp_export_retries_total", destination="v",
                  code=f"http_{status}") == 0
    assert list((tmp_path / "s" / "v").glob("*.otlp")) == [], "dropped, not spooled"


async def test_429_and_503_are_retried_honouring_retry_after(sink: HttpSink,
                                                             tmp_path: Path) -> None:
    sink.status, sink.retry_after = 429, "1"
    registry = CollectorRegistry()
    fwd = make(tmp_path, f"- {{name: v, endpoint: 'http://127.0.0.1:{sink.port}', "
                         "protocol: http/protobuf}", registry)
    await fwd.export(spans(3))
    await until(lambda: sink.calls >= 1)
    await asyncio.sleep(0.5)
    assert sink.calls == 1, "Retry-After: 1 is waited out, not our 20 ms backoff"
    sink.status = None
    await sink.wait_for_spans(3, timeout=5)
    await fwd.shutdown(5)
    assert sample(registry, "llm_observe_otlp_export_retries_total", destination="v",
                  code="http_429") == 1


async def test_a_hanging_destination_times_out_and_is_retried(sink: HttpSink,
                                                             tmp_path: Path) -> None:
    sink.hang_s = 3.0
    registry = CollectorRegistry()
    fwd = make(tmp_path, f"- {{name: v, endpoint: 'http://127.0.0.1:{sink.port}', "
                         "protocol: http/protobuf, timeout_s: 0.3}", registry)
    await fwd.export(spans(4))
    await until(lambda: sample(registry, "llm_observe_otlp_export_retries_total",
                               destination="v", code="timeout") >= 2, timeout=5)
    sink.hang_s = 0.0
    await until(lambda: sample(registry, "llm_observe_otlp_exported_spans_total",
                               destination="v") == 4, timeout=5)
    await fwd.shutdown(5)
    assert set(sink.span_ids) >= set(range(4))  # at least once: a hung call may land late


async def test_a_connection_closed_mid_answer_is_retried(sink: HttpSink,
                                                        tmp_path: Path) -> None:
    sink.close_next = 2
    registry = CollectorRegistry()
    fwd = make(tmp_path, f"- {{name: v, endpoint: 'http://127.0.0.1:{sink.port}', "
                         "protocol: http/protobuf}", registry)
    await fwd.export(spans(5))
    await sink.wait_for_spans(5)
    await fwd.shutdown(5)
    assert sample(registry, "llm_observe_otlp_export_retries_total", destination="v",
                  code="closed") == 2
    assert sink.calls == 3


async def test_a_certificate_from_the_wrong_authority_is_never_trusted(tmp_path: Path) -> None:
    right, wrong = make_ca(tmp_path, "right-ca"), make_ca(tmp_path, "wrong-ca")
    sink = HttpSink(ssl_context=server_context(tmp_path, right))
    await sink.start()
    try:
        registry = CollectorRegistry()
        fwd = make(tmp_path, f"- {{name: v, endpoint: '{sink.url}', protocol: http/protobuf, "
                             f"tls: {{ca_file: '{wrong}'}}}}", registry,
                   spool_dir=str(tmp_path / "s"))
        await fwd.export(spans(6))
        await until(lambda: sample(registry, "llm_observe_otlp_export_failures_total",
                                   destination="v", code="tls") >= 2)
        await fwd.shutdown(0.2)
        assert sink.span_ids == [] and sink.calls == 0, "no byte reached an unverified server"
        assert fwd.spooled_spans == 6, "kept for a run with the right trust"
        trusted = make(tmp_path, f"- {{name: v, endpoint: '{sink.url}', "
                                 f"protocol: http/protobuf, tls: {{ca_file: '{right}'}}}}",
                       CollectorRegistry(), spool_dir=str(tmp_path / "s"))
        await trusted.start()  # sends what the last run spooled
        await sink.wait_for_spans(6)
        await trusted.shutdown(5)
    finally:
        await sink.stop()


async def test_langfuse_path_and_basic_auth(tmp_path: Path) -> None:
    sink = HttpSink(path=LANGFUSE_PATH, langfuse=("pk-lf-1", "sk-lf-2"))
    await sink.start()
    entry = (f"- {{name: langfuse, endpoint: 'http://127.0.0.1:{sink.port}{LANGFUSE_PATH}', "
             "protocol: http/protobuf, compression: gzip, "
             "basic_auth: {{username: '${{PK}}', password: '${{SK}}'}}}}")
    try:
        registry = CollectorRegistry()
        good = make(tmp_path, entry.replace("{{", "{").replace("}}", "}"), registry,
                    {"PK": "pk-lf-1", "SK": "sk-lf-2"})
        await good.export(spans(4))
        await sink.wait_for_spans(4)
        await good.shutdown(5)
        sent = sink.headers[-1]["Authorization"]
        assert sent == "Basic " + base64.b64encode(b"pk-lf-1:sk-lf-2").decode()
        bad_registry = CollectorRegistry()
        bad = make(tmp_path, entry.replace("{{", "{").replace("}}", "}"), bad_registry,
                   {"PK": "pk-lf-1", "SK": "sk-wrong"})
        await bad.export(spans(3, start=10))
        await until(lambda: sample(bad_registry, "llm_observe_otlp_dropped_spans_total",
                                   destination="langfuse", reason="permanent_error") == 3)
        await bad.shutdown(5)
        assert sample(bad_registry, "llm_observe_otlp_export_failures_total",
                      destination="langfuse", code="http_401") == 1
        assert sorted(sink.span_ids) == [0, 1, 2, 3]
    finally:
        await sink.stop()


async def test_a_dead_destination_never_stalls_a_live_one(sink: HttpSink,
                                                          tmp_path: Path) -> None:
    dead = HttpSink(hang_s=60.0)
    await dead.start()
    registry = CollectorRegistry()
    try:
        slow = make(tmp_path, f"- {{name: dead, endpoint: '{dead.url}', "
                              "protocol: http/protobuf, timeout_s: 30}", registry,
                    queue_max_spans=20)
        live = make(tmp_path, f"- {{name: live, endpoint: '{sink.url}', "
                              "protocol: http/protobuf}", registry)
        fan = Fanout([slow, live])
        for i in range(10):  # 100 spans; the dead one's queue holds 20 (no spool)
            assert fan.has_room(10)
            await fan.export(spans(10, start=10 * i))
        await sink.wait_for_spans(100, timeout=5)
        assert sample(registry, "llm_observe_otlp_dropped_spans_total", destination="dead",
                      reason="destination_full") == 80
        assert sample(registry, "llm_observe_otlp_dropped_spans_total", destination="live",
                      reason="destination_full") == 0
        await fan.shutdown(0.2)
    finally:
        await dead.stop()


async def test_grpc_with_a_certificate_from_the_wrong_authority(tmp_path: Path) -> None:
    """The gRPC transport's TLS: the destination's ``ca_file`` is the only trust."""
    import grpc

    from tests.fakes.otlp_sink import SERVICE, OtlpSink

    right, wrong = make_ca(tmp_path, "right-ca"), make_ca(tmp_path, "wrong-ca")
    server_context(tmp_path, right)  # writes server.pem / server.key signed by the right CA
    sink = OtlpSink()
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        SERVICE, {"Export": grpc.unary_unary_rpc_method_handler(sink._export)}),))
    credentials = grpc.ssl_server_credentials(
        [((tmp_path / "server.key").read_bytes(), (tmp_path / "server.pem").read_bytes())])
    port = server.add_secure_port("127.0.0.1:0", credentials)
    await server.start()
    try:
        registry = CollectorRegistry()
        fwd = make(tmp_path, f"- {{name: g, endpoint: 'https://127.0.0.1:{port}', "
                             f"protocol: grpc, tls: {{ca_file: '{wrong}'}}}}", registry)
        await fwd.export(spans(3))
        await until(lambda: sample(registry, "llm_observe_otlp_export_retries_total",
                                   destination="g", code="UNAVAILABLE") >= 2)
        await fwd.shutdown(0.2)
        assert sink.span_count == 0
        trusted = make(tmp_path, f"- {{name: g, endpoint: 'https://127.0.0.1:{port}', "
                                 f"protocol: grpc, tls: {{ca_file: '{right}'}}}}",
                       CollectorRegistry())
        await trusted.export(spans(3))
        await sink.wait_for_spans(3)
        await trusted.shutdown(5)
    finally:
        await server.stop(0)
