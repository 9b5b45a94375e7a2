"""Instrumentation events on a real Redis server, and the in-process subscriber hook."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import redis.asyncio as aioredis

import llm_observe
from llm_observe.api import events
from llm_observe.api.keys import AppKeys
from tests.api.conftest import MakeClient, make_collector
from tests.redisd import REDIS, free_port, redis_server

pytestmark = pytest.mark.skipif(REDIS is None, reason="redis-server is not installed")


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A throwaway redis-server on a free loopback port (no persistence)."""
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture
async def channel(redis_url: str) -> AsyncIterator[Any]:
    """A subscription to the events channel; ``await next_message()`` returns the payload."""
    client = aioredis.Redis.from_url(redis_url)
    pubsub = client.pubsub()
    await pubsub.subscribe(events.CHANNEL)
    await pubsub.get_message(timeout=5)  # the subscribe confirmation

    async def next_message() -> dict[str, Any]:
        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=10)
        assert message is not None, "no event arrived within 10 s"
        payload: dict[str, Any] = json.loads(message["data"])
        return payload

    yield next_message
    await pubsub.aclose()
    await client.aclose()


@pytest.fixture(autouse=True)
def _uninstrument() -> Iterator[None]:
    yield
    import llm_observe.instrument as instrument

    instrument.uninstrument_all()


async def test_state_changes_are_published(make_client: MakeClient, redis_url: str,
                                           channel: Any) -> None:
    api = await make_client(redis_url=redis_url)
    assert (await api.post("/v1/instrumentation/init")).status == 200
    message = await channel()
    assert set(message) == {"event", "active", "patched", "at", "host", "pid", "version"}
    assert message["event"] == "instrumentation.initialized" and message["active"] is True
    assert "openai" in message["patched"]
    assert message["pid"] == os.getpid() and message["host"] == socket.gethostname()
    assert message["version"] == llm_observe.__version__
    assert message["at"].endswith("Z")
    # An init that changes nothing publishes nothing: the next message is the uninstrument.
    assert (await (await api.post("/v1/instrumentation/init")).json())["changed"] is False
    await api.post("/v1/instrumentation/uninstrument")
    message = await channel()
    assert message["event"] == "instrumentation.uninstrumented"
    assert message["active"] is False and message["patched"] == []


async def test_redis_down_never_fails_the_call(make_client: MakeClient) -> None:
    collector = make_collector(redis_url=f"redis://127.0.0.1:{free_port()}/0")
    api = await make_client(collector)
    resp = await api.post("/v1/instrumentation/init")
    assert resp.status == 200 and (await resp.json())["changed"] is True
    await api.server.app[AppKeys.events].flush()
    failures = collector.registry.get_sample_value("llm_observe_events_publish_failures_total")
    assert failures == 1
    assert collector.registry.get_sample_value("llm_observe_events_published_total") == 0


async def test_published_events_are_counted(make_client: MakeClient, redis_url: str,
                                            channel: Any) -> None:
    collector = make_collector(redis_url=redis_url)
    api = await make_client(collector)
    await api.post("/v1/instrumentation/init")
    await channel()
    await api.server.app[AppKeys.events].flush()
    assert collector.registry.get_sample_value("llm_observe_events_published_total") == 1


async def test_in_process_subscribers_get_every_event(api: Any) -> None:
    got: list[dict[str, Any]] = []
    unsubscribe = events.subscribe(got.append)
    try:
        await api.post("/v1/instrumentation/init")
        await api.post("/v1/instrumentation/init")
        await api.post("/v1/instrumentation/uninstrument")
    finally:
        unsubscribe()
    assert [m["event"] for m in got] == ["instrumentation.initialized",
                                         "instrumentation.uninstrumented"]
    await api.post("/v1/instrumentation/init")
    assert len(got) == 2  # unsubscribed


async def test_a_failing_subscriber_does_not_break_the_others(api: Any) -> None:
    got: list[str] = []

    def broken(message: dict[str, Any]) -> None:
        raise RuntimeError("subscriber bug")

    undo = [events.subscribe(broken), events.subscribe(lambda m: got.append(m["event"]))]
    try:
        assert (await api.post("/v1/instrumentation/init")).status == 200
    finally:
        for u in undo:
            u()
    assert got == ["instrumentation.initialized"]


async def test_publisher_stop_delivers_what_is_queued(redis_url: str, channel: Any) -> None:
    publisher = events.EventPublisher(redis_url)
    await publisher.start()
    for i in range(3):
        publisher.publish({"event": f"e{i}"})
    await publisher.stop()
    assert [(await channel())["event"] for _ in range(3)] == ["e0", "e1", "e2"]
