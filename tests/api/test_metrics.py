"""Metrics endpoints: record, record-batch, init, health, and the scrape endpoint they feed."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from llm_observe.collector.assembly import build_collector
from llm_observe.collector.settings import Settings
from llm_observe.span import LlmSpan
from tests.api.conftest import BASE, MakeClient

SPAN = {"model": "gpt-4o", "provider": "openai", "service_name": "checkout",
        "prompt_tokens": 1000, "completion_tokens": 100, "latency_ms_total": 1200,
        "latency_ms_ttft": 300, "finish_reason": "stop", "status": "success",
        "retry_count": 1, "attempted_models": ["gpt-4o-mini", "gpt-4o"]}


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of sample ``name`` with exactly ``labels`` in an exposition text."""
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return float(s.value)
    return None


async def scrape(api: Any) -> str:
    health = await (await api.get("/v1/metrics/health")).json()
    async with aiohttp.ClientSession() as session, \
            session.get(f"http://127.0.0.1:{health['port']}/metrics") as resp:
        assert resp.status == 200
        return await resp.text()


async def test_record_answers_cost_and_price_version(api: Any) -> None:
    resp = await api.post("/v1/metrics/record", json=SPAN)
    assert resp.status == 200
    body = await resp.json()
    assert body["recorded"] is True
    # gpt-4o: $2.50 / 1M input, $10 / 1M output -> 1000*2.5 + 100*10 = 3500 micro-USD
    assert body["cost_usd_micro"] == 3500
    assert body["price_version"]
    assert len(body["span_id"]) == 32 and len(body["trace_id"]) == 32


async def test_unpriced_model_costs_null_not_zero(api: Any) -> None:
    resp = await api.post("/v1/metrics/record",
                          json={"model": "my-private-llm", "provider": "acme"})
    body = await resp.json()
    assert resp.status == 200
    assert body["cost_usd_micro"] is None and body["price_version"] is None


async def test_recorded_spans_reach_the_scrape_endpoint(api: Any) -> None:
    assert (await api.post("/v1/metrics/init", json={"port": 0})).status == 200
    for _ in range(3):
        assert (await api.post("/v1/metrics/record", json=SPAN)).status == 200
    text = await scrape(api)
    labels = {"model": "gpt-4o", "provider": "openai", "service_name": "checkout"}
    assert sample(text, "llm_spans_total", **labels, status="success", has_retries="true") == 3
    assert sample(text, "llm_cost_usd_micro_total", **labels) == 10500
    assert sample(text, "llm_tokens_total", **labels, token_type="prompt") == 3000
    assert sample(text, "llm_finish_reason_total", **labels, finish_reason="stop") == 3
    assert sample(text, "llm_latency_ms_ttft_count", **labels) == 3


async def test_caller_ids_are_kept(api: Any) -> None:
    resp = await api.post("/v1/metrics/record",
                          json={**SPAN, "span_id": "my-span", "trace_id": "my-trace"})
    body = await resp.json()
    assert (body["span_id"], body["trace_id"]) == ("my-span", "my-trace")


async def test_record_rejects_inconsistent_latencies(api: Any) -> None:
    resp = await api.post("/v1/metrics/record",
                          json={**SPAN, "latency_ms_total": 100, "latency_ms_ttft": 200})
    assert resp.status == 422
    details = (await resp.json())["error"]["details"]
    assert details == [{"field": "latency_ms_ttft", "message": "must not exceed latency_ms_total"}]


async def test_batch_keeps_valid_spans_next_to_bad_ones(api: Any) -> None:
    spans = [SPAN, {"model": "gpt-4o"}, "not an object", {**SPAN, "prompt_tokens": -1},
             {**SPAN, "service_name": "search"}]
    resp = await api.post("/v1/metrics/record-batch", json={"spans": spans})
    assert resp.status == 200
    body = await resp.json()
    assert body["recorded_count"] == 2
    assert body["rejected_count"] == 3
    assert [r["index"] for r in body["rejected"]] == [1, 2, 3]
    assert body["rejected"][0]["errors"] == [{"field": "provider", "message": "is required"}]
    assert body["rejected"][1]["errors"][0]["field"] == "$"
    assert body["rejected"][2]["errors"] == [{"field": "prompt_tokens",
                                              "message": "must be >= 0"}]
    assert body["cost_usd_micro"] == 7000 and body["unpriced_count"] == 0
    assert len(body["span_ids"]) == 2
    await api.post("/v1/metrics/init", json={"port": 0})
    text = await scrape(api)
    assert sample(text, "llm_spans_total", model="gpt-4o", provider="openai",
                  service_name="search", status="success", has_retries="true") == 1


async def test_a_large_batch_validated_off_the_loop_answers_the_same(api: Any) -> None:
    """Past INLINE_MAX_RECORDS records a batch is validated in the CPU thread: the same
    per-span answer (rejections, warnings by index) and the same series."""
    from llm_observe.api.metrics import INLINE_MAX_RECORDS
    n = INLINE_MAX_RECORDS * 2
    spans: list[Any] = [{**SPAN, "service_name": f"big{i % 3}"} for i in range(n)]
    spans[7] = {**SPAN, "prompt_tokens": -1}
    spans[n - 1] = {**SPAN, "completon_tokens": 5}  # (another test owns promt_tokens)
    resp = await api.post("/v1/metrics/record-batch", json={"spans": spans})
    assert resp.status == 200
    body = await resp.json()
    assert body["recorded_count"] == n - 1 and len(body["span_ids"]) == n - 1
    assert body["rejected"] == [{"index": 7, "errors": [{"field": "prompt_tokens",
                                                         "message": "must be >= 0"}]}]
    assert [w["index"] for w in body["warnings"]] == [n - 1]
    assert "did you mean 'completion_tokens'" in body["warnings"][0]["warnings"][0]["message"]
    bad = await api.post("/v1/metrics/record-batch", json={"spans": [*spans[:n], 5]})
    assert [r["index"] for r in (await bad.json())["rejected"]] == [7, n]
    await api.post("/v1/metrics/init", json={"port": 0})
    text = await scrape(api)
    assert sum(sample(text, "llm_spans_total", model="gpt-4o", provider="openai",
                      service_name=f"big{k}", status="success", has_retries="true")
               for k in range(3)) == 2 * (n - 2)  # both batches; 7 and n - 1 are "checkout"


async def test_batch_of_only_bad_spans_records_nothing(api: Any) -> None:
    resp = await api.post("/v1/metrics/record-batch", json={"spans": [{}, {"model": 1}]})
    assert resp.status == 200
    body = await resp.json()
    assert body["recorded_count"] == 0 and body["span_ids"] == []
    assert [r["index"] for r in body["rejected"]] == [0, 1]


async def test_empty_batch_records_nothing(api: Any) -> None:
    resp = await api.post("/v1/metrics/record-batch", json={"spans": []})
    assert resp.status == 200
    assert (await resp.json())["recorded_count"] == 0


@pytest.mark.parametrize("payload", [{"spans": {"model": "x"}}, {}, [SPAN]])
async def test_batch_needs_a_spans_list(api: Any, payload: Any) -> None:
    resp = await api.post("/v1/metrics/record-batch", json=payload)
    assert resp.status == 422


async def test_batch_over_the_limit_is_413(make_client: MakeClient) -> None:
    api = await make_client(max_batch_spans=5)
    resp = await api.post("/v1/metrics/record-batch", json={"spans": [SPAN] * 6})
    assert resp.status == 413
    body = await resp.json()
    assert body["error"]["code"] == "batch_too_large"
    assert body["error"]["details"] == {"limit_spans": 5, "spans": 6}
    assert (await api.post("/v1/metrics/record-batch",
                           json={"spans": [SPAN] * 5})).status == 200


async def test_default_batch_limit_is_1000(api: Any) -> None:
    small = {"model": "m", "provider": "p"}
    assert (await api.post("/v1/metrics/record-batch",
                           json={"spans": [small] * 1000})).status == 200
    assert (await api.post("/v1/metrics/record-batch",
                           json={"spans": [small] * 1001})).status == 413


class FullQueue:
    """An exporter whose queue is full: the pipeline must answer backpressure."""

    name = "full"

    def has_room(self, n: int) -> bool:
        return False

    async def export(self, batch: Sequence[LlmSpan]) -> None:
        raise AssertionError("must not be called when there is no room")

    async def shutdown(self, timeout: float) -> None:
        return None


async def test_backpressure_is_503_with_retry_after(make_client: MakeClient) -> None:
    collector = build_collector(BASE, exporters=[FullQueue()])
    api = await make_client(collector)
    for path, payload in (("/v1/metrics/record", SPAN),
                          ("/v1/metrics/record-batch", {"spans": [SPAN]})):
        resp = await api.post(path, json=payload)
        assert resp.status == 503
        assert int(resp.headers["Retry-After"]) >= 1
        assert (await resp.json())["error"]["code"] == "unavailable"


async def test_health_before_and_after_init(api: Any) -> None:
    before = await (await api.get("/v1/metrics/health")).json()
    assert before["initialized"] is False and before["port"] is None
    assert "POST /v1/metrics/init" in before["message"]
    resp = await api.post("/v1/metrics/init", json={"port": 0})
    body = await resp.json()
    assert body["initialized"] is True and body["port"] > 0
    after = await (await api.get("/v1/metrics/health")).json()
    assert after["initialized"] is True and after["port"] == body["port"]


async def test_init_is_idempotent(api: Any) -> None:
    first = await (await api.post("/v1/metrics/init", json={"port": 0})).json()
    second_resp = await api.post("/v1/metrics/init")
    assert second_resp.status == 200
    second = await second_resp.json()
    assert second["port"] == first["port"]
    assert second["message"].startswith("already initialized")
    third = await (await api.post("/v1/metrics/init", json={"port": 1})).json()
    assert third["port"] == first["port"] and "ignored" in third["message"]


async def test_init_without_body_uses_the_configured_port(make_client: MakeClient) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    api = await make_client(metrics_port=port)
    body = await (await api.post("/v1/metrics/init")).json()
    assert body["port"] == port
    assert (await scrape(api)).startswith("# HELP")


async def test_port_in_use_is_a_clear_409(api: Any) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        resp = await api.post("/v1/metrics/init", json={"port": port})
        assert resp.status == 409
        body = await resp.json()
        assert body["error"]["code"] == "port_in_use"
        assert f"127.0.0.1:{port}" in body["error"]["message"]
        assert "already in use" in body["error"]["message"]
    health = await (await api.get("/v1/metrics/health")).json()
    assert health["initialized"] is False


@pytest.mark.parametrize("port", [-1, 65536, "9464", True])
async def test_init_rejects_bad_ports(api: Any, port: Any) -> None:
    resp = await api.post("/v1/metrics/init", json={"port": port})
    assert resp.status == 422
    assert (await resp.json())["error"]["details"][0]["field"] == "port"


async def test_scrape_endpoint_is_served_from_the_collector_registry() -> None:
    from llm_observe.api.scrape import ScrapeServer

    collector = build_collector(Settings(embedding_enabled=False))
    server = ScrapeServer(collector.registry)
    assert await server.start(0) is True
    assert await server.start(0) is False
    try:
        async with aiohttp.ClientSession() as session, \
                session.get(f"http://127.0.0.1:{server.port}/metrics") as resp:
            assert resp.headers["Content-Type"].startswith("text/plain")
            assert "llm_spans_total" in await resp.text()
    finally:
        await server.stop()
    assert not server.running


@pytest.mark.parametrize("body", [b"null", b"[]", b"5"])
async def test_init_body_must_be_an_object_when_sent(api: Any, body: bytes) -> None:
    resp = await api.post("/v1/metrics/init", data=body,
                          headers={"Content-Type": "application/json"})
    assert resp.status == 422


async def test_once_shutdown_begins_records_are_503_shutting_down(api: Any) -> None:
    # on_shutdown runs before aiohttp waits for in-flight requests: a record that arrives
    # then is told to retry elsewhere instead of racing the pipeline's drain.
    await api.app.shutdown()
    resp = await api.post("/v1/metrics/record", json=SPAN)
    assert resp.status == 503
    assert (await resp.json())["error"]["code"] == "shutting_down"


async def test_typo_field_and_unknown_provider_are_recorded_but_named(
        api: Any, caplog: pytest.LogCaptureFixture) -> None:
    record = {"model": "gpt-4o", "provider": "opnai", "promt_tokens": 1200}
    with caplog.at_level("WARNING", logger="llm_observe.api.metrics"):
        for _ in range(3):
            resp = await api.post("/v1/metrics/record", json=record)
            assert resp.status == 200  # clients that send extra fields keep working
    body = await resp.json()
    assert body["recorded"] is True
    by_field = {w["field"]: w["message"] for w in body["warnings"]}
    assert "did you mean 'prompt_tokens'?" in by_field["promt_tokens"]
    assert "unknown provider 'opnai'" in by_field["provider"]
    assert "did you mean 'openai'?" in by_field["provider"]
    logged = [r.getMessage() for r in caplog.records]
    # one line per distinct warning, not one per request
    assert sum("promt_tokens" in m for m in logged) == 1
    assert sum("'opnai'" in m for m in logged) == 1


async def test_a_clean_record_has_no_warnings(api: Any) -> None:
    body = await (await api.post("/v1/metrics/record",
                                 json={**SPAN, "provider": "OpenAI"})).json()
    assert body["warnings"] == []  # aliases and case are known spellings


async def test_batch_warnings_are_per_index(api: Any) -> None:
    resp = await api.post("/v1/metrics/record-batch", json={"spans": [
        {"model": "gpt-4o", "provider": "openai", "prompt_tokens": 10},
        {"model": "gpt-4o", "provider": "anthropc", "prompt_tokens": 10},
        {"model": "gpt-4o", "providr": "openai"},
    ]})
    assert resp.status == 200
    body = await resp.json()
    assert body["recorded_count"] == 2
    warned = {w["index"]: w["warnings"] for w in body["warnings"]}
    assert set(warned) == {1, 2}
    assert "did you mean 'anthropic'?" in warned[1][0]["message"]
    # the rejected span (provider is required) learns why: the key was misspelt
    assert warned[2][0]["field"] == "providr"
    assert "did you mean 'provider'?" in warned[2][0]["message"]


def test_known_fields_are_the_contract_span_record() -> None:
    from importlib import resources

    import yaml

    from llm_observe.api.metrics import RECORD_FIELDS

    doc = yaml.safe_load((resources.files("llm_observe.api") / "contracts" / "v1.yaml")
                         .read_text())
    assert set(doc["components"]["schemas"]["SpanRecord"]["properties"]) == RECORD_FIELDS


async def test_a_422_caused_by_a_misspelt_key_says_so(api: Any) -> None:
    resp = await api.post("/v1/metrics/record", json={"model": "gpt-4o", "providr": "openai"})
    assert resp.status == 422
    body = await resp.json()
    assert "did you mean 'provider'?" in body["error"]["message"]
    assert body["error"]["details"] == [{"field": "provider", "message": "is required"}]
