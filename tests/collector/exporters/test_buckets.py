"""Batched histogram observations equal prometheus_client's own observe(), bucket for bucket."""

from __future__ import annotations

import random

import pytest
from prometheus_client import CollectorRegistry, Histogram

from llm_observe.collector.exporters.buckets import SharedBounds, observe_batch, observe_shared
from llm_observe.collector.exporters.genai import DURATION_BUCKETS_S
from llm_observe.collector.exporters.prometheus import LATENCY_BUCKETS_MS, TTFT_BUCKETS_MS


def _pair(buckets: tuple[float, ...]) -> tuple[Histogram, Histogram]:
    return (Histogram("h", "h", buckets=buckets, registry=CollectorRegistry()),
            Histogram("h", "h", buckets=buckets, registry=CollectorRegistry()))


def _state(h: Histogram) -> list[tuple[str, dict[str, str], float]]:
    (family,) = h.collect()
    return [(s.name, s.labels, s.value) for s in family.samples if not s.name.endswith(
        "_created")]


def _values(rng: random.Random, bounds_ms: tuple[int, ...]) -> list[int]:
    # every bound exactly, one above and below each, and random ones up past the last
    edges = [v for b in bounds_ms for v in (b - 1, b, b + 1)]
    return edges + [rng.randint(0, 2 * bounds_ms[-1]) for _ in range(500)]


@pytest.mark.parametrize("spec_ms", [LATENCY_BUCKETS_MS, TTFT_BUCKETS_MS])
def test_shared_bounds_bucket_like_observe_for_both_histograms(spec_ms: tuple[int, ...]) -> None:
    rng = random.Random(7)
    shared = SharedBounds(spec_ms, DURATION_BUCKETS_S, 1000)
    values = _values(rng, spec_ms) + _values(rng, tuple(round(b * 1000)
                                                         for b in DURATION_BUCKETS_S))
    spec_batched, spec_plain = _pair(spec_ms)
    genai_batched, genai_plain = _pair(DURATION_BUCKETS_S)
    observe_shared(spec_batched, genai_batched, values, shared)
    for v in values:
        spec_plain.observe(v)
        genai_plain.observe(v / 1000)
    assert _state(spec_batched) == _state(spec_plain)
    batched, plain = _state(genai_batched), _state(genai_plain)
    assert [s[:2] for s in batched] == [s[:2] for s in plain]
    for (_, _, got), (_, _, want) in zip(batched, plain, strict=True):
        assert got == pytest.approx(want, rel=1e-12)  # the sum is divided once, not per value


def test_observe_batch_matches_observe_and_falls_back_when_asked() -> None:
    rng = random.Random(3)
    values = [rng.randint(0, 80_000) for _ in range(300)]
    batched, plain = _pair((1, 4, 16, 64, 256, 1024, 4096, 16384, 65536))
    observe_batch(batched, values)
    for v in values:
        plain.observe(v)
    assert _state(batched) == _state(plain)
    public, _ = _pair((1, 4, 16))
    observe_batch(public, [2, 3, 100], batched=False)
    assert _state(public)[-1] == ("h_sum", {}, 105.0)


@pytest.mark.parametrize("values", [
    [30, 31, 64, 17],          # one bucket, the top value exactly on its bound
    [64, 65],                  # a bound and one above it: two buckets
    [1, 1, 1],                 # the first bucket
    [70_000, 10 ** 9],         # past the last bound: the +Inf bucket
    [5, 300, 40_000, 2],       # spread over several buckets
])
def test_narrow_shortcut_buckets_like_observe(values: list[int]) -> None:
    # the token histograms' one-bucket shortcut must give observe()'s buckets whichever
    # way min and max fall, including on a bound and in +Inf
    narrow, plain = _pair((1, 4, 16, 64, 256, 1024, 4096, 16384, 65536))
    observe_batch(narrow, values, narrow=True)
    for v in values:
        plain.observe(v)
    assert _state(narrow) == _state(plain)
