"""Real trace backends on loopback for the forwarding tests: Arize Phoenix and an MLflow
tracking server, each run from its own virtual environment made by
scripts/install_backends.sh (their dependencies never enter ours).

When a backend is not installed the test skips with one line saying so; when the install
is still running in the background (scripts/install.sh starts it), the tests wait for it
up to ``INSTALL_WAIT_S``. Phoenix's gRPC port listens on every interface (it binds
``[::]``, no setting changes that): a random free port, for the test's lifetime.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

DIR = Path(os.environ.get("LLM_OBSERVE_BACKENDS_DIR",
                          Path.home() / ".cache" / "llm-observe" / "backends"))
INSTALL_WAIT_S = 300.0
START_TIMEOUT_S = 180.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def venv_bin(name: str, program: str) -> Path:
    """The backend's program, or skip (one line) when it is not installed."""
    deadline = time.monotonic() + INSTALL_WAIT_S
    while (DIR / "install.log").exists() and not (DIR / "done").exists() \
            and time.monotonic() < deadline:
        time.sleep(1)  # install.sh's background install is still running
    path = DIR / name / "bin" / program
    if not (DIR / name / ".stamp").exists() or not path.exists():
        pytest.skip(f"{name} is not installed (bash scripts/install_backends.sh)")
    return path


def get_json(url: str, data: bytes | None = None, timeout: float = 10.0) -> Any:
    headers = {"Content-Type": "application/json"} if data is not None else {}
    request = urllib.request.Request(url, data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return json.loads(answer.read())


class Backend:
    """A backend process; ``start`` returns at once, ``wait_ready`` until it answers."""

    def __init__(self, argv: list[str], env: dict[str, str], ready_url: str,
                 log: Path) -> None:
        self.argv, self.env, self.ready_url, self.log = argv, env, ready_url, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.argv, env=self.env, stdout=out, stderr=out,
                                         start_new_session=True)

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.argv[0]} exited: {self.log.read_text()[-2000:]}")
            try:
                urllib.request.urlopen(self.ready_url, timeout=2).close()
                return
            except (urllib.error.URLError, OSError):
                time.sleep(0.5)
        raise AssertionError(f"{self.argv[0]} not ready in {timeout} s")

    def kill(self) -> None:
        """SIGKILL the whole process group (workers included): a backend that dies."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        self.proc = None


def base_env(home: Path) -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    # no telemetry, no outbound calls: loopback only
    env.update(HOME=str(home), PHOENIX_TELEMETRY_ENABLED="false", DO_NOT_TRACK="1",
               MLFLOW_DISABLE_TELEMETRY="true", NO_PROXY="*")
    return env


class Phoenix(Backend):
    def __init__(self, workdir: Path) -> None:
        self.http_port, self.grpc_port = free_port(), free_port()
        env = base_env(workdir)
        env.update(PHOENIX_WORKING_DIR=str(workdir), PHOENIX_HOST="127.0.0.1",
                   PHOENIX_PORT=str(self.http_port), PHOENIX_GRPC_PORT=str(self.grpc_port))
        super().__init__([str(venv_bin("phoenix", "phoenix")), "serve"], env,
                         f"http://127.0.0.1:{self.http_port}/v1/projects",
                         workdir / "phoenix.log")

    def spans(self, project: str = "default") -> list[dict[str, Any]]:
        """Every span Phoenix holds in ``project`` (its REST API, page by page)."""
        out: list[dict[str, Any]] = []
        cursor = ""
        while True:
            url = (f"http://127.0.0.1:{self.http_port}/v1/projects/{project}/spans?limit=1000"
                   + (f"&cursor={cursor}" if cursor else ""))
            try:
                page = get_json(url)
            except urllib.error.HTTPError as exc:
                if exc.code == 404:  # no span yet: the project does not exist
                    return out
                raise
            out.extend(page["data"])
            cursor = page.get("next_cursor") or ""
            if not cursor:
                return out


class Mlflow(Backend):
    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        super().__init__([str(venv_bin("mlflow", "mlflow")), "server", "--host", "127.0.0.1",
                          "--port", str(self.port), "--workers", "1",
                          "--backend-store-uri", f"sqlite:///{workdir / 'mlflow.db'}",
                          "--default-artifact-root", str(workdir / "artifacts")],
                         base_env(workdir), f"http://127.0.0.1:{self.port}/health",
                         workdir / "mlflow.log")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def experiment(self, name: str) -> str:
        answer = get_json(f"{self.url}/api/2.0/mlflow/experiments/create",
                          json.dumps({"name": name}).encode())
        return str(answer["experiment_id"])

    def spans(self, experiment: str) -> list[dict[str, Any]]:
        """Every span of every trace of ``experiment``, attribute values JSON-decoded."""
        out: list[dict[str, Any]] = []
        token = ""
        while True:
            page = get_json(f"{self.url}/api/2.0/mlflow/traces?experiment_ids={experiment}"
                            f"&max_results=500" + (f"&page_token={token}" if token else ""))
            for trace in page.get("traces", []):
                spans = get_json(f"{self.url}/ajax-api/3.0/mlflow/get-trace-artifact"
                                 f"?request_id={trace['request_id']}")["spans"]
                for span in spans:
                    span["attributes"] = {k: json.loads(v) if isinstance(v, str) else v
                                          for k, v in span["attributes"].items()}
                out.extend(spans)
            token = page.get("next_page_token") or ""
            if not token:
                return out
