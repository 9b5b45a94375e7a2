"""Foundation benchmarks (issue 2): the processor chain and the Prometheus series.

Prints JSON lines:
- chain spans/s (tokens → cost → scan → sampling → metrics) for 1k/10k/100k
  spans carrying ~200-char prompt and completion text, with provider-reported
  token counts and with counts missing (so the tokens stage really counts), and
  the cost step's share of the processors' time;
- metric updates/s for the eight families with cached label children against
  the baseline that calls ``.labels()`` on every update, same run; and with the OTel
  GenAI histograms on as a ratio of the eight alone (target >= 0.6).
The scanner's own figures (vs the naive baseline, false positives) are in
bench/scan.py.

``--baseline 51b5287[,REF]``: instead, the chain at 10k spans with counts provided (the
issue's target), ours and each commit's own chain from a git worktree beside the
repository (bench/baseline.py), each run in a fresh process pinned to one core with that
tree's own harness (``make_spans``, ``_run``: the same spans, its own processors and
metrics), alternating for ``--rounds`` rounds; spans/s (wall, median of 3 batches after a
warm-up batch) and CPU µs a span, and the medians of the per-round ratios.

Run from the repository root: python -m bench.processors [--quick] [--baseline REF
[--rounds 5]]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from prometheus_client import CollectorRegistry

from bench._common import (
    COMPLETIONS,
    PROMPTS,
    emit,
    median_time,
    paired_ratio,
    pin_one_core,
    quick,
    rng,
)
from llm_observe.collector.exporters.prometheus import LlmMetrics
from llm_observe.pipeline import ProcessorChain
from llm_observe.pricing import load_price_table
from llm_observe.processors.cost import CostProcessor
from llm_observe.processors.sampling import SamplingProcessor
from llm_observe.processors.scan import ScanProcessor
from llm_observe.processors.tokens import TokensProcessor
from llm_observe.scan import Scanner, load_patterns
from llm_observe.span import LlmSpan

MODELS = [("gpt-4o", "openai"), ("gpt-4o-mini", "openai"), ("claude-3-5-sonnet-20241022",
          "anthropic"), ("gemini-1.5-pro", "google"), ("mistral-large-latest", "mistral")]
SERVICES = ["checkout", "search", "support", "reports"]


def make_spans(n: int, with_counts: bool) -> list[LlmSpan]:
    r = rng()
    spans = []
    for i in range(n):
        model, provider = MODELS[i % len(MODELS)]
        spans.append(LlmSpan(
            model=model, provider=provider, service_name=SERVICES[i % len(SERVICES)],
            prompt_tokens=r.randint(30, 60) if with_counts else 0,
            completion_tokens=r.randint(20, 50) if with_counts else 0,
            latency_ms_total=r.randint(200, 9000), latency_ms_ttft=r.randint(50, 800),
            finish_reason="stop", retry_count=1 if i % 17 == 0 else 0,
            prompt_text=PROMPTS[i % len(PROMPTS)],
            completion_text=COMPLETIONS[i % len(COMPLETIONS)],
        ))
    return spans


def bench_chain(sizes: list[int]) -> None:
    table, scanner = load_price_table(), Scanner(load_patterns())
    for with_counts in (True, False):
        for n in sizes:
            metrics = LlmMetrics(CollectorRegistry())
            chain = ProcessorChain([TokensProcessor(), CostProcessor(table),
                                    ScanProcessor(scanner), SamplingProcessor()])
            batches = iter([make_spans(n, with_counts) for _ in range(3)])
            t = median_time(lambda c=chain, m=metrics, b=batches: _run(c, m, next(b)),
                            repeats=3)
            counts = "provided" if with_counts else "counted"
            emit("processors", "chain_spans_per_s", n / t, "spans/s", spans=n,
                 token_counts=counts, target=25_000)
            # Issue 14's bound: the cost step's share of the processors' time (price
            # structures must not make it grow by more than 10%, same-run before/after).
            stats = chain.stats
            emit("processors", "cost_step_share_of_chain_pct",
                 100 * stats["cost"].seconds / sum(st.seconds for st in stats.values()), "%",
                 spans=n, token_counts=counts)


def _run(chain: ProcessorChain, metrics: LlmMetrics, batch: list[LlmSpan]) -> None:
    for i in range(0, len(batch), 512):  # pipeline batches of 512
        part = batch[i:i + 512]
        chain.run(part)
        metrics.record(part)


def bench_metrics(n: int) -> None:
    spans = make_spans(n, True)
    for s in spans:
        s.cost_usd_micro = 1234
    cached = LlmMetrics(CollectorRegistry(), genai=False)  # the spec's eight series alone
    both = LlmMetrics(CollectorRegistry())  # + the OTel GenAI histograms (the default)
    t_cached, t_both, both_ratio = paired_ratio(lambda: cached.record(spans),
                                                lambda: both.record(spans))
    genai_ratios(spans)
    naive = LlmMetrics(CollectorRegistry())

    def uncached() -> None:  # baseline: .labels() on every update
        m = naive
        for s in spans:
            key = (s.model, s.provider, s.service_name)
            m.tokens.labels(*key, "prompt").inc(s.prompt_tokens)
            m.tokens.labels(*key, "completion").inc(s.completion_tokens)
            m.cost.labels(*key).inc(s.cost_usd_micro or 0)
            m.latency.labels(*key).observe(s.latency_ms_total or 0)
            m.ttft.labels(*key).observe(s.latency_ms_ttft or 0)
            m.finish_reason.labels(*key, s.finish_reason or "").inc()
            m.spans.labels(*key, s.status, "true" if s.retry_count else "false").inc()

    t_naive = median_time(uncached)
    public = LlmMetrics(CollectorRegistry(), batch_buckets=False)
    t_public = median_time(lambda: public.record(spans))
    emit("processors", "metric_updates_spans_per_s", n / t_cached, "spans/s", target=200_000)
    emit("processors", "metric_updates_with_genai_spans_per_s", n / t_both, "spans/s")
    emit("processors", "metric_updates_with_genai_vs_spec_only", both_ratio, "x",
         target=0.6, note="median of paired CPU-time ratios")
    emit("processors", "metric_updates_public_observe_spans_per_s", n / t_public, "spans/s")
    emit("processors", "metric_updates_batched_vs_public_observe", t_public / t_cached, "x")
    emit("processors", "metric_updates_baseline_labels_every_time", n / t_naive, "spans/s")
    emit("processors", "metric_updates_speedup_vs_baseline", t_naive / t_cached, "x")


def genai_ratios(spans: list[LlmSpan]) -> None:
    """The GenAI cost as the pipeline pays it: record() per batch of 512 spans (the
    exporter never records more than 4,096 at once), with the bench's narrow token counts
    and with counts spread over 1-100,000 (log-uniform: several token buckets per label
    set, so the one-bucket shortcut of the token histograms rarely applies)."""
    r = rng()
    wide = [LlmSpan(model=s.model, provider=s.provider, service_name=s.service_name,
                    prompt_tokens=int(10 ** r.uniform(0, 5)),
                    completion_tokens=int(10 ** r.uniform(0, 4)),
                    latency_ms_total=s.latency_ms_total, latency_ms_ttft=s.latency_ms_ttft,
                    finish_reason=s.finish_reason, retry_count=s.retry_count,
                    cost_usd_micro=s.cost_usd_micro) for s in spans]
    for tokens, batch in (("narrow", spans), ("wide", wide)):
        parts = [batch[i:i + 512] for i in range(0, len(batch), 512)]
        alone = LlmMetrics(CollectorRegistry(), genai=False)
        both = LlmMetrics(CollectorRegistry())
        *_, ratio = paired_ratio(lambda a=alone, p=parts: [a.record(x) for x in p],
                                 lambda b=both, p=parts: [b.record(x) for x in p])
        emit("processors", "metric_updates_with_genai_vs_spec_only_per_512", ratio, "x",
             tokens=tokens, target=0.6, note="median of paired CPU-time ratios")


# A child runs one tree's chain with that tree's own harness; only names every release's
# bench/processors.py has (1.8.2's too) are used.
_CHILD = """
import json, sys, time
from bench import processors as p
from bench._common import pin_one_core
pin_one_core()
n, with_counts = int(sys.argv[1]), sys.argv[2] == "1"
chain = p.ProcessorChain([p.TokensProcessor(), p.CostProcessor(p.load_price_table()),
                          p.ScanProcessor(p.Scanner(p.load_patterns())), p.SamplingProcessor()])
metrics = p.LlmMetrics(p.CollectorRegistry())
batches = [p.make_spans(n, with_counts) for _ in range(4)]
walls, cpus = [], []
for i, batch in enumerate(batches):
    w, c = time.perf_counter(), time.process_time()
    p._run(chain, metrics, batch)
    if i:  # the first batch warms tables and caches
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
print(json.dumps([sorted(walls)[1], sorted(cpus)[1]]))
"""


def chain_in(root: str, n: int, with_counts: bool) -> tuple[float, float]:
    """(wall s, CPU s) of ``n`` spans through the chain of the tree at ``root``."""
    done = subprocess.run([sys.executable, "-c", _CHILD, str(n), "1" if with_counts else "0"],
                          cwd=root, env={**os.environ, "PYTHONPATH": root},
                          capture_output=True, text=True, check=True)
    wall, cpu = json.loads(done.stdout.strip().splitlines()[-1])
    return float(wall), float(cpu)


def bench_baseline(refs: list[str], rounds: int, n: int = 10_000) -> None:
    from bench.baseline import REPO, worktree

    trees = {"ours": str(REPO), **{ref: str(worktree(ref)) for ref in refs}}
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    for _ in range(rounds):
        for name, root in trees.items():
            runs[name].append(chain_in(root, n, True))
    for name, samples in runs.items():
        extra = {"tree": name, "spans": n, "token_counts": "provided", "rounds": rounds}
        for ref in refs if name == "ours" else []:
            pairs = list(zip(samples, runs[ref], strict=True))
            extra[f"ratio_vs_{ref}"] = round(statistics.median(b[0] / o[0] for o, b in pairs), 3)
            extra[f"cpu_ratio_vs_{ref}"] = round(statistics.median(b[1] / o[1] for o, b in pairs),
                                                 3)
            extra[f"ratio_vs_{ref}_rounds"] = [round(b[0] / o[0], 3) for o, b in pairs]
        emit("processors", "chain_spans_per_s", n / statistics.median(s[0] for s in samples),
             "spans/s", target=45_000, **extra)
        emit("processors", "chain_cpu_us_per_span",
             statistics.median(s[1] for s in samples) / n * 1e6, "us/span", tree=name)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--baseline", default="", help="commits, comma-separated")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if args.baseline:
        bench_baseline(args.baseline.split(","), args.rounds)
        return
    pin_one_core()
    sizes = [1_000, 10_000] if quick() else [1_000, 10_000, 100_000]
    bench_chain(sizes)
    bench_metrics(20_000 if quick() else 100_000)


if __name__ == "__main__":
    main()
