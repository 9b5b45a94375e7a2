"""The forwarding exporter a collector's settings ask for: none, one forwarder, or a
:class:`~.fanout.Fanout` over several (:mod:`.destinations`)."""

from __future__ import annotations

from pathlib import Path

import grpc
from prometheus_client import CollectorRegistry

from llm_observe.collector.exporters.otlp_forwarder.destinations import Destination, destinations
from llm_observe.collector.exporters.otlp_forwarder.fanout import Fanout
from llm_observe.collector.exporters.otlp_forwarder.forwarder import OtlpForwarder
from llm_observe.collector.exporters.otlp_forwarder.grpc_transport import GrpcTransport
from llm_observe.collector.exporters.otlp_forwarder.retry import Backoff
from llm_observe.collector.exporters.otlp_forwarder.transport import Transport
from llm_observe.collector.settings import Settings
from llm_observe.otlp.encode import Encoder
from llm_observe.pipeline.selfmetrics import forwarder_metrics

BATCH_SPANS, BATCH_BYTES = 512, 4 * 1024 * 1024


def forwarder_from_settings(settings: Settings, registry: CollectorRegistry,
                            spool_lock_wait_s: float = 0.0,
                            environ: dict[str, str] | None = None,
                            backoff: Backoff | None = None) -> OtlpForwarder | Fanout | None:
    """The exporter configured by ``settings`` (None when no destination is set; a bad
    destinations.yaml raises ConfigError). ``spool_lock_wait_s``: how long to wait for
    another process to give a spool directory up (a worker's predecessor draining) before
    DirectoryBusy."""
    found = destinations(settings, environ)
    made = [forwarder(d, settings, registry, spool_lock_wait_s, backoff) for d in found]
    if not made:
        return None
    return made[0] if len(made) == 1 else Fanout(made)


def forwarder(d: Destination, settings: Settings, registry: CollectorRegistry,
              spool_lock_wait_s: float = 0.0, backoff: Backoff | None = None) -> OtlpForwarder:
    """One destination's forwarder: its transport, encoder, queue and spool."""
    backoff = backoff or Backoff()
    spool = None
    if settings.spool_dir:
        spool = Path(settings.spool_dir) / d.name if d.spool_subdir else Path(settings.spool_dir)
        spool.mkdir(parents=True, exist_ok=True)
    return OtlpForwarder(d.endpoint, forwarder_metrics(registry), destination=d.name,
                         transport=transport(d, backoff), backoff=backoff,
                         encoder=Encoder(text=d.text, spans=d.spans, max_spans=BATCH_SPANS,
                                         max_bytes=BATCH_BYTES),
                         max_spans=settings.queue_max_spans, max_bytes=settings.queue_max_bytes,
                         spool_dir=str(spool) if spool else None,
                         write_ahead=settings.write_ahead, spool_lock_wait_s=spool_lock_wait_s)


def transport(d: Destination, backoff: Backoff) -> Transport:
    """The destination's protocol."""
    if d.protocol == "grpc":
        return GrpcTransport(d.endpoint, timeout_s=d.timeout_s, backoff=backoff,
                             compression=grpc.Compression.Gzip if d.compression == "gzip"
                             else None, headers=d.headers, tls=d.tls)
    # imported here: a gRPC-only collector does not need httpx
    from llm_observe.collector.exporters.otlp_forwarder.http_transport import HttpTransport
    return HttpTransport(d.endpoint, timeout_s=d.timeout_s, gzip_body=d.compression == "gzip",
                         headers=d.headers, tls=d.tls)
