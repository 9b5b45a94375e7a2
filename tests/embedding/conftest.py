"""Session fixtures: each graph variant is built once per test session into a temp cache."""

from __future__ import annotations

import pytest

from llm_observe.embedding import Embedder
from tests.embedding.helpers import Reference, load_reference, ready_embedder


@pytest.fixture(scope="session")
def reference() -> Reference:
    return load_reference()


@pytest.fixture(scope="session")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return ready_embedder(tmp_path_factory)


@pytest.fixture(scope="session")
def int8_embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return ready_embedder(tmp_path_factory, quantized=True)
