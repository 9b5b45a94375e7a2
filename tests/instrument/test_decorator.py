"""@observe on functions and methods: one span per call, nesting, errors, sampling."""

from __future__ import annotations

import asyncio
import traceback

import pytest

from llm_observe import instrument, semconv
from llm_observe.processors.sampling import should_sample
from tests.instrument.conftest import Spans


@instrument.observe("billing", "summarise")
def summarise(text: str) -> str:
    return text.upper()


@instrument.observe("billing", "asummarise")
async def asummarise(text: str) -> str:
    await asyncio.sleep(0)
    return text.lower()


class Service:
    factor = 3

    @instrument.observe("svc", "method")
    def method(self, x: int) -> int:
        return x * self.factor

    @instrument.observe("svc", "classmethod")
    @classmethod
    def klass(cls, x: int) -> int:
        return x + cls.factor

    @classmethod
    @instrument.observe("svc", "classmethod_inner")
    def klass_inner(cls, x: int) -> int:
        return x - cls.factor

    @instrument.observe("svc", "static")
    @staticmethod
    def static(x: int) -> int:
        return -x

    @instrument.observe("svc", "amethod")
    async def amethod(self, x: int) -> int:
        return x + 1


def by_name(spans: Spans) -> dict[str, dict[str, object]]:
    return {s.name: dict(s.attributes or {}) for s in spans.all()}


def test_sync_function(spans: Spans) -> None:
    assert summarise("abc") == "ABC"
    [span] = spans.all()
    attrs = dict(span.attributes or {})
    assert span.name == "summarise"
    assert attrs[semconv.SERVICE] == "billing"
    assert attrs[semconv.ENDPOINT] == "summarise"
    assert attrs[semconv.STATUS] == semconv.STATUS_SUCCESS
    assert isinstance(attrs[semconv.LATENCY_MS_TOTAL], int)
    span_id = format(span.context.span_id, "016x")
    assert attrs[semconv.IS_SAMPLED] is should_sample(span_id)
    assert "gen_ai.operation.name" not in attrs  # a service span, not an LLM call


async def test_async_function(spans: Spans) -> None:
    assert await asummarise("ABC") == "abc"
    assert by_name(spans)["asummarise"][semconv.STATUS] == semconv.STATUS_SUCCESS


async def test_methods(spans: Spans) -> None:
    service = Service()
    assert service.method(2) == 6
    assert Service.klass(2) == 5 and service.klass(2) == 5
    assert Service.klass_inner(5) == 2
    assert Service.static(4) == -4 and service.static(4) == -4
    assert await service.amethod(1) == 2
    counts: dict[str, int] = {}
    for span in spans.all():
        counts[span.name] = counts.get(span.name, 0) + 1
    assert counts == {"method": 1, "classmethod": 2, "classmethod_inner": 1, "static": 2,
                      "amethod": 1}


def test_nested_calls_are_parent_and_child(spans: Spans) -> None:
    @instrument.observe("svc", "outer")
    def outer() -> str:
        return summarise("x")

    outer()
    found = {s.name: s for s in spans.all()}
    assert found["summarise"].parent is not None
    assert found["summarise"].parent.span_id == found["outer"].context.span_id
    assert found["summarise"].context.trace_id == found["outer"].context.trace_id


def test_exception_propagates_unchanged_after_the_span(spans: Spans) -> None:
    error = ValueError("bad input")

    @instrument.observe("svc", "fails")
    def fails() -> None:
        raise error

    with pytest.raises(ValueError) as caught:
        fails()
    assert caught.value is error
    assert traceback.extract_tb(caught.value.__traceback__)[-1].name == "fails"
    attrs = by_name(spans)["fails"]
    assert attrs[semconv.STATUS] == semconv.STATUS_ERROR
    assert attrs[semconv.ERROR_TYPE] == "ValueError"


async def test_async_exception(spans: Spans) -> None:
    @instrument.observe("svc", "afails")
    async def afails() -> None:
        raise KeyError("k")

    with pytest.raises(KeyError):
        await afails()
    assert by_name(spans)["afails"][semconv.STATUS] == semconv.STATUS_ERROR


def test_metadata_inside_a_decorated_call(spans: Spans) -> None:
    @instrument.observe("svc", "tagged")
    def tagged() -> None:
        current = instrument.current_span()
        assert current is not None
        current.set_metadata("session_id", "conv-7")
        current.set_metadata("tenant", "acme")

    tagged()
    attrs = by_name(spans)["tagged"]
    assert attrs[semconv.SESSION_ID] == "conv-7"
    assert attrs[semconv.METADATA_PREFIX + "tenant"] == "acme"


async def test_concurrent_tasks_get_isolated_spans(spans: Spans) -> None:
    @instrument.observe("svc", "task")
    async def task(i: int) -> int:
        await asyncio.sleep(0.001 * (i % 5))
        return await Service().amethod(i)

    results = await asyncio.gather(*(task(i) for i in range(100)))
    assert results == [i + 1 for i in range(100)]
    outer = {s.context.span_id: s for s in spans.all() if s.name == "task"}
    inner = [s for s in spans.all() if s.name == "amethod"]
    assert len(outer) == 100 and len(inner) == 100
    # Every inner span has its own task's span as parent: 100 distinct parents, 100 traces.
    assert {s.parent.span_id for s in inner if s.parent} == set(outer)
    assert len({s.context.trace_id for s in outer.values()}) == 100
    for span in inner:
        assert span.parent is not None
        assert outer[span.parent.span_id].context.trace_id == span.context.trace_id
