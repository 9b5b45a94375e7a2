"""Build the combined verdict (llm_observe/guard/stack.py) and compare it with the union.

    python scripts/guard_stack.py [--work DIR] [--write]

1. Scores every row (train and validation) with the word model, the phrase/regex tiers
   and the shipped encoder (scripts/guard_eval.py's ``scores``; window embeddings cached
   in ``--work``).
2. References, from the TRAINING split's benign texts only, per role (guard_eval's
   ``pools``: user turns and the older benign user sets; documents and tool output):
   their word and encoder scores, and the share a phrase/regex entry fires on. No attack
   is used.
3. Chooses each role's threshold on the benign validation pool of the role with no
   attack looked at: the highest of the thresholds at <= 1 % on the whole pool and on
   each half of its families (so each half is <= 1 % too); out-of-fold false alarms:
   threshold from one half applied to the other.
4. Prints one JSON line per variant (cheap tiers alone, encoder alone, union as shipped
   before, a logistic fitted on the training split -- tried first, not shipped -- and the
   combined verdict): recall on held-out attacks, all / < 300 / indirect, and false
   alarms per role group and length band. ``--write`` stores ``stack`` in
   guard_model.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import guard_data  # noqa: E402
import guard_eval  # noqa: E402

from llm_observe.guard.files import MANIFEST_FILE, MODEL_DIR  # noqa: E402
from llm_observe.guard.stack import FORMAT, Reference, combined  # noqa: E402

L2 = 1e-2


def matrix(sc: dict[str, np.ndarray], length: np.ndarray) -> np.ndarray:
    """The tried logistic's inputs: logit(encoder), logit(word), hit, length bands and
    the encoder's logit in the short and middle bands."""
    e = np.log(np.clip(sc["tuned"], 1e-6, 1 - 1e-6) / np.clip(1 - sc["tuned"], 1e-6, 1))
    w = np.log(np.clip(sc["word"], 1e-6, 1 - 1e-6) / np.clip(1 - sc["word"], 1e-6, 1))
    e, w = np.clip(e, -9, 9), np.clip(w, -9, 9)
    short, mid = (length < 300).astype(float), ((length >= 300) & (length <= 800)).astype(float)
    return np.stack([e, w, sc["phrase_regex"], short, mid, e * short, e * mid], axis=1)


def references(sc: dict[str, np.ndarray], pools: dict[str, np.ndarray],
               ) -> dict[str, dict[str, object]]:
    """Per role, the benign training texts' scores (rounded) and phrase/regex hit rate."""
    return {rl: {"word": np.round(np.sort(sc["word"][p]), 5).tolist(),
                 "encoder": np.round(np.sort(sc["tuned"][p]), 5).tolist(),
                 "hit_rate": round((float(sc["phrase_regex"][p].sum()) + 1) / (p.sum() + 1), 6)}
            for rl, p in pools.items()}


def combined_values(sc: dict[str, np.ndarray], refs: dict[str, dict[str, object]],
                    as_tool: np.ndarray) -> np.ndarray:
    stats = {rl: Reference(tuple(r["word"]), tuple(r["encoder"]),  # type: ignore[arg-type]
                           float(r["hit_rate"]))  # type: ignore[arg-type]
             for rl, r in refs.items()}
    return np.array([combined(stats["tool" if t else "user"].statistic(w, e, bool(h)))
                     for w, e, h, t in zip(sc["word"], sc["tuned"], sc["phrase_regex"],
                                           as_tool, strict=True)])


def fit(x: np.ndarray, y: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, float]:
    """Weighted L2 logistic regression by Newton's method (30 steps; deterministic)."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    beta = np.zeros(xb.shape[1])
    weight = weight / weight.sum()
    reg = L2 * np.eye(xb.shape[1])
    reg[-1, -1] = 0.0
    for _ in range(30):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ beta, -60, 60)))
        grad = xb.T @ (weight * (p - y)) + reg @ beta
        hess = (xb * (weight * p * (1 - p))[:, None]).T @ xb + reg
        beta -= np.linalg.solve(hess, grad)
    return beta[:-1], float(beta[-1])


def sample_weights(rows: list[dict[str, object]], y: np.ndarray) -> np.ndarray:
    size = Counter(str(r["family"]) for r in rows)
    w = np.array([1.0 / np.sqrt(size[str(r["family"])]) for r in rows])
    for c in (0, 1):
        w[y == c] /= w[y == c].sum()
    return w


def halves(rows: list[dict[str, object]]) -> np.ndarray:
    return np.array([int(hashlib.sha256(str(r["family"]).encode()).hexdigest(), 16) % 2
                     for r in rows])


def role_threshold(score: np.ndarray, pool: np.ndarray, half: np.ndarray,
                   ) -> tuple[float, list[float]]:
    """Threshold at <= 1 % on the pool and on each half; out-of-fold false alarms."""
    t = [guard_eval.threshold_at(score[pool & (half == f)]) for f in (0, 1)]
    oof = [round(float((score[pool & (half != f)] >= t[f]).mean()), 4) for f in (0, 1)]
    return max(guard_eval.threshold_at(score[pool]), *t), oof


def report(name: str, flagged: np.ndarray, groups: dict[str, np.ndarray],
           bands: np.ndarray, extra: dict[str, object]) -> dict[str, object]:
    attack = groups["direct attacks"] | groups["indirect attacks"]
    row: dict[str, object] = {
        "variant": name,
        "recall": round(float(flagged[attack].mean()), 4),
        "recall_under_300": round(float(flagged[attack & (bands == "<300")].mean()), 4),
        "direct": f"{int(flagged[groups['direct attacks']].sum())}"
                  f"/{int(groups['direct attacks'].sum())}",
        "direct_under_300": round(float(flagged[groups["direct attacks"]
                                                & (bands == "<300")].mean()), 4),
        "indirect": round(float(flagged[groups["indirect attacks"]].mean()), 4),
        "attack_bands": {g: {b: f"{int(flagged[groups[g] & (bands == b)].sum())}"
                                f"/{int((groups[g] & (bands == b)).sum())}"
                             for b in ("<300", "300-800", ">800")}
                         for g in ("direct attacks", "indirect attacks")}, **extra}
    for g, m in groups.items():
        if "benign" in g:
            row[g] = {b: f"{int(flagged[m & (bands == b)].sum())}/{int((m & (bands == b)).sum())}"
                      for b in ("<300", "300-800", ">800")}
    print(json.dumps(row))
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, default=Path("/tmp/guard-train"))
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    every = guard_data.rows()
    train = [r for r in every if r["split"] == "train"]
    rows = [r for r in every if r["split"] == "validation"]
    tr = guard_eval.scores(train, args.work)
    t_kind = np.array([str(r["kind"]) for r in train])
    refs = references(tr, guard_eval.pools(np.array([str(r["role"]) for r in train]), t_kind,
                                           t_kind == "realistic_benign"))
    y = np.array([int(r["label"]) for r in train], dtype=float)
    weights, bias = fit(matrix(tr, np.array([len(str(r["text"])) for r in train])), y,
                        sample_weights(train, y))
    sc = guard_eval.scores(rows, args.work)
    kind = np.array([str(r["kind"]) for r in rows])
    role = np.array([str(r["role"]) for r in rows])
    length = np.array([len(str(r["text"])) for r in rows])
    bands = np.array([guard_eval.band(int(n)) for n in length])
    groups = guard_data.groups(kind, role)
    pools = guard_eval.pools(role, kind, kind == "realistic_benign")
    half = halves(rows)
    as_tool = role == "tool"  # system text is read as unknown, i.e. user
    logistic = matrix(sc, length) @ weights + bias
    pr = sc["phrase_regex"].astype(bool)
    out: dict[str, object] = {}

    def per_role(score: np.ndarray, base: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
        th, oof = {}, {}
        for rl, pool in pools.items():
            s = score if base is None else np.where(base, -np.inf, score)
            th[rl], oof[rl] = role_threshold(s, pool, half)
        t = np.where(as_tool, th["tool"], th["user"])
        flag = score >= t if base is None else base | (score >= t)
        stored = {k: guard_data.ceil_to(v, 8) for k, v in th.items()}
        return flag, {"thresholds": stored, "oof_fa": oof}

    flag, extra = per_role(sc["word"], pr)
    out["cheap"] = report("cheap tiers alone (phrases, regexes, word model)", flag, groups,
                          bands, extra)
    flag, extra = per_role(sc["tuned"])
    out["encoder"] = report("encoder alone", flag, groups, bands, extra)
    thresholds, oof = guard_eval.select(rows, sc, role, kind, kind == "realistic_benign",
                                        quiet=True)
    t_w = np.where(as_tool, thresholds["tool"]["word"], thresholds["user"]["word"])
    t_e = np.where(as_tool, thresholds["tool"]["encoder"], thresholds["user"]["encoder"])
    union = pr | (sc["word"] >= t_w) | ((sc["word"] >= guard_eval.GATE) & (sc["tuned"] >= t_e))
    out["union"] = report("union (before)", union, groups, bands, {"oof_fa": {
        k: v["oof_false_alarms"] for k, v in oof.items()}})  # type: ignore[index]
    flag, extra = per_role(logistic)
    out["logistic"] = report("logistic on the training split (tried, not shipped)", flag,
                             groups, bands, {**extra, "weights": np.round(weights, 3).tolist()})
    flag, extra = per_role(combined_values(sc, refs, as_tool))
    out["stacked"] = report("combined: benign tails, Fisher (shipped)", flag, groups, bands,
                            extra)
    if args.write:
        path = MODEL_DIR / MANIFEST_FILE
        manifest = json.loads(path.read_text())
        manifest["stack"] = {"format": FORMAT, "reference": refs,
                             "thresholds": out["stacked"]["thresholds"],  # type: ignore[index]
                             "validation": out}
        guard_eval.write_manifest(path, manifest)


if __name__ == "__main__":
    main()
