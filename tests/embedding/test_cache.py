"""Graph cache: keyed by weights hash and variant, reused across processes, never torn."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_observe.embedding import Embedder, EmbeddingConfig, cache
from llm_observe.embedding.model import load
from tests.embedding.helpers import graph_cache


def test_key_changes_with_weights_and_variant() -> None:
    keys = {cache.graph_key("a" * 64, "fp32"), cache.graph_key("b" * 64, "fp32"),
            cache.graph_key("a" * 64, "int8")}
    assert len(keys) == 3


def test_default_root_follows_env_then_xdg(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    monkeypatch.delenv(cache.ENV_CACHE_DIR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_root() == tmp_path / "xdg" / "llm-observe" / "embedding"
    monkeypatch.setenv(cache.ENV_CACHE_DIR, str(tmp_path / "env"))
    assert cache.cache_root() == tmp_path / "env"
    assert cache.cache_root(str(tmp_path / "cfg")) == tmp_path / "cfg"


def test_second_load_uses_the_cached_graph(tmp_path_factory: pytest.TempPathFactory,
                                           embedder: Embedder) -> None:
    root = graph_cache(tmp_path_factory)
    model, report = load(quantized=False, threads=1, max_batch=8, cache_dir=str(root))
    assert report.built is False
    assert report.graph_path is not None and report.graph_path.parent == root
    assert [p.name for p in root.iterdir() if p.suffix == ".tmp"] == []
    assert model.encode(["cached"]).shape == (1, 384)


def test_failed_build_leaves_no_partial_file(tmp_path: Path) -> None:
    def broken() -> bytes:
        raise RuntimeError("boom")

    target = tmp_path / "g.onnx"
    with pytest.raises(RuntimeError):
        cache.load_or_build(target, broken)
    assert list(tmp_path.iterdir()) == []
    assert cache.load_or_build(target, lambda: b"graph") == (target, True)
    assert cache.load_or_build(target, lambda: b"other") == (target, False)
    assert target.read_bytes() == b"graph"


def test_unwritable_cache_still_serves(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    embedder = Embedder(EmbeddingConfig(cache_dir=str(blocker / "cache")))
    embedder.start_warmup()
    assert embedder.wait(300), embedder.error
    assert embedder.load_report is not None and embedder.load_report.graph_path is None
    assert len(embedder.embed(["still works"])[0]) == 384
