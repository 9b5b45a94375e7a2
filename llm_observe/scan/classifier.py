"""The learned injection tier: a linear model over word unigrams and bigrams.

It runs on every span beside the phrase automaton, so it is built for cost: the text
it sees is the scanner's folded copy (already lower-cased), tokens come from one
``str.split`` after punctuation is spaced out, and scoring is two ``map(dict.get)``
passes (unigrams, then bigram tuples) summed in C. No numpy, no tokenizer library.

Score of a window of ``n`` tokens: ``sigmoid(bias + sum(weights of its uni- and
bigrams, with repeats) / sqrt(n + 1))``; a text longer than ``window`` tokens is scored
window by window (half-overlapping) and the highest window counts, so one injected
paragraph in a long document is not diluted away. ``scripts/train_injection.py``
trains the weights with this very featuriser (it imports :func:`tokens` and
:func:`windows`), so training and inference cannot drift.

The weights file is checked against the SHA-256 in its manifest at load: a weights
file that is not the one trained and evaluated is refused, not silently used.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from functools import lru_cache
from importlib import resources
from itertools import pairwise, repeat
from operator import add, mul
from pathlib import Path
from typing import Any, TypeVar

from llm_observe.errors import ConfigError

FORMAT = "llm-observe-injection-linear/1"
MODEL_FILE = "injection_model.tsv"
MANIFEST_FILE = "injection_model.json"
# ASCII punctuation becomes a space so "instructions." and "instructions" are one
# token; the apostrophe stays inside words ("don't", "dan's").
_PUNCT_CHARS = b"!\"#$%&()*+,-./:;<=>?@[\\]^`{|}~\t\n\r\x0b\x0c"
_PUNCT = bytes.maketrans(_PUNCT_CHARS, b" " * len(_PUNCT_CHARS))
_ZERO = repeat(0.0)
_ZERO_ID = repeat(0)

Key = bytes | tuple[bytes, bytes]
T = TypeVar("T")


def tokens(folded: str) -> list[bytes]:
    """Word tokens (UTF-8) of an already folded, lower-cased text."""
    return folded.encode("utf-8", "surrogatepass").translate(_PUNCT).split()


def windows(toks: list[T], window: int) -> Iterator[list[T]]:
    """The token windows a text is scored on: all of it, or half-overlapping windows."""
    if len(toks) <= window:
        yield toks
        return
    step = window // 2
    for start in range(0, len(toks) - step, step):
        yield toks[start:start + window]


def features(toks: list[bytes]) -> Iterator[Key]:
    """Every feature occurrence of a window: its unigrams, then its bigrams."""
    yield from toks
    yield from pairwise(toks)


def default_model_dir() -> Path:
    """Where the shipped weights and their manifest live (inside the package)."""
    return Path(str(resources.files("llm_observe.scan") / "model"))


class InjectionModel:
    """Loaded weights; ``probability(folded_text)`` is the injection score in [0, 1].

    Immutable after construction, so one instance is shared by every scanner."""

    __slots__ = ("_bigram", "_ids", "_k", "_unigram", "bias", "manifest", "threshold",
                 "window")

    def __init__(self, weights: dict[Key, float], bias: float, window: int,
                 threshold: float, manifest: dict[str, Any]) -> None:
        vocab = sorted({t for k in weights for t in (k if isinstance(k, tuple) else (k,))})
        self._ids = {tok: i for i, tok in enumerate(vocab, 1)}  # 0: unknown token
        self._k = k = len(vocab) + 1
        self._unigram = [0.0] * k
        self._bigram: dict[int, float] = {}
        for key, w in weights.items():
            if isinstance(key, tuple):  # ids >= 1, so id1 * k + id2 never meets an unknown's
                self._bigram[self._ids[key[0]] * k + self._ids[key[1]]] = w
            else:
                self._unigram[self._ids[key]] = w
        self.bias, self.window, self.threshold, self.manifest = bias, window, threshold, manifest

    def probability(self, folded: str) -> float:
        """Highest window score of a folded text (0.0 for a text without words)."""
        ids = list(map(self._ids.get, tokens(folded), _ZERO_ID))
        if not ids:
            return 0.0
        uni, get, k = self._unigram.__getitem__, self._bigram.get, repeat(self._k)
        best = -math.inf
        for win in windows(ids, self.window) if len(ids) > self.window else (ids,):
            total = sum(map(uni, win)) + sum(map(get, map(add, map(mul, win, k), win[1:]), _ZERO))
            best = max(best, total / math.sqrt(len(win) + 1))
        z = self.bias + best
        # Clamped: exp of a large negative z overflows, and the score must stay finite.
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def load_model(directory: str | Path | None = None,
               threshold: float | None = None) -> InjectionModel:
    """Load weights + manifest (None = the packaged model); ConfigError if they disagree."""
    where = Path(directory) if directory is not None else default_model_dir()
    manifest_path, model_path = where / MANIFEST_FILE, where / MODEL_FILE
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        raw = model_path.read_bytes()
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(where, "injection model", f"cannot read: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ConfigError(manifest_path, "format", f"not a {FORMAT} manifest")
    digest = hashlib.sha256(raw).hexdigest()
    if digest != manifest.get("sha256"):
        raise ConfigError(model_path, "sha256", f"is {digest}, the manifest says "
                                                f"{manifest.get('sha256')}: not the trained file")
    return parse_weights(raw.decode("utf-8"), manifest,
                         manifest["threshold"] if threshold is None else threshold, model_path)


@lru_cache(maxsize=8)
def shared_model(threshold: float | None = None) -> InjectionModel:
    """The packaged model, loaded once per process and threshold (it is immutable)."""
    return load_model(None, threshold)


def parse_weights(text: str, manifest: dict[str, Any], threshold: float,
                  source: object = "<memory>") -> InjectionModel:
    """Weights file: one ``<int weight>\\t<feature>`` line each; a bigram holds one space."""
    scale = float(manifest["scale"])
    weights: dict[Key, float] = {}
    try:
        for line in text.encode("utf-8").splitlines():
            value, _, key = line.partition(b"\t")
            first, space, second = key.partition(b" ")
            weights[(first, second) if space else key] = int(value) / scale
    except ValueError as exc:
        raise ConfigError(source, "weights", f"bad line: {exc}") from None
    return InjectionModel(weights, float(manifest["bias"]), int(manifest["window"]),
                          float(threshold), manifest)
