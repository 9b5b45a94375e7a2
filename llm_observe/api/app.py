"""The aiohttp application: one routes table, one error middleware, resources in cleanup_ctx.

``create_app(collector)`` serves the /v1 REST API over the collector's pipeline. The app
owns, through its cleanup context, the scrape endpoint, the event publisher and the bridge
that turns test-call spans into pipeline spans. The pipeline is not the API's: whoever
runs the doors (``llm-observe serve``) starts it before and shuts it down after them.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from aiohttp import web

from llm_observe.api import (
    embeddings,
    instrumentation,
    meta,
    metrics,
    pii_injection,
    pricing,
    sampling,
    streaming,
    token_counting,
    tool_call,
)
from llm_observe.api.auth import auth_middleware
from llm_observe.api.bridge import attach_bridge
from llm_observe.api.errors import Handler, error_middleware
from llm_observe.api.events import EventPublisher
from llm_observe.api.keys import ApiState, AppKeys
from llm_observe.api.offload import Offload
from llm_observe.api.request import HANDLER_ARGS
from llm_observe.api.scrape import ScrapeServer
from llm_observe.collector.assembly import Collector

log = logging.getLogger(__name__)

# Every route the API serves. The contracts (OpenAPI, GraphQL, proto) mirror this table;
# tests/api/test_contracts.py fails when they drift apart.
ROUTES: tuple[tuple[str, str, Handler], ...] = (
    ("POST", "/v1/instrumentation/init", instrumentation.init_handler),
    ("POST", "/v1/instrumentation/uninstrument", instrumentation.uninstrument_handler),
    ("POST", "/v1/instrumentation/detect", instrumentation.detect_handler),
    ("POST", "/v1/instrumentation/test-call", instrumentation.test_call_handler),
    ("POST", "/v1/token-counting/count", token_counting.count_handler),
    ("POST", "/v1/pii-injection/scan", pii_injection.scan_handler),
    ("POST", "/v1/embeddings/embed", embeddings.embed_handler),
    ("POST", "/v1/streaming/test-stream-call", streaming.test_stream_call_handler),
    ("POST", "/v1/sampling/should-sample", sampling.should_sample_handler),
    ("POST", "/v1/metrics/init", metrics.init_handler),
    ("GET", "/v1/metrics/health", metrics.health_handler),
    ("POST", "/v1/metrics/record", metrics.record_handler),
    ("POST", "/v1/metrics/record-batch", metrics.record_batch_handler),
    ("POST", "/v1/tool-call/track", tool_call.track_handler),
    ("POST", "/v1/tool-call/clear", tool_call.clear_handler),
    ("GET", "/v1/pricing/models", pricing.models_handler),
    ("GET", "/v1/version", meta.version_handler),
    ("GET", "/v1/openapi.yaml", meta.openapi_handler),
)


def create_app(collector: Collector) -> web.Application:
    """The REST API over ``collector`` (one app per collector: it registers self-metrics)."""
    settings = collector.settings
    # handler_args: aiohttp must not inflate gzip/deflate bodies itself (it would inflate a
    # bomb whole on the loop); request.read_body does it in bounded steps.
    app = web.Application(middlewares=[error_middleware, auth_middleware],
                          client_max_size=settings.max_body_bytes, handler_args=HANDLER_ARGS)
    app[AppKeys.collector] = collector
    app[AppKeys.settings] = settings
    app[AppKeys.max_body] = settings.max_body_bytes
    app[AppKeys.state] = ApiState()
    app[AppKeys.scrape] = ScrapeServer(collector.registry, settings.metrics_host or settings.host,
                                       token=settings.metrics_token,
                                       max_series=settings.max_scrape_series)
    app[AppKeys.events] = EventPublisher(settings.redis_url, collector.registry)
    app[AppKeys.offload] = Offload.from_settings(settings, collector.registry)
    for method, path, handler in ROUTES:
        if method == "GET":  # GET routes answer HEAD too (uptime checks use it)
            app.router.add_get(path, handler)
        else:
            app.router.add_route(method, path, handler)
    app.on_shutdown.append(_start_draining)
    app.cleanup_ctx.append(_resources)
    return app


async def _start_draining(app: web.Application) -> None:
    # on_shutdown runs before aiohttp waits for in-flight requests: from here on the
    # record endpoints answer 503 shutting_down instead of racing the pipeline's drain.
    app[AppKeys.state].draining = True


async def _resources(app: web.Application) -> AsyncIterator[None]:
    """Open the app's resources at start; close them at shutdown."""
    collector = app[AppKeys.collector]
    events = app[AppKeys.events]
    await events.start()
    detach_bridge = attach_bridge(collector)
    yield
    detach_bridge()
    await app[AppKeys.scrape].stop()
    await events.stop()
    app[AppKeys.offload].close()
