"""The Prometheus scrape endpoint (``GET /metrics``), a small aiohttp site of its own.

Started once, by ``serve`` at start-up or by ``POST /v1/metrics/init``; starting it again
is a no-op that reports where it already runs (spec 3: init is idempotent). A port that is
taken is a :class:`PortInUse`, not a crash.
"""

from __future__ import annotations

import asyncio
import errno
import time

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from llm_observe.errors import LlmObserveError


class PortInUse(LlmObserveError):
    """The scrape port is taken by another process (or cannot be bound)."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        self.host = host
        self.port = port
        super().__init__(f"cannot listen on {host}:{port}: {reason}")


class ScrapeServer:
    """Serves ``registry`` at ``http://host:port/metrics``. Event-loop thread only."""

    def __init__(self, registry: CollectorRegistry, host: str = "127.0.0.1") -> None:
        self.registry = registry
        self.host = host
        self.port: int | None = None
        self.started_at: float | None = None
        self._runner: web.AppRunner | None = None
        self._lock = asyncio.Lock()

    @property
    def running(self) -> bool:
        return self._runner is not None

    async def _metrics(self, request: web.Request) -> web.Response:
        # generate_latest walks every family; a few ms at most for our label caps.
        body = generate_latest(self.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def start(self, port: int) -> bool:
        """Listen on ``port`` (0 = any free port). True if it started now, False if it was running.

        Raises PortInUse when the port cannot be bound.
        """
        async with self._lock:
            if self._runner is not None:
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
            return True

    async def stop(self) -> None:
        async with self._lock:
            if self._runner is not None:
                await self._runner.cleanup()
                self._runner = None
