"""The Prometheus scrape endpoint (``GET /metrics``), a small aiohttp site of its own.

Started once, by ``serve`` at start-up or by ``POST /v1/metrics/init``; starting it again
is a no-op that reports where it already runs (spec 3: init is idempotent). A port that is
taken is a :class:`PortInUse`, not a crash.

A scrape never blocks the event loop the API and the receiver share: the exposition is
rendered on one executor thread of its own and sent in slices; scrapes that arrive while
a render runs share its result, so a flood of scrapers costs one render at a time. The
exposition is bounded by the label-set budget (``collector/exporters/label_sets.py``)
and rendered family by family (``collector/exporters/exposition.py``): a family that
cannot render is repaired or left out, logged and counted, and only a registry where
nothing renders answers 500. With ``metrics_token`` set, a scrape needs
``Authorization: Bearer <token>`` (else 401).

Format: a scraper whose ``Accept`` names ``application/openmetrics-text`` (Prometheus
does, first) gets OpenMetrics 1.0.0, the format that carries exemplars; anyone else the
text format 0.0.4, unchanged (prometheus_client's ``choose_encoder`` rule).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST as OPENMETRICS_TYPE

from llm_observe.bearer import bearer_ok
from llm_observe.collector.exporters.exposition import MAX_SERIES, Exposition
from llm_observe.collector.exporters.series_render import OPENMETRICS, TEXT
from llm_observe.collector.longlived import long_lived
from llm_observe.errors import LlmObserveError

log = logging.getLogger(__name__)

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="llm-observe metrics"'}


PREPARE_EVERY_S = 0.25  # how often to look for new label sets to render ahead of a scrape
CONTENT_TYPES = {TEXT: CONTENT_TYPE_LATEST, OPENMETRICS: OPENMETRICS_TYPE}


def negotiate(accept: str) -> str:
    """The exposition format for an ``Accept`` header: OpenMetrics if any media range names
    it (whatever its q; Prometheus lists it first), else the text format."""
    for media in accept.split(","):
        if media.split(";")[0].strip().lower() == "application/openmetrics-text":
            return OPENMETRICS
    return TEXT


def _authorization(request: web.Request) -> list[bytes]:
    """Every Authorization header's raw bytes (the rule wants exactly one)."""
    return [v for k, v in request.raw_headers if k.lower() == b"authorization"]


class PortInUse(LlmObserveError):
    """The scrape port is taken by another process (or cannot be bound)."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        self.host = host
        self.port = port
        super().__init__(f"cannot listen on {host}:{port}: {reason}")


class ScrapeServer:
    """Serves ``registry`` at ``http://host:port/metrics``. Event-loop thread only.

    ``token`` (``Settings.metrics_token``): when set, a scrape without
    ``Authorization: Bearer <token>`` is answered 401. ``max_series``: the exposition's
    global series budget (``Settings.max_scrape_series``). Registers the exposition's
    self-metrics on ``registry`` (one scrape server per registry).
    """

    def __init__(self, registry: CollectorRegistry, host: str = "127.0.0.1",
                 token: str | None = None, max_series: int = MAX_SERIES) -> None:
        self.registry = registry
        self.host = host
        self.port: int | None = None
        self.started_at: float | None = None
        self.exposition = Exposition(registry, max_series)
        self._token = token.encode("ascii") if token else None
        self._runner: web.AppRunner | None = None
        self._lock = asyncio.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._inflight: dict[str, asyncio.Future[list[bytes]]] = {}
        self._elsewhere = False
        self._last_fmt = TEXT
        self._preparer: asyncio.Future[None] | None = None

    @property
    def running(self) -> bool:
        return self._runner is not None or self._elsewhere

    def served_elsewhere(self, port: int) -> None:
        """The ``serve --workers`` supervisor serves the summed scrape on ``port`` for every
        worker: report it as running there; :meth:`start` then starts nothing."""
        self.port = port
        self._elsewhere = True

    async def _metrics(self, request: web.Request) -> web.StreamResponse:
        if self._token is not None and not bearer_ok(_authorization(request), self._token):
            return web.Response(status=401, headers=_CHALLENGE,
                                text="missing or wrong bearer token "
                                     "(Authorization: Bearer <metrics token>)\n")
        fmt = self._last_fmt = negotiate(request.headers.get("Accept", ""))
        try:
            body = await self.render(fmt)
        except Exception:
            log.exception("scrape: no metric family could be rendered")
            return web.Response(status=500, text="no metric family could be rendered; "
                                                 "see the collector log\n")
        resp = web.StreamResponse(headers={"Content-Type": CONTENT_TYPES[fmt]})
        resp.content_length = sum(map(len, body))
        await resp.prepare(request)
        if request.method != "HEAD":
            # In pieces (~256 KiB, joined on the scrape thread): one write of a budget-full
            # exposition (~29 MB) copied it twice on the loop and stalled it ~140 ms.
            for piece in body:
                await resp.write(piece)
        await resp.write_eof()
        return resp

    async def render(self, fmt: str = TEXT) -> list[bytes]:
        """The exposition in ``fmt`` in pieces (``Exposition.render_pieces``), rendered on
        the scrape thread; joins a render of that format already running."""
        future = self._inflight.get(fmt)
        if future is None:
            future = asyncio.get_running_loop().run_in_executor(
                self._executor(), self.exposition.render_pieces, fmt)
            self._inflight[fmt] = future
            future.add_done_callback(partial(self._rendered, fmt))
        # shielded: a scraper that hangs up must not cancel the render the others wait for
        return await asyncio.shield(future)

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="llm-observe-scrape")
        return self._pool

    async def _prepare(self) -> None:
        """Every :data:`PREPARE_EVERY_S`, if label sets were made since the last look,
        render them ahead of the next scrape (``Exposition.prepare``) on the scrape thread,
        in the format last scraped: a scrape after a client filled the label-set budget
        then renders changed sets, not ~35,000 new ones. It stops when a scrape waits for
        the scrape thread (:meth:`_scrape_waits`): that scrape renders what is left.

        Measured and not kept: the pre-render sleeping 2 ms (GIL free) after each 2 ms of
        work, to leave the loop the GIL while a flood makes label sets: no better probe in
        bench.hostile, and more left to the scrape after the flood (slowest scrape 0.75-1.47
        s vs 0.38-1.08 s, load 10-12)."""
        loop = asyncio.get_running_loop()
        seen = -1
        while True:
            await asyncio.sleep(PREPARE_EVERY_S)
            made = long_lived.made_sets
            if made == seen or self._inflight:
                continue
            seen = made
            try:
                await loop.run_in_executor(self._executor(), self.exposition.prepare,
                                           self._last_fmt, self._scrape_waits)
            except Exception:  # the scrape renders (and reports) what failed here
                log.debug("scrape: pre-render failed", exc_info=True)

    def _scrape_waits(self) -> bool:
        """True while a render was submitted (any thread may ask: one dict read)."""
        return bool(self._inflight)

    def _rendered(self, fmt: str, future: asyncio.Future[list[bytes]]) -> None:
        if self._inflight.get(fmt) is future:
            del self._inflight[fmt]
        if not future.cancelled():
            future.exception()  # retrieved here too: every waiter may have hung up

    async def start(self, port: int) -> bool:
        """Listen on ``port`` (0 = any free port). True if it started now, False if it was running.

        Raises PortInUse when the port cannot be bound.
        """
        async with self._lock:
            if self.running:
                return False
            app = web.Application()
            app.router.add_get("/metrics", self._metrics)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, self.host, port)
            try:
                await site.start()
            except OSError as exc:
                await runner.cleanup()
                reason = "address already in use" if exc.errno == errno.EADDRINUSE \
                    else (exc.strerror or str(exc))
                raise PortInUse(self.host, port, reason) from None
            sockets = list(runner.addresses or [])
            self.port = int(sockets[0][1]) if sockets else port
            self._runner = runner
            self.started_at = time.time()
            self._preparer = asyncio.ensure_future(self._prepare())
            return True

    async def stop(self) -> None:
        async with self._lock:
            if self._preparer is not None:
                self._preparer.cancel()
                self._preparer = None
            if self._runner is not None:
                await self._runner.cleanup()
                self._runner = None
            if self._pool is not None:
                # a render still running finishes on its thread; nothing waits for it
                self._pool.shutdown(wait=False)
                self._pool = None
