"""Helpers shared by the embedding tests and tests/processors/test_embedding.py."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from llm_observe.embedding import Embedder, EmbeddingConfig

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "embedding_reference.json"


@dataclass(frozen=True)
class Reference:
    """tests/data/embedding_reference.json: sentence-transformers' vectors for ~50 texts."""

    texts: list[str]
    tokens: list[int]
    vectors: list[list[float]]
    max_seq_length: int
    weights_sha256: str


def load_reference() -> Reference:
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    items = data["items"]
    return Reference([i["text"] for i in items], [i["tokens"] for i in items],
                     [i["vector"] for i in items], data["max_seq_length"],
                     data["weights_sha256"])


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def graph_cache(factory: pytest.TempPathFactory) -> Path:
    """One graph cache per test session: each variant is built once, then loaded."""
    return factory.getbasetemp() / "embedding-graphs"


def ready_embedder(factory: pytest.TempPathFactory, *, quantized: bool = False) -> Embedder:
    embedder = Embedder(EmbeddingConfig(cache_dir=str(graph_cache(factory)),
                                        quantized=quantized))
    embedder.start_warmup()
    assert embedder.wait(timeout=300), embedder.error
    return embedder
