"""Thresholds per (role, length band) for the combined verdict, measured against one per role.

    python scripts/guard_bands.py [--work DIR]

Long benign texts accumulate evidence (more words, more windows), so a role's single
threshold may be set by its long benign texts while short attacks score lower. Here each
band (< 300, 300-800, > 800 characters) of each untrusted role gets its own threshold,
chosen as guard_stack.py chooses the role's: the highest of the thresholds at <= 1 % on the
band's benign validation pool and on each half of its families, **no attack looked at**.
A band gets its own only when each half of its pool holds at least MIN_HALF texts (so a
1 % point on a half allows at least one alarm); else it keeps the role's threshold.

Reads the references and role thresholds of guard_model.json's ``stack`` (run
guard_stack.py --write first) and the cached scores (guard_eval.scores). Prints, per
rule (role thresholds / band thresholds): recall per attack group and band, benign
alarms per group and band, and out-of-fold false alarms per role and band (threshold
from one half of the families applied to the other, both ways), for the combined verdict
and, for comparison, the cheap tiers' rule (phrase/regex hits flag, word model at its
threshold). Measured, not shipped (docs/scanning.md, "Thresholds per length band"):
nothing reads band thresholds at run time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import guard_data  # noqa: E402
import guard_eval  # noqa: E402
import guard_stack  # noqa: E402

from llm_observe.guard.files import MANIFEST_FILE, MODEL_DIR  # noqa: E402

BANDS = ("<300", "300-800", ">800")

MIN_HALF = 100  # benign texts per half of a band's pool: 1 % of 100 is one alarm


def band_thresholds(value: np.ndarray, pools: dict[str, np.ndarray], half: np.ndarray,
                    bands: np.ndarray, role_th: dict[str, float],
                    ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, object]]]:
    """Per role and band: the threshold (own, or the role's when the band is too small)
    and the out-of-fold false alarms with that rule."""
    th: dict[str, dict[str, float]] = {}
    oof: dict[str, dict[str, object]] = {}
    for rl, pool in pools.items():
        th[rl], oof[rl] = {}, {}
        for b in BANDS:
            m = pool & (bands == b)
            sizes = [int((m & (half == f)).sum()) for f in (0, 1)]
            if min(sizes) >= MIN_HALF:
                th[rl][b], fa = guard_stack.role_threshold(value, m, half)
                oof[rl][b] = {"own": True, "oof_fa": fa, "halves": sizes}
            else:
                th[rl][b] = role_th[rl]
                oof[rl][b] = {"own": False, "halves": sizes}
    return th, oof


def oof_by_band(value: np.ndarray, pools: dict[str, np.ndarray], half: np.ndarray,
                bands: np.ndarray, by_band: bool, base: np.ndarray,
                ) -> dict[str, dict[str, list[float]]]:
    """Out-of-fold false alarms per role and band: each half's thresholds (per band when
    ``by_band`` and the band is large enough, else the half's role threshold) applied to
    the other half; ``base``: texts flagged whatever the threshold (phrase/regex hits of
    the cheap rule; their ``value`` is -inf)."""
    out: dict[str, dict[str, list[float]]] = {}
    for rl, pool in pools.items():
        out[rl] = {b: [] for b in (*BANDS, "all")}
        for f in (0, 1):
            fit, test = pool & (half == f), pool & (half != f)
            role_t = guard_eval.threshold_at(value[fit])
            t = np.full(value.shape, role_t)
            if by_band:
                for b in BANDS:
                    m = bands == b
                    if min(int((pool & m & (half == g)).sum()) for g in (0, 1)) >= MIN_HALF:
                        t[m] = guard_eval.threshold_at(value[fit & m])
            flag = base | (value >= t)
            for b in (*BANDS, "all"):
                m = test if b == "all" else test & (bands == b)
                out[rl][b].append(round(float(flag[m].mean()), 4) if m.any() else 0.0)
    return out


def compare(name: str, value: np.ndarray, base: np.ndarray, as_tool: np.ndarray,
            pools: dict[str, np.ndarray], half: np.ndarray, bands: np.ndarray,
            groups: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """Report the rule with one threshold per role, then per role and band; return the
    band thresholds."""
    role_th = {rl: guard_stack.role_threshold(value, pool, half)[0] for rl, pool in pools.items()}
    flag = base | (value >= np.where(as_tool, role_th["tool"], role_th["user"]))
    guard_stack.report(f"{name}, one threshold per role", flag, groups, bands, {
        "thresholds": role_th, "oof_fa": oof_by_band(value, pools, half, bands, False, base)})
    th, chosen = band_thresholds(value, pools, half, bands, role_th)
    t = np.array([th["tool" if tl else "user"][b] for tl, b in zip(as_tool, bands,
                                                                   strict=True)])
    guard_stack.report(f"{name}, one threshold per role and band", base | (value >= t), groups,
                       bands, {"thresholds": th, "bands": chosen,
                               "oof_fa": oof_by_band(value, pools, half, bands, True, base)})
    return th


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, default=Path("/tmp/guard-train"))
    args = ap.parse_args()
    stack = json.loads((MODEL_DIR / MANIFEST_FILE).read_text())["stack"]
    rows = [r for r in guard_data.rows() if r["split"] == "validation"]
    sc = guard_eval.scores(rows, args.work)
    kind = np.array([str(r["kind"]) for r in rows])
    role = np.array([str(r["role"]) for r in rows])
    bands = np.array([guard_eval.band(len(str(r["text"]))) for r in rows])
    groups = guard_data.groups(kind, role)
    pools = guard_eval.pools(role, kind, kind == "realistic_benign")
    half = guard_stack.halves(rows)
    as_tool = role == "tool"
    pr = sc["phrase_regex"].astype(bool)
    value = guard_stack.combined_values(sc, stack["reference"], as_tool)
    compare("combined", value, np.zeros_like(pr), as_tool, pools, half, bands, groups)
    # The cheap tiers' rule for comparison (phrase/regex hits flag; the word model's
    # thresholds re-chosen here, as guard_stack.py's cheap row does): not applied anywhere.
    compare("cheap tiers", np.where(pr, -np.inf, sc["word"]), pr, as_tool, pools, half, bands,
            groups)


if __name__ == "__main__":
    main()
