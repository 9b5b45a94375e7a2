"""Fixtures shared by the agents tests that need a real Redis (tests/redisd.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from tests.redisd import redis_server


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server of the test module's own, on a free loopback port."""
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture
def url(redis_url: str) -> str:
    """That server, emptied for the test."""
    redis.Redis.from_url(redis_url).flushdb()
    return redis_url
