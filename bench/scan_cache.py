"""The per-message scan cache (llm_observe/scan/cache.py) on traffic that repeats itself.

``bench.receiver``'s and ``bench.stages``' texts are ~200 characters and distinct per span
(bench/_common.py ``distinct``), below the cache's ``min_chars``: they measure the scan
without it. This bench is the workload the cache is for, and one it cannot help:

- ``conversations``: a few apps, each with one long system prompt (2,000-10,000
  characters of real system-prompt text), and conversations of up to 8 calls; each call
  sends the system prompt and the conversation so far (user and assistant turns, with
  roles, as GenAI message attributes carry them) and adds a new user turn of its own;
- ``distinct``: the same sizes, every message new (the cache only adds its hashing).

Per workload: the scan stage's (``ScanProcessor``) CPU µs a span without and with the
cache, alternating in the same run (medians of paired rounds; each round a fresh cache,
so its misses are counted too), the ratio, and the cache's hit rate.

    python -m bench.scan_cache [--quick] [--calls 400] [--rounds 7]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from itertools import cycle
from pathlib import Path
from typing import Any

import yaml

from bench._common import emit, quick
from llm_observe.processors.scan import ScanProcessor
from llm_observe.scan import Scanner, load_patterns
from llm_observe.scan.cache import ScanCache
from llm_observe.span import LlmSpan
from tests.scan.prose import generate_prose

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "benign_roles.yaml"
SYSTEM_SIZES = (2_000, 4_000, 6_000, 10_000)


def _texts() -> tuple[list[str], list[str]]:
    items = yaml.safe_load(DATA.read_text(encoding="utf-8"))["benign"]
    return ([i["text"] for i in items if i["role"] == "system"],
            [i["text"] for i in items if i["role"] == "user"])


def workload(calls: int, repeat: bool, seed: int = 5) -> list[LlmSpan]:
    """``calls`` spans of conversations (see the module's docstring); ``repeat=False``:
    the same shapes with every system prompt and turn new."""
    r = random.Random(seed)
    systems, users = _texts()
    # Cycled: the distinct workload draws ~10k characters a call; a repeat would need the
    # same draws in the same order again (its hit rate, reported, shows there is none).
    prose = cycle(generate_prose(1_500_000, seed=seed))

    def system_prompt(size: int) -> str:
        parts: list[str] = []
        while sum(map(len, parts)) < size:
            parts.append(r.choice(systems) if r.random() < 0.6 else next(prose))
        return "\n\n".join(parts)

    def turn() -> str:  # a new user turn: a question and some pasted prose
        return f"{r.choice(users)} {next(prose)}"

    apps = [system_prompt(size) for size in SYSTEM_SIZES]
    spans: list[LlmSpan] = []
    history: list[tuple[str, str]] = []
    for n in range(calls):
        if n % 8 == 0:  # a new conversation, on one of the apps
            history = [("system", r.choice(apps) if repeat else system_prompt(
                r.choice(SYSTEM_SIZES)))]
        elif not repeat:  # everything new: the history as long, none of it seen
            history = [(role, turn() if role != "system" else system_prompt(len(text)))
                       for role, text in history]
        history.append(("user", turn()))
        texts, segments, at = [], [], 0
        for index, (role, text) in enumerate(history):
            segments.append((at, at + len(text), role, index))
            texts.append(text)
            at += len(text) + 1
        completion = next(prose)
        history.append(("assistant", completion))
        spans.append(LlmSpan(model="gpt-4o", provider="openai", prompt_text="\n".join(texts),
                             completion_text=completion, text_roles={"prompt": segments}))
    return spans


def _cpu(processor: ScanProcessor, spans: list[LlmSpan]) -> float:
    t0 = time.process_time()
    for i in range(0, len(spans), 64):
        processor.process(spans[i:i + 64])
    return time.process_time() - t0


def measure(name: str, spans: list[LlmSpan], rounds: int) -> dict[str, Any]:
    scanner = Scanner(load_patterns())
    afresh = ScanProcessor(scanner, cache=False)
    without, with_, ratios, hit_rates = [], [], [], []
    for _ in range(rounds):
        cache = ScanCache()
        cached = ScanProcessor(scanner, cache=cache)
        a, b = _cpu(afresh, spans), _cpu(cached, spans)
        without.append(a)
        with_.append(b)
        ratios.append(b / a)
        hit_rates.append(cache.hits / max(1, cache.hits + cache.misses))
    chars = sum(len(s.prompt_text or "") + len(s.completion_text or "") for s in spans)
    extra = {"workload": name, "spans": len(spans), "chars_per_span": chars // len(spans)}
    emit("scan_cache", "scan_stage_without_cache", statistics.median(without) / len(spans)
         * 1e6, "us/span", **extra)
    emit("scan_cache", "scan_stage_with_cache", statistics.median(with_) / len(spans) * 1e6,
         "us/span", **extra)
    emit("scan_cache", "with_vs_without", statistics.median(ratios), "x",
         note="median of paired CPU-time ratios, a fresh cache each round", **extra)
    emit("scan_cache", "hit_rate", statistics.median(hit_rates), "ratio",
         note="message runs of >= min_chars answered from the cache", **extra)
    return extra


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    calls, rounds = (48, 3) if quick() else (args.calls, args.rounds)
    measure("conversations", workload(calls, repeat=True), rounds)
    measure("distinct", workload(calls, repeat=False), rounds)


if __name__ == "__main__":
    main()
