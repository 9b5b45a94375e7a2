"""The OTLP receivers: any OpenTelemetry SDK's spans in, LLM spans mapped out.

``start_receiver(pipeline, registry, host, port, max_message_bytes)`` serves the OTLP/gRPC
TraceService (:4317); ``start_http_receiver(...)`` serves OTLP/HTTP ``POST /v1/traces``
(:4318, protobuf and JSON). Both run one transport-neutral core (:mod:`.export`);
``otlp.dialects`` maps GenAI-semconv / OpenLLMetry / OpenInference / OpenLIT /
llm_observe attributes onto LlmSpan (docs/attribute-mapping.md).
"""

from __future__ import annotations

from llm_observe.receiver.grpc_server import Receiver, start_receiver
from llm_observe.receiver.http_server import HttpReceiver, start_http_receiver

__all__ = ["HttpReceiver", "Receiver", "start_http_receiver", "start_receiver"]
