"""What the OTLP/HTTP door does about slow and heavy clients: time limits per connection
and a bound on the body bytes held across all of them.

- **Header timeout**: a connection must complete its first request's headers within
  ``header_timeout_s`` of connecting, or it is closed and counted
  (``llm_observe_receiver_http_timeouts_total{phase="headers"}``). Between requests of a
  keep-alive connection aiohttp's keep-alive timer (set one second later, so the count
  above is the one that fires first) closes it alike; that close is not counted, as an
  idle connection is not a slow client.
- **Body timeout**: the whole body must arrive within ``body_timeout_s`` of the headers
  (:func:`llm_observe.httpbody.read_body`); else 408 and the connection is closed,
  counted with ``phase="body"``.
- **In-flight body bytes** (:class:`BodyBudget`): every request reserves its body's bytes
  (the Content-Length up front, else as they arrive; inflated bytes as they are made)
  until its answer; past ``inflight_max_bytes`` over all connections it is answered 503
  with Retry-After before its body is read (``llm_observe_receiver_http_busy_total``). An
  empty budget takes any request, so one at the size limit is never refused forever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from llm_observe.httpbody import BodyBusy
from llm_observe.pipeline.selfmetrics import per_registry

MiB = 1024 * 1024
KEEPALIVE_MARGIN_S = 1.0


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """The door's limits (Settings ``otlp_http_*``)."""

    header_timeout_s: float = 20.0
    body_timeout_s: float = 60.0
    inflight_max_bytes: int = 64 * MiB


class GuardMetrics:
    """The door's own families (once per registry)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.timeouts = Counter("llm_observe_receiver_http_timeouts",
                                "OTLP/HTTP connections cut for being slow, by what was late "
                                "(headers, body)", ["phase"], registry=registry)
        self.busy = Counter("llm_observe_receiver_http_busy",
                            "OTLP/HTTP requests answered 503: the in-flight body bytes were "
                            "at their bound", registry=registry)
        self.inflight = Gauge("llm_observe_receiver_http_inflight_bytes",
                              "Request body bytes the OTLP/HTTP door holds right now",
                              registry=registry, multiprocess_mode="livesum")


guard_metrics = per_registry(GuardMetrics)


class BodyBudget:
    """Body bytes held across connections, bounded. Event-loop thread only."""

    def __init__(self, max_bytes: int, metrics: GuardMetrics) -> None:
        self.max_bytes = max_bytes
        self.metrics = metrics
        self.held = 0

    def hold(self) -> Hold:
        """One request's reservation; release it when the request is answered."""
        return Hold(self)

    def _take(self, n: int) -> None:
        if self.held and self.held + n > self.max_bytes:
            self.metrics.busy.inc()
            raise BodyBusy(f"the receiver holds {self.held} bytes of request bodies (bound "
                           f"{self.max_bytes}); retry shortly")
        self.held += n
        self.metrics.inflight.set(self.held)

    def _give(self, n: int) -> None:
        self.held -= n
        self.metrics.inflight.set(self.held)


class Hold:
    """Bytes one request reserved; a context manager that gives them back at exit."""

    __slots__ = ("budget", "n")

    def __init__(self, budget: BodyBudget) -> None:
        self.budget, self.n = budget, 0

    def reserve(self, n: int) -> None:
        """``n`` more bytes; BodyBusy (nothing reserved) when they do not fit."""
        self.budget._take(n)
        self.n += n

    def __enter__(self) -> Hold:
        return self

    def __exit__(self, *exc: object) -> None:
        n, self.n = self.n, 0
        if n:
            self.budget._give(n)


class HeaderTimer:
    """Closes connections whose first request's headers are late; see the module
    docstring. Wraps the protocol factory, so it sees every connection as it opens."""

    def __init__(self, timeout_s: float, metrics: GuardMetrics) -> None:
        self.timeout_s = timeout_s
        self.metrics = metrics
        self._waiting: dict[Any, asyncio.TimerHandle] = {}  # handler -> its deadline

    def factory(self, make: Callable[[], Any]) -> Callable[[], Any]:
        """A protocol factory for ``loop.create_server`` around aiohttp's ``make``."""
        loop = asyncio.get_running_loop()

        def protocol() -> Any:
            handler = make()
            self._waiting[handler] = loop.call_later(self.timeout_s, self._expire, handler)
            return handler

        return protocol

    def headers_done(self, protocol: Any) -> None:
        """A request's headers arrived on this connection (called by the door)."""
        handle = self._waiting.pop(protocol, None)
        if handle is not None:
            handle.cancel()

    def _expire(self, handler: Any) -> None:
        if self._waiting.pop(handler, None) is None:
            return
        if handler.transport is not None:  # still open, no request yet: a slow client
            self.metrics.timeouts.labels("headers").inc()
            handler.force_close()

    def close(self) -> None:
        for handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()
