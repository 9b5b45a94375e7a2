"""``llm-observe serve``: the collector process (REST API, /metrics, OTLP gRPC + HTTP doors).

Settings come from defaults < ``LLM_OBSERVE_*`` environment < command-line options. A bad
setting or config file stops start-up with one line on stderr and exit code 2; a port
that cannot be bound, with exit code 1. SIGTERM and Ctrl-C stop accepting work, stop the
receiver and the API, then drain the pipeline (exporter queues) within
``shutdown_timeout_s``. Order: the pipeline starts before any door opens and stops after
every door closed, so no door ever submits to a stopped pipeline.
Heavy imports live inside :func:`run` so ``llm-observe --help`` stays fast.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
from pathlib import Path
from typing import Any

from llm_observe.collector.logformat import FORMATS
from llm_observe.collector.logformat import configure as configure_logging

log = logging.getLogger("llm_observe.serve")

SWITCH_INTERVAL_S = 0.001
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


def _fail(message: str, code: int) -> int:
    print(f"llm-observe serve: error: {message}", file=sys.stderr, flush=True)
    return code


def run(args: argparse.Namespace) -> int:
    """Run until SIGTERM/SIGINT; return the process exit code."""
    import asyncio

    from llm_observe.collector.settings import Settings
    from llm_observe.errors import ConfigError
    from llm_observe.provisioning.alerts import ALERTS_FILE, alerts_in_config_dir

    # argparse checks choices, not defaults taken from the environment
    for variable, value, allowed in (("LLM_OBSERVE_LOG_LEVEL", args.log_level, LOG_LEVELS),
                                     ("LLM_OBSERVE_LOG_FORMAT", args.log_format, FORMATS)):
        if value.lower() not in allowed:
            return _fail(f"{variable} must be one of {', '.join(allowed)}, got {value!r}",
                         EXIT_CONFIG)
    configure_logging(args.log_level, args.log_format.lower())
    try:
        settings = Settings.from_env(
            host=args.host, port=args.port, metrics_port=args.metrics_port,
            otlp_port=args.otlp_port, otlp_http_port=args.otlp_http_port,
            config_dir=args.config_dir,
            metrics_init=False if args.no_metrics_init else None)
        alerts = alerts_in_config_dir(settings.config_file(ALERTS_FILE)) \
            if args.with_prometheus else None
        collector = _build(settings)
    except ConfigError as exc:
        return _fail(str(exc), EXIT_CONFIG)
    try:
        return asyncio.run(_serve(collector, args, alerts))
    except _StartupError as exc:
        return _fail(str(exc), EXIT_RUNTIME)


class _StartupError(Exception):
    """A listener could not start (port taken, address not available)."""


def _build(settings: Any) -> Any:
    """The collector, with the OTLP forwarder when one is configured and available."""
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
        forwarder = forwarder_from_settings(settings, registry)
        if forwarder is not None:
            exporters.append(forwarder)
    return build_collector(settings, registry=registry, exporters=exporters)


async def _serve(collector: Any, args: argparse.Namespace, alerts: Any) -> int:
    import asyncio
    import signal

    from aiohttp import web

    from llm_observe.api.app import create_app
    from llm_observe.api.keys import AppKeys
    from llm_observe.api.scrape import PortInUse

    settings = collector.settings
    await collector.pipeline.start()  # before any door: a spool left by the last run goes now
    # Everything loaded so far (modules, tables, encodings) lives for the whole run: moved
    # out of the collector's generations, it is never rescanned, so a full collection
    # triggered by one big request costs a pause in proportion to that request only.
    gc.collect()
    gc.freeze()
    # Heavy work runs in threads (large batches, renders, embeddings); a thread holding the
    # GIL hands it back to the loop after this long instead of CPython's 5 ms, so a
    # request's few GIL hand-offs cost a few ms, not tens (bench.hostile).
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    app = create_app(collector)
    # In-flight requests get a bounded grace at shutdown (aiohttp's default is 60 s).
    runner = web.AppRunner(app, access_log=None, handle_signals=False,
                           shutdown_timeout=min(5.0, settings.shutdown_timeout_s))
    await runner.setup()
    receiver: Any = None
    http_receiver: Any = None
    prometheus: Any = None
    try:
        try:
            await web.TCPSite(runner, settings.host, settings.port).start()
        except OSError as exc:
            raise _StartupError(f"API cannot listen on {settings.host}:{settings.port}: "
                                f"{exc.strerror or exc}") from None
        scrape = app[AppKeys.scrape]
        if settings.metrics_init:
            try:
                await scrape.start(settings.metrics_port)
            except PortInUse as exc:
                raise _StartupError(f"scrape endpoint {exc}") from None
        receiver = await _start_receiver(collector)
        http_receiver = await _start_http_receiver(collector)
        if collector.embedder is not None:
            collector.embedder.start_warmup()  # background thread: the API answers 503 until ready
        if args.with_prometheus:
            prometheus = await _start_prometheus(settings, args.prometheus_port, alerts)
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
        _announce(settings, scrape, receiver, http_receiver,
                  args.prometheus_port if prometheus is not None else None)
        await stop.wait()
        log.info("shutting down: stopping intake, draining the pipeline")
    finally:
        for door in (receiver, http_receiver):
            if door is not None:
                await door.stop(min(5.0, settings.shutdown_timeout_s))
        await runner.cleanup()  # the API closes its resources
        await collector.pipeline.shutdown(settings.shutdown_timeout_s)
        if prometheus is not None:
            from llm_observe.provisioning.local_prometheus import stop_local_prometheus
            stop_local_prometheus(prometheus)
    return 0


async def _start_receiver(collector: Any) -> Any:
    settings = collector.settings
    if settings.otlp_port == 0:
        return None
    try:
        from llm_observe.receiver import start_receiver
    except ImportError:
        log.warning("the OTLP receiver is not available in this build; not listening on %d",
                    settings.otlp_port)
        return None
    host = settings.otlp_host or settings.host
    reason = _bind_reason(host, settings.otlp_port)  # before gRPC logs its own C++ line
    if reason is not None:
        raise _StartupError(f"OTLP receiver cannot listen on {host}:{settings.otlp_port}: "
                            f"{reason}")
    try:
        return await start_receiver(collector.pipeline, collector.registry, host,
                                    settings.otlp_port, settings.otlp_max_message_bytes,
                                    max_spans=settings.otlp_max_spans_per_request,
                                    token=settings.otlp_token)
    except OSError as exc:
        raise _StartupError(f"OTLP receiver cannot listen on {host}:{settings.otlp_port}: "
                            f"{exc.strerror or 'gRPC could not bind it'}") from None


async def _start_http_receiver(collector: Any) -> Any:
    settings = collector.settings
    if settings.otlp_http_port == 0:
        return None
    from llm_observe.receiver import start_http_receiver

    host = settings.otlp_http_host or settings.otlp_host or settings.host
    try:
        return await start_http_receiver(
            collector.pipeline, collector.registry, host, settings.otlp_http_port,
            settings.otlp_max_message_bytes, max_spans=settings.otlp_max_spans_per_request,
            token=settings.otlp_token, grace_s=min(5.0, settings.shutdown_timeout_s))
    except OSError as exc:
        reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
        raise _StartupError(f"OTLP/HTTP receiver cannot listen on {host}:"
                            f"{settings.otlp_http_port}: {reason}") from None


def _bind_reason(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be bound (taken, no permission, no such address), as the OS
    says it; None when it can or when the probe cannot tell (gRPC then tries itself)."""
    import errno
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.create_server((host, port), family=family):
            return None
    except OSError as probe:
        if probe.errno in (errno.EADDRINUSE, errno.EACCES, errno.EADDRNOTAVAIL):
            return os.strerror(probe.errno).lower()
        return None


async def _start_prometheus(settings: Any, ui_port: int, alerts: Any) -> Any:
    """The local Prometheus, answering /-/ready; _StartupError (nothing left running) if not."""
    import asyncio

    from llm_observe.provisioning.local_prometheus import (
        start_local_prometheus,
        stop_local_prometheus,
        wait_ready,
    )

    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    out = Path(data_home) / "llm-observe"
    host = settings.metrics_host or settings.host
    scrape_host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    try:
        proc = start_local_prometheus(out, settings.metrics_port, ui_port,
                                      scrape_host=scrape_host,
                                      metrics_token=settings.metrics_token, alerts=alerts)
    except OSError as exc:  # no binary, or the port is taken
        raise _StartupError(exc.strerror or str(exc)) from None
    try:
        await asyncio.to_thread(wait_ready, ui_port, proc, 30.0)
    except RuntimeError as exc:
        stop_local_prometheus(proc)
        raise _StartupError(f"{exc}; see {out / 'prometheus' / 'prometheus.log'}") from None
    return proc


def _announce(settings: Any, scrape: Any, receiver: Any, http_receiver: Any,
              prometheus_port: int | None) -> None:
    parts = [f"API http://{settings.host}:{settings.port}/v1"]
    if scrape.running:
        parts.append(f"metrics http://{scrape.host}:{scrape.port}/metrics")
    else:
        parts.append("metrics not initialized (POST /v1/metrics/init)")
    if receiver is not None:
        parts.append(f"OTLP {settings.otlp_host or settings.host}:{receiver.port}")
    if http_receiver is not None:
        host = settings.otlp_http_host or settings.otlp_host or settings.host
        parts.append(f"OTLP/HTTP http://{host}:{http_receiver.port}/v1/traces")
    if prometheus_port is not None:  # only once it answered /-/ready
        parts.append(f"prometheus http://127.0.0.1:{prometheus_port}")
    print("llm-observe serve: ready: " + " | ".join(parts), flush=True)
