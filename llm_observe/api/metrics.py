"""Metrics endpoints (spec 4.10-4.13): init, health, record, record-batch.

``record`` and ``record-batch`` build :class:`LlmSpan`s and submit them to the same
pipeline the OTLP receiver feeds: one code path, one set of series. A batch is validated
span by span: the valid spans are recorded even when a neighbour is rejected, and each
rejected span is answered with its index and every bad field.

Neither door rejects what it does not know: an unknown field (``promt_tokens``) or a
provider no registry spells (``opnai``) is recorded as before, but named in the answer's
``warnings`` (with a "did you mean" when a known name is close) and logged once per
distinct warning, so a typo shows on the first request instead of as a missing series.
"""

from __future__ import annotations

import asyncio
import difflib
import logging
import threading
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from llm_observe.api.errors import ApiError, unavailable, validation_error
from llm_observe.api.keys import AppKeys
from llm_observe.api.request import json_body, json_object
from llm_observe.api.scrape import PortInUse
from llm_observe.errors import FieldError, SpanValidationError
from llm_observe.pipeline.cpu import cpu_executor
from llm_observe.providers.registry import ALIASES, BY_NAME, canonical
from llm_observe.span import DETAIL_COUNTS, LlmSpan

log = logging.getLogger("llm_observe.api.metrics")

# Every field LlmSpan.from_dict reads (the SpanRecord schema of contracts/v1.yaml; a test
# keeps the two equal).
RECORD_FIELDS = frozenset({
    "model", "provider", "service_name", "prompt_tokens", "completion_tokens",
    "latency_ms_total", "latency_ms_ttft", "finish_reason", "status", "pii_detected",
    "injection_attempt", "retry_count", "attempted_models", "span_id", "trace_id",
    "parent_span_id", "endpoint", "session_id", "actual_model", "error_type",
    "cache_read_tokens", "cache_write_tokens", "prompt", "completion",
    # the price structures' counts (docs/pricing.md)
    *DETAIL_COUNTS, "service_tier",
})
PROVIDER_SPELLINGS = frozenset(BY_NAME) | frozenset(ALIASES)
MAX_LOGGED_WARNINGS = 256  # distinct warnings logged per process; the answers name them all
MAX_SUGGESTIONS = 256  # new "did you mean" computations per request
MAX_CACHED = 4096
MAX_WARNINGS = 32  # per span: a record of 10,000 junk keys is not answered 10,000 times
# A batch of more records is validated in the process's CPU thread (pipeline/cpu.py):
# ~20 µs a record (more on a busy machine), so 1,000 of them held every door ~20-70 ms.
INLINE_MAX_RECORDS = 128


class _LogOnce:
    """Logs each distinct warning once, up to ``limit`` of them (label-like memory bound)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.seen: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, text: str) -> None:
        with self.lock:
            if text in self.seen or len(self.seen) > self.limit:
                return
            self.seen.add(text)
            full = len(self.seen) > self.limit
        if full:
            log.warning("more than %d distinct record warnings; not logging new ones",
                        self.limit)
        else:
            log.warning("record: %s", text)


_log_once = _LogOnce(MAX_LOGGED_WARNINGS)


_SUGGESTIONS: dict[tuple[str, frozenset[str]], str] = {}  # bounded by MAX_CACHED


class _Suggester:
    """"Did you mean" for unknown names. difflib costs ~30 µs a name, so answers are cached
    (a client repeats its typo in every span) and one request computes at most ``budget``
    new ones: a 1 MiB batch of distinct junk keys cannot hold the event loop for a second."""

    def __init__(self, budget: int = MAX_SUGGESTIONS) -> None:
        self.budget = budget

    def __call__(self, name: str, known: frozenset[str]) -> str:
        key = (name, known)
        answer = _SUGGESTIONS.get(key)
        if answer is not None:
            return answer
        if self.budget <= 0:
            return ""
        self.budget -= 1
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
        answer = f"; did you mean {close[0]!r}?" if close else ""
        if len(_SUGGESTIONS) < MAX_CACHED:
            _SUGGESTIONS[key] = answer
        return answer


def record_warnings(data: Any, suggest: _Suggester | None = None) -> list[FieldError]:
    """Unknown fields (ignored) and an unknown provider (recorded as given) of one record."""
    if not isinstance(data, Mapping):
        return []
    suggest = suggest or _Suggester()
    warnings: list[FieldError] = []
    for key in data:
        if not isinstance(key, str) or key in RECORD_FIELDS:
            continue
        if len(warnings) == MAX_WARNINGS:
            break
        warnings.append(FieldError(key[:256], "unknown field, ignored"
                                   + suggest(key[:256], RECORD_FIELDS)))
    provider = data.get("provider")
    if isinstance(provider, str) and provider.strip() \
            and canonical(provider) not in PROVIDER_SPELLINGS:
        name = canonical(provider)[:256]
        warnings.append(FieldError("provider", f"unknown provider {name!r}, recorded under "
                                   "that label"
                                   + suggest(name, PROVIDER_SPELLINGS)))
    for w in warnings:
        _log_once(f"{w.field!r}: {w.message}")  # repr: a key may hold a newline
    return warnings


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


def _result(span: LlmSpan, warnings: list[FieldError]) -> dict[str, Any]:
    return {"recorded": True, "cost_usd_micro": span.cost_usd_micro,
            "price_version": span.price_version, "span_id": span.span_id,
            "trace_id": span.trace_id, "is_sampled": span.is_sampled,
            "warnings": [w.as_dict() for w in warnings]}


async def record_handler(request: web.Request) -> web.Response:
    """One span record (spec 2.1) -> the record result (spec 2.4). 422 names every bad field."""
    data = await json_body(request)
    try:
        span = LlmSpan.from_dict(data)
    except SpanValidationError as exc:  # a misspelt key is often why: say so in the 422
        hints = "; ".join(f"{w.field}: {w.message}" for w in record_warnings(data))
        raise validation_error(exc.errors, f"{exc}; {hints}" if hints else None) from None
    _check_ready(request)
    await request.app[AppKeys.collector].pipeline.submit([span])
    return web.json_response(_result(span, record_warnings(data)))


def _parse_batch(limit: int, data: Any) \
        -> tuple[list[LlmSpan], list[dict[str, Any]], list[dict[str, Any]]]:
    """Validate a record-batch body (CPU only, any thread): spans, rejected, warned."""
    if not isinstance(data, dict):
        raise validation_error([FieldError("$", "must be a JSON object with a spans list")])
    items = data.get("spans")
    if not isinstance(items, list):
        raise validation_error([FieldError("spans", "is required and must be a list")])
    if len(items) > limit:
        raise ApiError(413, "batch_too_large",
                       f"{len(items)} spans in one batch; the limit is {limit}",
                       {"limit_spans": limit, "spans": len(items)})
    spans: list[LlmSpan] = []
    suggest = _Suggester()  # one budget for the whole batch
    rejected: list[dict[str, Any]] = []
    warned: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        try:
            spans.append(LlmSpan.from_dict(item))
        except SpanValidationError as exc:
            rejected.append({"index": index, "errors": [e.as_dict() for e in exc.errors]})
        warnings = record_warnings(item, suggest)  # a typo is often why a span was rejected
        if warnings:
            warned.append({"index": index, "warnings": [w.as_dict() for w in warnings]})
    return spans, rejected, warned


async def record_batch_handler(request: web.Request) -> web.Response:
    """``{spans: [...]}`` -> ``{recorded_count, rejected_count, rejected, cost_usd_micro, ...}``.

    A well-formed batch is a 200 even when every span was rejected: the answer is per
    span, and the caller reads ``rejected`` (and ``warnings``, per recorded index). 413
    past the batch limit.
    """
    data = await json_body(request)
    limit = request.app[AppKeys.settings].max_batch_spans
    items = data.get("spans") if isinstance(data, dict) else None
    if isinstance(items, list) and INLINE_MAX_RECORDS < len(items) <= limit:
        spans, rejected, warned = await asyncio.get_running_loop().run_in_executor(
            cpu_executor(), _parse_batch, limit, data)
    else:
        spans, rejected, warned = _parse_batch(limit, data)
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
        "warnings": warned,
    })
