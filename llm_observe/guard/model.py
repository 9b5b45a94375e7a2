"""The encoder: all-MiniLM-L6-v2 with fine-tuned top layer(s) and a logistic head, int8.

The graph is the [embeddings] extra's own (llm_observe.embedding.graph, packed tokens,
mean pool + L2 in the graph) built from the base weights with the shipped top layers laid
over them, then made int8 by its smoothed per-token quantiser (embedding/quantize.py), the
FFN output projection included (the embedding graphs keep it fp32; here it measured 0.72x
the CPU time with the detection figures unchanged: docs/scanning.md, "Cost"). It
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
GRAPH_RECIPE = "int8ffnq"
CLS, SEP = 101, 102


@dataclass(frozen=True, slots=True)
class Scored:
    """A text's score and how much of it the model read."""

    score: float       # highest window probability
    windows: int       # windows run
    total_windows: int  # windows the whole text has (more than run: cut by max_windows)


def build_graph(files: GuardFiles, base: weights.ModelFiles,
                ffn_out_int8: bool = True) -> bytes:
    """The serialised int8 graph: base weights with the shipped layers laid over them.

    ``ffn_out_int8=False`` is the earlier recipe (FFN output in fp32), kept so
    bench/scan_guard.py can time both in one run."""
    from llm_observe.embedding import graph, quantize

    merged = graph.load_weights(base)
    for name, value in files.tensors.items():
        if not name.startswith("head."):
            if name not in merged or merged[name].shape != value.shape:
                raise GuardRefused(f"guard model tensor {name} does not fit the base")
            merged[name] = value
    kinds = quantize.ALL_KINDS if ffn_out_int8 else quantize.QUANTIZED_KINDS
    model = quantize.build_int8(base, merged, levels=cpu.int8_weight_levels(), kinds=kinds)
    return bytes(model.SerializeToString())


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
