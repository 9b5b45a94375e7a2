"""Tool-call chain endpoints: track accumulates cost per trace, clear forgets it."""

from __future__ import annotations

from typing import Any

import pytest

from llm_observe.processors.toolchain import MAX_STEP_COST_USD_MICRO, MAX_TRACE_COST_USD_MICRO


async def track(api: Any, **payload: Any) -> Any:
    resp = await api.post("/v1/tool-call/track", json=payload)
    assert resp.status == 200, await resp.text()
    return await resp.json()


async def test_track_accumulates_the_chain_cost(api: Any) -> None:
    first = await track(api, trace_id="t1", cost_usd_micro=1200, span_id="s1",
                        finish_reason="tool_calls")
    assert first["steps"] == 1 and first["tool_call_turns"] == 1
    assert first["transition"] is True and first["cumulative_cost_usd_micro"] == 1200
    second = await track(api, trace_id="t1", cost_usd_micro=800, span_id="s2",
                         finish_reason="stop")
    assert second["steps"] == 2 and second["tool_call_turns"] == 1
    assert second["transition"] is False
    assert second["cumulative_cost_usd_micro"] == 2000 and second["last_span_id"] == "s2"
    other = await track(api, trace_id="t2", cost_usd_micro=5)
    assert other["cumulative_cost_usd_micro"] == 5


async def test_track_prices_the_step_from_the_price_table(api: Any) -> None:
    body = await track(api, trace_id="t3", model="gpt-4o", provider="openai",
                       prompt_tokens=1000, completion_tokens=100, finish_reason="tool_use")
    assert body["step_cost_usd_micro"] == 3500 and body["price_version"]
    assert body["transition"] is True  # Anthropic's tool_use is normalised to tool_calls


async def test_unpriced_step_adds_nothing(api: Any) -> None:
    body = await track(api, trace_id="t4", model="unknown-model", provider="acme",
                       prompt_tokens=10)
    assert body["step_cost_usd_micro"] is None and body["cumulative_cost_usd_micro"] == 0


async def test_recorded_spans_and_track_share_one_chain(api: Any) -> None:
    span = {"model": "gpt-4o", "provider": "openai", "prompt_tokens": 1000,
            "completion_tokens": 100, "finish_reason": "tool_calls", "trace_id": "shared"}
    assert (await api.post("/v1/metrics/record", json=span)).status == 200
    body = await track(api, trace_id="shared", cost_usd_micro=500)
    assert body["steps"] == 2 and body["cumulative_cost_usd_micro"] == 4000


async def test_clear_one_and_all(api: Any) -> None:
    for trace in ("a", "b", "c"):
        await track(api, trace_id=trace, cost_usd_micro=1)
    resp = await api.post("/v1/tool-call/clear", json={"trace_id": "a"})
    assert await resp.json() == {"cleared": 1, "trace_id": "a"}
    resp = await api.post("/v1/tool-call/clear", json={"trace_id": "a"})
    assert (await resp.json())["cleared"] == 0
    resp = await api.post("/v1/tool-call/clear", json={"all": True})
    assert (await resp.json())["cleared"] == 2
    fresh = await track(api, trace_id="b", cost_usd_micro=7)
    assert fresh["steps"] == 1 and fresh["cumulative_cost_usd_micro"] == 7


async def test_a_step_cost_above_the_maximum_is_422_naming_the_field(api: Any) -> None:
    for cost in (MAX_STEP_COST_USD_MICRO + 1, 10**15, 2**63):
        resp = await api.post("/v1/tool-call/track",
                              json={"trace_id": "big", "cost_usd_micro": cost})
        assert resp.status == 422
        (detail,) = (await resp.json())["error"]["details"]
        assert detail["field"] == "cost_usd_micro" and str(MAX_STEP_COST_USD_MICRO) in \
            detail["message"]
    body = await track(api, trace_id="big", cost_usd_micro=MAX_STEP_COST_USD_MICRO)
    assert body["steps"] == 1 and body["cumulative_cost_usd_micro"] == MAX_STEP_COST_USD_MICRO


async def test_the_chain_cost_saturates_at_its_maximum(api: Any) -> None:
    # 1,000 steps at the step maximum reach the chain maximum; the next ones keep it there.
    steps = MAX_TRACE_COST_USD_MICRO // MAX_STEP_COST_USD_MICRO
    for _ in range(steps - 1):
        body = await track(api, trace_id="long", cost_usd_micro=MAX_STEP_COST_USD_MICRO)
    assert body["cost_saturated"] is False
    for _ in range(3):
        body = await track(api, trace_id="long", cost_usd_micro=MAX_STEP_COST_USD_MICRO)
        assert body["cumulative_cost_usd_micro"] == MAX_TRACE_COST_USD_MICRO
        assert body["cost_saturated"] is True
    assert body["steps"] == steps + 2


@pytest.mark.parametrize(("path", "payload", "field"), [
    ("/v1/tool-call/track", {}, "trace_id"),
    ("/v1/tool-call/track", {"trace_id": "t", "cost_usd_micro": -1}, "cost_usd_micro"),
    ("/v1/tool-call/track", {"trace_id": "t", "prompt_tokens": "1"}, "prompt_tokens"),
    ("/v1/tool-call/clear", {}, "trace_id"),
    ("/v1/tool-call/clear", {"all": False}, "trace_id"),
    ("/v1/tool-call/clear", {"trace_id": "t", "all": True}, "all"),
])
async def test_bad_input_is_422(api: Any, path: str, payload: Any, field: str) -> None:
    resp = await api.post(path, json=payload)
    assert resp.status == 422
    assert field in [d["field"] for d in (await resp.json())["error"]["details"]]
