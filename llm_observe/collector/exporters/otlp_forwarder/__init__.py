"""The OTLP forwarder exporter: queue (:mod:`.queue`), send and retry (:mod:`.sender`,
:mod:`.retry`), spool (:mod:`.spool`), put together in :mod:`.forwarder`."""

from __future__ import annotations

from llm_observe.collector.exporters.otlp_forwarder.configure import forwarder_from_settings
from llm_observe.collector.exporters.otlp_forwarder.forwarder import OtlpForwarder
from llm_observe.collector.exporters.otlp_forwarder.retry import Backoff

__all__ = ["Backoff", "OtlpForwarder", "forwarder_from_settings"]
