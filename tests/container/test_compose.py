"""The compose files as a compose implementation reads them (``config``): valid, every
published port on loopback, the all-in-one volume named as ``llm-observe start`` names it.

Needs a compose with a ``config`` command: ``docker compose`` (v2), ``docker-compose``
(Debian's 1.29, which scripts/container_engine.sh installs) or a podman-compose that has
one (Debian's 1.0.3 has not); skips in one line otherwise.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from llm_observe.cli import launcher

ROOT = Path(__file__).resolve().parents[2]


def _compose() -> list[str]:
    candidates = [["docker", "compose"], ["docker-compose"], ["podman-compose"]]
    for argv in candidates:
        if not shutil.which(argv[0]):
            continue
        # `docker compose` without the plugin is plain docker: ask the plugin its version
        probe = "--help" if argv[0] == "podman-compose" else "version"
        done = subprocess.run([*argv, probe], capture_output=True, text=True, timeout=60,
                              check=False)
        if done.returncode == 0 and (probe == "version" or "config" in done.stdout):
            return argv
    pytest.skip("compose config check skipped: no docker compose, docker-compose or "
                "podman-compose with a `config` command is installed")


@pytest.mark.parametrize("name", ["compose.yaml", "compose.dev.yaml"])
def test_the_compose_file_is_valid_and_publishes_on_loopback_only(name: str) -> None:
    done = subprocess.run([*_compose(), "-f", f"docker/{name}", "config"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load(done.stdout)
    published = [p for svc in config["services"].values() for p in svc.get("ports", [])]
    assert published
    for port in published:  # short syntax ("127.0.0.1:8002:8000/tcp") or long (host_ip)
        host_ip = port.get("host_ip") if isinstance(port, dict) else port.split(":")[0]
        assert host_ip == "127.0.0.1", port
    if name == "compose.yaml":
        assert config["volumes"]["llm-observe-data"]["name"] == f"{launcher.DEFAULT_NAME}-data"
