"""Three OTLP/HTTP destinations of different text policies behind one fan-out, listed
against text order (``none``, ``redacted``, ``full``): the encoder rewrites the received
request in place, so the fan-out must encode them full first — each real endpoint still
gets its own text: the prompt as sent, the prompt without the e-mail address, no text."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from llm_observe.collector.exporters.otlp_forwarder.fanout import Fanout
from llm_observe.pipeline import Batch
from tests.collector.exporters.test_http_destination import make
from tests.fakes.otlp_http_sink import HttpSink
from tests.otlp.test_inplace import SECRET, received, texts

POLICIES = ("none", "redacted", "full")


@pytest.fixture
async def sinks() -> AsyncIterator[dict[str, HttpSink]]:
    made = {policy: HttpSink() for policy in POLICIES}
    for s in made.values():
        await s.start()
    yield made
    for s in made.values():
        await s.stop()


async def test_each_destination_gets_its_own_text(sinks: dict[str, HttpSink],
                                                  tmp_path: Path) -> None:
    registry = CollectorRegistry()
    fan = Fanout([make(tmp_path, f"- {{name: {policy}, endpoint: '{sinks[policy].url}', "
                                 f"protocol: http/protobuf, text: {policy}}}", registry)
                  for policy in POLICIES])
    walked = received()
    await fan.export(Batch(walked.llm, walked))
    for s in sinks.values():
        await s.wait_for_spans(3)  # chat 2 is rejected
    await fan.shutdown(5)
    got: dict[str, Any] = {p: texts(s.requests[0].SerializeToString()) for p, s in sinks.items()}
    assert f"user: write to {SECRET}" in got["full"]
    assert SECRET not in got["redacted"] and "user: write to [REDACTED:EMAIL]" in got["redacted"]
    assert "write to" not in got["none"] and "hello" not in got["none"]
