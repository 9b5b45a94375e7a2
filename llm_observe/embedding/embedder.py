"""The public embedder: all-MiniLM-L6-v2 sentence vectors, warmed in the background.

``Embedder.start_warmup()`` returns at once; a daemon thread locates the weights, loads (or
builds and caches) the ONNX graph and runs one warm-up batch. Until then ``embed`` raises
:class:`EmbedderNotReady` (retryable: the REST API answers 503 "warming up"), so no request
ever waits for a model load. ``embed`` is thread-safe: calls are serialised, because one
onnxruntime run already uses every intra-op thread and two at once would only contend.

This module imports no onnxruntime/numpy/tokenizers: they load in the warm-up thread, so the
package imports (and reports a clear ``error``) even where the embeddings extra is missing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llm_observe.embedding.weights import MODEL_NAME
from llm_observe.errors import ConfigError, PermanentError, RetryableError

if TYPE_CHECKING:
    from llm_observe.embedding.model import EmbeddingModel, LoadReport

log = logging.getLogger(__name__)

DIMENSION = 384
# Bounds on config values: far beyond any sane setting, low enough to catch typos.
_MAX_THREADS = 256
_MAX_BATCH = 1024
_MAX_TEXTS = 10_000
_MAX_CHARS = 1_000_000


class EmbedderNotReady(RetryableError):
    """The model is still warming up (or failed to load; then the message says why)."""


class EmbeddingInputError(PermanentError):
    """A request to embed broke a bound (too many texts, a text too long, not a string)."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


@dataclass(frozen=True, slots=True)
class EmbeddingConfig:
    """Embedding settings.

    threads: onnxruntime intra-op threads (0 = its default, one per physical core).
    batch_size: most texts per onnxruntime run (texts are grouped by length under it).
    quantized: use the int8 variant (faster, cosine >= 0.995 to fp32; see docs/embeddings.md).
    cache_dir: where built graphs are cached (None = $LLM_OBSERVE_CACHE_DIR or ~/.cache).
    max_texts / max_chars: request bounds enforced by ``Embedder.embed``.
    """

    threads: int = 0
    batch_size: int = 32
    quantized: bool = False
    cache_dir: str | None = None
    max_texts: int = 64
    max_chars: int = 20_000

    def validate(self) -> None:
        """Raise ConfigError naming the first bad field."""
        bounds = {"threads": (0, _MAX_THREADS), "batch_size": (1, _MAX_BATCH),
                  "max_texts": (1, _MAX_TEXTS), "max_chars": (1, _MAX_CHARS)}
        for name, (low, high) in bounds.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError("embedding", name, "must be an integer")
            if not low <= value <= high:
                raise ConfigError("embedding", name, f"must be between {low} and {high}")
        if not isinstance(self.quantized, bool):
            raise ConfigError("embedding", "quantized", "must be true or false")
        if self.cache_dir is not None and (not isinstance(self.cache_dir, str)
                                           or not self.cache_dir.strip()):
            raise ConfigError("embedding", "cache_dir", "must be a non-empty path or null")


class Embedder:
    """all-MiniLM-L6-v2 embeddings on onnxruntime; see the module docstring for the contract."""

    model_name: str = MODEL_NAME
    dimension: int = DIMENSION

    def __init__(self, config: EmbeddingConfig) -> None:
        config.validate()
        self.config = config
        self.load_report: LoadReport | None = None
        self._model: EmbeddingModel | None = None
        self._error: str | None = None
        self._ready = threading.Event()
        self._run_lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start_warmup(self) -> None:
        """Start loading the model in a background thread; returns at once (idempotent)."""
        with self._start_lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._warm, name="llm-observe-embedding-warmup",
                                            daemon=True)
            self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until warm-up has finished (ready or failed); return ``ready``."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.ready

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    @property
    def error(self) -> str | None:
        return self._error

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Vectors for a request's texts; raise EmbeddingInputError past the configured bounds,
        EmbedderNotReady before warm-up has finished."""
        if not isinstance(texts, list) or not texts:
            raise EmbeddingInputError("texts", "must be a non-empty list of strings")
        if len(texts) > self.config.max_texts:
            raise EmbeddingInputError("texts", f"at most {self.config.max_texts} texts per call")
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise EmbeddingInputError(f"texts[{i}]", "must be a string")
            if len(text) > self.config.max_chars:
                raise EmbeddingInputError(f"texts[{i}]",
                                          f"must be at most {self.config.max_chars} characters")
        return self._encode(texts)

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for a pipeline batch: any count; each text cut to its first ``max_chars``
        characters first (the 256-token window ends long before for any real text)."""
        limit = self.config.max_chars
        return self._encode([t[:limit] for t in texts])

    def _encode(self, texts: Sequence[str]) -> list[list[float]]:
        model = self._model
        if model is None:
            raise EmbedderNotReady(self._error or "embedding model is warming up")
        with self._run_lock:
            vectors = model.encode(texts)
        result: list[list[float]] = vectors.tolist()
        return result

    def _warm(self) -> None:
        try:
            from llm_observe.embedding.model import load

            model, report = load(quantized=self.config.quantized, threads=self.config.threads,
                                 max_batch=self.config.batch_size,
                                 cache_dir=self.config.cache_dir)
        except Exception as exc:  # any failure must surface as `error`, not kill silently
            self._error = f"embedding model failed to load: {exc}"
            log.error("%s", self._error, exc_info=not isinstance(exc, PermanentError))
            return
        self._model, self.load_report = model, report
        self._ready.set()
        log.info("embedding model ready (%s, %s graph, %.2f s)", model.variant,
                 "built" if report.built else "cached", report.seconds)
