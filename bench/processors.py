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

Run from the repository root: python -m bench.processors [--quick]
"""

from __future__ import annotations

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


def main() -> None:
    pin_one_core()
    sizes = [1_000, 10_000] if quick() else [1_000, 10_000, 100_000]
    bench_chain(sizes)
    bench_metrics(20_000 if quick() else 100_000)


if __name__ == "__main__":
    main()
