"""A newcomer's first hour: every failure is one line that says what to do, no traceback."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from llm_observe.cli import EXTRA_MODULES
from tests.cli.test_serve import env, free_port, one_line

ROOT = Path(__file__).resolve().parents[2]


def cli_without(module: str, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh process where ``module`` cannot be imported (as if not installed)."""
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            "from llm_observe.cli import main\nsys.exit(main())")
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          timeout=timeout, env=env(), cwd=ROOT)


@pytest.mark.parametrize(("module", "argv"), [
    ("prometheus_client", ("serve", "--otlp-port", "0")),
    ("aiohttp", ("serve", "--otlp-port", "0")),
    ("jinja2", ("render", "--out", "{tmp}")),
])
def test_a_missing_extra_is_one_line_naming_it(module: str, argv: tuple[str, ...],
                                               tmp_path: Path) -> None:
    args = [a.replace("{tmp}", str(tmp_path / "out")) for a in argv]
    proc = cli_without(module, *args, "--port", str(free_port())) if args[0] == "serve" \
        else cli_without(module, *args)
    assert proc.returncode == 2
    assert one_line(proc.stderr) == (
        f"llm-observe {args[0]}: error: this needs the [collector] extra (missing module "
        f"{module}): pip install 'llm-observe[collector]'")


def test_extra_table_matches_pyproject() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    for module, (distribution, extra) in EXTRA_MODULES.items():
        names = [re.split(r"[<>=\[ ;]", d)[0].lower() for d in extras[extra]]
        assert distribution.lower() in names, (module, extra)


def test_help_has_no_rst_markup() -> None:
    for argv in ([], ["serve"], ["render"], ["start"]):
        out = subprocess.run([sys.executable, "-m", "llm_observe.cli", *argv, "--help"],
                             capture_output=True, text=True, timeout=60, cwd=ROOT).stdout
        assert "usage: llm-observe" in out
        assert "`" not in out, out


def test_otlp_port_clash_is_one_clean_line() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "llm_observe.cli", "serve", "--port", str(free_port()),
             "--metrics-port", str(free_port()), "--otlp-port", str(port)],
            capture_output=True, text=True, timeout=60, env=env(), cwd=ROOT)
    assert proc.returncode == 1
    assert one_line(proc.stderr) == (f"llm-observe serve: error: OTLP receiver cannot listen "
                                      f"on 127.0.0.1:{port}: address already in use")


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus is not installed")
def test_with_prometheus_on_a_taken_port_fails_loudly(tmp_path: Path) -> None:
    api = free_port()
    with socket.create_server(("127.0.0.1", 0)) as taken:
        ui = taken.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "llm_observe.cli", "serve", "--port", str(api),
             "--metrics-port", str(free_port()), "--otlp-port", "0", "--with-prometheus",
             "--prometheus-port", str(ui)],
            capture_output=True, text=True, timeout=60, cwd=ROOT,
            env=env(XDG_DATA_HOME=str(tmp_path)))
    assert proc.returncode == 1
    assert "ready:" not in proc.stdout  # nothing is advertised
    assert one_line(proc.stderr) == (f"llm-observe serve: error: prometheus cannot listen on "
                                      f"127.0.0.1:{ui}: address already in use")


def test_first_test_call_latency_excludes_importing_the_sdk() -> None:
    # A fresh process, as the first test call after `serve`: openai is not imported yet.
    code = """
import sys, time
assert "openai" not in sys.modules
from llm_observe.api.testcall import OPENAI, Target, run_call
from tests.fakes import FakeProvider
with FakeProvider() as fake:
    t0 = time.perf_counter()
    result = run_call(Target(OPENAI, fake.openai_base_url, "k", "gpt-4o-mini"), "sdk",
                      "ping", stream=False, timeout=30)
    wall = (time.perf_counter() - t0) * 1000
print(result.ok, result.latency_ms, wall)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env=env())
    assert proc.returncode == 0, proc.stderr
    ok, latency_ms, wall_ms = proc.stdout.split()
    assert ok == "True"
    # The loopback fake answers in milliseconds; importing openai alone takes far longer.
    assert float(latency_ms) < 250, (latency_ms, wall_ms)
