"""Fixtures for the instrumentation tests: spans land in an in-memory exporter.

llm-observe's tracer is pointed at a test TracerProvider with ``use_tracer_provider``,
so the process-wide OpenTelemetry provider (other areas' tests, the app) is untouched.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

# LiteLLM fetches its model cost map from GitHub at import unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from llm_observe import instrument, providers
from llm_observe.instrument import context
from tests.fakes import FakeProvider


class Spans:
    """The spans exported so far, with helpers for what the tests look at."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        self.exporter = exporter

    def all(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def llm(self) -> list[ReadableSpan]:
        """Spans that describe an LLM call (they carry gen_ai.operation.name)."""
        return [s for s in self.all() if "gen_ai.operation.name" in (s.attributes or {})]

    def one(self) -> dict[str, object]:
        """The attributes of the single LLM span (fails unless there is exactly one)."""
        found = self.llm()
        assert len(found) == 1, [s.name for s in found]
        return dict(found[0].attributes or {})

    def clear(self) -> None:
        self.exporter.clear()


@pytest.fixture(scope="session")
def test_provider() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    yield provider, memory
    instrument.use_tracer_provider(None)


@pytest.fixture
def exporter(test_provider: tuple[TracerProvider, InMemorySpanExporter],
             ) -> Iterator[InMemorySpanExporter]:
    """The in-memory exporter llm-observe's spans go to (re-pointed for every test, so a
    test that points them elsewhere cannot leak into the next)."""
    instrument.use_tracer_provider(test_provider[0])
    yield test_provider[1]
    instrument.use_tracer_provider(test_provider[0])


@pytest.fixture
def spans(exporter: InMemorySpanExporter) -> Iterator[Spans]:
    exporter.clear()
    instrument.set_capture_content(True)
    yield Spans(exporter)
    instrument.set_capture_content(True)
    exporter.clear()


@pytest.fixture
def instrumented(spans: Spans) -> Iterator[Spans]:
    """Auto-instrumentation on for the test, off afterwards."""
    instrument.init_auto_instrumentation()
    yield spans
    instrument.uninstrument_all()
    assert context.ACTIVE.get() is None


@pytest.fixture(scope="session")
def fake_server() -> Iterator[FakeProvider]:
    with FakeProvider() as server:
        yield server


@pytest.fixture
def fake(fake_server: FakeProvider) -> FakeProvider:
    fake_server.reset()
    return fake_server


@pytest.fixture
def known_url(fake: FakeProvider) -> Iterator[FakeProvider]:
    """The fake server's URLs count as provider URLs: OpenAI under /v1, Anthropic under
    /anthropic (the fake routes by path suffix, so both answer)."""
    providers.register_base_url(fake.openai_base_url, "openai")
    providers.register_base_url(fake.base_url + "/anthropic", "anthropic")
    yield fake
    providers.unregister_base_url(fake.openai_base_url)
    providers.unregister_base_url(fake.base_url + "/anthropic")
