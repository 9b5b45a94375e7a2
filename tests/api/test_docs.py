"""Every curl example in docs/api.md works as written against a served collector."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.api.conftest import make_collector
from tests.api.served import served
from tests.fakes import FakeProvider

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
DOC_BASE = "http://127.0.0.1:8000"
BLOCKS = re.findall(r"```sh\n(.*?)```", DOC.read_text(), flags=re.S)
pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")


def json_values(text: str) -> list[Any]:
    """Every JSON value printed one after another (a block may run several curls)."""
    decoder, values, i = json.JSONDecoder(), [], 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        value, i = decoder.raw_decode(text, i)
        values.append(value)
    return values


@pytest.fixture(scope="module")
def base() -> Iterator[tuple[str, bool]]:
    import llm_observe.instrument as instrument

    with FakeProvider() as openai_fake, FakeProvider() as anthropic_fake:
        collector = make_collector(openai_base_url=openai_fake.openai_base_url,
                                   anthropic_base_url=anthropic_fake.base_url)
        with served(collector) as (url, _loop, _app):
            # The scrape endpoint is started on a free port first, so the documented
            # init on 9464 is the idempotent case and binds nothing on this machine.
            requests.post(f"{url}/v1/metrics/init", json={"port": 0}, timeout=10)
            try:
                yield url, collector.embedder is not None
            finally:
                instrument.uninstrument_all()


def test_every_endpoint_has_an_example() -> None:
    from llm_observe.api.app import ROUTES

    text = "\n".join(BLOCKS)
    for method, path, _ in ROUTES:
        assert f"{DOC_BASE}{path}" in text, f"no curl example for {method} {path}"


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_example_runs(base: tuple[str, bool], block: str) -> None:
    url, has_embedder = base
    env = {**os.environ, "LLM_OBSERVE_API_TOKEN": ""}
    proc = subprocess.run(["bash", "-c", block.replace(DOC_BASE, url)], capture_output=True,
                          text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    if "/v1/openapi.yaml" in block:
        assert proc.stdout.startswith("openapi: 3.1")
        return
    for value in json_values(proc.stdout):
        if "/v1/embeddings/embed" in block and not has_embedder:
            assert value["error"]["code"] in ("embeddings_unavailable", "embeddings_disabled")
            continue
        assert "error" not in value or value["error"] is None, value
