"""The encoder tier's shipped files: the student's layers + head, and their manifest.

``llm_observe/guard/model/`` holds ``guard_encoder.safetensors`` (the first ``layers``
layers of all-MiniLM-L6-v2 after pruning and fine-tuning, fp16, under their BERT names,
plus ``head.weight`` and ``head.bias``) and ``guard_model.json`` (its SHA-256, the
SHA-256 of the base weights it was cut from, ``layers``, the thresholds, the training
sources with versions). The rest of the encoder -- the token and position embeddings --
is the base model the ``[embeddings]`` extra installs (llm_observe.embedding.weights).

A weights file whose hash differs from the manifest's is refused (:class:`GuardRefused`,
one line): a corrupted or swapped file must not silently score traffic. Missing files or a
missing base model are :class:`GuardUnavailable`: the cheap tiers carry on without it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from llm_observe.errors import PermanentError

MODEL_DIR = Path(__file__).resolve().parent / "model"
WEIGHTS_FILE = "guard_encoder.safetensors"
MANIFEST_FILE = "guard_model.json"
FORMAT = "llm-observe-guard/2"


class GuardUnavailable(PermanentError):
    """The encoder tier cannot run here (extra not installed, files missing)."""


class GuardRefused(PermanentError):
    """The shipped weights do not match their manifest (corrupted or swapped): the tier is
    refused, with one log line; the cheap tiers carry on."""


@dataclass(frozen=True, slots=True)
class GuardFiles:
    """The checked delta weights and what the manifest says about them."""

    tensors: dict[str, NDArray[np.float32]]
    manifest: dict[str, Any]
    sha256: str

    @property
    def head(self) -> tuple[NDArray[np.float32], float]:
        return self.tensors["head.weight"], float(self.tensors["head.bias"][0])

    @property
    def layers(self) -> int:
        """How many encoder layers the model has (all shipped in the weights file)."""
        return int(self.manifest["layers"])

    def thresholds(self) -> dict[str, float]:
        return {str(k): float(v) for k, v in self.manifest["thresholds"].items()}


def load_files(directory: Path | None = None) -> GuardFiles:
    """Read and verify the shipped files; raise GuardUnavailable or GuardRefused."""
    folder = directory or MODEL_DIR
    weights, manifest_path = folder / WEIGHTS_FILE, folder / MANIFEST_FILE
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        blob = weights.read_bytes()
    except OSError as exc:
        raise GuardUnavailable(f"guard model files missing: {exc.strerror}: "
                               f"{exc.filename}") from exc
    except ValueError as exc:
        raise GuardRefused(f"{manifest_path}: not JSON ({exc})") from exc
    if (not isinstance(manifest, dict) or manifest.get("format") != FORMAT
            or not isinstance(manifest.get("layers"), int) or manifest["layers"] < 1):
        raise GuardRefused(f"{manifest_path}: not a {FORMAT} manifest")
    digest = hashlib.sha256(blob).hexdigest()
    if digest != manifest.get("sha256"):
        raise GuardRefused(f"{weights}: sha256 {digest[:12]}... does not match the manifest's "
                           f"{str(manifest.get('sha256'))[:12]}...; refusing the guard model")
    try:
        from safetensors.numpy import load as load_tensors
    except ImportError as exc:
        raise GuardUnavailable(f"guard tier needs the [guard] extra: {exc}") from exc
    tensors = {k: v.astype(np.float32) for k, v in load_tensors(blob).items()}
    if "head.weight" not in tensors or "head.bias" not in tensors:
        raise GuardRefused(f"{weights}: no head tensors")
    return GuardFiles(tensors, manifest, digest)
