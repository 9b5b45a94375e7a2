"""Serve an app on a background thread's event loop, for synchronous clients (schemathesis)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from aiohttp import web

from llm_observe.api.app import create_app
from llm_observe.collector.assembly import Collector


@contextmanager
def served(collector: Collector) -> Iterator[tuple[str, asyncio.AbstractEventLoop,
                                                   web.Application]]:
    """Yield (base URL, the server's loop, the app) while ``create_app(collector)`` serves."""
    loop = asyncio.new_event_loop()
    app = create_app(collector)
    runner = web.AppRunner(app, access_log=None)
    ready = threading.Event()
    port: list[int] = []

    async def start() -> None:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port.append(runner.addresses[0][1])

    def main() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=main, name="served-api", daemon=True)
    thread.start()
    if not ready.wait(10):
        raise RuntimeError("the API did not start")
    try:
        yield f"http://127.0.0.1:{port[0]}", loop, app
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(15)
