"""Two encoder models side by side at the same false-alarm rule, from their manifests.

    python scripts/guard_compare.py OLD_MANIFEST [NEW_MANIFEST]

NEW defaults to the shipped llm_observe/guard/model/guard_model.json; OLD is a copy of
an earlier one (``git show REV:llm_observe/guard/model/guard_model.json > old.json``).
Both must have been measured on the same validation rows: ``validation.comparison``
(scripts/guard_eval.py: encoder alone at 1 % of the realistic user + tool texts) and
``stack.validation`` (scripts/guard_stack.py: per role at <= 1 % of each role's benign
validation pool, out-of-fold false alarms of the two family halves). Prints one
Markdown table; reads nothing else.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHIPPED = HERE.parent / "llm_observe" / "guard" / "model" / "guard_model.json"
DIRECT_UNDER_300 = 132  # held-out direct attacks under 300 characters


def rows(m: dict) -> list[tuple[str, str]]:
    enc = m["validation"]["comparison"]["tuned"]
    out = [("encoder alone at 1 % realistic: recall all / direct < 300 / indirect / "
            "older hard-benign flagged",
            f"{enc['recall']:.1%} / {enc['recall_direct_bands']['<300']:.1%} / "
            f"{enc['recall_indirect']:.1%} / {enc['fa_old_hard_benign']:.1%}")]
    for key in ("encoder", "stacked"):
        v = m["stack"]["validation"][key]
        bands = v.get("attack_bands", {}).get("direct attacks")
        direct = (" / ".join(bands.values()) if bands else
                  f"{round(v['direct_under_300'] * DIRECT_UNDER_300)}/{DIRECT_UNDER_300} < 300")
        older = v["older benign sets (user)"]
        flagged = sum(int(x.split("/")[0]) for x in older.values())
        out.append((f"{key} per role: direct (bands) / all / indirect / older user flagged / "
                    "out-of-fold FA user; tool",
                    f"{direct} / {v['direct']} / {v['indirect']:.1%} / {flagged}/1,302 / "
                    f"{v['oof_fa']['user']}; {v['oof_fa']['tool']}"))
    return out


def main() -> None:
    old = json.loads(Path(sys.argv[1]).read_text())
    new = json.loads(Path(sys.argv[2] if len(sys.argv) > 2 else SHIPPED).read_text())
    print("| measure | old | new |\n|---|---|---|")
    for (name, a), (_, b) in zip(rows(old), rows(new), strict=True):
        print(f"| {name} | {a} | {b} |")


if __name__ == "__main__":
    main()
