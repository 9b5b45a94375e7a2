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
from itertools import accumulate, pairwise, repeat
from pathlib import Path
from typing import Any, TypeVar

from llm_observe.errors import ConfigError
from llm_observe.scan import native

FORMAT = "llm-observe-injection-linear/1"
MODEL_FILE = "injection_model.tsv"
MANIFEST_FILE = "injection_model.json"
# ASCII punctuation becomes a space so "instructions." and "instructions" are one
# token; the apostrophe stays inside words ("don't", "dan's").
_PUNCT_CHARS = b"!\"#$%&()*+,-./:;<=>?@[\\]^`{|}~\t\n\r\x0b\x0c"
_PUNCT = bytes.maketrans(_PUNCT_CHARS, b" " * len(_PUNCT_CHARS))
_ZERO = repeat(0.0)
# The long-text gate bounds each bigram by its weight if heavier than this, else by
# this: 0.05 keeps ~6,800 of ~30,000 bigrams, which ordinary prose hits ~5% of the
# time (a dict miss costs a third of a hit), and leaves benign 256-token windows of
# the bench's prose 14-20 below the threshold.
_SMALL = 0.05
_SMALLS = repeat(_SMALL)
# Up to this many tokens the one-lookup-per-token bound comes first, as the cheaper gate:
# it rejects ~94% of 32-token prose windows, ~85% at 48, ~63% at 64, none past 128.
_SHORT = 48

Key = bytes | tuple[bytes, bytes]
T = TypeVar("T")


def tokens(folded: str) -> list[bytes]:
    """Word tokens (UTF-8) of an already folded, lower-cased text."""
    return folded.encode("utf-8", "surrogatepass").translate(_PUNCT).split()


def window_spans(n: int, window: int) -> Iterator[tuple[int, int]]:
    """[start, end) of the windows a text of ``n`` tokens is scored on: all of it, or
    half-overlapping windows of ``window`` tokens."""
    if n <= window:
        yield 0, n
        return
    step = window // 2
    for start in range(0, n - step, step):
        yield start, min(start + window, n)


def windows(toks: list[T], window: int) -> Iterator[list[T]]:
    """The token windows a text is scored on (see :func:`window_spans`)."""
    for start, end in window_spans(len(toks), window):
        yield toks[start:end]


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

    __slots__ = ("_bigram", "_bound", "_heavy", "_native", "_needed", "_unigram", "bias",
                 "manifest", "threshold", "window")

    def __init__(self, weights: dict[Key, float], bias: float, window: int,
                 threshold: float, manifest: dict[str, Any]) -> None:
        # bytes and (bytes, bytes) keys: a token's hash is computed once and cached by
        # the bytes object, so the pair lookups cost no more hashing than the tokens.
        self._unigram = {k: w for k, w in weights.items() if isinstance(k, bytes)}
        self._bigram = {k: w for k, w in weights.items() if isinstance(k, tuple)}
        self.bias, self.window, self.threshold, self.manifest = bias, window, threshold, manifest
        # The gate: a bigram (a, b) weighs at most min(best after a, best before b) <=
        # half of each, so a token's bound is its unigram weight plus half the largest
        # positive weight of a bigram it starts and half of one it ends; a window's
        # bound sum is then >= its exact sum.
        best_next: dict[bytes, float] = {}
        best_prev: dict[bytes, float] = {}
        for (first, second), w in self._bigram.items():
            best_next[first] = max(w, best_next.get(first, 0.0))
            best_prev[second] = max(w, best_prev.get(second, 0.0))
        self._bound = {tok: self._unigram.get(tok, 0.0)
                       + (best_next.get(tok, 0.0) + best_prev.get(tok, 0.0)) / 2
                       for tok in self._unigram.keys() | best_next.keys() | best_prev.keys()}
        # A window of n tokens can reach the threshold only if its sum reaches
        # (logit(threshold) - bias) * sqrt(n + 1); the margin absorbs float rounding.
        clamped = min(max(threshold, 1e-12), 1 - 1e-12)
        self._needed = math.log(clamped / (1 - clamped)) - bias - 1e-6
        self._heavy = {k: w for k, w in self._bigram.items() if w > _SMALL}
        # The same tables in C (scan/native), when built: detect and probability then run
        # there, same floats bit for bit; None = this pure-Python code.
        self._native = native.scorer(self._unigram, self._bigram, self._bound, self._heavy,
                                     bias=bias, window=window, short=_SHORT, small=_SMALL)

    @property
    def compiled(self) -> bool:
        """Whether detect and probability run in the compiled scorer (scan/native)."""
        return self._native is not None

    def pure(self) -> InjectionModel:
        """The same model scoring in pure Python only (the differential tests' reference)."""
        other = self._share(self.threshold)
        other._native = None
        return other

    def with_threshold(self, threshold: float) -> InjectionModel:
        """The same weights (shared, not copied) flagging at another threshold."""
        if threshold == self.threshold:
            return self
        return self._share(threshold)

    def _share(self, threshold: float) -> InjectionModel:
        # Built empty, then given these tables: copy.copy cannot copy a compiled (mypyc)
        # instance, and the constructor works out ``_needed`` for the new threshold.
        other = InjectionModel({}, self.bias, self.window, threshold, self.manifest)
        other._unigram, other._bigram = self._unigram, self._bigram
        other._bound, other._heavy = self._bound, self._heavy
        other._native = self._native
        return other

    def probability(self, folded: str) -> float:
        """Highest window score of a folded text (0.0 for a text without words)."""
        if self._native is not None:
            return self._native.score(folded.encode("utf-8", "surrogatepass"))
        return self._score(tokens(folded))

    def detect(self, folded: str, encoded: bytes | None = None) -> float | None:
        """The score of a folded text if it reaches ``threshold``, else None; ``encoded``:
        ``folded.encode("utf-8")`` when the caller has it (the scanner's ASCII case).

        Cheaper than :meth:`probability` on most texts: bounds on the score are
        checked first (one dict lookup per token on short texts; then exact unigrams
        and heavy bigrams), and the text is scored exactly only when both reach the
        threshold. Neither underestimates (see ``__init__`` and ``_SMALL``), so no
        hit is lost."""
        if self._native is not None:
            return self._native.detect(folded.encode("utf-8", "surrogatepass")
                                       if encoded is None else encoded,
                                       self._needed, self.threshold)
        toks = tokens(folded) if encoded is None else encoded.translate(_PUNCT).split()
        if not toks:
            return None
        n = len(toks)
        if n <= _SHORT:
            if sum(map(self._bound.get, toks, _ZERO)) < self._needed * math.sqrt(n + 1):
                return None
            # Past the bound a short text is scored exactly at once: the heavy-bigram
            # gate below costs about what the exact bigram pass does on so few tokens.
            score = self._score(toks)
            return score if score >= self.threshold else None
        # Past a few dozen tokens the per-token bound nearly always passes ("to the"
        # weighs 2.0, so every "to" is bounded by it); this tighter one takes exact
        # unigram sums plus max(weight, _SMALL) of each bigram, from the small dict of
        # heavy ones. The exact bigram lookups (mostly hits, the costliest part) are
        # then paid only if a window can reach the threshold.
        per_token = list(map(self._unigram.get, toks, _ZERO))
        if not self._may_pass(per_token, list(map(self._heavy.get, pairwise(toks), _SMALLS))):
            return None
        score = self._score(toks, per_token)
        return score if score >= self.threshold else None

    def _may_pass(self, per_token: list[float], pair_bounds: list[float]) -> bool:
        """Whether some window's bound reaches the threshold (windows as :func:`windows`).

        A window is a few slices summed in C: cheaper here than prefix sums, which
        allocate a float per token (the exact score keeps them: its sums are the
        trained model's)."""
        return any(sum(per_token[start:end]) + sum(pair_bounds[start:end - 1])
                   >= self._needed * math.sqrt(end - start + 1)
                   for start, end in window_spans(len(per_token), self.window))

    def _score(self, toks: list[bytes], per_token: list[float] | None = None) -> float:
        if not toks:
            return 0.0
        if len(toks) <= self.window:  # one window: no prefix sums, no lists
            # The same float additions, in the same order, as summing ``per_token``.
            unigrams = (sum(per_token) if per_token is not None
                        else sum(map(self._unigram.get, toks, _ZERO)))
            best = (unigrams
                    + sum(map(self._bigram.get, pairwise(toks), _ZERO))) / math.sqrt(len(toks) + 1)
        else:
            if per_token is None:
                per_token = list(map(self._unigram.get, toks, _ZERO))
            per_pair = list(map(self._bigram.get, pairwise(toks), _ZERO))
            best = max(total / math.sqrt(n + 1)
                       for total, n in self._window_sums(per_token, per_pair))
        z = self.bias + best
        # Clamped: exp of a large negative z overflows, and the score must stay finite.
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def _window_sums(self, per_token: list[float],
                     per_pair: list[float]) -> Iterator[tuple[float, int]]:
        """(sum, tokens) of each window of :func:`windows`, each value computed once.

        ``per_pair[i]`` belongs to tokens i and i+1, so it counts only in windows
        holding both; overlapping windows share prefix sums instead of re-scoring."""
        tok_sum, pair_sum = [0.0, *accumulate(per_token)], [0.0, *accumulate(per_pair)]
        for start, end in window_spans(len(per_token), self.window):
            yield tok_sum[end] - tok_sum[start] + pair_sum[end - 1] - pair_sum[start], end - start


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
