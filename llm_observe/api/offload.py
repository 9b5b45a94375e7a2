"""A bounded gate for the CPU work the API hands to threads (scan, embed, large bodies).

Contract of :meth:`Gate.run` (event-loop thread only): ``fn(*args)`` runs in the gate's
own threads — never the loop's default executor, which the forwarder's spool and the
agent-run exporter share — with at most ``running`` calls of the gate's kind at once and
at most ``waiting`` requests queued behind them, first come first served. It returns
``fn``'s result or raises its exception. It raises :class:`ApiError` 503 ``busy`` with a
``Retry-After`` when the queue is full, or when the request waited ``wait_s`` without a
turn; a request whose client has gone by its turn is dropped without running ``fn``.
Each of the three is counted in ``llm_observe_api_offload_shed_total{work, reason}``
(``queue``, ``deadline``, ``client_gone``). A call that has started is never abandoned:
its slot is held until ``fn`` returns, even if the request was cancelled meanwhile, so
the bound is on threads actually busy. Nothing here blocks the loop, so requests that
offload nothing (health probes, ``/metrics``) answer while a gate is full.
"""

from __future__ import annotations

import asyncio
import collections
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter

from llm_observe.api.errors import ApiError

T = TypeVar("T")
KINDS = ("scan", "embed", "body")  # the kinds of work; Settings.api_<kind>_running/_waiting
MAX_RETRY_AFTER_S = 60


@dataclass(frozen=True, slots=True)
class Bound:
    """One kind's bound: threads running its work, requests waiting for one, seconds a
    request may wait."""

    running: int
    waiting: int
    wait_s: float


class Gate:
    """At most ``bound.running`` calls of one kind in threads, ``bound.waiting`` queued."""

    def __init__(self, kind: str, bound: Bound, shed: Counter) -> None:
        self.kind = kind
        self.bound = bound
        self._shed = shed
        self._pool: ThreadPoolExecutor | None = None  # made on first use
        self._running = 0
        self._queue: collections.deque[asyncio.Future[None]] = collections.deque()
        self._mean_s = 0.05  # moving mean of a call's seconds, for Retry-After

    def check(self) -> None:
        """Raise the queue-full 503 now if a request would get it: a handler calls this
        before reading and parsing a body that could only be refused (a burst of them
        otherwise costs the loop their parsing)."""
        if self._running >= self.bound.running and len(self._queue) >= self.bound.waiting:
            raise self._full()

    async def run(self, request: web.Request, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a thread once a slot is free (see the module docstring)."""
        await self._turn(request)
        loop = asyncio.get_running_loop()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.bound.running, f"api-{self.kind}")
        start = loop.time()
        try:
            job = self._pool.submit(fn, *args)
        except RuntimeError:  # the pool was shut down: the app is closing
            self._release()
            raise
        job.add_done_callback(lambda _: _call_soon(loop, self._finished, start))
        return await asyncio.wrap_future(job)

    async def _turn(self, request: web.Request) -> None:
        """Return holding a slot, or raise 503; the slot is released by ``_finished``."""
        if self._running < self.bound.running and not self._queue:
            self._running += 1
            return
        if len(self._queue) >= self.bound.waiting:
            raise self._full()
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append(turn)
        try:
            await asyncio.wait_for(asyncio.shield(turn), self.bound.wait_s)
        except TimeoutError:
            if not self._give_up(turn):
                raise self._busy("deadline", f"{self.kind} work waited over "
                                 f"{self.bound.wait_s:g} s for a free thread") from None
        except asyncio.CancelledError:  # a server run with handler_cancellation
            if self._give_up(turn):
                self._release()
            if _gone(request):
                self._shed.labels(self.kind, "client_gone").inc()
            raise
        if _gone(request):  # nobody will read the answer: do not spend the CPU on it
            self._shed.labels(self.kind, "client_gone").inc()
            self._release()
            raise ApiError(503, "client_gone", "the client closed the connection while "
                           "its request waited")

    def _give_up(self, turn: asyncio.Future[None]) -> bool:
        """Leave the queue; True if the slot had been handed over meanwhile (it is kept)."""
        if turn.done() and not turn.cancelled():
            return True
        turn.cancel()
        try:
            self._queue.remove(turn)
        except ValueError:
            pass
        return False

    def _full(self) -> ApiError:
        return self._busy("queue", f"{self.kind} work is at its bound ({self.bound.running} "
                          f"running, {self.bound.waiting} waiting)")

    def _busy(self, reason: str, message: str) -> ApiError:
        self._shed.labels(self.kind, reason).inc()
        # The time for the queue ahead to drain at the measured pace, whole seconds.
        ahead = (len(self._queue) + 1) / self.bound.running
        retry = min(MAX_RETRY_AFTER_S, max(1, math.ceil(self._mean_s * ahead)))
        return ApiError(503, "busy", f"{message}; retry after {retry} s",
                        {"work": self.kind, "reason": reason}, {"Retry-After": str(retry)})

    def _finished(self, start: float) -> None:
        self._mean_s += (asyncio.get_running_loop().time() - start - self._mean_s) * 0.2
        self._release()

    def _release(self) -> None:
        """Hand the slot to the first live waiter, or free it."""
        while self._queue:
            turn = self._queue.popleft()
            if not turn.done():
                turn.set_result(None)  # the slot passes on: _running is unchanged
                return
        self._running -= 1

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


def _gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> None:
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:  # the loop closed at shutdown: nobody waits any more
        pass


class Offload:
    """The app's gates, one per kind (``offload.scan``...), and their shed counter."""

    def __init__(self, bounds: dict[str, Bound], registry: CollectorRegistry) -> None:
        shed = Counter("llm_observe_api_offload_shed", "API requests whose offloaded work "
                       "did not run: queue full or waited past the deadline (both 503), "
                       "client gone while queued", ["work", "reason"], registry=registry)
        self.gates = {kind: Gate(kind, bounds[kind], shed) for kind in KINDS}
        self.scan, self.embed, self.body = (self.gates[kind] for kind in KINDS)

    @classmethod
    def from_settings(cls, settings: Any, registry: CollectorRegistry) -> Offload:
        return cls({kind: Bound(getattr(settings, f"api_{kind}_running"),
                                getattr(settings, f"api_{kind}_waiting"),
                                settings.api_offload_wait_s) for kind in KINDS}, registry)

    def close(self) -> None:
        for gate in self.gates.values():
            gate.close()

