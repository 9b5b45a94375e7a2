"""GET /metrics over real HTTP: the optional token, one bad family, and a big scrape.

A scrape must not break (one family that cannot render), must not stall the API or the
receiver that share its event loop (a budget-full registry takes seconds to render), and
must not be readable without the token when one is configured.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import urllib.request
from collections.abc import AsyncIterator, Iterable
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from llm_observe.api.scrape import ScrapeServer
from llm_observe.collector.exporters.series_render import TEXT
from llm_observe.span import LlmSpan
from tests.api.conftest import MakeClient, make_collector

TOKEN = "s3cret-scrape-token"


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((dict(s.labels), s.value))
    return out


@pytest.fixture
async def served() -> AsyncIterator[Any]:
    """``await served(registry, token=None)`` -> a started ScrapeServer, stopped afterwards."""
    servers: list[ScrapeServer] = []

    async def serve(registry: CollectorRegistry, token: str | None = None) -> ScrapeServer:
        server = ScrapeServer(registry, token=token)
        await server.start(0)
        servers.append(server)
        return server

    yield serve
    for server in servers:
        await server.stop()


async def raw_get(port: int, *headers: bytes | None) -> int:
    """The status of a GET /metrics sent as raw bytes (headers no client library would send)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    auth = b"".join(b"Authorization: " + h + b"\r\n" for h in headers if h is not None)
    writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + auth + b"\r\n")
    await writer.drain()
    status_line = await reader.readline()
    writer.close()
    await writer.wait_closed()
    return int(status_line.split()[1])


@pytest.mark.parametrize("header", [
    None,  # no Authorization header
    b"Bearer wrong-token",
    b"Basic " + TOKEN.encode(),  # right secret, wrong scheme
    b"Bearer " + TOKEN.encode() + b"x",
    "Bearer s3cret-scrape-tökén".encode(),  # non-ASCII, valid UTF-8
    b"Bearer s3cret-scrape-t\xe9k\xe9n",  # non-ASCII, not UTF-8 (a surrogate escape)
    b"Bearer \xff\xfe",
])
async def test_a_token_guarded_scrape_without_the_token_is_401(
        served: Any, header: bytes | None) -> None:
    server = await served(make_collector().registry, token=TOKEN)
    assert server.port is not None
    assert await raw_get(server.port, header) == 401


async def test_a_token_sent_twice_is_401(served: Any) -> None:
    server = await served(make_collector().registry, token=TOKEN)
    right = b"Bearer " + TOKEN.encode()
    assert await raw_get(server.port, right) == 200
    assert await raw_get(server.port, right, right) == 401
    assert await raw_get(server.port, right, b"Bearer wrong") == 401


async def test_with_the_token_the_scrape_answers_through_the_app_settings(
        make_client: MakeClient) -> None:
    # the token goes from Settings.metrics_token through create_app to the scrape server
    api = await make_client(metrics_token=TOKEN)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert (await api.post("/v1/metrics/init", json={"port": 0})).status == 200
    port = (await (await api.get("/v1/metrics/health")).json())["port"]
    url = f"http://127.0.0.1:{port}/metrics"
    async with aiohttp.ClientSession() as session:
        async with session.get(url) as resp:
            assert resp.status == 401
            assert resp.headers["WWW-Authenticate"].startswith("Bearer")
        async with session.get(url, headers={"Authorization": f"bearer  {TOKEN} "}) as resp:
            assert resp.status == 200  # scheme case-insensitive, spaces around the token
        async with session.get(url, headers=auth) as resp:
            assert resp.status == 200
            assert "llm_spans_total" in await resp.text()
    assert await raw_get(port, b"Bearer " + TOKEN.encode()) == 200


async def test_without_a_token_the_scrape_is_open(served: Any) -> None:
    server = await served(make_collector().registry)
    assert await raw_get(server.port, None) == 200
    assert await raw_get(server.port, b"Bearer anything") == 200


class Raises:
    def collect(self) -> Iterable[Metric]:
        raise RuntimeError("a collector that fails at scrape time")


class Unencodable:
    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily("test_unencodable", "help with a surrogate \ud800",
                                   labels=["model"])
        family.add_metric(["m\ud800"], 1.0)
        family.add_metric(["fine"], 2.0)
        return [family]


async def get_text(port: int) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, \
            session.get(f"http://127.0.0.1:{port}/metrics") as resp:
        return resp.status, await resp.text()


async def test_one_bad_family_does_not_fail_the_scrape(served: Any) -> None:
    collector = make_collector()
    collector.metrics.record([LlmSpan(model="gpt-4o", provider="openai", service_name="chat")])
    collector.registry.register(Raises())
    collector.registry.register(Unencodable())
    server = await served(collector.registry)
    for scrape_no in (1, 2):  # and not only once: every scrape
        status, text = await get_text(server.port)
        assert status == 200
        s = samples(text)
        assert s["llm_spans_total"][0][1] == 1  # the healthy families are all there
        # the unencodable family is rendered with U+FFFD, not left out
        assert {lab["model"]: v for lab, v in s["test_unencodable"]} == \
            {"m\ufffd": 1.0, "fine": 2.0}
        # this scrape's failures are counted in the same scrape: the raising collector
        # and the repaired family
        assert s["llm_observe_scrape_render_errors_total"] == [({}, 2.0 * scrape_no)]


async def test_only_a_registry_where_nothing_renders_answers_500(served: Any) -> None:
    registry = CollectorRegistry()
    registry.register(Raises())
    server = await served(registry)
    status, text = await get_text(server.port)
    assert status == 500
    assert "no metric family" in text
    Counter("test_healthy", "a family that renders", registry=registry)
    assert (await get_text(server.port))[0] == 200


async def test_the_label_set_budget_comes_from_the_settings(make_client: MakeClient) -> None:
    api = await make_client(max_label_sets=20)  # 10 (model, provider, service) groups
    spans = [{"model": f"m{i}", "provider": "openai", "service_name": f"s{j}"}
             for i in range(10) for j in range(5)]
    resp = await api.post("/v1/metrics/record-batch", json={"spans": spans})
    assert (await resp.json())["recorded_count"] == 50
    assert (await api.post("/v1/metrics/init", json={"port": 0})).status == 200
    port = (await (await api.get("/v1/metrics/health")).json())["port"]
    status, text = await get_text(port)
    assert status == 200
    s = samples(text)
    groups = {(lab["model"], lab["service_name"]) for lab, _ in s["llm_spans_total"]}
    assert len(groups) == 10 + 1 and ("__overflow__", "__overflow__") in groups
    assert sum(v for _, v in s["llm_spans_total"]) == 50
    assert {lab["label"]: v for lab, v in s["llm_observe_label_overflow_total"]} == \
        {"label_set": 40}


class Slow:
    """A collector that takes 0.3 s, and counts how often it was asked."""

    def __init__(self) -> None:
        self.calls = 0

    def collect(self) -> Iterable[Metric]:
        self.calls += 1
        time.sleep(0.3)
        return [GaugeMetricFamily("test_slow", "a slow family", value=1.0)]


async def test_concurrent_scrapes_share_one_render(served: Any) -> None:
    registry = CollectorRegistry()
    slow = Slow()
    registry.register(slow)
    server = await served(registry)
    results = await asyncio.gather(*(get_text(server.port) for _ in range(8)))
    assert [status for status, _ in results] == [200] * 8
    assert all("test_slow 1.0" in text for _, text in results)
    assert slow.calls == 1
    await get_text(server.port)  # a scrape after the render finished renders afresh
    assert slow.calls == 2


def _budget_full_spans() -> list[LlmSpan]:
    # 500 models x 40 services: far past the default budget of 10,000 label sets
    return [LlmSpan(model=f"model-{i:03d}", provider="openai", service_name=f"service-{j:02d}",
                    prompt_tokens=10, completion_tokens=5, latency_ms_total=800,
                    latency_ms_ttft=100, finish_reason="stop")
            for i in range(500) for j in range(40)]


async def test_a_big_scrape_does_not_stall_the_api(make_client: MakeClient) -> None:
    collector = make_collector()
    spans = _budget_full_spans()
    for k in range(0, len(spans), 1000):
        collector.metrics.record(spans[k:k + 1000])
    api = await make_client(collector)
    assert (await api.post("/v1/metrics/init", json={"port": 0})).status == 200
    port = (await (await api.get("/v1/metrics/health")).json())["port"]

    def scrape() -> tuple[float, int]:  # Prometheus is another process: another thread here
        start = time.perf_counter()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=120) as resp:
            size = len(resp.read())
        return time.perf_counter() - start, size

    scraping = asyncio.ensure_future(asyncio.to_thread(scrape))
    span = {"model": "gpt-4o", "provider": "openai", "service_name": "probe"}
    latencies: list[float] = []
    starts: list[float] = []  # the loop serves the probing client too: a stall shows as a gap
    while not scraping.done():
        start = time.perf_counter()
        starts.append(start)
        if len(latencies) % 2:
            resp = await api.post("/v1/metrics/record", json=span)
        else:
            resp = await api.get("/v1/metrics/health")
        assert resp.status == 200
        await resp.read()
        latencies.append(time.perf_counter() - start)
        await asyncio.sleep(0.02)
    took, size = await scraping
    assert size > 20_000_000  # the scrape really was the big one
    # A render on the loop would hold it for the whole scrape. The bounds are absolute on
    # a quiet machine (100 / 150 ms) and a fifth of the scrape where other processes slow
    # everything down: a stall still shows, a busy machine's scheduling does not.
    slack = took / 5
    assert max(latencies) < max(0.1, slack), f"slowest probe {max(latencies) * 1000:.0f} " \
        f"ms during a {took:.2f} s scrape ({len(latencies)} probes)"
    gap = max(b - a for a, b in itertools.pairwise(starts))
    assert gap < max(0.15, slack), f"the loop stalled {gap * 1000:.0f} ms between two " \
        f"probes during a {took:.2f} s scrape"
    assert len(latencies) >= 10, f"only {len(latencies)} probes during a {took:.2f} s scrape"
    print(f"scrape {took:.2f} s, {size} bytes; {len(latencies)} probes, "
          f"slowest {max(latencies) * 1000:.1f} ms")


@pytest.mark.parametrize(("accept", "openmetrics"), [
    ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
     "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1", True),  # Prometheus 2.x
    ("text/plain;version=0.0.4;q=0.5, Application/OpenMetrics-Text; q=0.1", True),
    ("text/plain", False),
    (None, False),  # curl
])
async def test_the_format_follows_accept(served: Any, accept: str | None,
                                         openmetrics: bool) -> None:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
    from prometheus_client.openmetrics.exposition import generate_latest as generate_om
    collector = make_collector()
    collector.metrics.record([LlmSpan(model="gpt-4o", provider="openai", service_name="s",
                                      prompt_tokens=3, latency_ms_total=120)])
    server = await served(collector.registry)
    headers = {"Accept": accept} if accept else {"Accept": ""}
    async with aiohttp.ClientSession() as session, session.get(
            f"http://127.0.0.1:{server.port}/metrics", headers=headers) as resp:
        body = await resp.read()
        kind = resp.headers["Content-Type"]
    if openmetrics:
        assert kind == "application/openmetrics-text; version=1.0.0; charset=utf-8"
        assert body == generate_om(collector.registry)  # same bytes as the library's
    else:
        assert kind == CONTENT_TYPE_LATEST  # as before OpenMetrics was served
        assert body == generate_latest(collector.registry)



async def test_a_pre_render_stops_when_a_scrape_waits() -> None:
    registry = CollectorRegistry()
    counter = Counter("pre_total", "pre-rendered", ["k"], registry=registry)
    for i in range(100):
        counter.labels(str(i)).inc()
    server = ScrapeServer(registry)
    assert server.exposition.prepare(TEXT, server._scrape_waits) is True  # nobody waits
    for i in range(100, 200):
        counter.labels(str(i)).inc()
    server._inflight[TEXT] = asyncio.get_running_loop().create_future()  # a scrape waits
    assert server.exposition.prepare(TEXT, server._scrape_waits) is False
    server._inflight.clear()
    assert server.exposition.render(TEXT) == generate_latest(registry)
