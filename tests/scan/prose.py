"""Ordinary prose for the false-positive measurement, generated from committed seed text.

Two corpora:
- ``generate_prose``: documents of 1-6 sentences drawn from tests/data/prose_seed.txt
  (hand-written everyday prose: recipes, reports, travel, support replies, notes),
  with every digit run replaced by random digits of the same length, so numbers keep
  their shapes (years, prices, times, versions) but take many values. Any size can be
  generated deterministically; nothing large is committed.
- ``stdlib_doc_paragraphs``: paragraphs of CPython's own reference documentation
  (pydoc_data.topics, shipped with every Python): text written by others, technical
  and number-heavy, a harder test than the seed prose.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

SEED_FILE = Path(__file__).resolve().parents[1] / "data" / "prose_seed.txt"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"])")
_DIGITS = re.compile(r"[0-9]+")


def seed_sentences() -> list[str]:
    """Every sentence of the seed file."""
    text = SEED_FILE.read_text(encoding="utf-8")
    return [s.strip() for para in text.split("\n\n") for s in _SENTENCE_END.split(para)
            if s.strip()]


def _reroll_digits(sentence: str, rng: random.Random) -> str:
    def reroll(m: re.Match[str]) -> str:
        n = len(m.group())
        first = str(rng.randint(1, 9)) if n > 1 else str(rng.randint(0, 9))
        return first + "".join(str(rng.randint(0, 9)) for _ in range(n - 1))
    return _DIGITS.sub(reroll, sentence)


def generate_prose(total_chars: int, seed: int = 7) -> list[str]:
    """Documents of ordinary prose adding up to at least ``total_chars`` characters."""
    rng = random.Random(seed)
    sentences = seed_sentences()
    docs: list[str] = []
    size = 0
    while size < total_chars:
        picked = [_reroll_digits(rng.choice(sentences), rng) for _ in range(rng.randint(1, 6))]
        doc = (" " if rng.random() < 0.8 else "\n").join(picked)
        docs.append(doc)
        size += len(doc)
    return docs


def stdlib_doc_paragraphs() -> list[str]:
    """Paragraphs of CPython's reference documentation (pydoc_data.topics)."""
    from pydoc_data.topics import topics

    paragraphs: list[str] = []
    for name in sorted(topics):
        paragraphs.extend(p.strip() for p in topics[name].split("\n\n") if p.strip())
    return paragraphs
