"""The collector runs the encoder tier on spans when the patterns file turns it on: a real
collector, real OTLP-less spans through its pipeline, the verdict counted in the spec's
series and the skips in llm_observe_scan_skipped_total."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import generate_latest

from llm_observe.collector.assembly import build_collector
from llm_observe.collector.settings import Settings
from llm_observe.scan.patterns import default_patterns_path


def test_collector_with_the_tier_on_counts_its_verdict(tmp_path: Path) -> None:
    text = default_patterns_path().read_text(encoding="utf-8")
    on = tmp_path / "patterns.yaml"
    on.write_text(text.replace("  spans: false", "  spans: true"))
    collector = build_collector(Settings(embedding_enabled=False, patterns_file=str(on)))
    names = [p.name for p in collector.pipeline.processors]
    # after the scans (its gate reads their verdicts), before sampling and the metrics
    assert names.index("scan") < names.index("untrusted_scan") < names.index("guard")
    assert names.index("guard") + 1 == names.index("sampling")
    exposition = generate_latest(collector.registry).decode()
    assert 'llm_observe_scan_skipped_total{reason="not_ready"}' in exposition


def test_shipped_collector_keeps_it_off_the_span_path_for_scan_requests() -> None:
    collector = build_collector(Settings(embedding_enabled=False))
    assert "guard" not in [p.name for p in collector.pipeline.processors]
    assert collector.guard is not None  # POST /v1/pii-injection/scan reads it
