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
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from itertools import repeat
from pathlib import Path
from typing import Any

from llm_observe.errors import ConfigError

FORMAT = "llm-observe-injection-linear/1"
MODEL_FILE = "injection_model.tsv"
MANIFEST_FILE = "injection_model.json"
# Punctuation becomes a space so "instructions." and "instructions" are one token;
# the apostrophe stays inside words ("don't", "dan's"). str.translate with a table of
# this size is the cheapest split of words from punctuation in CPython.
_PUNCT = str.maketrans({c: " " for c in "!\"#$%&()*+,-./:;<=>?@[\\]^`{|}~\u201c\u201d\u2018\u2014"})
_ZERO = repeat(0.0)

Key = str | tuple[str, str]


def tokens(folded: str) -> list[str]:
    """Word tokens of an already lower-cased text."""
    return folded.translate(_PUNCT).split()


def windows(toks: list[str], window: int) -> Iterator[list[str]]:
    """The token windows a text is scored on: all of it, or half-overlapping windows."""
    if len(toks) <= window:
        yield toks
        return
    step = window // 2
    for start in range(0, len(toks) - step, step):
        yield toks[start:start + window]


def features(toks: list[str]) -> Iterator[Key]:
    """Every feature occurrence of a window: its unigrams, then its bigrams."""
    yield from toks
    yield from zip(toks, toks[1:])


def default_model_dir() -> Path:
    """Where the shipped weights and their manifest live (inside the package)."""
    return Path(str(resources.files("llm_observe.scan") / "model"))


@dataclass(frozen=True, slots=True)
class InjectionModel:
    """Loaded weights; ``probability(folded_text)`` is the injection score in [0, 1]."""

    weights: dict[Key, float]
    bias: float
    window: int
    threshold: float
    manifest: dict[str, Any]

    def probability(self, folded: str) -> float:
        """Highest window score of a lower-cased text (0.0 for a text without words)."""
        toks = tokens(folded)
        if not toks:
            return 0.0
        get = self.weights.get
        best = -math.inf
        for win in windows(toks, self.window):
            total = sum(map(get, win, _ZERO)) + sum(map(get, zip(win, win[1:]), _ZERO))
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
        for line in text.splitlines():
            value, _, key = line.partition("\t")
            first, space, second = key.partition(" ")
            weights[(first, second) if space else key] = int(value) / scale
    except ValueError as exc:
        raise ConfigError(source, "weights", f"bad line: {exc}") from None
    return InjectionModel(weights, float(manifest["bias"]), int(manifest["window"]),
                          float(threshold), manifest)
