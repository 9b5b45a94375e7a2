"""`llm-observe start | status | stop` against a stand-in `docker` executable on PATH.

The stand-in records every invocation and answers like the docker CLI from a
small state file (engine up or down, container present, running or exited).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from llm_observe.cli import launcher

FAKE_DOCKER = """#!{python}
import json, pathlib, sys
here = pathlib.Path(__file__).parent
state_file = here / "state.json"
state = json.loads(state_file.read_text())
args = sys.argv[1:]
with open(here / "calls.jsonl", "a") as log:
    log.write(json.dumps(args) + "\\n")

def save():
    state_file.write_text(json.dumps(state))

if not state["engine"]:
    print("Cannot connect to the Docker daemon at unix:///var/run/docker.sock.", file=sys.stderr)
    sys.exit(1)
cmd = args[0]
box = state.get("container")
if cmd == "version":
    print("27.3.1")
elif cmd == "container" and args[1] == "inspect":
    if not box:
        print("Error: No such container: " + args[-1], file=sys.stderr)
        sys.exit(1)
    print(box["status"] + " " + box["image"])
elif cmd == "image" and args[1] == "inspect":
    print(state.get("absent", ""))  # the io.llm-observe.absent label of the image
elif cmd == "run":
    if state.get("port_busy"):
        print("docker: Error response from daemon: port is already allocated.", file=sys.stderr)
        sys.exit(125)
    state["container"] = {{"status": "running", "image": args[-1]}}
    save()
    print("3f1c0ffee")
elif cmd == "exec":
    if not box or box["status"] != "running":
        sys.exit(1)
    print(state["password"])
elif cmd == "stop":
    box["status"] = "exited"
    save()
    print(args[-1])
elif cmd == "rm":
    state["container"] = None
    save()
    print(args[-1])
else:
    sys.exit(2)
"""


class FakeDocker:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        exe = directory / "docker"
        exe.write_text(FAKE_DOCKER.format(python=sys.executable))
        exe.chmod(0o755)
        self.set(engine=True, container=None, password="Zr7-generated-pw", port_busy=False)

    def set(self, **state: Any) -> None:
        path = self.dir / "state.json"
        current = json.loads(path.read_text()) if path.exists() else {}
        path.write_text(json.dumps({**current, **state}))

    @property
    def state(self) -> dict[str, Any]:
        return dict(json.loads((self.dir / "state.json").read_text()))

    @property
    def calls(self) -> list[list[str]]:
        path = self.dir / "calls.jsonl"
        return [json.loads(ln) for ln in path.read_text().splitlines()] if path.exists() else []

    def commands(self) -> list[str]:
        return [c[0] if c[0] != "container" else "inspect" for c in self.calls]


@pytest.fixture
def docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeDocker:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))  # only the stand-in is found
    monkeypatch.delenv(launcher.ENGINE_ENV, raising=False)
    return FakeDocker(bin_dir)


def cli(command: str, *argv: str) -> int:
    parser = argparse.ArgumentParser()
    launcher.add_arguments(parser, command)
    args = parser.parse_args(list(argv))
    args.command = command
    return launcher.run(args)


def test_start_runs_the_exact_container_and_prints_the_password(
        docker: FakeDocker, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("start") == 0
    run = [c for c in docker.calls if c[0] == "run"]
    assert run == [[
        "run", "--detach", "--name", "llm-observe", "--restart", "unless-stopped",
        "--label", "io.llm-observe.stack=llm-observe",
        # loopback unless --bind says otherwise: no port reaches the network by default
        "--publish", "127.0.0.1:8002:8000", "--publish", "127.0.0.1:3002:3000",
        "--publish", "127.0.0.1:4317:4317", "--publish", "127.0.0.1:4318:4318",
        "--publish", "127.0.0.1:9090:9090",
        "--publish", "127.0.0.1:9464:9464",
        "--volume", "llm-observe-data:/var/lib/llm-observe",
        "--env", "GF_SERVER_ROOT_URL=http://localhost:3002/",
        "llmobserve/llm-observe:v1.8.2",
    ]]
    assert ["exec", "llm-observe", "cat", "/var/lib/llm-observe/grafana/admin-password"] \
        in docker.calls
    out = capsys.readouterr().out
    assert "Grafana     http://localhost:3002  (user admin, password Zr7-generated-pw)" in out
    assert "REST API    http://localhost:8002/v1" in out
    assert "OTLP HTTP   http://localhost:4318/v1/traces" in out
    assert "admin/admin" not in out
    assert "not in this image" not in out  # a full image lacks nothing


def test_start_options_change_ports_name_image_and_mounts(
        docker: FakeDocker, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "cfg"
    config.mkdir()
    assert cli("start", "--name", "obs2", "--api-port", "18002", "--grafana-port", "13002",
               "--otlp-port", "14317", "--otlp-http-port", "14318", "--prometheus-port", "19090",
               "--metrics-port", "19464",
               "--tag", "unstable", "--bind", "127.0.0.1", "--config-dir", str(config)) == 0
    (run,) = [c for c in docker.calls if c[0] == "run"]
    assert run == [
        "run", "--detach", "--name", "obs2", "--restart", "unless-stopped",
        "--label", "io.llm-observe.stack=obs2",
        "--publish", "127.0.0.1:18002:8000", "--publish", "127.0.0.1:13002:3000",
        "--publish", "127.0.0.1:14317:4317", "--publish", "127.0.0.1:14318:4318",
        "--publish", "127.0.0.1:19090:9090",
        "--publish", "127.0.0.1:19464:9464",
        "--volume", "obs2-data:/var/lib/llm-observe",
        "--env", "GF_SERVER_ROOT_URL=http://localhost:13002/",
        "--volume", f"{config.resolve()}:/etc/llm-observe/config:ro",
        "--env", "LLM_OBSERVE_CONFIG_DIR=/etc/llm-observe/config",
        "llmobserve/llm-observe:unstable",
    ]
    assert "http://localhost:13002" in capsys.readouterr().out


def test_a_bind_address_is_the_host_of_grafanas_links_and_the_printed_urls(
        docker: FakeDocker, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("start", "--bind", "192.168.7.20") == 0
    (run,) = [c for c in docker.calls if c[0] == "run"]
    assert "GF_SERVER_ROOT_URL=http://192.168.7.20:3002/" in run
    assert "--publish" in run and "192.168.7.20:8002:8000" in run
    out = capsys.readouterr().out
    assert "http://192.168.7.20:3002" in out and "localhost" not in out


def test_without_an_engine_start_points_to_serve_in_one_line(
        docker: FakeDocker, capsys: pytest.CaptureFixture[str]) -> None:
    docker.set(engine=False)
    assert cli("start") == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert "no container engine reachable" in line and "`llm-observe serve`" in line
    assert "--with-prometheus" in line
    assert docker.commands() == ["version"]  # nothing else was attempted


def test_without_a_docker_cli_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(launcher.ENGINE_ENV, raising=False)
    assert cli("start") == 1
    assert "`llm-observe serve`" in capsys.readouterr().err
    assert cli("status") == launcher.NOT_RUNNING
    assert capsys.readouterr().out.startswith("llm-observe: not running")


def test_status_says_running_or_not_in_one_line(docker: FakeDocker,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("status") == launcher.NOT_RUNNING
    assert capsys.readouterr().out == "llm-observe: not running (no container named llm-observe)\n"
    assert cli("start") == 0
    capsys.readouterr()
    assert cli("status") == 0
    assert capsys.readouterr().out == (
        "llm-observe: running (container llm-observe, image llmobserve/llm-observe:v1.8.2, "
        "engine docker)\n")
    docker.set(container={"status": "exited", "image": "llmobserve/llm-observe:v1.8.2"})
    assert cli("status") == launcher.NOT_RUNNING
    assert capsys.readouterr().out == "llm-observe: not running (container llm-observe is exited)\n"


def test_stop_removes_the_container_and_keeps_the_volume(
        docker: FakeDocker, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("start") == 0
    assert cli("stop") == 0
    assert ["stop", "--time", "30", "llm-observe"] in docker.calls
    assert ["rm", "llm-observe"] in docker.calls
    assert not any(c[0] == "volume" for c in docker.calls)
    assert docker.state["container"] is None
    assert "data kept in volume llm-observe-data" in capsys.readouterr().out
    assert cli("stop") == 0  # nothing to stop is not an error
    assert "not running" in capsys.readouterr().out


def test_start_when_running_does_not_start_a_second_one_and_says_so_in_one_line(
        docker: FakeDocker, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("start") == 0
    capsys.readouterr()
    assert cli("start") == 0
    assert [c[0] for c in docker.calls].count("run") == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line == ("llm-observe: already running (container llm-observe, image "
                    "llmobserve/llm-observe:v1.8.2); `llm-observe stop` first to start it "
                    "again or change its options")


def test_start_recreates_a_stopped_container(docker: FakeDocker) -> None:
    docker.set(container={"status": "exited", "image": "llmobserve/llm-observe:v1.8.1"})
    assert cli("start") == 0
    assert docker.commands() == ["version", "inspect", "rm", "run", "exec", "image"]
    assert docker.state["container"]["image"] == "llmobserve/llm-observe:v1.8.2"


def test_a_failed_run_reports_dockers_reason(docker: FakeDocker,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    docker.set(port_busy=True)
    assert cli("start") == 1
    assert capsys.readouterr().err.strip() == (
        "llm-observe: docker run failed: docker: Error response from daemon: "
        "port is already allocated.")


def test_engine_can_be_podman(docker: FakeDocker, monkeypatch: pytest.MonkeyPatch) -> None:
    (docker.dir / "docker").rename(docker.dir / "podman")
    monkeypatch.setenv(launcher.ENGINE_ENV, "podman")
    assert cli("start") == 0
    assert docker.state["container"]["status"] == "running"


def test_the_doors_tokens_are_passed_into_the_container_by_name_never_by_value(
        docker: FakeDocker, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LLM_OBSERVE_API_TOKEN", "api-secret")
    monkeypatch.setenv("LLM_OBSERVE_METRICS_TOKEN", "metrics-secret")
    monkeypatch.delenv("LLM_OBSERVE_OTLP_TOKEN", raising=False)
    assert cli("start", "--bind", "0.0.0.0") == 0
    [run] = [c for c in docker.calls if c[0] == "run"]
    envs = [run[i + 1] for i, arg in enumerate(run) if arg == "--env"]
    assert "LLM_OBSERVE_API_TOKEN" in envs and "LLM_OBSERVE_METRICS_TOKEN" in envs
    assert "LLM_OBSERVE_OTLP_TOKEN" not in envs
    assert not any("secret" in arg for arg in run)
    assert "0.0.0.0:8002:8000" in run
    assert "published on 0.0.0.0" in capsys.readouterr().out


def test_start_says_in_one_line_what_a_local_image_lacks(
        docker: FakeDocker, capsys: pytest.CaptureFixture[str]) -> None:
    docker.set(absent="grafana tempo loki alloy")
    assert cli("start", "--tag", "local") == 0
    assert ["image", "inspect", "--format", '{{index .Config.Labels "io.llm-observe.absent"}}',
            "llmobserve/llm-observe:local"] in docker.calls
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "not in this image" in ln]
    assert lines == ["  not in this image (a local build): grafana tempo loki alloy; "
                     "their URLs do not answer"]


def test_podman_is_preferred_when_it_answers_and_engine_chooses(
        docker: FakeDocker, capsys: pytest.CaptureFixture[str]) -> None:
    podman = docker.dir / "podman"
    podman.write_text("#!/bin/sh\necho 'Error: unable to connect to Podman socket' >&2\n"
                      "exit 125\n")
    podman.chmod(0o755)
    assert cli("start") == 0  # podman does not answer: docker does the work
    capsys.readouterr()
    assert cli("status") == 0
    assert capsys.readouterr().out.endswith(", engine docker)\n")
    podman.write_text(FAKE_DOCKER.format(python=sys.executable))  # now podman answers
    assert cli("status") == 0
    assert capsys.readouterr().out.endswith(", engine podman)\n")
    assert cli("status", "--engine", "docker") == 0
    assert capsys.readouterr().out.endswith(", engine docker)\n")


def test_no_daemon_is_said_in_one_line_naming_each_engine(
        docker: FakeDocker, capsys: pytest.CaptureFixture[str]) -> None:
    docker.set(engine=False)
    podman = docker.dir / "podman"
    podman.write_text("#!/bin/sh\necho 'Error: unable to connect to Podman socket' >&2\n"
                      "exit 125\n")
    podman.chmod(0o755)
    assert cli("stop") == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert ("podman is installed but it does not answer: Error: unable to connect to Podman "
            "socket; docker is installed but its daemon does not answer: Cannot connect to "
            "the Docker daemon at unix:///var/run/docker.sock.") in line
    assert cli("status", "--engine", "podman") == launcher.NOT_RUNNING
    assert capsys.readouterr().out == (
        "llm-observe: not running (no container engine reachable: podman is installed but it "
        "does not answer: Error: unable to connect to Podman socket)\n")
