"""``serve --workers N``: a supervisor that owns nothing but its workers and the summed
``/metrics``.

Each worker is a whole ``llm-observe serve`` process (``worker.py``): the pipeline and
every door (API, OTLP gRPC and HTTP) on the same ports with ``SO_REUSEPORT``, so the
kernel spreads connections over the workers. The supervisor probes every port first
without ``SO_REUSEPORT`` (a port held by anything else, another collector's workers
included, stops start-up in one line), serves the scrape port itself with the sum of
every worker's metric files (``collector/exporters/multiprocess.py``), starts worker 0
and then the others (a bad config file is reported once), and prints one ready line.

A worker that exits is restarted with exponential backoff (``BACKOFF_FIRST_S`` doubling
to ``BACKOFF_MAX_S``; reset once a worker stayed up ``STABLE_S``); the successor takes
the same index, so the same spool / write-ahead directory, and drains it. The supervisor
owns the top spool directory (a second collector on it stops at start, one line), and
worker K owns ``worker-K`` (:mod:`llm_observe.dirlock`): after a supervisor was killed
and started again at once, the new worker K waits for the old one to finish its drain
and exit before it reads the directory, so no file is drained twice. SIGTERM or
Ctrl-C: every worker gets one SIGTERM and drains as a single process does; exit 0 when
they all exited cleanly. Workers run in their own process group (a terminal's Ctrl-C
reaches the supervisor only, which stops them once) and leave when it is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any

from llm_observe.cli.doors import (
    StartupError,
    alert_params,
    announce,
    bind_reason,
    listeners,
    start_prometheus,
)
from llm_observe.cli.worker import COUNT_ENV, INDEX_ENV
from llm_observe.errors import ConfigError

log = logging.getLogger("llm_observe.serve")

READY = "llm-observe serve: ready: "
EXIT_RUNTIME, EXIT_CONFIG = 1, 2
BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 30.0
STABLE_S = 30.0
STOP_MARGIN_S = 10.0  # beyond shutdown_timeout_s before a worker is killed


def supervise(settings: Any, args: Any, workers: int) -> int:
    """Run ``workers`` workers until SIGTERM/SIGINT; return the exit code."""
    from llm_observe.collector.exporters.multiprocess import ENV, prepare_dir

    if not settings.metrics_init:
        raise ConfigError("settings", "metrics_init", "--no-metrics-init needs one process: "
                          "with --workers the supervisor serves the summed /metrics")
    alerts = alert_params(settings) if args.with_prometheus else None
    for door, host, port in listeners(settings):
        reason = bind_reason(host, port)
        if reason is not None:
            print(f"llm-observe serve: error: {door} cannot listen on {host}:{port}: {reason}",
                  file=sys.stderr, flush=True)
            return 1
    from llm_observe.cli.metricsdir import make_metrics_dir
    from llm_observe.dirlock import DirectoryBusy, DirLock

    try:  # held until exit: the workers' worker-K directories live under it
        spool = DirLock(settings.spool_dir, "spool directory") if settings.spool_dir else None
    except DirectoryBusy as exc:
        print(f"llm-observe serve: error: {exc}", file=sys.stderr, flush=True)
        return 1
    given = os.environ.get(ENV)
    path = given or make_metrics_dir()
    prepare_dir(path)
    try:
        return asyncio.run(Supervisor(settings, args, workers, path, alerts).run())
    except StartupError as exc:
        print(f"llm-observe serve: error: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        if not given:
            shutil.rmtree(path, ignore_errors=True)
        if spool is not None:
            spool.release()


class Worker:
    """Worker ``index``'s current process and what the supervisor knows of it."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.proc: asyncio.subprocess.Process | None = None
        self.ready = asyncio.Event()
        self.parts = ""  # its ready line, without the prefix
        self.started = 0.0
        self.restarts = 0
        self.reader: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None


class WorkerStats:
    """The supervisor's own families: workers ready, restarts per worker."""

    def __init__(self, workers: list[Worker]) -> None:
        self.workers = workers

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        yield GaugeMetricFamily("llm_observe_workers", "Worker processes of serve --workers "
                                "up and ready", value=sum(w.alive and w.ready.is_set()
                                                          for w in self.workers))
        restarts = CounterMetricFamily("llm_observe_worker_restarts", "Worker processes "
                                       "restarted after they exited, by worker index",
                                       labels=["worker"])
        for w in self.workers:
            restarts.add_metric([str(w.index)], w.restarts)
        yield restarts


class Supervisor:
    def __init__(self, settings: Any, args: Any, n: int, path: str, alerts: Any) -> None:
        self.settings = settings
        self.args = args
        self.path = path
        self.alerts = alerts
        self.workers = [Worker(k) for k in range(n)]
        self.stop = asyncio.Event()
        self.stopping = False
        s = settings
        self.argv = [sys.executable, "-m", "llm_observe.cli", "serve", "--host", s.host,
                     "--port", str(s.port), "--metrics-port", str(s.metrics_port),
                     "--otlp-port", str(s.otlp_port), "--otlp-http-port", str(s.otlp_http_port),
                     "--log-level", args.log_level.lower(),
                     "--log-format", args.log_format.lower()]
        if args.config_dir:
            self.argv += ["--config-dir", args.config_dir]

    async def run(self) -> int:
        from llm_observe.api.scrape import PortInUse, ScrapeServer
        from llm_observe.collector.exporters.multiprocess import summed_registry

        registry = summed_registry(self.path)
        registry.register(WorkerStats(self.workers))  # type: ignore[arg-type]
        s = self.settings
        scrape = ScrapeServer(registry, s.metrics_host or s.host, token=s.metrics_token,
                              max_series=s.max_scrape_series)
        try:
            await scrape.start(s.metrics_port)
        except PortInUse as exc:
            raise StartupError(f"scrape endpoint {exc}") from None
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop.set)
        keepers: list[asyncio.Task[None]] = []
        prometheus: Any = None
        code = 0
        try:
            # worker 0 alone first: a bad config file or port is reported once, not N times
            failed = await self._start(self.workers[0])
            if failed is None and not self.stop.is_set():
                rest = await asyncio.gather(*(self._start(w) for w in self.workers[1:]))
                failed = next((c for c in rest if c is not None), None)
            if failed is not None:
                return failed
            if not self.stop.is_set():
                if self.args.with_prometheus:
                    prometheus = await start_prometheus(s, self.args.prometheus_port,
                                                        self.alerts)
                keepers = [loop.create_task(self._keep(w)) for w in self.workers]
                parts = [self.workers[0].parts, f"workers {len(self.workers)}"]
                if prometheus is not None:
                    parts.append(f"prometheus http://127.0.0.1:{self.args.prometheus_port}")
                announce(parts)
                await self.stop.wait()
                log.info("shutting down: draining %d workers", len(self.workers))
        finally:
            self.stopping = True
            for task in keepers:
                task.cancel()
            code = await self._stop_all()
            await scrape.stop()
            if prometheus is not None:
                from llm_observe.provisioning.local_prometheus import stop_local_prometheus
                stop_local_prometheus(prometheus)
        return code

    async def _spawn(self, w: Worker) -> None:
        env = dict(os.environ)
        env.pop("LLM_OBSERVE_WORKERS", None)
        env.update({INDEX_ENV: str(w.index), COUNT_ENV: str(len(self.workers)),
                    "PROMETHEUS_MULTIPROC_DIR": self.path})
        w.ready.clear()
        w.proc = await asyncio.create_subprocess_exec(
            *self.argv, env=env, stdout=asyncio.subprocess.PIPE, process_group=0)
        w.started = time.monotonic()
        w.reader = asyncio.get_running_loop().create_task(self._read(w, w.proc))

    async def _read(self, w: Worker, proc: asyncio.subprocess.Process) -> None:
        """Forward a worker's stdout, but take its ready line for the supervisor's own."""
        assert proc.stdout is not None
        async for raw in proc.stdout:
            line = raw.decode("utf-8", "replace")
            if line.startswith(READY):
                w.parts = line[len(READY):].strip()
                w.ready.set()
                log.info("worker %d (pid %d) ready", w.index, proc.pid)
            else:
                sys.stdout.write(line)
                sys.stdout.flush()

    async def _start(self, w: Worker) -> int | None:
        """Start worker ``w``; None once it is ready (or a stop came), else its exit code."""
        await self._spawn(w)
        assert w.proc is not None
        waits = {asyncio.ensure_future(f) for f in (w.ready.wait(), w.proc.wait(),
                                                    self.stop.wait())}
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for f in waits:
            f.cancel()
        if w.ready.is_set() or self.stop.is_set():
            return None
        await self._drain_output(w)
        code = w.proc.returncode or 1
        if code not in (EXIT_RUNTIME, EXIT_CONFIG):  # those printed their own one line
            log.error("worker %d exited with code %s before it was ready; stopping",
                      w.index, code)
        return code if code > 0 else EXIT_RUNTIME

    async def _keep(self, w: Worker) -> None:
        """Restart worker ``w`` whenever it exits, with backoff, until the stop."""
        failures = 0
        while w.proc is not None:
            code = await w.proc.wait()
            if self.stopping:
                return
            from llm_observe.collector.exporters.multiprocess import forget_worker

            forget_worker(w.proc.pid, self.path)
            failures = 0 if time.monotonic() - w.started >= STABLE_S else failures + 1
            delay = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** max(0, failures - 1))
            how = f"was killed by {signal.Signals(-code).name}" if code < 0 \
                else f"exited with code {code}"
            log.warning("worker %d (pid %d) %s; restarting it in %.1f s", w.index, w.proc.pid,
                        how, delay)
            try:
                await asyncio.wait_for(self.stop.wait(), delay)
                return
            except TimeoutError:
                pass
            w.restarts += 1
            await self._spawn(w)

    async def _stop_all(self) -> int:
        """One SIGTERM to each worker; 0 when every one drained and exited cleanly."""
        live = [w for w in self.workers if w.alive]  # one that died was reported then
        for w in live:
            assert w.proc is not None
            with contextlib.suppress(ProcessLookupError):  # exited meanwhile
                w.proc.send_signal(signal.SIGTERM)
        waits = [w.proc.wait() for w in live if w.proc is not None]
        try:
            await asyncio.wait_for(asyncio.gather(*waits),
                                   self.settings.shutdown_timeout_s + STOP_MARGIN_S)
        except TimeoutError:
            for w in live:
                if w.alive:
                    assert w.proc is not None
                    log.error("worker %d (pid %d) did not stop in time; killing it",
                              w.index, w.proc.pid)
                    with contextlib.suppress(ProcessLookupError):  # exited meanwhile
                        w.proc.kill()
                    await w.proc.wait()
        code = 0
        for w in live:
            await self._drain_output(w)
            assert w.proc is not None
            # a worker stopped before its signal handlers were set dies of the SIGTERM
            clean = w.proc.returncode == 0 or (not w.ready.is_set()
                                                and w.proc.returncode == -signal.SIGTERM)
            if not clean:
                log.error("worker %d exited with code %s", w.index, w.proc.returncode)
                code = 1
        return code

    @staticmethod
    async def _drain_output(w: Worker) -> None:
        if w.reader is not None:
            await asyncio.gather(w.reader, return_exceptions=True)
