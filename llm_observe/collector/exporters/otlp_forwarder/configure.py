"""The forwarder a collector's settings ask for."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from llm_observe.collector.exporters.otlp_forwarder.forwarder import OtlpForwarder
from llm_observe.collector.settings import Settings
from llm_observe.pipeline.selfmetrics import forwarder_metrics


def forwarder_from_settings(settings: Settings, registry: CollectorRegistry,
                            spool_lock_wait_s: float = 0.0) -> OtlpForwarder | None:
    """The forwarder configured by ``settings`` (None when ``tempo_endpoint`` is unset).
    ``spool_lock_wait_s``: how long to wait for another process to give the spool
    directory up (a worker's predecessor draining) before DirectoryBusy."""
    if not settings.tempo_endpoint:
        return None
    return OtlpForwarder(settings.tempo_endpoint, forwarder_metrics(registry),
                         max_spans=settings.queue_max_spans, max_bytes=settings.queue_max_bytes,
                         spool_dir=settings.spool_dir, redact_pii=settings.redact_pii,
                         write_ahead=settings.write_ahead,
                         spool_lock_wait_s=spool_lock_wait_s)
