"""POST /v1/embeddings/embed: 384-dim vectors from the real model, 503 until it is ready."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from tests.api.conftest import MakeClient, make_collector

embedding = pytest.importorskip("llm_observe.embedding")


@pytest.fixture(scope="module")
def warm() -> Iterator[Any]:
    """One real embedder, warmed once for the module."""
    embedder = embedding.Embedder(embedding.EmbeddingConfig())
    embedder.start_warmup()
    if not embedder.wait(120):
        pytest.skip(f"embedding model unavailable here: {embedder.error}")
    yield embedder


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_embeds_in_order_with_384_normalised_floats(make_client: MakeClient,
                                                          warm: Any) -> None:
    collector = make_collector()
    collector.embedder = warm
    api = await make_client(collector)
    texts = ["The cat sat on the mat.", "A kitten was sitting on the rug.",
             "Quarterly revenue grew twelve percent."]
    resp = await api.post("/v1/embeddings/embed", json={"texts": texts})
    assert resp.status == 200
    body = await resp.json()
    assert body["dimension"] == 384 and body["model"] == warm.model_name
    vectors = body["embeddings"]
    assert len(vectors) == 3 and all(len(v) == 384 for v in vectors)
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, abs_tol=1e-3)
               for v in vectors)
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2]) + 0.2
    single = await (await api.post("/v1/embeddings/embed", json={"texts": texts[2:]})).json()
    assert cosine(single["embeddings"][0], vectors[2]) > 0.9999


async def test_warming_up_is_503_with_retry_after(make_client: MakeClient) -> None:
    collector = make_collector(embedding_enabled=True)  # built, warm-up never started
    assert collector.embedder is not None and not collector.embedder.ready
    api = await make_client(collector)
    resp = await api.post("/v1/embeddings/embed", json={"texts": ["hi"]})
    assert resp.status == 503
    assert resp.headers["Retry-After"] == "2"
    body = await resp.json()
    assert body["error"]["code"] == "warming_up" and "warming up" in body["error"]["message"]


async def test_disabled_embeddings_say_so(api: Any) -> None:
    resp = await api.post("/v1/embeddings/embed", json={"texts": ["hi"]})
    assert resp.status == 503
    body = await resp.json()
    assert body["error"]["code"] == "embeddings_disabled"
    assert "LLM_OBSERVE_EMBEDDING_ENABLED" in body["error"]["message"]


async def test_missing_extra_says_what_to_install(make_client: MakeClient) -> None:
    collector = make_collector(embedding_enabled=True)
    collector.embedder = None  # what build_collector leaves when the extra is not installed
    api = await make_client(collector)
    body = await (await api.post("/v1/embeddings/embed", json={"texts": ["hi"]})).json()
    assert body["error"]["code"] == "embeddings_unavailable"
    assert "llm-observe[embeddings]" in body["error"]["message"]


@pytest.mark.parametrize("payload", [{}, {"texts": []}, {"texts": "hello"}, {"texts": [1]},
                                     {"texts": ["x"] * 65}, {"texts": ["x" * 20_001]}])
async def test_bad_input_is_422_even_before_the_model_is_ready(api: Any, payload: Any) -> None:
    resp = await api.post("/v1/embeddings/embed", json=payload)
    assert resp.status == 422
    assert (await resp.json())["error"]["details"][0]["field"] == "texts"


async def test_a_burst_over_the_embed_gate_is_503_busy_and_the_rest_embedded(
        make_client: MakeClient, warm: Any) -> None:
    import asyncio

    collector = make_collector(api_embed_running=1, api_embed_waiting=1, api_offload_wait_s=60.0)
    collector.embedder = warm
    api = await make_client(collector)
    bodies = [{"texts": [f"request {i} text {j} about invoices and refunds " * 20
                         for j in range(32)]} for i in range(6)]

    async def embed(body: dict[str, Any]) -> tuple[int, Any, Any]:
        async with api.post("/v1/embeddings/embed", json=body) as resp:
            return resp.status, resp.headers, await resp.json()

    answers = await asyncio.gather(*(embed(body) for body in bodies))
    statuses = [status for status, _, _ in answers]
    assert statuses.count(200) >= 2 and 503 in statuses, answers
    for status, headers, body in answers:
        if status == 503:
            assert body["error"]["details"] == {"work": "embed", "reason": "queue"}
            assert int(headers["Retry-After"]) >= 1
        else:
            assert len(body["embeddings"]) == 32
