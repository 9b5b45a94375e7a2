"""Metrics endpoints (spec 4.10-4.13): init, health, record, record-batch.

``record`` and ``record-batch`` build :class:`LlmSpan`s and submit them to the same
pipeline the OTLP receiver feeds: one code path, one set of series. A batch is validated
span by span: the valid spans are recorded even when a neighbour is rejected, and each
rejected span is answered with its index and every bad field.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from llm_observe.api.errors import ApiError, unavailable, validation_error
from llm_observe.api.keys import AppKeys
from llm_observe.api.request import json_body, json_object
from llm_observe.api.scrape import PortInUse
from llm_observe.errors import FieldError, SpanValidationError
from llm_observe.span import LlmSpan


def _status(request: web.Request) -> dict[str, Any]:
    scrape = request.app[AppKeys.scrape]
    if scrape.running:
        message = f"metrics pipeline initialized; scrape endpoint on {scrape.host}:" \
                  f"{scrape.port}/metrics"
    else:
        message = "metrics pipeline not initialized; POST /v1/metrics/init to start the " \
                  "scrape endpoint"
    return {"initialized": scrape.running, "message": message, "port": scrape.port}


async def init_handler(request: web.Request) -> web.Response:
    """Start the scrape endpoint on ``port`` (default: settings, 9464). Idempotent."""
    fields = await json_object(request, optional=True)
    default = request.app[AppKeys.settings].metrics_port
    port = fields.integer("port", minimum=0, maximum=65535, default=default)
    fields.check()
    assert port is not None
    scrape = request.app[AppKeys.scrape]
    try:
        started = await scrape.start(port)
    except PortInUse as exc:
        raise ApiError(409, "port_in_use", f"{exc}; choose another port with "
                       '{"port": N} or stop the process holding it',
                       {"host": exc.host, "port": exc.port}) from None
    body = _status(request)
    if not started:
        body["message"] = f"already initialized; scrape endpoint on {scrape.host}:" \
                          f"{scrape.port}/metrics"
        if fields.data.get("port") not in (None, scrape.port):
            body["message"] += f" (requested port {port} ignored: restart to change it)"
    return web.json_response(body)


async def health_handler(request: web.Request) -> web.Response:
    """``{initialized, message, port}``; open even when an API token is configured."""
    return web.json_response(_status(request))


def _check_ready(request: web.Request) -> None:
    if request.app[AppKeys.state].draining:
        raise unavailable("shutting_down", "the collector is shutting down", 5)


def _result(span: LlmSpan) -> dict[str, Any]:
    return {"recorded": True, "cost_usd_micro": span.cost_usd_micro,
            "price_version": span.price_version, "span_id": span.span_id,
            "trace_id": span.trace_id, "is_sampled": span.is_sampled}


async def record_handler(request: web.Request) -> web.Response:
    """One span record (spec 2.1) -> the record result (spec 2.4). 422 names every bad field."""
    data = await json_body(request)
    span = LlmSpan.from_dict(data)  # SpanValidationError -> 422 in the middleware
    _check_ready(request)
    await request.app[AppKeys.collector].pipeline.submit([span])
    return web.json_response(_result(span))


def _parse_batch(request: web.Request, data: Any) -> tuple[list[LlmSpan], list[dict[str, Any]]]:
    if not isinstance(data, dict):
        raise validation_error([FieldError("$", "must be a JSON object with a spans list")])
    items = data.get("spans")
    if not isinstance(items, list):
        raise validation_error([FieldError("spans", "is required and must be a list")])
    limit = request.app[AppKeys.settings].max_batch_spans
    if len(items) > limit:
        raise ApiError(413, "batch_too_large",
                       f"{len(items)} spans in one batch; the limit is {limit}",
                       {"limit_spans": limit, "spans": len(items)})
    spans: list[LlmSpan] = []
    rejected: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        try:
            spans.append(LlmSpan.from_dict(item))
        except SpanValidationError as exc:
            rejected.append({"index": index, "errors": [e.as_dict() for e in exc.errors]})
    return spans, rejected


async def record_batch_handler(request: web.Request) -> web.Response:
    """``{spans: [...]}`` -> ``{recorded_count, rejected_count, rejected, cost_usd_micro, ...}``.

    A well-formed batch is a 200 even when every span was rejected: the answer is per
    span, and the caller reads ``rejected``. 413 past the batch limit.
    """
    spans, rejected = _parse_batch(request, await json_body(request))
    _check_ready(request)
    await request.app[AppKeys.collector].pipeline.submit(spans)
    priced = [s.cost_usd_micro for s in spans if s.cost_usd_micro is not None]
    return web.json_response({
        "recorded_count": len(spans),
        "rejected_count": len(rejected),
        "rejected": rejected,
        "cost_usd_micro": sum(priced),
        "unpriced_count": len(spans) - len(priced),
        "span_ids": [s.span_id for s in spans],
    })
