"""POST /v1/sampling/should-sample: the deterministic 1% gate over HTTP."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest


def spec_rule(span_id: str) -> bool:
    """The rule as the architecture states it, computed independently."""
    return int(hashlib.sha256(span_id.encode()).hexdigest(), 16) % 100 == 0


async def test_answers_follow_the_sha256_rule(api: Any) -> None:
    ids = [f"span-{i}" for i in range(300)]
    sampled = []
    for span_id in ids:
        resp = await api.post("/v1/sampling/should-sample", json={"span_id": span_id})
        body = await resp.json()
        assert resp.status == 200
        assert body["span_id"] == span_id and body["rate"] == 0.01
        assert body["sampled"] is spec_rule(span_id)
        if body["sampled"]:
            sampled.append(span_id)
    assert 0 < len(sampled) < 15  # ~1% of 300, and the gate really passes some


async def test_same_id_same_answer(api: Any) -> None:
    passing = next(f"id-{i}" for i in range(10_000) if spec_rule(f"id-{i}"))
    for _ in range(3):
        body = await (await api.post("/v1/sampling/should-sample",
                                     json={"span_id": passing})).json()
        assert body["sampled"] is True


@pytest.mark.parametrize("payload", [{}, {"span_id": ""}, {"span_id": 42},
                                     {"span_id": "x" * 257}])
async def test_bad_span_id_is_422(api: Any, payload: Any) -> None:
    resp = await api.post("/v1/sampling/should-sample", json=payload)
    assert resp.status == 422
    assert (await resp.json())["error"]["details"][0]["field"] == "span_id"
