"""Forwarding to real trace backends on loopback: Arize Phoenix (OTLP gRPC and HTTP) and
MLflow (`mlflow server`, OTLP/HTTP protobuf with ``x-mlflow-experiment-id``), behind a real
``llm-observe serve`` with two destinations. Both backends start once for the module, side
by side (they take tens of seconds each).

What a user would check: every span arrives once per destination with our cost, tokens
and flags; the ``redacted`` destination holds no PII while the ``full`` one holds the text
(and a ``none`` one no text); a backend killed mid-load costs the other nothing
acknowledged, and catches up from its spool when it returns.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.backends.load import EMAIL, PROMPT, collector
from tests.backends.servers import Mlflow, Phoenix

SPANS_PER_REQUEST = 5


@pytest.fixture(scope="module")
def backends(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Phoenix, Mlflow]]:
    phoenix = Phoenix(tmp_path_factory.mktemp("phoenix"))
    mlflow = Mlflow(tmp_path_factory.mktemp("mlflow"))
    phoenix.start()
    mlflow.start()
    try:
        phoenix.wait_ready()
        mlflow.wait_ready()
        yield phoenix, mlflow
    finally:
        phoenix.kill()
        mlflow.kill()


def span_id(span: dict[str, Any], key: str) -> int:
    """A backend's span id (Phoenix: hex in ``context``; MLflow: base64) as an int."""
    import base64
    if key == "phoenix":
        return int(span["context"]["span_id"], 16)
    return int.from_bytes(base64.b64decode(span["span_id"]), "big")


def eventually(read: Callable[[], list[dict[str, Any]]], n: int,
               timeout: float = 90.0) -> list[dict[str, Any]]:
    """What ``read`` returns once it holds ``n`` items (or at the timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        got = read()
        if len(got) >= n or time.monotonic() > deadline:
            return got
        time.sleep(0.5)


def assert_enriched(spans: list[dict[str, Any]]) -> None:
    for span in spans:
        a = span["attributes"]
        assert a["llm_observe.cost_usd_micro"] > 0, a
        assert a["gen_ai.usage.input_tokens"] == 1000 and a["gen_ai.usage.output_tokens"] == 200
        assert a["llm_observe.pii_detected"] is True and a["llm_observe.injection_attempt"] is False


def test_each_destination_gets_every_span_once_under_its_text_policy(
        backends: tuple[Phoenix, Mlflow], tmp_path: Path) -> None:
    phoenix, mlflow = backends
    experiment = mlflow.experiment("policies")
    with collector(tmp_path, f"""
- name: phoenix
  endpoint: 127.0.0.1:{phoenix.grpc_port}
  protocol: grpc
  text: redacted
- name: mlflow
  endpoint: {mlflow.url}
  protocol: http/protobuf
  headers: {{x-mlflow-experiment-id: "{experiment}"}}
  text: full
""") as c:
        for first in range(1000, 1100, SPANS_PER_REQUEST):
            assert c.send(first, SPANS_PER_REQUEST)
        at_phoenix = eventually(phoenix.spans, 100)
        at_mlflow = eventually(lambda: mlflow.spans(experiment), 100)
        assert c.metric("llm_observe_otlp_dropped_spans_total") == 0
    sent = set(range(1000, 1100))
    for where, spans in (("phoenix", at_phoenix), ("mlflow", at_mlflow)):
        ids = [span_id(s, where) for s in spans if 1000 <= span_id(s, where) < 1100]
        assert sorted(ids) == sorted(sent), f"{where}: {len(ids)} spans, {len(set(ids))} distinct"
        assert_enriched(spans)
    redacted = json.dumps(at_phoenix)
    assert EMAIL not in redacted and "[REDACTED:EMAIL]" in redacted
    assert all(s["attributes"]["llm_observe.prompt"] == PROMPT for s in at_mlflow)


def test_a_backend_killed_mid_load_costs_the_other_nothing_and_catches_up(
        backends: tuple[Phoenix, Mlflow], tmp_path: Path) -> None:
    phoenix, mlflow = backends
    experiment = mlflow.experiment("outage")
    with collector(tmp_path, f"""
- name: phoenix-http
  endpoint: http://127.0.0.1:{phoenix.http_port}
  protocol: http/protobuf
  text: none
  timeout_s: 2
- name: mlflow
  endpoint: {mlflow.url}
  protocol: http/protobuf
  headers: {{x-mlflow-experiment-id: "{experiment}"}}
""") as c:
        ids = iter(range(5000, 5300, SPANS_PER_REQUEST))
        for first in list(ids)[:20]:
            assert c.send(first, SPANS_PER_REQUEST)
        # Phoenix answers OTLP before its bulk inserter writes (~0.1 s later): kill it once
        # it wrote all it took, so any span missing later is ours, not Phoenix's.
        eventually(lambda: [s for s in phoenix.spans() if span_id(s, "phoenix") >= 5000], 100)
        phoenix.kill()
        for first in range(5100, 5300, SPANS_PER_REQUEST):
            assert c.send(first, SPANS_PER_REQUEST), "the doors took the load with Phoenix dead"
        # nothing acknowledged is missing at MLflow while Phoenix is still down
        at_mlflow = list(eventually(lambda: mlflow.spans(experiment), 300))
        got = [span_id(s, "mlflow") for s in at_mlflow]
        assert sorted(got) == sorted(c.acked) and len(c.acked) == 300
        assert c.metric("llm_observe_otlp_spool_spans", destination="phoenix-http") > 0
        phoenix.start()  # same working directory and ports
        phoenix.wait_ready()
        at_phoenix = eventually(
            lambda: [s for s in phoenix.spans() if 5000 <= span_id(s, "phoenix") < 5300], 300)
        assert {span_id(s, "phoenix") for s in at_phoenix} == c.acked
        deadline = time.monotonic() + 30
        while c.metric("llm_observe_otlp_spool_spans", destination="phoenix-http") > 0:
            assert time.monotonic() < deadline, "the spool did not drain"
            time.sleep(0.5)
        assert c.metric("llm_observe_otlp_dropped_spans_total") == 0
    texts = json.dumps([s["attributes"] for s in at_phoenix])
    assert EMAIL not in texts and "invoice" not in texts  # text: none
    assert_enriched(at_phoenix)
