"""Fixtures shared across test packages."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

# LiteLLM fetches its model cost map from GitHub at import unless told not to: no
# network at run time, in whichever test session imports it first.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest

from tests.fakes.otlp_sink import OtlpSink


@pytest.fixture
async def sink() -> AsyncIterator[OtlpSink]:
    """A real OTLP/gRPC trace server on loopback standing in for Tempo."""
    s = OtlpSink()
    await s.start()
    yield s
    await s.stop()
