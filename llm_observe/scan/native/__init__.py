"""The word model's compiled scorer, when there is one: which path runs, chosen once.

``_wordmodel.c`` (next to this file) does :meth:`InjectionModel.detect` and
``probability`` on a text's UTF-8 bytes in C, with the same tokens and the same float
operations in the same order, so its scores equal the pure-Python path's bit for bit
(tests/scan/test_wordmodel_native.py). It is optional: setup.py builds it when a C
compiler and the Python headers are there, and nothing else depends on it.

Chosen once, at import (``STATUS`` says which and why):

- ``LLM_OBSERVE_PURE=1`` in the environment: pure Python, whatever is built;
- no built module for this interpreter: pure Python;
- a module built from another ``_wordmodel.c`` than the one beside it (an edited source
  in a checkout, a stale in-place build): pure Python and one warning — an old build
  never shadows an edited source (a wheel ships the ``.c`` it was built from);
- else the compiled scorer.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger(__name__)
SOURCE = Path(__file__).with_name("_wordmodel.c")
PURE_ENV = "LLM_OBSERVE_PURE"


class Scorer(Protocol):
    """What ``_wordmodel.Scorer`` offers (the compiled module has no type stubs)."""

    def detect(self, encoded: bytes, needed: float, threshold: float) -> float | None: ...

    def score(self, encoded: bytes) -> float: ...


def _load() -> tuple[Any, str]:
    """(the compiled module or None, why)."""
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return None, f"pure Python ({PURE_ENV}={os.environ[PURE_ENV]})"
    try:
        from llm_observe.scan.native import _wordmodel  # type: ignore[attr-defined]
    except ImportError:
        return None, "pure Python (the compiled scorer is not built for this interpreter)"
    if SOURCE.exists():
        digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
        if digest != _wordmodel.SOURCE_SHA256:
            log.warning("llm_observe: %s was built from another version of %s; the word model "
                        "runs in pure Python until it is rebuilt (pip install -e .)",
                        _wordmodel.__file__, SOURCE.name)
            return None, "pure Python (the compiled scorer is stale: its source changed)"
    return _wordmodel, "compiled"


_MODULE, STATUS = _load()
COMPILED = _MODULE is not None


def scorer(unigram: dict[bytes, float], bigram: dict[tuple[bytes, bytes], float],
           bound: dict[bytes, float], heavy: dict[tuple[bytes, bytes], float], *,
           bias: float, window: int, short: int, small: float) -> Scorer | None:
    """A compiled scorer over these tables (copied once), or None: pure Python then.

    None also when the tables are not what the C arithmetic reproduces exactly (an
    int weight, a window below 2): the pure path handles every model."""
    if _MODULE is None:
        return None
    try:
        made: Scorer = _MODULE.Scorer(unigram, bigram, bound, heavy, bias, window, short, small)
    except (TypeError, ValueError, OverflowError):
        return None
    return made
