"""``llm-observe serve``: the collector process (REST API, /metrics, OTLP gRPC + HTTP doors).

Settings come from defaults < ``LLM_OBSERVE_*`` environment < command-line options. A bad
setting or config file stops start-up with one line on stderr and exit code 2; a port
that cannot be bound, with exit code 1. SIGTERM and Ctrl-C stop accepting work, stop the
receiver and the API, then drain the pipeline (exporter queues) within
``shutdown_timeout_s``. Order: the pipeline starts before any door opens and stops after
every door closed, so no door ever submits to a stopped pipeline.
``--workers N`` runs N such processes on the same ports under a supervisor
(``supervisor.py``; each worker is this module with ``worker.py``'s duties).
Heavy imports live inside :func:`run` so ``llm-observe --help`` stays fast.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

from llm_observe.cli.doors import (
    StartupError,
    alert_params,
    announce,
    ready_parts,
    start_http_receiver,
    start_prometheus,
    start_receiver,
)
from llm_observe.cli.worker import (
    WorkerDuties,
    for_worker,
    offload_bounds,
    parse_workers,
    spool_lock_wait_s,
    worker_count,
    worker_index,
)
from llm_observe.collector.heap import settle_for_serving
from llm_observe.collector.logformat import FORMATS
from llm_observe.collector.logformat import configure as configure_logging

log = logging.getLogger("llm_observe.serve")

EXIT_CONFIG = 2
EXIT_RUNTIME = 1
LOG_LEVELS = ("debug", "info", "warning", "error")


def add_arguments(parser: argparse.ArgumentParser, command: str) -> None:
    """Options of ``serve``; unset options fall back to LLM_OBSERVE_* and the defaults."""
    parser.add_argument("--host", help="API bind address (default 127.0.0.1; container 0.0.0.0)")
    parser.add_argument("--port", type=int, help="API port (default 8000)")
    parser.add_argument("--metrics-port", type=int, help="scrape endpoint port (default 9464)")
    parser.add_argument("--otlp-port", type=int,
                        help="OTLP gRPC receiver port (default 4317; 0 disables it)")
    parser.add_argument("--otlp-http-port", type=int,
                        help="OTLP/HTTP receiver port, POST /v1/traces (default 4318; "
                             "0 disables it)")
    parser.add_argument("--config-dir",
                        help="directory with model_prices.yaml and patterns.yaml")
    parser.add_argument("--no-metrics-init", action="store_true",
                        help="do not start the scrape endpoint until POST /v1/metrics/init")
    parser.add_argument("--with-prometheus", action="store_true",
                        help="also run the local `prometheus` binary scraping this collector")
    parser.add_argument("--prometheus-port", type=int, default=9090,
                        help="UI/API port of --with-prometheus (default 9090)")
    parser.add_argument("--log-level", default=os.environ.get("LLM_OBSERVE_LOG_LEVEL", "info"),
                        choices=LOG_LEVELS, help="default info; LLM_OBSERVE_LOG_LEVEL")
    parser.add_argument("--log-format", default=os.environ.get("LLM_OBSERVE_LOG_FORMAT", "text"),
                        choices=FORMATS,
                        help="text (default) or json, one object per line; LLM_OBSERVE_LOG_FORMAT")
    parser.add_argument("--workers", default=os.environ.get("LLM_OBSERVE_WORKERS", "1"),
                        help="worker processes serving every door on the same ports "
                             "(SO_REUSEPORT), one summed /metrics; auto = usable cores "
                             "(default 1: one process); LLM_OBSERVE_WORKERS")


def _fail(message: str, code: int) -> int:
    print(f"llm-observe serve: error: {message}", file=sys.stderr, flush=True)
    return code


def run(args: argparse.Namespace) -> int:
    """Run until SIGTERM/SIGINT; return the process exit code."""
    import asyncio

    from llm_observe.collector.settings import Settings
    from llm_observe.dirlock import DirectoryBusy
    from llm_observe.errors import ConfigError

    # argparse checks choices, not defaults taken from the environment
    for variable, value, allowed in (("LLM_OBSERVE_LOG_LEVEL", args.log_level, LOG_LEVELS),
                                     ("LLM_OBSERVE_LOG_FORMAT", args.log_format, FORMATS)):
        if value.lower() not in allowed:
            return _fail(f"{variable} must be one of {', '.join(allowed)}, got {value!r}",
                         EXIT_CONFIG)
    index = worker_index()
    try:
        workers = 1 if index is not None else parse_workers(args.workers)
    except ValueError as exc:
        return _fail(str(exc), EXIT_CONFIG)
    configure_logging(args.log_level, args.log_format.lower())
    try:
        settings = Settings.from_env(
            host=args.host, port=args.port, metrics_port=args.metrics_port,
            otlp_port=args.otlp_port, otlp_http_port=args.otlp_http_port,
            config_dir=args.config_dir,
            metrics_init=False if args.no_metrics_init else None)
        _check_destinations(settings)  # a bad destinations.yaml stops here, not in each worker
        if workers > 1:
            from llm_observe.cli.supervisor import supervise
            return supervise(settings, args, workers)
        if index is not None:
            settings = for_worker(settings, index, worker_count())
        alerts = alert_params(settings) if args.with_prometheus else None
        collector = _build(settings, spool_lock_wait_s(settings) if index is not None else 0.0)
        if index is not None:  # after _build: a bad config file is the only line
            log.info("worker %d: api offload bounds %s (its share of the host's)", index,
                     ", ".join(f"{k}={v}" for k, v in offload_bounds(settings).items()))
    except ConfigError as exc:
        return _fail(str(exc), EXIT_CONFIG)
    except DirectoryBusy as exc:  # another collector owns the spool directory
        return _fail(str(exc), EXIT_RUNTIME)
    try:
        return asyncio.run(_serve(collector, args, alerts, index))
    except StartupError as exc:
        return _fail(str(exc), EXIT_RUNTIME)


def _check_destinations(settings: Any) -> None:
    """ConfigError naming the file and entry when the destinations do not check out."""
    try:
        from llm_observe.collector.exporters.otlp_forwarder.destinations import destinations
    except ImportError:
        return
    destinations(settings)


def _build(settings: Any, lock_wait_s: float = 0.0) -> Any:
    """The collector, with the OTLP forwarder when one is configured and available
    (DirectoryBusy when another process holds its spool after ``lock_wait_s``)."""
    from prometheus_client import CollectorRegistry

    from llm_observe.collector.assembly import build_collector
    from llm_observe.pipeline import Exporter

    registry = CollectorRegistry()
    exporters: list[Exporter] = []
    try:
        from llm_observe.collector.exporters.otlp_forwarder import forwarder_from_settings
    except ImportError:
        log.info("OTLP forwarding not available in this build")
    else:
        forwarder = forwarder_from_settings(settings, registry, lock_wait_s)
        if forwarder is not None:
            exporters.append(forwarder)
    return build_collector(settings, registry=registry, exporters=exporters)


async def _serve(collector: Any, args: argparse.Namespace, alerts: Any,
                 index: int | None) -> int:
    """Serve until a signal (or, for a worker, until its supervisor is gone)."""
    import asyncio
    import signal

    from aiohttp import web

    from llm_observe.api.app import create_app
    from llm_observe.api.keys import AppKeys
    from llm_observe.api.scrape import PortInUse
    from llm_observe.collector.longlived import long_lived

    settings = collector.settings
    await collector.pipeline.start()  # before any door: a spool left by the last run goes now
    # The start-up heap frozen, the young generation sized for requests in flight, a 1 ms
    # GIL switch interval (collector/heap.py: one place, shared with the benchmarks)
    settle_for_serving()
    # and the label sets made from now on are frozen as they come (collector/longlived.py)
    long_lived.enable()
    app = create_app(collector)
    # In-flight requests get a bounded grace at shutdown (aiohttp's default is 60 s).
    runner = web.AppRunner(app, access_log=None, handle_signals=False,
                           shutdown_timeout=min(5.0, settings.shutdown_timeout_s))
    await runner.setup()
    receiver: Any = None
    http_receiver: Any = None
    prometheus: Any = None
    duties = WorkerDuties(collector.registry) if index is not None else None
    shared = index is not None  # a worker shares every port with its siblings
    try:
        try:
            await web.TCPSite(runner, settings.host, settings.port,
                              reuse_port=shared or None).start()
        except OSError as exc:
            raise StartupError(f"API cannot listen on {settings.host}:{settings.port}: "
                               f"{exc.strerror or exc}") from None
        scrape = app[AppKeys.scrape]
        if shared:
            scrape.served_elsewhere(settings.metrics_port)  # by the supervisor, summed
        elif settings.metrics_init:
            try:
                await scrape.start(settings.metrics_port)
            except PortInUse as exc:
                raise StartupError(f"scrape endpoint {exc}") from None
        receiver = await start_receiver(collector, reuse_port=shared)
        http_receiver = await start_http_receiver(collector, reuse_port=shared)
        if collector.embedder is not None:
            collector.embedder.start_warmup()  # background thread: the API answers 503 until ready
        if args.with_prometheus:
            prometheus = await start_prometheus(settings, args.prometheus_port, alerts)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        signals = (signal.SIGTERM, signal.SIGINT)

        def on_signal() -> None:
            stop.set()
            for sig in signals:  # a second Ctrl-C interrupts the drain itself
                loop.remove_signal_handler(sig)

        for sig in signals:
            loop.add_signal_handler(sig, on_signal)
        # after the handlers: ready means stoppable
        parts = ready_parts(settings, scrape, receiver, http_receiver)
        if prometheus is not None:  # only once it answered /-/ready
            parts.append(f"prometheus http://127.0.0.1:{args.prometheus_port}")
        announce(parts)
        if duties is not None:
            duties.start(stop)
        await stop.wait()
        log.info("shutting down: stopping intake, draining the pipeline")
    finally:
        for door in (receiver, http_receiver):
            if door is not None:
                await door.stop(min(5.0, settings.shutdown_timeout_s))
        await runner.cleanup()  # the API closes its resources
        await collector.pipeline.shutdown(settings.shutdown_timeout_s)
        if duties is not None:
            await duties.stop()  # the drained counts reach the summed /metrics
        if prometheus is not None:
            from llm_observe.provisioning.local_prometheus import stop_local_prometheus
            stop_local_prometheus(prometheus)
    return 0


