"""docker/: what the image copies and mounts exists, supervisord runs what the image installs,
and the entrypoint and wait-for-grafana scripts behave (no container engine needed)."""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_observe.cli import launcher
from llm_observe.provisioning.params import RenderParams
from llm_observe.provisioning.render import OUTPUTS

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
PROVISIONING = "/etc/llm-observe/provisioning/"
WAIT = "/usr/local/bin/wait-for-grafana"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, rest) of docker/Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (DOCKER / "Dockerfile").read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def copies() -> list[tuple[dict[str, str], list[str], str]]:
    """(flags, sources, destination) of every COPY."""
    result = []
    for word, rest in instructions():
        if word == "COPY":
            tokens = shlex.split(rest)
            flags = dict(t[2:].split("=", 1) for t in tokens if t.startswith("--"))
            paths = [t for t in tokens if not t.startswith("--")]
            result.append((flags, paths[:-1], paths[-1]))
    return result


def verified_programs() -> set[str]:
    (run,) = [rest for word, rest in instructions() if word == "RUN" and "missing program" in rest]
    return set(re.findall(r"/usr/\S+", run.split(";")[0]))


def supervisor() -> configparser.ConfigParser:
    conf = configparser.ConfigParser(interpolation=None)
    conf.read_string((DOCKER / "supervisord.conf").read_text())
    return conf


def programs() -> dict[str, configparser.SectionProxy]:
    conf = supervisor()
    return {s.split(":", 1)[1]: conf[s] for s in conf.sections() if s.startswith("program:")}


def test_every_copied_path_exists_and_is_in_the_build_context() -> None:
    stages = {rest.split()[-1] for word, rest in instructions()
              if word == "FROM" and " AS " in rest.upper()}
    ignore = (DOCKER / "Dockerfile.dockerignore").read_text().splitlines()
    included = {line[1:] for line in ignore if line.startswith("!")}
    for flags, sources, _ in copies():
        if "from" in flags:
            assert flags["from"] in stages, flags
            continue
        for src in sources:
            assert (ROOT / src).exists(), f"COPY source {src} does not exist"
            assert src.rstrip("/") in included or f"{src.rstrip('/')}/**" in included, (
                f"{src} is excluded from the build context by Dockerfile.dockerignore")


def test_image_exposes_the_spec_ports_and_uses_the_copied_entrypoint() -> None:
    (expose,) = [rest for word, rest in instructions() if word == "EXPOSE"]
    assert set(expose.split()) == {"8000", "3000", "4317", "4318", "9090", "9464"}
    destinations = {src: dest for _, srcs, dest in copies() for src in srcs}
    (entry,) = [json.loads(rest) for word, rest in instructions() if word == "ENTRYPOINT"]
    assert entry == [destinations["docker/entrypoint.sh"]]
    script = (DOCKER / "entrypoint.sh").read_text()
    assert f'LLM_OBSERVE_SUPERVISOR_CONF:-{destinations["docker/supervisord.conf"]}' in script
    assert destinations["docker/wait-for-grafana"] == WAIT
    (volume,) = [json.loads(rest) for word, rest in instructions() if word == "VOLUME"]
    assert volume == [launcher.DATA_DIR]  # the volume `llm-observe start` mounts


def test_supervisor_runs_exactly_the_programs_the_image_installs() -> None:
    progs = programs()
    assert set(progs) == {"grafana", "collector", "prometheus", "tempo", "loki", "alloy"}
    installed = verified_programs()
    used = set()
    for name, section in progs.items():
        argv = shlex.split(section["command"])
        if name == "grafana":
            assert argv[0] != WAIT  # Grafana starts first ...
        else:  # ... the others after its migrations (spec 1)
            assert argv[0] == WAIT, name
            assert int(section["priority"]) > int(progs["grafana"]["priority"])
            argv = argv[1:]
        assert argv[0] in installed, f"{name} runs {argv[0]}, which the image does not install"
        used.add(argv[0])
        for arg in argv:  # every provisioning file named is one `render` writes
            for path in re.findall(re.escape(PROVISIONING) + r"\S+", arg):
                assert path[len(PROVISIONING):] in {out for _, out in OUTPUTS}, path
    tools = {"/usr/bin/supervisord", WAIT, "/usr/local/bin/llm-observe-entrypoint"}
    assert used == installed - tools


def test_supervisor_keeps_wal_logs_and_state_where_the_rendered_configs_expect() -> None:
    progs = programs()
    assert 'GF_DATABASE_WAL="true"' in progs["grafana"]["environment"]
    paths = RenderParams.for_profile("container").paths(Path(PROVISIONING))
    assert progs["collector"]["stdout_logfile"] == paths["collector_log"]  # Alloy tails it
    assert f"--storage.tsdb.path={launcher.DATA_DIR}/prometheus" in progs["prometheus"]["command"]
    assert "serve --host 0.0.0.0 --port 8000 --metrics-port 9464 --otlp-port 4317 " \
        "--otlp-http-port 4318" in progs["collector"]["command"]


def _mounts(service: dict[str, Any]) -> list[str]:
    return [v.split(":")[0] for v in service.get("volumes", [])]


def _compose(name: str) -> dict[str, Any]:
    return dict(yaml.safe_load((DOCKER / name).read_text()))


@pytest.mark.parametrize("name", ["compose.yaml", "compose.dev.yaml"])
def test_compose_builds_and_mounts_only_existing_paths(name: str) -> None:
    compose = _compose(name)
    named = set(compose.get("volumes") or {})
    for svc_name, svc in compose["services"].items():
        if "build" in svc:
            context = DOCKER / svc["build"]["context"]
            assert (context / svc["build"]["dockerfile"]).is_file(), svc_name
        for src in _mounts(svc):
            if src.startswith((".", "/")):
                assert (DOCKER / src).exists(), f"{name}: {svc_name} mounts missing {src}"
            else:
                assert src in named, f"{name}: {svc_name} mounts undeclared volume {src}"


def test_compose_publishes_the_spec_ports_on_loopback_only() -> None:
    (svc,) = _compose("compose.yaml")["services"].values()
    assert [p.split()[0] for p in svc["ports"]] == [
        f"127.0.0.1:{p}" for p in ("8002:8000", "3002:3000", "4317:4317", "4318:4318",
                                   "9090:9090", "9464:9464")]
    assert svc["image"].endswith(f":${{LLM_OBSERVE_TAG:-{launcher.DEFAULT_TAG}}}")
    assert f"llm-observe-data:{launcher.DATA_DIR}" in svc["volumes"]
    dev = _compose("compose.dev.yaml")["services"]
    host_ports = {name: {int(p.split(":")[-2]) for p in svc.get("ports", [])}
                  for name, svc in dev.items()}
    assert 8001 in host_ports["api"]
    assert {5435, 8123, 6380, 9094} <= set().union(*host_ports.values())


# ---------------------------------------------------------------- scripts, run for real


@pytest.fixture
def entrypoint_env(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "llm-observe"  # `llm-observe render ...` without the other subcommands
    shim.write_text(f"#!{sys.executable}\nimport argparse, sys\n"
                    "from llm_observe.provisioning import render\n"
                    "p = argparse.ArgumentParser(); render.add_arguments(p, 'render')\n"
                    "sys.exit(render.run(p.parse_args(sys.argv[2:])))\n")
    fake_supervisord = bin_dir / "supervisord"
    fake_supervisord.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"open({str(tmp_path / 'supervisord.json')!r}, 'w').write(json.dumps("
        "{'argv': sys.argv[1:], 'env': {k: v for k, v in os.environ.items() "
        "if k.startswith('LLM_OBSERVE_')}}))\n")
    for exe in (shim, fake_supervisord):
        exe.chmod(0o755)
    # the image's programs, all present: a fake tree the entrypoint looks them up in
    for section in programs().values():
        argv = shlex.split(section["command"])
        program = tmp_path / "image" / (argv[1] if argv[0] == WAIT else argv[0]).lstrip("/")
        program.parent.mkdir(parents=True, exist_ok=True)
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
    return {
        "LLM_OBSERVE_PROGRAM_ROOT": str(tmp_path / "image"),
        "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT),
        "LLM_OBSERVE_DATA_DIR": str(tmp_path / "data"),
        "LLM_OBSERVE_LOG_DIR": str(tmp_path / "logs"),
        "LLM_OBSERVE_PROVISIONING_DIR": str(tmp_path / "prov"),
        "LLM_OBSERVE_SUPERVISOR_CONF": str(DOCKER / "supervisord.conf"),
        "LLM_OBSERVE_SUPERVISORD": str(fake_supervisord),
        # set by the user with `docker run -e`: must win over collector.env
        "LLM_OBSERVE_TEMPO_ENDPOINT": "tempo.example:4319",
    }


def test_entrypoint_generates_the_password_once_and_renders_then_execs_supervisord(
        entrypoint_env: dict[str, str], tmp_path: Path) -> None:
    def start() -> str:
        done = subprocess.run(["sh", str(DOCKER / "entrypoint.sh")], env=entrypoint_env,
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    first = start()
    pw_file = tmp_path / "data/grafana/admin-password"
    password = pw_file.read_text().strip()
    assert re.fullmatch(r"[A-Za-z0-9_-]{24}", password)
    assert stat.S_IMODE(pw_file.stat().st_mode) == 0o600
    assert f"Grafana admin password (user admin): {password}" in first
    ran = json.loads((tmp_path / "supervisord.json").read_text())
    assert ran["argv"] == ["-n", "-c", str(DOCKER / "supervisord.conf")]
    assert ran["env"]["LLM_OBSERVE_HOST"] == "0.0.0.0"
    assert ran["env"]["LLM_OBSERVE_PORT"] == "8000"
    assert ran["env"]["LLM_OBSERVE_TEMPO_ENDPOINT"] == "tempo.example:4319"
    ini = (tmp_path / "prov/grafana/grafana.ini").read_text()
    assert f"admin_password = $__file{{{pw_file}}}" in ini

    second = start()  # a restart keeps the password and does not print it again
    assert pw_file.read_text().strip() == password
    assert password not in second


def test_an_image_without_the_grafana_family_runs_the_rest_and_says_so_in_one_line(
        entrypoint_env: dict[str, str], tmp_path: Path) -> None:
    for gone in ("usr/share/grafana/bin/grafana", "usr/local/bin/tempo", "usr/bin/loki",
                 "usr/bin/alloy"):
        (tmp_path / "image" / gone).unlink()
    env = {k: v for k, v in entrypoint_env.items() if k != "LLM_OBSERVE_TEMPO_ENDPOINT"}
    done = subprocess.run(["sh", str(DOCKER / "entrypoint.sh")], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    (line,) = [ln for ln in done.stdout.splitlines() if "not in this image" in ln]
    assert line == "llm-observe: not in this image (a local build): grafana tempo loki alloy; " \
        "starting the rest"
    ran = json.loads((tmp_path / "supervisord.json").read_text())
    conf_path = ran["argv"][-1]
    assert conf_path == str(tmp_path / "prov/supervisord.conf")
    conf = configparser.ConfigParser(interpolation=None)
    conf.read(conf_path)
    assert {s for s in conf.sections() if s.startswith("program:")} == {
        "program:collector", "program:prometheus"}
    assert conf["supervisord"]["nodaemon"] == "true"
    # no Grafana to wait for, no Tempo to forward to (empty = off in the collector settings)
    assert ran["env"]["LLM_OBSERVE_GRAFANA_WAIT_S"] == "0"
    assert ran["env"]["LLM_OBSERVE_TEMPO_ENDPOINT"] == ""


def test_entrypoint_renders_the_alert_rules_with_a_mounted_alerts_file(
        entrypoint_env: dict[str, str], tmp_path: Path) -> None:
    alerts = tmp_path / "alerts.yaml"
    alerts.write_text("error_ratio: 0.01\nerror_for: 2m\n")
    env = {**entrypoint_env, "LLM_OBSERVE_ALERTS_FILE": str(alerts)}
    done = subprocess.run(["sh", str(DOCKER / "entrypoint.sh")], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    rules = yaml.safe_load((tmp_path / "prov/prometheus/alerts.yml").read_text())
    (error,) = [r for g in rules["groups"] for r in g["rules"]
                if r["alert"] == "LLMErrorRateHigh"]
    assert error["for"] == "2m" and "> 0.01" in error["expr"]
    alerts.write_text("error_ratio: 7\n")  # a bad file stops the container with one line
    done = subprocess.run(["sh", str(DOCKER / "entrypoint.sh")], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert done.stderr.strip() == f"llm-observe render: {alerts}: error_ratio: must be a " \
        "number in (0, 1)"


class _Health(BaseHTTPRequestHandler):
    calls = 0

    def do_GET(self) -> None:
        type(self).calls += 1
        ready = type(self).calls >= 3  # migrations "finish" on the third poll
        body = json.dumps({"database": "ok" if ready else "migrating"}).encode()
        self.send_response(200 if ready else 503)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def grafana_health() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Health)
    _Health.calls = 0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/api/health"
    finally:
        server.shutdown()
        server.server_close()


def _wait_run(url: str, limit: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LLM_OBSERVE_GRAFANA_HEALTH_URL": url,
           "LLM_OBSERVE_GRAFANA_WAIT_S": limit}
    return subprocess.run([sys.executable, str(DOCKER / "wait-for-grafana"),
                           "sh", "-c", "echo started"], env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def test_wait_for_grafana_holds_the_program_until_migrations_finish(grafana_health: str) -> None:
    done = _wait_run(grafana_health, "60")
    assert done.returncode == 0 and done.stdout == "started\n"
    assert _Health.calls == 3 and done.stderr == ""


def test_wait_for_grafana_with_a_limit_of_zero_does_not_ask(grafana_health: str) -> None:
    done = _wait_run(grafana_health, "0")
    assert done.returncode == 0 and done.stdout == "started\n" and done.stderr == ""
    assert _Health.calls == 0


def test_wait_for_grafana_starts_the_program_anyway_after_its_limit() -> None:
    with HTTPServer(("127.0.0.1", 0), _Health) as closed:
        url = f"http://127.0.0.1:{closed.server_port}/api/health"  # closed: nothing answers
    done = _wait_run(url, "0.5")
    assert done.returncode == 0 and done.stdout == "started\n"
    assert "not ready after" in done.stderr
