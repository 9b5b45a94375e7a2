"""The OTLP/gRPC receiver: any OpenTelemetry SDK's spans in, LLM spans mapped out.

``start_receiver(pipeline, registry, host, port, max_message_bytes)`` serves the
OTLP TraceService; ``dialects`` maps GenAI-semconv / OpenLLMetry / OpenInference /
OpenLIT / llm_observe attributes onto LlmSpan (docs/attribute-mapping.md).
"""

from __future__ import annotations

from llm_observe.receiver.grpc_server import Receiver, start_receiver

__all__ = ["Receiver", "start_receiver"]
