"""Typed application state: every object a handler needs, under one ``web.AppKey`` each."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from aiohttp import web

from llm_observe.api.events import EventPublisher
from llm_observe.api.offload import Offload
from llm_observe.api.scrape import ScrapeServer
from llm_observe.collector.assembly import Collector
from llm_observe.collector.settings import Settings


@dataclass
class ApiState:
    """Mutable per-app state that is not a resource of its own."""

    started_at: float = field(default_factory=time.time)
    # Set when shutdown begins: record endpoints answer 503 instead of racing the drain.
    draining: bool = False
    # Instrumentation init/uninstrument change process-global patches: one at a time.
    instrument_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # Test calls in flight, each holding a thread until its provider answers.
    test_calls: int = 0


class AppKeys:
    """The app's keys (``request.app[AppKeys.collector]``)."""

    collector = web.AppKey("collector", Collector)
    settings = web.AppKey("settings", Settings)
    max_body = web.AppKey("max_body", int)
    events = web.AppKey("events", EventPublisher)
    scrape = web.AppKey("scrape", ScrapeServer)
    state = web.AppKey("state", ApiState)
    offload = web.AppKey("offload", Offload)  # the bounded gates of CPU work in threads
