"""Validation figures of the injection tiers on realistic traffic (issue 23 items 3-5).

    python scripts/guard_eval.py [--work DIR] [--write]

    python scripts/guard_eval.py --baseline OLD.npz   # compare with an earlier model

Scores every validation row of scripts/guard_data.py (never trained on: held-out attack
families, held-out benign families) with (a) today's word model, (b) the shipped encoder
(int8, llm_observe.guard) over 128-token windows (the first 8), and (c) with
``--baseline``, an earlier encoder's scores of the same rows saved by an earlier version
of this script (key ``tuned``; the 6-layer model's are made by the command in
docs/scanning.md, "Cost"). Window embeddings are cached in ``--work``.

Reports (JSON lines):
- the comparison at a matched false-alarm rate: each model's threshold set at 1% on the
  realistic benign validation texts of the untrusted roles (user, tool), then recall on
  the held-out attack families, overall and under 300 characters;
- thresholds per role chosen *out of fold*: benign families split in two by hash; the
  threshold at <= 1% false alarms on one half is applied to the other (both ways), and
  the shipped threshold is the one at <= 1% on all of them;
- the full detector (phrases, regexes, word model at its role thresholds, and the encoder
  gated by the word score) per role and length band, direct and indirect attacks apart.

``--write`` stores the thresholds, the gate and the figures in guard_model.json. These are
the union rule's (a model without a ``stack`` section); the combined verdict that scan
requests use is built and measured by scripts/guard_stack.py (it reuses ``scores``,
``pools`` and ``threshold_at`` from here).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import guard_data  # noqa: E402

from llm_observe.embedding import batching  # noqa: E402
from llm_observe.guard.files import MANIFEST_FILE, MODEL_DIR, GuardFiles, load_files  # noqa: E402
from llm_observe.guard.model import GRAPH_RECIPE, GuardModel  # noqa: E402
from llm_observe.scan import Scanner, load_patterns  # noqa: E402
from llm_observe.scan.classifier import shared_model  # noqa: E402
from llm_observe.scan.messages import RoleScanner  # noqa: E402
from llm_observe.scan.normalize import fold  # noqa: E402
from llm_observe.scan.patterns import ClassifierConfig  # noqa: E402

TARGET_FA = 0.01
MAX_WINDOWS = 8


def band(n: int) -> str:
    return "<300" if n < 300 else "300-800" if n <= 800 else ">800"


def scores(rows: list[dict[str, object]], work: Path) -> dict[str, np.ndarray]:
    """word / frozen / tuned scores per row; window embeddings cached per model."""
    texts = [str(r["text"]) for r in rows]
    word = shared_model()
    out = {"word": np.array([word.probability(fold(t).text) for t in texts])}
    patterns = load_patterns()
    cheap = RoleScanner(Scanner(replace(patterns, classifier=ClassifierConfig(enabled=False))))
    out["phrase_regex"] = np.array([any(f.type == "injection" for f in cheap.scan(
        t, None, "tool" if r["role"] == "tool" else "user", every_injection=False))
        for t, r in zip(texts, rows, strict=True)], dtype=float)
    files = load_files()
    emb, owner = embeddings(files, texts, work)
    w, b = files.head
    logits = emb @ w.astype(np.float32) + b
    per = np.full(len(texts), -np.inf)
    np.maximum.at(per, owner, logits)
    out["tuned"] = 1.0 / (1.0 + np.exp(-per))
    return out


def embeddings(files: GuardFiles, texts: list[str], work: Path) -> tuple[np.ndarray, np.ndarray]:
    """Sentence embedding of each text's first MAX_WINDOWS windows, and each one's text."""
    recipe = "" if GRAPH_RECIPE == "int8" else GRAPH_RECIPE  # older caches: plain int8
    key = hashlib.sha256((recipe + files.sha256 + "|".join(texts)).encode()).hexdigest()[:16]
    path = work / f"emb-{key}.npz"
    if path.exists():
        cached = np.load(path)
        return cached["emb"], cached["owner"]
    model = GuardModel(files)
    embs, owner = [], []
    for i, t in enumerate(texts):
        wins = model.windows(t)[:MAX_WINDOWS]
        (e,) = model.session.run(None, batching.pack(wins))
        embs.append(e)
        owner += [i] * len(wins)
    emb, own = np.concatenate(embs), np.array(owner)
    np.savez(path, emb=emb, owner=own)
    return emb, own


def threshold_at(benign: np.ndarray, fa: float = TARGET_FA) -> float:
    """Lowest threshold with at most ``fa`` of ``benign`` at or above it."""
    if benign.size == 0:
        return 0.5
    s = np.sort(benign)[::-1]
    allowed = int(np.floor(fa * s.size))
    return float(np.nextafter(s[allowed], 1.0)) if allowed < s.size else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, default=Path("/tmp/guard-train"))
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--baseline", type=Path, help="an earlier encoder's scores (.npz)")
    ap.add_argument("--save", type=Path, help="write this run's scores here (.npz)")
    args = ap.parse_args()
    rows = [r for r in guard_data.rows() if r["split"] == "validation"]
    sc = scores(rows, args.work)
    if args.save:
        np.savez(args.save, **sc)
    if args.baseline:
        sc["previous"] = np.load(args.baseline)["tuned"]
        if sc["previous"].shape != sc["tuned"].shape:
            raise SystemExit(f"{args.baseline}: scores of other rows")
    label = np.array([int(r["label"]) for r in rows])
    role = np.array([str(r["role"]) for r in rows])
    kind = np.array([str(r["kind"]) for r in rows])
    length = np.array([len(str(r["text"])) for r in rows])
    short = length < 300
    realistic = kind == "realistic_benign"
    untrusted_benign = realistic & np.isin(role, ["user", "tool"])
    attack = label == 1
    report: dict[str, object] = {}
    comparison = {}
    bands = np.array([band(n) for n in length])
    direct = kind == "attack"
    for name in [n for n in ("word", "previous", "tuned") if n in sc]:
        s = sc[name]
        t = threshold_at(s[untrusted_benign])
        comparison[name] = {
            "threshold_at_1pct": round(t, 4),
            "recall": round(float((s[attack] >= t).mean()), 4),
            "recall_under_300": round(float((s[attack & short] >= t).mean()), 4),
            "recall_direct_bands": {b: round(float((s[direct & (bands == b)] >= t).mean()), 4)
                                    for b in ("<300", "300-800", ">800")},
            "recall_indirect": round(float((s[kind == "indirect_attack"] >= t).mean()), 4),
            "fa_system_prompts_as_unknown": round(float(
                (s[realistic & (role == "system")] >= t).mean()), 4),
            "fa_old_hard_benign": round(float((s[kind == "hard_benign"] >= t).mean()), 4)}
        print(json.dumps({"figure": "matched_fa", "model": name, **comparison[name]}))
    report["comparison"] = comparison
    thresholds, oof = select(rows, sc, role, kind, realistic)
    report["thresholds"] = thresholds
    report["thresholds_oof"] = oof
    report.update(full_system(sc, thresholds, role, label, kind, length))
    report["gate_sweep"] = gate_sweep(rows, sc, role, label, kind, length, realistic)
    if "previous" in sc:  # the earlier encoder under the same rule, for the docs' table
        print(json.dumps({"figure": "previous_model_full_detector"}))
        prev = {**sc, "tuned": sc["previous"]}
        prev_thresholds, _ = select(rows, prev, role, kind, realistic)
        report["previous_full_detector"] = full_system(
            prev, prev_thresholds, role, label, kind, length)["full_detector"]
    if args.write:
        path = MODEL_DIR / MANIFEST_FILE
        manifest = json.loads(path.read_text())
        manifest["thresholds"] = {r: thresholds[r]["encoder"] for r in ("user", "tool")}
        manifest["word_thresholds"] = {r: thresholds[r]["word"] for r in ("user", "tool")}
        manifest["gate"] = GATE
        manifest["validation"] = report
        write_manifest(path, manifest)


def write_manifest(path: Path, manifest: dict[str, object]) -> None:
    """guard_model.json with lists of numbers (the references: thousands) on one line each."""
    number = r"-?[0-9][0-9.eE+-]*"
    text = re.sub(rf"\[\s*{number}(?:,\s*{number})*\s*\]", lambda m: "[" + ", ".join(
        x.strip() for x in m.group(0)[1:-1].split(",")) + "]", json.dumps(manifest, indent=1))
    path.write_text(text + "\n")


GATE = 0.05  # word probability at which the encoder reads: hides 2% of attacks, see docs
WORD_FA, TOTAL_FA, ENCODER_EXTRA = 0.005, 0.01, 0.0025


def pools(role: np.ndarray, kind: np.ndarray, realistic: np.ndarray) -> dict[str, np.ndarray]:
    """Each untrusted role's benign validation texts (user: realistic user turns and the
    older benign sets, which are user prompts; tool: realistic documents and tool output)."""
    return {"user": (realistic & (role == "user")) | np.isin(
                kind, ["benign", "hard_benign", "harmful_request", "prose"]),
            "tool": realistic & (role == "tool")}


def choose(pr: np.ndarray, word: np.ndarray, tuned: np.ndarray,
           gate: float = GATE) -> tuple[float, float]:
    """Word threshold at <= WORD_FA alone; then the encoder's lowest threshold keeping the
    union (phrases/regexes, word, gated encoder) at <= TOTAL_FA, or adding at most
    ENCODER_EXTRA when the cheap tiers alone are already near it. No attack is looked at."""
    t_w = threshold_at(word, WORD_FA)
    base = pr | (word >= t_w)
    budget = max(TOTAL_FA, base.mean() + ENCODER_EXTRA)
    candidates = np.sort(np.unique(tuned[(word >= gate) & ~base]))
    t_e = 1.0
    for t in candidates[::-1]:
        if (base | ((word >= gate) & (tuned >= t))).mean() > budget:
            break
        t_e = float(t)
    return guard_data.ceil_to(t_w, 4), guard_data.ceil_to(t_e, 4)


def select(rows: list[dict[str, object]], sc: dict[str, np.ndarray], role: np.ndarray,
           kind: np.ndarray, realistic: np.ndarray, gate: float = GATE,
           quiet: bool = False) -> tuple[dict[str, dict[str, float]], dict[str, object]]:
    """Thresholds per role on all benign validation texts, and out of fold: chosen on one
    half of the families, false alarms measured on the other (both ways)."""
    pr = sc["phrase_regex"].astype(bool)
    fold_of = np.array([int(hashlib.sha256(str(r["family"]).encode()).hexdigest(), 16) % 2
                        for r in rows])
    thresholds: dict[str, dict[str, float]] = {}
    oof: dict[str, object] = {}
    for rl, pool in pools(role, kind, realistic).items():
        t_w, t_e = choose(pr[pool], sc["word"][pool], sc["tuned"][pool], gate)
        thresholds[rl] = {"word": t_w, "encoder": t_e}
        held = []
        for f in (0, 1):
            a, b = pool & (fold_of == f), pool & (fold_of != f)
            fw, fe = choose(pr[a], sc["word"][a], sc["tuned"][a], gate)
            flag = pr[b] | (sc["word"][b] >= fw) | ((sc["word"][b] >= gate)
                                                    & (sc["tuned"][b] >= fe))
            held.append(round(float(flag.mean()), 4))
        oof[rl] = {"word": t_w, "encoder": t_e, "oof_false_alarms": held,
                   "benign_texts": int(pool.sum())}
        if not quiet:
            print(json.dumps({"figure": "role_thresholds", "role": rl, **oof[rl]}))
    return thresholds, oof


def full_system(sc: dict[str, np.ndarray], thresholds: dict[str, dict[str, float]],
                role: np.ndarray, label: np.ndarray, kind: np.ndarray,
                length: np.ndarray, gate: float = GATE, quiet: bool = False) -> dict[str, object]:
    """Phrases/regexes OR word model OR gated encoder at the chosen per-role thresholds
    (system text read as unknown = user), per group and length band; and the cheap tiers
    alone at the same word thresholds."""
    th_role = np.where(role == "tool", "tool", "user")
    t_w = np.array([thresholds[r]["word"] for r in th_role])
    t_e = np.array([thresholds[r]["encoder"] for r in th_role])
    pr, word, tuned = sc["phrase_regex"].astype(bool), sc["word"], sc["tuned"]
    cheap = pr | (word >= t_w)
    flagged = cheap | ((word >= gate) & (tuned >= t_e))
    bands = np.array([band(n) for n in length])
    groups = guard_data.groups(kind, role)
    table: dict[str, dict[str, list[int]]] = defaultdict(dict)
    for g, m in groups.items():
        for b in ("<300", "300-800", ">800", "all"):
            mb = m & (bands == b) if b != "all" else m
            table[g][b] = [int(flagged[mb].sum()), int(mb.sum()), int(cheap[mb].sum())]
        if not quiet:
            print(json.dumps({"figure": "full_detector", "group": g, **{
                b: f"{v[0]}/{v[1]} (cheap tiers alone {v[2]})" for b, v in table[g].items()}}))
    # Share of texts the encoder reads: past the gate and not already flagged by the cheap
    # tiers (the stage reads only spans they passed).
    gate_share = {g: round(float(((word[m] >= gate) & ~cheap[m]).mean()), 4)
                  for g, m in groups.items() if "benign" in g}
    if not quiet:
        print(json.dumps({"figure": "gate_share_read_by_encoder", **gate_share}))
    return {"full_detector": table, "gate": gate, "gate_share": gate_share}


def gate_sweep(rows: list[dict[str, object]], sc: dict[str, np.ndarray], role: np.ndarray,
               label: np.ndarray, kind: np.ndarray, length: np.ndarray,
               realistic: np.ndarray) -> list[dict[str, object]]:
    """What a higher gate saves (share of benign texts read) and costs (recall), the
    thresholds re-chosen for each gate by the same rule: the measurement behind turning
    the tier on by default or not."""
    out = []
    for gate in (0.05, 0.2, 0.5, 0.8, 0.9):
        thresholds, oof = select(rows, sc, role, kind, realistic, gate, quiet=True)
        r = full_system(sc, thresholds, role, label, kind, length, gate, quiet=True)
        table = r["full_detector"]
        row = {"gate": gate, "direct": table["direct attacks"]["all"][0],
               "direct_under_300": table["direct attacks"]["<300"][0],
               "indirect": table["indirect attacks"]["all"][0], "read_share": r["gate_share"],
               "thresholds": {k: v["encoder"] for k, v in thresholds.items()},
               "oof_false_alarms": {k: v["oof_false_alarms"] for k, v in oof.items()}}
        print(json.dumps({"figure": "gate_sweep", **row}))
        out.append(row)
    return out


if __name__ == "__main__":
    main()
