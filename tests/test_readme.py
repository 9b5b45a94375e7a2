"""The README's quick start, run as written: what a newcomer copies is what works.

The blocks are parsed out of README.md (never copied here): the ``serve`` command runs
on the ports the README uses, the curl block's answer must match the documented one, and
the Python snippets run with the README's environment against that collector.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_serve import env

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
QUICK_START = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
BLOCKS = re.findall(r"```(sh|python)\n(.*?)```", QUICK_START, flags=re.S)


def blocks(lang: str, containing: str) -> list[str]:
    return [body for kind, body in BLOCKS if kind == lang and containing in body]


def readme_env() -> dict[str, str]:
    """The ``export NAME=value`` lines of the quick start."""
    (block,) = blocks("sh", "export OTEL_EXPORTER_OTLP_ENDPOINT")
    return dict(re.findall(r"^export (\w+)=(\S+)", block, flags=re.M))


def serve_argv() -> list[str]:
    """``llm-observe serve ...`` as the README writes it, run from this checkout."""
    (block,) = blocks("sh", "llm-observe serve")
    (line,) = [ln for ln in block.splitlines() if ln.startswith("llm-observe serve")]
    return [sys.executable, "-m", "llm_observe.cli", *shlex.split(line.split("#")[0])[1:]]


def readme_ports() -> list[int]:
    """Every localhost port the quick-start commands talk to (API, /metrics, OTLP)."""
    text = "".join(b for _, b in BLOCKS)
    return sorted({int(p) for p in re.findall(r"localhost:(\d+)", text)})


def port_taken(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def collector() -> Iterator[None]:
    ports = readme_ports()
    assert {8000, 9464, 4317} <= set(ports), ports  # the README's own defaults
    taken = [p for p in ports if port_taken(p)]
    if taken:
        pytest.skip(f"ports {taken} the README uses are taken by another process")
    proc = subprocess.Popen(serve_argv(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env(), cwd=ROOT)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "ready:" not in line:
        proc.kill()
        _, err = proc.communicate(timeout=10)
        if "already in use" in err:  # lost a race with another process
            pytest.skip(f"a README port was taken while starting: {err.strip()}")
        raise AssertionError(f"serve did not start: {line}{err}")
    try:
        yield
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def matches(documented: Any, actual: Any) -> bool:
    """``actual`` has every documented key with the documented value; "..." is any value."""
    if documented == "...":
        return True
    if isinstance(documented, dict):
        return isinstance(actual, dict) and all(
            k in actual and matches(v, actual[k]) for k, v in documented.items())
    return bool(documented == actual)


def scrape() -> str:
    with urllib.request.urlopen("http://127.0.0.1:9464/metrics", timeout=10) as resp:
        return str(resp.read().decode())


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_block_answers_as_documented(collector: None) -> None:
    (block,) = blocks("sh", "curl")
    documented = json.loads(re.search(r"^# (\{.*\})$", block, flags=re.M).group(1))  # type: ignore[union-attr]
    proc = subprocess.run(["bash", "-c", block], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    answer, end = json.JSONDecoder().raw_decode(proc.stdout)
    assert matches(documented, answer), (documented, answer)
    grep = proc.stdout[end:].strip().splitlines()
    assert grep and all(ln.startswith("llm_cost_usd_micro_total{") for ln in grep), grep
    assert any('model="gpt-4o"' in ln and float(ln.split()[-1]) >= 6000 for ln in grep)


def test_count_tokens_prints_as_documented() -> None:
    (block,) = blocks("python", "count_tokens")
    *setup, last = block.strip().splitlines()
    expression, documented = (part.strip() for part in last.split("#", 1))
    code = "\n".join([*setup, f"print(repr({expression}))"])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env=env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(documented.removesuffix("...)").rstrip(", ")), proc.stdout


def test_instrumented_app_reaches_the_collector_with_its_service_name(
        collector: None) -> None:
    from tests.fakes import FakeProvider

    (block,) = blocks("python", "init_auto_instrumentation")
    variables = readme_env()
    assert variables["OTEL_EXPORTER_OTLP_ENDPOINT"].startswith("http://")
    service = variables["OTEL_SERVICE_NAME"]
    with FakeProvider() as fake:
        app = block + (
            "import openai\n"
            f"client = openai.OpenAI(base_url={fake.openai_base_url!r}, api_key='k')\n"
            "client.chat.completions.create(model='gpt-4o-mini',"
            " messages=[{'role': 'user', 'content': 'hi'}])\n"
            "from opentelemetry import trace\n"
            "trace.get_tracer_provider().shutdown()  # flush, as at exit\n")
        proc = subprocess.run([sys.executable, "-c", app], capture_output=True, text=True,
                              timeout=60, cwd=ROOT, env={**env(), **variables})
    assert proc.returncode == 0, proc.stderr
    deadline = time.monotonic() + 10
    while f'service_name="{service}"' not in (text := scrape()):
        assert time.monotonic() < deadline, "no span from the instrumented app arrived"
        time.sleep(0.2)
    assert "unknown_service" not in text
