"""The per-key-set cache: the value of exactly the map's key set, each built once."""

from __future__ import annotations

import random
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from llm_observe.otlp.keysets import RECENT, KeySetCache
from llm_observe.otlp.plan import plan_for
from llm_observe.otlp.wire import Span as WireSpan


def counting() -> tuple[KeySetCache[frozenset[str]], list[frozenset[str]]]:
    built: list[frozenset[str]] = []

    def build(attrs: Any) -> frozenset[str]:
        built.append(frozenset(attrs))
        return frozenset(attrs)

    return KeySetCache(build, size=64, max_keys=32), built


def wire_attrs(keys: list[str]) -> Any:
    span = Span(attributes=[KeyValue(key=k, value=AnyValue(int_value=1)) for k in keys])
    return WireSpan.FromString(span.SerializeToString()).attributes


def test_each_map_gets_its_own_key_sets_value_built_once() -> None:
    cache, built = counting()
    r = random.Random(5)
    pool = [f"k{i}" for i in range(12)]
    sets = [frozenset(r.sample(pool, r.choice([3, 3, 4, 4, 5]))) for _ in range(40)]
    for _ in range(2000):  # more key sets of one size than RECENT, in any order
        keys = list(r.choice(sets))
        r.shuffle(keys)
        attrs = dict.fromkeys(keys, 0) if r.random() < 0.5 else wire_attrs(keys)
        assert cache.get(attrs) == frozenset(keys)
    assert len(built) == len(set(sets))  # once per key set: the cache never refills


def test_a_subset_or_superset_is_another_key_set() -> None:
    cache, _ = counting()
    assert cache.get(dict.fromkeys("abc")) == frozenset("abc")
    assert cache.get(dict.fromkeys("ab")) == frozenset("ab")
    assert cache.get(dict.fromkeys("abcd")) == frozenset("abcd")
    assert cache.get(dict.fromkeys("abd")) == frozenset("abd")
    assert cache.get(dict.fromkeys("abc")) == frozenset("abc")


def test_recent_sets_are_bounded_per_size_and_large_maps_not_cached() -> None:
    cache, built = counting()
    for i in range(RECENT + 3):
        cache.get({f"x{i}": 0, "y": 0})
    assert len(cache._recent[2]) == RECENT
    big = dict.fromkeys(map(str, range(40)))
    cache.get(big)
    cache.get(big)
    assert built.count(frozenset(big)) == 2  # past max_keys: built each time


def test_plan_for_a_wire_span_reads_its_own_keys() -> None:
    ours = wire_attrs(["gen_ai.operation.name", "gen_ai.request.model", "llm_observe.prompt"])
    other = wire_attrs(["gen_ai.operation.name", "gen_ai.request.model", "gen_ai.prompt"])
    assert plan_for(ours).prompt_texts.plain_key == "llm_observe.prompt"
    assert plan_for(other).prompt_texts.plain_key != "llm_observe.prompt"
    assert plan_for(ours).prompt_texts.plain_key == "llm_observe.prompt"
