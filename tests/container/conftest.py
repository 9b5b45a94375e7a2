"""The container tests' real parts: the engine (podman or docker), the local image, and a
stack started with ``llm-observe start`` on free loopback ports.

Skips, in one line, only when no engine answers on this machine (run
scripts/container_engine.sh first: it installs one and builds the image). When the
engine answers but the image is missing, the image is built with that script.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from llm_observe.cli.engine import Engine, find_engine

ROOT = Path(__file__).resolve().parents[2]
IMAGE, TAG = "llmobserve/llm-observe", "local"
PORT_FLAGS = ("--api-port", "--grafana-port", "--otlp-port", "--otlp-http-port",
              "--prometheus-port", "--metrics-port")


@pytest.fixture(scope="session")
def engine() -> Engine:
    found, why = find_engine()
    if found is None:
        pytest.skip(f"container tests skipped: {why}")
    if found("image", "inspect", f"{IMAGE}:{TAG}")[0] != 0:
        done = subprocess.run(["bash", str(ROOT / "scripts/container_engine.sh"),
                               "--engine", found.name], capture_output=True, text=True,
                              timeout=1800, check=False)
        assert done.returncode == 0 and done.stdout.strip().endswith(found.name), (
            f"building the image failed:\n{done.stderr[-3000:]}{done.stdout}")
    return found


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports free on 127.0.0.1 right now."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def cli(*argv: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``llm-observe ARGV`` from this checkout, as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "llm_observe.cli", *argv], env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def http_json(url: str, body: Any = None, timeout: float = 10) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.load(resp)


def firewall() -> str | None:
    """This host's iptables rules without counters (None when they cannot be read)."""
    if not shutil.which("iptables-save"):
        return None
    done = subprocess.run(["iptables-save"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None
    return "\n".join(re.sub(r"\[\d+:\d+\]", "", ln) for ln in done.stdout.splitlines()
                     if not ln.startswith("#"))


@dataclass
class Stack:
    """One ``llm-observe start`` of the local image; its ports, name and first output."""

    engine: Engine
    name: str
    ports: dict[str, int]
    start_out: str = ""
    started_at: float = 0.0  # time.monotonic() when `start` was invoked
    notes: dict[str, Any] = field(default_factory=dict)  # facts one test leaves the next

    @property
    def start_args(self) -> list[str]:
        args = ["start", "--engine", self.engine.name, "--name", self.name, "--tag", TAG]
        for flag in PORT_FLAGS:
            args += [flag, str(self.ports[flag])]
        return args

    def prom(self, query: str, at: float | None = None) -> dict[tuple[tuple[str, str], ...],
                                                             float]:
        """Instant query on the published Prometheus port: {sorted labels: value}."""
        params = {"query": query, **({"time": f"{at:.3f}"} if at is not None else {})}
        url = (f"http://127.0.0.1:{self.ports['--prometheus-port']}/api/v1/query?"
               f"{urllib.parse.urlencode(params)}")
        body = http_json(url)
        assert body["status"] == "success", body
        return {tuple(sorted(r["metric"].items())): float(r["value"][1])
                for r in body["data"]["result"]}

    def wait(self, what: str, check: Any, timeout: float = 90) -> Any:
        """Poll ``check()`` until it returns a truthy value (errors count as not yet)."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            try:
                last = check()
                if last:
                    return last
            except (OSError, ValueError, KeyError) as exc:
                last = exc
            time.sleep(0.5)
        raise AssertionError(f"{what}: not after {timeout:.0f} s (last: {last!r})")


@pytest.fixture(scope="module")
def stack(engine: Engine) -> Iterator[Stack]:
    """A stack on free loopback ports; stopped, and its volume removed, afterwards,
    whatever the tests did. The firewall must be as it was before."""
    rules_before = firewall()
    ports = dict(zip(PORT_FLAGS, free_ports(len(PORT_FLAGS)), strict=True))
    s = Stack(engine=engine, name=f"llmo-test-{os.getpid()}", ports=ports)
    try:
        yield s
    finally:
        engine("rm", "--force", s.name, timeout=90)
        engine("volume", "rm", "--force", f"{s.name}-data", timeout=60)
        if rules_before is not None:
            # The engine keeps its own chains once it has published a port (CNI-HOSTPORT-*,
            # DOCKER*): plumbing of the engine, not of this stack. No rule for this stack's
            # ports or address may stay.
            left = set((firewall() or "").splitlines()) - set(rules_before.splitlines())
            mine = [*(str(p) for p in ports.values()), *s.notes.get("addresses", [])]
            stale = [ln for ln in left if any(re.search(rf"(?<![\d.]){re.escape(m)}(?![\d.])",
                                                        ln) for m in mine)]
            assert not stale, f"rules of the stopped stack are left: {stale}"
