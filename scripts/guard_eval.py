"""Validation figures of the injection tiers on realistic traffic (issue 23 items 3-5).

    python scripts/guard_eval.py [--work DIR] [--write]

Scores every validation row of scripts/guard_data.py (never trained on: held-out attack
families, held-out benign families) with (a) today's word model, (b) a logistic head on
frozen all-MiniLM-L6-v2 embeddings (int8, the [embeddings] extra's graph), (c) the
fine-tuned encoder (int8, llm_observe.guard), each over the same 128-token windows (the
encoders read the first 8). Scores are cached in ``--work``.

Reports (JSON lines):
- the comparison at a matched false-alarm rate: each model's threshold set at 1% on the
  realistic benign validation texts of the untrusted roles (user, tool), then recall on
  the held-out attack families, overall and under 300 characters;
- thresholds per role chosen *out of fold*: benign families split in two by hash; the
  threshold at <= 1% false alarms on one half is applied to the other (both ways), and
  the shipped threshold is the one at <= 1% on all of them;
- the full detector (phrases, regexes, word model at its role thresholds, and the encoder
  gated by the word score) per role and length band, direct and indirect attacks apart.

``--write`` stores the thresholds, the gate and the figures in guard_model.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import guard_data  # noqa: E402

from llm_observe.embedding import batching  # noqa: E402
from llm_observe.guard.files import MANIFEST_FILE, MODEL_DIR, GuardFiles, load_files  # noqa: E402
from llm_observe.guard.model import GuardModel  # noqa: E402
from llm_observe.scan import Scanner, load_patterns  # noqa: E402
from llm_observe.scan.classifier import shared_model  # noqa: E402
from llm_observe.scan.normalize import fold  # noqa: E402

TARGET_FA = 0.01
MAX_WINDOWS = 8


def band(n: int) -> str:
    return "<300" if n < 300 else "300-800" if n <= 800 else ">800"


def scores(rows: list[dict[str, object]], work: Path) -> dict[str, np.ndarray]:
    """word / frozen / tuned scores per row; window embeddings cached per model."""
    texts = [str(r["text"]) for r in rows]
    word = shared_model()
    out = {"word": np.array([word.probability(fold(t).text) for t in texts])}
    tuned_files = load_files()
    frozen = np.load(work / "frozen_head.npz")
    base_files = GuardFiles({"head.weight": np.zeros(384, np.float32),
                             "head.bias": np.zeros(1, np.float32)}, tuned_files.manifest, "base")
    for name, files, (w, b) in (
            ("frozen", base_files, (frozen["weight"], float(frozen["bias"][0]))),
            ("tuned", tuned_files, tuned_files.head)):
        emb, owner = embeddings(files, texts, work)
        logits = emb @ w.astype(np.float32) + b
        per = np.full(len(texts), -np.inf)
        np.maximum.at(per, owner, logits)
        out[name] = 1.0 / (1.0 + np.exp(-per))
    return out


def embeddings(files: GuardFiles, texts: list[str], work: Path) -> tuple[np.ndarray, np.ndarray]:
    """Sentence embedding of each text's first MAX_WINDOWS windows, and each one's text."""
    key = hashlib.sha256((files.sha256 + "|".join(texts)).encode()).hexdigest()[:16]
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
    args = ap.parse_args()
    rows = [r for r in guard_data.rows() if r["split"] == "validation"]
    sc = scores(rows, args.work)
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
    for name, s in sc.items():
        t = threshold_at(s[untrusted_benign])
        comparison[name] = {
            "threshold_at_1pct": round(t, 4),
            "recall": round(float((s[attack] >= t).mean()), 4),
            "recall_under_300": round(float((s[attack & short] >= t).mean()), 4),
            "recall_indirect": round(float((s[kind == "indirect_attack"] >= t).mean()), 4),
            "fa_system_prompts_as_unknown": round(float(
                (s[realistic & (role == "system")] >= t).mean()), 4),
            "fa_old_hard_benign": round(float((s[kind == "hard_benign"] >= t).mean()), 4)}
        print(json.dumps({"figure": "matched_fa", "model": name, **comparison[name]}))
    report["comparison"] = comparison
    # Out-of-fold thresholds per role for the encoder.
    tuned = sc["tuned"]
    fold_of = np.array([int(hashlib.sha256(str(r["family"]).encode()).hexdigest(), 16) % 2
                        for r in rows])
    thresholds, oof = {}, {}
    for rl in ("user", "tool"):
        benign = realistic & (role == rl) if rl == "tool" else (
            (realistic & (role == "user")) | np.isin(kind, ["benign", "hard_benign",
                                                            "harmful_request", "prose"]))
        thresholds[rl] = round(threshold_at(tuned[benign]), 4)
        fas = []
        for f in (0, 1):
            t = threshold_at(tuned[benign & (fold_of == f)])
            held = benign & (fold_of != f)
            fas.append(float((tuned[held] >= t).mean()))
        oof[rl] = {"threshold_all": thresholds[rl], "oof_false_alarms": [round(x, 4) for x in fas],
                   "benign_texts": int(benign.sum())}
        print(json.dumps({"figure": "role_threshold", "role": rl, **oof[rl]}))
    report["thresholds_oof"] = oof
    report.update(full_system(rows, sc, thresholds, role, label, kind, length))
    if args.write:
        path = MODEL_DIR / MANIFEST_FILE
        manifest = json.loads(path.read_text())
        manifest["thresholds"] = thresholds
        manifest["validation"] = report
        path.write_text(json.dumps(manifest, indent=1) + "\n")


def full_system(rows: list[dict[str, object]], sc: dict[str, np.ndarray],
                thresholds: dict[str, float], role: np.ndarray, label: np.ndarray,
                kind: np.ndarray, length: np.ndarray) -> dict[str, object]:
    """Cheap tiers (as shipped, per role) OR the gated encoder, per role and length band."""
    scanner = Scanner(load_patterns())
    from llm_observe.scan.messages import RoleScanner

    rs = RoleScanner(scanner)
    gate = json.loads((MODEL_DIR / MANIFEST_FILE).read_text()).get("gate", 0.05)
    out: dict[str, object] = {"gate": gate}
    cheap = np.array([any(f.type == "injection" for f in rs.scan(
        str(r["text"]), None, "user" if r["role"] == "system" else str(r["role"]),
        every_injection=False)) for r in rows])
    th = np.array([thresholds["tool" if x == "tool" else "user"] for x in role])
    gated = sc["word"] >= gate
    enc = gated & (sc["tuned"] >= th)
    flagged = cheap | enc
    table: dict[str, dict[str, list[int]]] = defaultdict(dict)
    groups = {"direct attacks": kind == "attack", "indirect attacks": kind == "indirect_attack",
              "realistic benign user": (kind == "realistic_benign") & (role == "user"),
              "realistic benign tool": (kind == "realistic_benign") & (role == "tool"),
              "realistic benign system (as unknown)": (kind == "realistic_benign")
              & (role == "system"),
              "older benign + hard benign": np.isin(kind, ["benign", "hard_benign",
                                                           "harmful_request", "prose"])}
    for g, m in groups.items():
        for b in ("<300", "300-800", ">800", "all"):
            mb = m & (np.array([band(n) for n in length]) == b) if b != "all" else m
            table[g][b] = [int(flagged[mb].sum()), int(mb.sum()), int(cheap[mb].sum())]
        print(json.dumps({"figure": "full_detector", "group": g, **{
            b: f"{v[0]}/{v[1]} (cheap {v[2]})" for b, v in table[g].items()}}))
    out["full_detector"] = table
    out["gate_share_realistic_benign"] = round(float(gated[kind == "realistic_benign"].mean()), 4)
    out["gate_recall_loss"] = round(float((~gated & (label == 1) & (sc["tuned"] >= th)).sum()
                                          / max(1, (label == 1).sum())), 4)
    print(json.dumps({"figure": "gate", "share_of_realistic_benign_read": out[
        "gate_share_realistic_benign"], "attacks_the_gate_hides": out["gate_recall_loss"]}))
    return out


if __name__ == "__main__":
    main()
