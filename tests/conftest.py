"""Fixtures shared across test packages."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.otlp_sink import OtlpSink


@pytest.fixture
async def sink() -> AsyncIterator[OtlpSink]:
    """A real OTLP/gRPC trace server on loopback standing in for Tempo."""
    s = OtlpSink()
    await s.start()
    yield s
    await s.stop()
