"""The encoder: a 2-layer student of all-MiniLM-L6-v2 and a logistic head, int8.

The graph is the [embeddings] extra's own (llm_observe.embedding.graph, packed tokens,
mean pool + L2 in the graph) built from the base model's embeddings and the shipped
layers (its first ``layers`` layers, feed-forward blocks pruned, fine-tuned: see
scripts/guard_torch.py), then made int8 by its smoothed per-token quantiser
(embedding/quantize.py), the FFN output projection included (the embedding graphs keep
it fp32; for the encoder it measured 0.72x the CPU time with the detection figures
unchanged: docs/scanning.md, "Cost"). It
is cached like the embedding graphs, keyed by the base weights' and the delta's hashes.
The head is one dot product in numpy: ``p = sigmoid(w . embedding + b)``.

A text is cut into windows of :data:`WINDOW` WordPiece tokens (plus [CLS]/[SEP]), with no
overlap, as in training (scripts/guard_torch.py); its score is its highest window's.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnxruntime as ort
from numpy.typing import NDArray
from tokenizers import Tokenizer

from llm_observe.embedding import batching, cache, cpu, weights
from llm_observe.embedding.model import session_options
from llm_observe.guard.files import GuardFiles, GuardRefused

log = logging.getLogger(__name__)

WINDOW = 126  # tokens per window; [CLS] and [SEP] make it 128
# The graph's build recipe: "ffnq" = the FFN output projection int8 too. In the cache
# name, so graphs (and scripts/guard_eval.py's cached scores) of another recipe are not reused.
GRAPH_RECIPE = "int8ffnq-student"
CLS, SEP = 101, 102


@dataclass(frozen=True, slots=True)
class Scored:
    """A text's score and how much of it the model read."""

    score: float       # highest window probability
    windows: int       # windows run
    total_windows: int  # windows the whole text has (more than run: cut by max_windows)


def build_graph(files: GuardFiles, base: weights.ModelFiles) -> bytes:
    """The serialised int8 graph: the base model's embeddings and the shipped layers."""
    from llm_observe.embedding import graph, quantize

    merged = overlay(graph.load_weights(base), files)
    model = quantize.build_int8(base, merged, levels=cpu.int8_weight_levels(),
                                kinds=quantize.ALL_KINDS, num_layers=files.layers)
    return bytes(model.SerializeToString())


# Tensors whose shape follows the (pruned) feed-forward width rather than the base's.
_FFN = ("intermediate.dense.weight", "intermediate.dense.bias", "output.dense.weight")


def overlay(base: dict[str, NDArray[np.float32]],
            files: GuardFiles) -> dict[str, NDArray[np.float32]]:
    """The base's embedding tensors and the shipped layers ``0 .. layers-1``; every tensor
    of those layers must be shipped, in the base's shape (the FFN width may be smaller)."""
    keep = tuple(f"encoder.layer.{i}." for i in range(files.layers))
    merged = {k: v for k, v in base.items() if not k.startswith("encoder.layer.")}
    for name, value in base.items():
        if not name.startswith(keep):
            continue
        mine = files.tensors.get(name)
        if mine is None or not _fits(name, mine.shape, value.shape):
            raise GuardRefused(f"guard model tensor {name} missing or does not fit the base")
        merged[name] = mine
    extra = set(files.tensors) - set(merged) - {"head.weight", "head.bias"}
    if extra:
        raise GuardRefused(f"guard model tensor {sorted(extra)[0]} is not a base tensor")
    return merged


def _fits(name: str, mine: tuple[int, ...], base: tuple[int, ...]) -> bool:
    """The base's shape, or, for the FFN tensors, at most the base's width on the FFN axis."""
    if mine == base:
        return True
    if not name.endswith(_FFN) or len(mine) != len(base):
        return False
    axis = 1 if name.endswith("output.dense.weight") else 0
    return all(m <= b if i == axis else m == b
               for i, (m, b) in enumerate(zip(mine, base, strict=True)))


class GuardModel:
    """A loaded encoder. ``score`` is not locked: one caller at a time (the tier locks)."""

    def __init__(self, files: GuardFiles, *, threads: int = 1,
                 cache_dir: str | None = None) -> None:
        base = weights.locate()  # WeightsNotFound: the [embeddings] extra is missing
        base_sha = weights.weights_sha256(base)
        want = files.manifest.get("base_weights_sha256")
        if want != base_sha:
            raise GuardRefused(f"guard model was trained on base weights {str(want)[:12]}..., "
                               f"installed are {base_sha[:12]}...; refusing the guard model")
        variant = f"guard-{GRAPH_RECIPE}-w{cpu.int8_weight_levels().bit_length() + 1}"
        key = hashlib.sha256(f"{base_sha}|{files.sha256}".encode()).hexdigest()
        path = cache.graph_path(cache.cache_root(cache_dir), key, variant)

        def build() -> bytes:
            return build_graph(files, base)

        options = session_options(threads)
        try:
            graph_path, _ = cache.load_or_build(path, build)
            self.session = ort.InferenceSession(str(graph_path), options,
                                                providers=["CPUExecutionProvider"])
        except OSError as exc:
            log.warning("guard graph cache %s unusable (%s); building in memory", path, exc)
            self.session = ort.InferenceSession(build(), options,
                                                providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(base.tokenizer))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        head_w, head_b = files.head
        self.head_w: NDArray[np.float32] = head_w.astype(np.float32)
        self.head_b = head_b

    def windows(self, text: str) -> list[list[int]]:
        """The text's token windows, each wrapped in [CLS] ... [SEP]."""
        try:
            ids = self.tokenizer.encode(text, add_special_tokens=False).ids
        except TypeError:  # lone surrogates (JSON "\ud800") are no str to the tokenizer
            clean = text.encode("utf-8", "replace").decode("utf-8")
            ids = self.tokenizer.encode(clean, add_special_tokens=False).ids
        return [[CLS, *ids[i:i + WINDOW], SEP] for i in range(0, max(1, len(ids)), WINDOW)]

    def score_windows(self, wins: Sequence[Sequence[int]]) -> NDArray[np.float32]:
        """Probability of each window (one run; the caller bounds how many)."""
        (emb,) = self.session.run(None, batching.pack(wins))
        logits = emb @ self.head_w + self.head_b
        return np.asarray(1.0 / (1.0 + np.exp(-logits)), dtype=np.float32)

    def score(self, text: str, max_windows: int = 8) -> Scored:
        """Highest window probability over the first ``max_windows`` windows."""
        wins = self.windows(text)
        run = wins[:max_windows]
        probs = self.score_windows(run)
        return Scored(float(probs.max()), len(run), len(wins))
