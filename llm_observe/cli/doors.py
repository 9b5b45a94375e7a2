"""The doors ``serve`` opens besides the API: the OTLP receivers, the local Prometheus,
and the ready line. Shared by the single process and by each worker of ``--workers N``.

``reuse_port``: a worker binds its doors with ``SO_REUSEPORT`` so that every worker
listens on the same ports and the kernel spreads connections over them; the single
process does not, so a second collector on the port fails instead of sharing it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger("llm_observe.serve")


class StartupError(Exception):
    """A listener could not start (port taken, address not available)."""


async def start_receiver(collector: Any, reuse_port: bool = False) -> Any:
    """The OTLP/gRPC door, or None when ``otlp_port`` is 0 or gRPC is not installed."""
    settings = collector.settings
    if settings.otlp_port == 0:
        return None
    try:
        from llm_observe.receiver import start_receiver as start
    except ImportError:
        log.warning("the OTLP receiver is not available in this build; not listening on %d",
                    settings.otlp_port)
        return None
    host = settings.otlp_host or settings.host
    # before gRPC logs its own C++ line; a worker's port is held by its siblings (the
    # supervisor probed it before starting any)
    reason = None if reuse_port else bind_reason(host, settings.otlp_port)
    if reason is not None:
        raise StartupError(f"OTLP receiver cannot listen on {host}:{settings.otlp_port}: "
                           f"{reason}")
    try:
        return await start(collector.pipeline, collector.registry, host,
                           settings.otlp_port, settings.otlp_max_message_bytes,
                           max_spans=settings.otlp_max_spans_per_request,
                           token=settings.otlp_token, reuse_port=reuse_port)
    except OSError as exc:
        raise StartupError(f"OTLP receiver cannot listen on {host}:{settings.otlp_port}: "
                           f"{exc.strerror or 'gRPC could not bind it'}") from None


async def start_http_receiver(collector: Any, reuse_port: bool = False) -> Any:
    """The OTLP/HTTP door, or None when ``otlp_http_port`` is 0."""
    settings = collector.settings
    if settings.otlp_http_port == 0:
        return None
    from llm_observe.receiver import start_http_receiver as start
    from llm_observe.receiver.http_guard import HttpLimits

    host = otlp_http_host(settings)
    limits = HttpLimits(header_timeout_s=settings.otlp_http_header_timeout_s,
                        body_timeout_s=settings.otlp_http_body_timeout_s,
                        inflight_max_bytes=settings.otlp_http_inflight_max_bytes)
    try:
        return await start(
            collector.pipeline, collector.registry, host, settings.otlp_http_port,
            settings.otlp_max_message_bytes, max_spans=settings.otlp_max_spans_per_request,
            token=settings.otlp_token, grace_s=min(5.0, settings.shutdown_timeout_s),
            reuse_port=reuse_port, limits=limits)
    except OSError as exc:
        reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
        raise StartupError(f"OTLP/HTTP receiver cannot listen on {host}:"
                           f"{settings.otlp_http_port}: {reason}") from None


def otlp_http_host(settings: Any) -> str:
    return str(settings.otlp_http_host or settings.otlp_host or settings.host)


def listeners(settings: Any) -> list[tuple[str, str, int]]:
    """(door, host, port) of every port ``serve`` listens on, the scrape port included."""
    out = [("API", settings.host, settings.port)]
    if settings.metrics_init:
        out.append(("scrape endpoint", settings.metrics_host or settings.host,
                    settings.metrics_port))
    if settings.otlp_port:
        out.append(("OTLP receiver", settings.otlp_host or settings.host, settings.otlp_port))
    if settings.otlp_http_port:
        out.append(("OTLP/HTTP receiver", otlp_http_host(settings), settings.otlp_http_port))
    return out


def bind_reason(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be bound (taken, no permission, no such address), as the OS
    says it; None when it can or when the probe cannot tell (the door then tries itself).

    The probe binds without ``SO_REUSEPORT``, so it also fails on a port that another
    collector's workers share."""
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


async def start_prometheus(settings: Any, ui_port: int, alerts: Any) -> Any:
    """The local Prometheus, answering /-/ready; StartupError (nothing left running) if not."""
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
        raise StartupError(exc.strerror or str(exc)) from None
    try:
        await asyncio.to_thread(wait_ready, ui_port, proc, 30.0)
    except RuntimeError as exc:
        stop_local_prometheus(proc)
        raise StartupError(f"{exc}; see {out / 'prometheus' / 'prometheus.log'}") from None
    return proc


def alert_params(settings: Any) -> Any:
    """Thresholds of --with-prometheus's alert rules: CONFIG_DIR/alerts.yaml when present."""
    from llm_observe.provisioning.alerts import ALERTS_FILE, alerts_in_config_dir

    return alerts_in_config_dir(settings.config_file(ALERTS_FILE))


def ready_parts(settings: Any, scrape: Any, receiver: Any, http_receiver: Any) -> list[str]:
    """What the ready line lists: every door and where it listens."""
    parts = [f"API http://{settings.host}:{settings.port}/v1"]
    if scrape.running:
        parts.append(f"metrics http://{scrape.host}:{scrape.port}/metrics")
    else:
        parts.append("metrics not initialized (POST /v1/metrics/init)")
    if receiver is not None:
        parts.append(f"OTLP {settings.otlp_host or settings.host}:{receiver.port}")
    if http_receiver is not None:
        parts.append(f"OTLP/HTTP http://{otlp_http_host(settings)}:{http_receiver.port}"
                     "/v1/traces")
    return parts


def announce(parts: list[str]) -> None:
    print("llm-observe serve: ready: " + " | ".join(parts), flush=True)
