"""Training-only families for the encoder tier (issue 23, guard5): short direct attacks
and benign user turns in the styles that cost the user role's false-alarm budget.

Opt-in (``train_guard.py --extra``; guard_data.rows(extra=True)): trained and measured
once by guard5 and not shipped (docs/scanning.md, "Training-only families"), so the
shipped weights still reproduce without it. ``rows(base, wheels)`` returns guard_data-style
rows for:

- scripts/injection_data/short_overrides.txt, kind ``attack``: short plain overrides,
  persona and mode-switch one-liners, refusal suppression, prompt extraction, fake
  dialogue turns, translated overrides (written from first principles; the held-out
  attack families were not read);
- scripts/injection_data/styled_benign.txt, kind ``styled_benign``: role-play and
  persona set-ups, "act as" utilities, judge and grading prompts, moderation and
  red-team discussion, villain fiction, strongly worded requests, pasted system
  prompts.

Contract: every row here is ``split == "train"`` — none of these families is hashed
into validation, so the validation pool (and the comparison with the shipped model)
stays exactly as it was. A line sharing any 8-word run with a validation text of
``base`` is dropped (``dropped`` counts them), and so is any final row; slot fillers and
variant prefixes share no such run either (``fillers``), so nothing here copies a
held-out text. (Before guard8 found it, fillers were not checked: guard5's measured run
used rows of which some shared a run with validation text through a filler.)
Families are not merged with the corpus's (injection_corpus.merge_families could rename
one into a held-out family). The kind ``styled_benign`` is in no evaluation pool and is
not subsampled (scripts/guard_windows.EXTRA_NEG_PER_KIND), so all of it trains.
Deterministic: variants from one ``random.Random`` seeded per family and line.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import injection_corpus
import injection_sources as src

FILES = {"short_overrides": ("attack", 1, 3), "styled_benign": ("styled_benign", 0, 2)}
RUN = 8  # words: a shared run this long counts as a copy of a validation text
_WORD = re.compile(r"\w+")


def _runs(text: str) -> set[str]:
    words = _WORD.findall(text.lower())
    return {" ".join(words[i:i + RUN]) for i in range(len(words) - RUN + 1)}


def copies(text: str, held: set[str]) -> bool:
    """Whether ``text`` shares an 8-word run with ``held`` (:func:`held_runs`)."""
    return not _runs(text).isdisjoint(held)


def held_runs(base: list[dict[str, Any]]) -> set[str]:
    """Every 8-word run of the validation texts of ``base``."""
    return set().union(*(_runs(str(r["text"])) for r in base if r["split"] == "validation"))


def fillers(base_fillers: list[str], held: set[str]) -> list[str]:
    """The slot fillers and variant prefixes that share no 8-word run with validation text:
    the corpus builder puts some training-family requests inside validation rows too, so
    a filler could bring a validation run into a training row (found by guard8)."""
    return [t for t in base_fillers if not copies(t, held)]


def _variants(text: str, label: int, n: int, rng: random.Random, harmful: list[str],
              ordinary: list[str]) -> list[str]:
    """``n`` variants: the {task} slot filled (attacks: a harmful request 60 % of the time,
    else an ordinary one, as injection_corpus does), and for the second and later a
    casing/punctuation change or a short ordinary request in front."""
    out = []
    for k in range(n):
        fill = rng.choice(harmful) if label and rng.random() < 0.6 else rng.choice(ordinary)
        v = text.replace("{task}", fill[:1].lower() + fill[1:])
        if k:
            roll = rng.random()
            if roll < 0.3:
                v = v.lower()
            elif roll < 0.6:
                v = f"{rng.choice(ordinary)}\n\n{v}"
        out.append(v)
    return list(dict.fromkeys(out))


def rows(base: list[dict[str, Any]], wheels: dict[str, Path]) -> tuple[list[dict[str, Any]], int]:
    held = held_runs(base)
    # Fillers from training families only (injection_corpus's harmful_requests/<i // 10>
    # and benign/*) that share no run with validation text, so none enters through a slot.
    harmful = fillers([t for i, t in enumerate(src.harmful_requests(wheels))
                       if not injection_corpus.held_out(f"harmful_requests/{i // 10}")], held)
    ordinary = fillers([t for f, t in src.hand_written("benign")
                        if len(t) < 200 and "{" not in t and not injection_corpus.held_out(f)],
                       held)
    out: list[dict[str, Any]] = []
    dropped = 0
    for name, (kind, label, n) in FILES.items():
        for family, text in src.hand_written(name):
            if copies(text, held):
                dropped += 1
                continue
            rng = random.Random(f"{family}|{text}")
            for v in _variants(text, label, n, rng, harmful, ordinary):
                if copies(v, held):  # cannot happen with the fillers above; kept so the
                    dropped += 1     # contract holds row by row
                    continue
                out.append({"text": v, "label": label, "family": family, "split": "train",
                            "kind": kind, "role": "user", "source": "guard_extra"})
    return out, dropped
