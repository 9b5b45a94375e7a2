"""Instrumentation state-change events (spec 6.2): Redis pub/sub plus an in-process hook.

Every change of the instrumentation state (an init that patched something, an
uninstrument) produces one JSON message::

    {"event": "instrumentation.initialized" | "instrumentation.uninstrumented",
     "active": bool, "patched": [target, ...], "at": ISO-8601 UTC, "host", "pid", "version"}

It goes to in-process subscribers at once (:func:`subscribe`, for the library side, no
Redis needed) and, when a Redis URL is configured, to the pub/sub channel
``llm.instrumentation.events``. Delivery to Redis is at most once, in order, from one
background task: the API call that caused the event never waits on Redis, and Redis being
down is logged and counted (``llm_observe_events_publish_failures_total``), never an error
for the caller. This module imports neither aiohttp nor redis at import time.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import os
import socket
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from llm_observe import __version__

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

log = logging.getLogger(__name__)

CHANNEL = "llm.instrumentation.events"
INITIALIZED = "instrumentation.initialized"
UNINSTRUMENTED = "instrumentation.uninstrumented"

Subscriber = Callable[[dict[str, Any]], None]
_subscribers: list[Subscriber] = []
_lock = threading.Lock()


def subscribe(callback: Subscriber) -> Callable[[], None]:
    """Call ``callback(message)`` for every event published in this process; returns unsubscribe.

    Callbacks run on the publisher's thread and must not block; an exception in one is
    logged and does not reach the others or the publisher.
    """
    with _lock:
        _subscribers.append(callback)

    def unsubscribe() -> None:
        with _lock:
            if callback in _subscribers:
                _subscribers.remove(callback)

    return unsubscribe


def notify_local(message: dict[str, Any]) -> None:
    """Deliver ``message`` to every in-process subscriber."""
    with _lock:
        targets = list(_subscribers)
    for callback in targets:
        try:
            callback(message)
        except Exception:
            log.exception("instrumentation event subscriber %r failed", callback)


def instrumentation_event(event: str, active: bool, patched: Sequence[str]) -> dict[str, Any]:
    """The event message for a state change (shape in the module docstring)."""
    return {
        "event": event,
        "active": active,
        "patched": sorted(patched),
        "at": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "version": __version__,
    }


class EventPublisher:
    """Publishes events locally and, if ``redis_url`` is set, to Redis from a background task."""

    def __init__(self, redis_url: str | None, registry: CollectorRegistry | None = None,
                 *, timeout_s: float = 2.0, queue_max: int = 1000) -> None:
        self.redis_url = redis_url
        self.timeout_s = timeout_s
        self._queue: asyncio.Queue[str] = asyncio.Queue(queue_max)
        self._task: asyncio.Task[None] | None = None
        self._client: Any = None
        from prometheus_client import CollectorRegistry, Counter  # the collector extra

        registry = registry if registry is not None else CollectorRegistry()
        self.published = Counter("llm_observe_events_published",
                                 "Instrumentation events delivered to Redis", registry=registry)
        self.failures = Counter("llm_observe_events_publish_failures",
                                "Instrumentation events Redis did not take (down, slow, full)",
                                registry=registry)

    async def start(self) -> None:
        """Connect lazily (the first publish connects) and start the delivery task."""
        if self.redis_url is None or self._task is not None:
            return
        import redis.asyncio as aioredis

        self._client = aioredis.Redis.from_url(
            self.redis_url, socket_connect_timeout=self.timeout_s,
            socket_timeout=self.timeout_s)
        self._task = asyncio.create_task(self._deliver(), name="llm-observe-events")

    def publish(self, message: dict[str, Any]) -> None:
        """Hand ``message`` to local subscribers now and queue it for Redis. Never raises."""
        notify_local(message)
        if self._task is None:
            return
        try:
            self._queue.put_nowait(json.dumps(message))
        except asyncio.QueueFull:
            self.failures.inc()
            log.warning("instrumentation event queue full; event %s not sent to Redis",
                        message.get("event"))

    async def _deliver(self) -> None:
        while True:
            payload = await self._queue.get()
            try:
                await asyncio.wait_for(self._client.publish(CHANNEL, payload), self.timeout_s)
                self.published.inc()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.failures.inc()
                log.warning("could not publish instrumentation event to Redis (%s): %s",
                            self.redis_url, exc)
            finally:
                self._queue.task_done()

    async def flush(self, timeout: float = 5.0) -> None:
        """Wait until every queued event was handed to Redis or counted as failed."""
        if self._task is not None:
            await asyncio.wait_for(self._queue.join(), timeout)

    async def stop(self, timeout: float = 2.0) -> None:
        """Deliver what is queued (within ``timeout``), then disconnect."""
        if self._task is None:
            return
        try:
            await self.flush(timeout)
        except TimeoutError:
            log.warning("%d instrumentation events not sent to Redis at shutdown",
                        self._queue.qsize())
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        self._task = None
        try:
            await self._client.aclose()
        except Exception:
            log.debug("closing the Redis client failed", exc_info=True)
