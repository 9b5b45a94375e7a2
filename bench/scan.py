"""Scanner benchmark (issue 2, spec 4.6): speed against the naive baseline, false positives.

Prints JSON lines:
- µs per ~200-character prompt, ours and the naive baseline (every phrase
  ``in text.lower()``, then every regex's ``finditer`` in turn, same patterns file),
  and the ratio, for two prompt sets: the realistic mixed prompts of bench/_common
  (some carry an email or an injection) and clean ~200-char prose prompts;
- MB/s over a few MB of ordinary prose, ours and naive;
- false-positive rate (documents with any finding) on that prose and on CPython's
  reference documentation, with the names of whatever fired.

- the injection tier (bench/scan_injection.py): held-out recall and false alarms
  per family, the classifier's cost ratio and the 2,000-char p50;
- PII recall/precision/speed against Presidio and detect-secrets (bench/scan_pii.py,
  needs the [bench] extra).

Run from the repository root: python -m bench.scan [--quick]
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from bench._common import COMPLETIONS, PROMPTS, emit, median_time, pin_one_core, quick, rng
from llm_observe.scan import Scanner, load_patterns
from llm_observe.scan.patterns import PatternSet
from llm_observe.scan.validators import VALIDATORS
from tests.scan.prose import generate_prose, seed_sentences, stdlib_doc_paragraphs


class NaiveScanner:
    """The baseline: every phrase as a substring of text.lower(), then every regex."""

    def __init__(self, patterns: PatternSet) -> None:
        self.phrases = [(e.name, p) for e in patterns.entries for p in e.phrases]
        self.regexes = [(e.name, e.regex, VALIDATORS[e.validator] if e.validator else None)
                        for e in patterns.entries if e.regex is not None]

    def scan(self, text: str) -> list[str]:
        low = text.lower()
        found = [name for name, phrase in self.phrases if phrase in low]
        for name, regex, validator in self.regexes:
            found.extend(name for m in regex.finditer(text)
                         if validator is None or validator(m.group()))
        return found


def prose_prompts(n: int, width: int = 200) -> list[str]:
    """Clean prompts of about ``width`` characters built from the prose seed."""
    r, sentences = rng(), seed_sentences()
    out: list[str] = []
    while len(out) < n:
        text = ""
        while len(text) < width - 40:
            text = f"{text} {r.choice(sentences)}".strip()
        out.append(text[:width])
    return out


def per_prompt_us(fn: Callable[[str], object], texts: list[str], rounds: int) -> float:
    def run() -> None:
        for _ in range(rounds):
            for t in texts:
                fn(t)
    return median_time(run) / (rounds * len(texts)) * 1e6


def bench_prompts(ours: Scanner, naive: NaiveScanner) -> None:
    rounds = 50 if quick() else 400
    for label, texts in (("mixed", PROMPTS + COMPLETIONS), ("clean_prose", prose_prompts(64))):
        avg = sum(map(len, texts)) / len(texts)
        t_ours = per_prompt_us(ours.scan, texts, rounds)
        t_naive = per_prompt_us(naive.scan, texts, max(1, rounds // 10))
        emit("scan", "scan_us_per_prompt", t_ours, "us", prompts=label, avg_chars=round(avg))
        emit("scan", "naive_us_per_prompt", t_naive, "us", prompts=label, avg_chars=round(avg))
        emit("scan", "speedup_vs_naive", t_naive / t_ours, "x", prompts=label, target=10)


def bench_throughput(ours: Scanner, naive: NaiveScanner, docs: list[str]) -> None:
    megabytes = sum(len(d.encode()) for d in docs) / 1e6
    t_ours = median_time(lambda: [ours.scan(d) for d in docs], repeats=3)
    t_naive = median_time(lambda: [naive.scan(d) for d in docs], repeats=1)
    emit("scan", "throughput_mb_per_s", megabytes / t_ours, "MB/s", corpus_mb=round(megabytes, 2))
    emit("scan", "naive_throughput_mb_per_s", megabytes / t_naive, "MB/s",
         corpus_mb=round(megabytes, 2))
    emit("scan", "throughput_speedup_vs_naive", t_naive / t_ours, "x")


def bench_false_positives(ours: Scanner, corpus: str, docs: list[str]) -> None:
    names: Counter[str] = Counter()
    flagged = 0
    for doc in docs:
        found = ours.scan(doc).findings
        flagged += bool(found)
        names.update(f.name for f in found)
    emit("scan", "false_positive_rate", flagged / len(docs), "fraction of documents",
         corpus=corpus, documents=len(docs), flagged=flagged, megabytes=round(
             sum(map(len, docs)) / 1e6, 2), fired=dict(names))


def main() -> None:
    pin_one_core()
    patterns = load_patterns()
    ours, naive = Scanner(patterns), NaiveScanner(patterns)
    emit("scan", "patterns", len(patterns.entries), "entries", phrases=patterns.phrase_count,
         regexes=len(naive.regexes))
    bench_prompts(ours, naive)
    prose = generate_prose(1_000_000 if quick() else 4_000_000)
    bench_throughput(ours, naive, prose[: len(prose) // (1 if quick() else 4)])
    bench_false_positives(ours, "generated_prose", prose)
    docs = stdlib_doc_paragraphs()
    bench_false_positives(ours, "python_reference_docs", docs)
    # Sanity on the same run: the attack prompt of the mixed set is caught by both.
    attack = next(p for p in PROMPTS if re.match("(?i)ignore all previous", p))
    assert ours.scan(attack).injection_attempt and naive.scan(attack)
    from bench import scan_injection, scan_pii

    scan_injection.main(rounds=5 if quick() else 20)
    scan_pii.main()


if __name__ == "__main__":
    main()
