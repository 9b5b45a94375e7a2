"""Builds the collector's parts from Settings: config files, processors, exporters.

Config files load here, at start-up, so a malformed price or patterns file
stops the process with one line naming the file and the entry (ConfigError).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from llm_observe.collector.exporters.agent_runs import AgentRunExporter, RunMetrics
from llm_observe.collector.exporters.agents import AgentExporter, AgentMetrics
from llm_observe.collector.exporters.prometheus import LabelLimits, LlmMetrics, PrometheusExporter
from llm_observe.collector.settings import Settings
from llm_observe.pipeline import Exporter, Pipeline, Processor
from llm_observe.pipeline.selfmetrics import PipelineStats
from llm_observe.processors.sampling import SamplingProcessor
from llm_observe.processors.toolchain import ToolchainProcessor, ToolChainTracker

log = logging.getLogger(__name__)


@dataclass
class Collector:
    """Everything the API, the receiver and serve share: one pipeline, one registry."""

    settings: Settings
    registry: CollectorRegistry
    metrics: LlmMetrics
    pipeline: Pipeline
    price_table: Any
    cost: Any  # the pipeline's CostProcessor: prices a span as the pipeline does
    scanner: Any
    tracker: Any  # ToolChainTracker, or RedisChainTracker with redis_url (shared state)
    embedder: Any = None
    guard: Any = None  # the encoder stage (processors/guard.py), also read by the scan API
    extra_exporters: list[Exporter] = field(default_factory=list)


def build_collector(settings: Settings, registry: CollectorRegistry | None = None,
                    exporters: list[Exporter] | None = None) -> Collector:
    """Load config; assemble dedup → tokens → cost → scan → untrusted_scan → guard (the
    [guard] extra's encoder tier, when installed) → sampling → embedding → toolchain.

    ``exporters`` (the OTLP forwarder, a test sink) run before the Prometheus exporter:
    a batch is counted only once every exporter that may refuse it took it (count after
    commit, :meth:`Pipeline.submit`).
    """
    from llm_observe.agents.dedup import DedupProcessor
    from llm_observe.pricing import load_price_table
    from llm_observe.processors.cost import CostProcessor
    from llm_observe.processors.scan import ScanProcessor
    from llm_observe.processors.tokens import TokensProcessor
    from llm_observe.processors.untrusted import UntrustedTextProcessor
    from llm_observe.scan import Scanner, load_patterns

    price_table = load_price_table(settings.config_file("model_prices.yaml"))
    scanner = Scanner(load_patterns(settings.config_file("patterns.yaml")))
    registry = registry if registry is not None else CollectorRegistry()
    limits = LabelLimits(models=settings.max_models, services=settings.max_services,
                         label_sets=settings.max_label_sets)
    metrics = LlmMetrics(registry, limits, genai=settings.genai_metrics,
                         exemplars=settings.exemplars)
    tracker: Any = ToolChainTracker()
    if settings.redis_url is not None and settings.redis_state:
        from llm_observe.processors.chainstore import RedisChainTracker
        tracker = RedisChainTracker(settings.redis_url, registry)
    embedder = _embedder(settings)
    cost = CostProcessor(price_table)
    # llm_observe_reported_cost_* self-metrics: a collector by duck typing (the processor
    # does not import prometheus_client, so the in-process library can price spans)
    registry.register(cost.reported)  # type: ignore[arg-type]
    dedup, consumers = DedupProcessor(), None
    if settings.redis_url is not None and settings.redis_state:  # across workers, replicas
        from llm_observe.agents.consumerstore import SharedConsumers
        from llm_observe.agents.dedupstore import SharedWrapperMemory
        dedup = DedupProcessor(SharedWrapperMemory(settings.redis_url, registry))
        consumers = SharedConsumers(settings.redis_url, registry)
    registry.register(dedup)  # type: ignore[arg-type]
    processors: list[Processor] = [
        dedup,  # first: every later stage sees which spans count (agents.dedup)
        TokensProcessor(max_text_chars=settings.max_text_chars), cost,
        ScanProcessor(scanner, max_text_chars=settings.max_text_chars),
        # agent, tool, retriever, chain and MCP spans' texts: untrusted input, scanned too
        UntrustedTextProcessor(scanner, max_text_chars=settings.max_text_chars,
                               consumers=consumers),
    ]
    from llm_observe.guard import guard_processor  # the [guard] extra's encoder tier, if any
    guard = guard_processor(scanner.patterns, registry, settings.max_text_chars)
    # Scan requests (API) always use it when built; spans only with guard.spans
    processors.extend([guard] if guard is not None and scanner.patterns.guard.spans else [])
    processors.append(SamplingProcessor())
    if embedder is not None:
        from llm_observe.processors.embedding import EmbeddingProcessor
        processors.append(EmbeddingProcessor(
            embedder, max_per_s=settings.embedding_max_per_s,
            queue_max=settings.embedding_queue_max, registry=registry))
    processors.append(ToolchainProcessor(tracker, blocking=not isinstance(tracker,
                                                                          ToolChainTracker)))
    extra = list(exporters or [])
    agents = AgentExporter(AgentMetrics(registry, limits, metrics.label_overflow))
    run_store = None
    if settings.redis_url is not None and settings.redis_state:  # one run, one worker
        from llm_observe.agents.runstore import RedisRunStore
        run_store = RedisRunStore(settings.redis_url, registry)
    runs = AgentRunExporter(RunMetrics(registry, limits, metrics.label_overflow), run_store)
    pipeline = Pipeline(processors, [*extra, PrometheusExporter(metrics), agents, runs])
    registry.register(PipelineStats(pipeline))
    return Collector(settings=settings, registry=registry, metrics=metrics, pipeline=pipeline,
                     price_table=price_table, cost=cost, scanner=scanner, tracker=tracker,
                     embedder=embedder, guard=guard, extra_exporters=extra)


def _embedder(settings: Settings) -> Any:
    """The embedder, or None when disabled or when the embeddings extra is not installed."""
    if not settings.embedding_enabled:
        return None
    try:
        from llm_observe.embedding import Embedder, EmbeddingConfig
    except ImportError as exc:  # the [embeddings] extra is optional
        log.warning("embeddings disabled: %s (install llm-observe[embeddings])", exc)
        return None
    return Embedder(EmbeddingConfig(threads=settings.embedding_threads,
                                    batch_size=settings.embedding_batch_size,
                                    quantized=settings.embedding_quantized))
