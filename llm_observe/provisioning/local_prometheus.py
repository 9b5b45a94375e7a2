"""A local Prometheus for native mode (``llm-observe serve --with-prometheus``) and the tests.

Runs whatever ``prometheus`` binary is on PATH (Debian's package in CI) with the
rendered scrape config, listening on loopback only. The caller owns the
process: stop it with :func:`stop_local_prometheus`.
"""

from __future__ import annotations

import errno
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from llm_observe.provisioning.alerts import AlertParams
from llm_observe.provisioning.params import RenderParams
from llm_observe.provisioning.render import render_all

CONFIG = "prometheus/prometheus.yml"
RULES = "prometheus/alerts.yml"


def find_prometheus() -> str | None:
    """Path of the ``prometheus`` binary on PATH, or None."""
    return shutil.which("prometheus")


def check_port_free(port: int, host: str = "127.0.0.1") -> None:
    """OSError(EADDRINUSE) naming ``host:port`` when something already listens there.

    Prometheus started on a taken port logs the clash to its own log and exits, which
    nobody watching the collector's terminal would see.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Prometheus does
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise OSError(exc.errno or errno.EADDRINUSE,
                          f"prometheus cannot listen on {host}:{port}: "
                          f"{(exc.strerror or str(exc)).lower()}") from None


def start_local_prometheus(out_dir: Path | str, scrape_port: int, ui_port: int, *,
                           scrape_interval: str = "5s", scrape_host: str = "127.0.0.1",
                           retention: str = "15d", binary: str | None = None,
                           metrics_token: str | None = None,
                           alerts: AlertParams | None = None,
                           more_ports: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
    """Render ``OUT/prometheus/prometheus.yml`` (+ ``alerts.yml``, thresholds ``alerts``) and
    start Prometheus on 127.0.0.1:``ui_port``.

    It scrapes ``scrape_host:scrape_port/metrics`` (and each of ``more_ports``: replicas
    on the same host, one job) every ``scrape_interval`` and keeps
    its TSDB in ``OUT/prometheus/data`` (log: ``OUT/prometheus/prometheus.log``).
    Raises FileNotFoundError when no binary is found, OSError when ``ui_port`` is taken.
    Returns at once; use :func:`wait_ready` to wait for the HTTP API.
    """
    exe = binary or find_prometheus()
    if exe is None:
        raise FileNotFoundError("no `prometheus` on PATH (Debian/Ubuntu: apt-get install "
                                "prometheus; or download it from prometheus.io)")
    check_port_free(ui_port)
    out = Path(out_dir)
    params = RenderParams.for_profile("native", metrics_host=scrape_host, metrics_port=scrape_port,
                                      prometheus_port=ui_port, scrape_interval=scrape_interval,
                                      alerts=alerts, extra_scrape_targets=tuple(
                                          f"{scrape_host}:{p}" for p in more_ports))
    config, _ = render_all(params, out, only=(CONFIG, RULES), metrics_token=metrics_token)
    data = out / "prometheus" / "data"
    data.mkdir(parents=True, exist_ok=True)
    cmd = [exe, f"--config.file={config}", f"--storage.tsdb.path={data}",
           f"--storage.tsdb.retention.time={retention}",
           f"--web.listen-address=127.0.0.1:{ui_port}", "--log.level=warn",
           # keeps the trace exemplars of the OpenMetrics scrape (docs/metrics.md, "Exemplars")
           "--enable-feature=exemplar-storage"]
    with open(out / "prometheus" / "prometheus.log", "ab") as log:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT)


def wait_ready(ui_port: int, proc: subprocess.Popen[bytes] | None = None,
               timeout: float = 30.0) -> None:
    """Block until Prometheus answers ``/-/ready``; RuntimeError if it exits or times out."""
    url = f"http://127.0.0.1:{ui_port}/-/ready"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"prometheus exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1.0) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"prometheus not ready on port {ui_port} after {timeout:.0f} s")


def stop_local_prometheus(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """SIGTERM (Prometheus flushes its head block), then SIGKILL after ``timeout``."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
