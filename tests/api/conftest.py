"""Fixtures for the API tests: a collector with a fresh registry and a real HTTP client.

``make_client`` serves ``create_app(collector)`` on 127.0.0.1 (aiohttp's TestServer picks a
free port) and talks to it with aiohttp's client: every test goes over real HTTP.
``live`` is such a client whose test calls go to fake providers on loopback.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from llm_observe.api.app import create_app
from llm_observe.collector.assembly import Collector, build_collector
from llm_observe.collector.settings import Settings
from tests.fakes import FakeProvider

# The embedder is off unless a test asks for it: warming MiniLM costs CPU every test
# would pay for nothing.
BASE = Settings(embedding_enabled=False, otlp_port=0, redis_url=None, api_token=None)

MakeClient = Callable[..., Any]


def make_collector(**overrides: Any) -> Collector:
    """A collector over BASE settings with ``overrides`` applied."""
    return build_collector(dataclasses.replace(BASE, **overrides).validate())


@pytest.fixture
async def make_client() -> AsyncIterator[MakeClient]:
    """``await make_client(collector=None, **settings_overrides)`` -> a started TestClient."""
    clients: list[TestClient[Any, Any]] = []

    async def make(collector: Collector | None = None, **overrides: Any) -> TestClient[Any, Any]:
        app = create_app(collector or make_collector(**overrides))
        client: TestClient[Any, Any] = TestClient(TestServer(app, host="127.0.0.1"))
        await client.start_server()
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()


@pytest.fixture
async def api(make_client: MakeClient) -> TestClient[Any, Any]:
    """A client of an app with default test settings."""
    client: TestClient[Any, Any] = await make_client()
    return client


# One fake per vendor: the HTTP catch-all tells providers apart by base URL, and two
# vendors on one loopback origin would be one provider to it.
@dataclass
class Fakes:
    openai: FakeProvider
    anthropic: FakeProvider


@pytest.fixture
def fakes() -> Iterator[Fakes]:
    with FakeProvider() as openai_fake, FakeProvider() as anthropic_fake:
        yield Fakes(openai_fake, anthropic_fake)


@pytest.fixture
async def live(make_client: MakeClient, fakes: Fakes) -> AsyncIterator[Any]:
    """An API whose test calls go to the fakes; instrumentation is removed afterwards."""
    import llm_observe.instrument as instrument

    client = await make_client(openai_base_url=fakes.openai.openai_base_url,
                               anthropic_base_url=fakes.anthropic.base_url,
                               openai_api_key="sk-test", anthropic_api_key="ak-test")
    try:
        yield client
    finally:
        instrument.uninstrument_all()
