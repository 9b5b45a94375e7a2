"""Where our spans go: the app's TracerProvider if it has one, else OTLP gRPC.

First use decides. If the application (or another library) already registered an
OpenTelemetry ``TracerProvider``, every llm-observe span goes to it. Otherwise we
register an SDK provider exporting OTLP gRPC to ``OTEL_EXPORTER_OTLP_ENDPOINT``
(default ``localhost:4317``, the collector's receiver) through
``CountingBatchSpanProcessor``. ``use_tracer_provider()`` points our spans at a given
provider without touching the global one (tests, apps with several pipelines).
"""

from __future__ import annotations

import threading

from opentelemetry import trace
from opentelemetry.trace import Tracer, TracerProvider

from llm_observe import __version__, semconv

_lock = threading.Lock()
_tracer: Tracer | None = None
_override: TracerProvider | None = None
_owned: TracerProvider | None = None  # the provider we created, if we had to


def get_tracer() -> Tracer:
    """The tracer for llm-observe spans (set up on first use)."""
    tracer = _tracer
    if tracer is None:
        tracer = _resolve()
    return tracer


_scoped: dict[str, tuple[TracerProvider, Tracer]] = {}


def scoped_tracer(scope: str) -> Tracer:
    """A tracer of another library's instrumentation scope on the provider our spans go to
    (the MCP SDK's own spans: instrument/targets/mcp.py); follows ``use_tracer_provider``."""
    get_tracer()  # the first use decides the provider, as for our own spans
    provider = _override or trace.get_tracer_provider()
    hit = _scoped.get(scope)
    if hit is None or hit[0] is not provider:
        hit = _scoped[scope] = (provider, provider.get_tracer(scope))
    return hit[1]


def use_tracer_provider(provider: TracerProvider | None) -> None:
    """Send our spans to ``provider`` (None: back to the global provider)."""
    global _override, _tracer
    with _lock:
        _override = provider
        _tracer = None


def owned_provider() -> TracerProvider | None:
    """The provider llm-observe registered itself, or None when the app brought one."""
    return _owned


def _resolve() -> Tracer:
    global _tracer
    with _lock:
        if _tracer is not None:
            return _tracer
        provider = _override or _global_provider()
        _tracer = provider.get_tracer(semconv.INSTRUMENTATION_SCOPE, __version__)
        return _tracer


def _global_provider() -> TracerProvider:
    global _owned
    current = trace.get_tracer_provider()
    if not isinstance(current, trace.ProxyTracerProvider):
        return current  # the app's own (SDK, vendor or NoOp): respect it
    provider = default_provider()
    trace.set_tracer_provider(provider)
    _owned = provider
    # set_tracer_provider only works once per process; if someone won the race,
    # use whatever is registered now.
    registered = trace.get_tracer_provider()
    return provider if registered is provider else registered


def default_provider() -> TracerProvider:
    """An SDK provider exporting OTLP gRPC (endpoint and headers from the OTEL_* env vars)."""
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider

    from llm_observe.instrument.export import CountingBatchSpanProcessor

    provider = SdkTracerProvider(resource=Resource.create())
    provider.add_span_processor(CountingBatchSpanProcessor(OTLPSpanExporter()))
    return provider
