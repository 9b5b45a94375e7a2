"""``POST /v1/embeddings/embed``: 384-dimension MiniLM-L6-v2 vectors (spec 4.7).

Request ``{"texts": [str, ...]}`` (1-64 texts of up to 20,000 characters); answer
``{model, dimension, embeddings: [[float, ...], ...]}`` in input order. 503 with a clear
message while the model warms up (with Retry-After) or when the ``embeddings`` extra is not
installed. Inference is CPU-bound and runs in a thread behind the ``embed`` gate
(api/offload.py: 503 ``busy`` with Retry-After past its bound), never on the event loop.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from llm_observe.api.errors import unavailable, validation_error
from llm_observe.api.keys import AppKeys
from llm_observe.api.request import Fields, json_object
from llm_observe.errors import FieldError

# The embedder's request bounds (EmbeddingConfig defaults). MiniLM reads 256 tokens, so
# 20,000 characters is already far more text than the model sees.
MAX_TEXTS = 64
MAX_TEXT_CHARS = 20_000


def _texts(fields: Fields) -> list[str]:
    texts = fields.raw("texts", required=True)
    if texts is None:
        return []
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        fields.fail("texts", "must be a list of strings")
    elif not texts:
        fields.fail("texts", "must contain at least one string")
    elif len(texts) > MAX_TEXTS:
        fields.fail("texts", f"must contain at most {MAX_TEXTS} strings")
    elif any(len(t) > MAX_TEXT_CHARS for t in texts):
        fields.fail("texts", f"each text must be at most {MAX_TEXT_CHARS} characters")
    else:
        return texts
    return []


def _embedder_or_503(request: web.Request) -> Any:
    collector = request.app[AppKeys.collector]
    embedder = collector.embedder
    if embedder is None and not collector.settings.embedding_enabled:
        raise unavailable("embeddings_disabled", "embeddings are turned off in this collector "
                          "(LLM_OBSERVE_EMBEDDING_ENABLED=false)")
    if embedder is None:
        raise unavailable("embeddings_unavailable", "embeddings are not installed in this "
                          "collector: pip install 'llm-observe[embeddings]'")
    if getattr(embedder, "error", None):
        raise unavailable("embeddings_failed", f"the embedding model failed to load: "
                          f"{embedder.error}")
    if not getattr(embedder, "ready", True):
        raise unavailable("warming_up", "the embedding model is warming up; retry shortly", 2)
    return embedder


async def embed_handler(request: web.Request) -> web.Response:
    """Embed each text; vectors are L2-normalised, 384 floats each."""
    gate = request.app[AppKeys.offload].embed
    gate.check()  # full: answer before reading and parsing the body
    fields = await json_object(request)
    texts = _texts(fields)
    fields.check()
    embedder = _embedder_or_503(request)
    from llm_observe.embedding import EmbedderNotReady, EmbeddingInputError

    try:
        vectors = await gate.run(request, embedder.embed, texts)
    except EmbedderNotReady:  # raced the end of the warm-up, or it failed meanwhile
        raise unavailable("warming_up", "the embedding model is warming up; retry shortly",
                          2) from None
    except EmbeddingInputError as exc:  # a bound of a differently configured embedder
        raise validation_error([FieldError(exc.field, exc.message)]) from None
    return web.json_response({"model": embedder.model_name, "dimension": embedder.dimension,
                              "embeddings": [list(map(float, v)) for v in vectors]})
