"""Exporters: the Prometheus series (:mod:`.prometheus`) and the OTLP forwarder to the
trace backend (:mod:`.otlp_forwarder`). Each implements :class:`llm_observe.pipeline.Exporter`."""
