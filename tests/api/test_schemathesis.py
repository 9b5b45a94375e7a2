"""Property-based conformance: schemathesis against the served OpenAPI contract.

Every operation gets a bounded number of generated requests, schema-valid (positive) and
schema-invalid (negative), sent over real HTTP with the bearer token. Every default
schemathesis check must pass: no 5xx, documented status codes and content types,
responses matching their schemas, invalid data rejected with 4xx, valid data accepted
(save on /v1/metrics/record, whose cross-field rules JSON Schema cannot state).
``LLM_OBSERVE_SCHEMATHESIS_EXAMPLES`` sets the examples per operation and mode (15;
the suite also passed at 150 during development).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from importlib import resources
from typing import Any

import pytest
import requests
import schemathesis
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import positive_data_acceptance

from tests.api.conftest import make_collector
from tests.api.served import served
from tests.fakes import FakeProvider

TOKEN = "schemathesis-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXAMPLES = int(os.environ.get("LLM_OBSERVE_SCHEMATHESIS_EXAMPLES", "15"))
_DOC = yaml.safe_load((resources.files("llm_observe.api") / "contracts" / "v1.yaml").read_text())
OPERATIONS = [(method.upper(), path) for path, ops in _DOC["paths"].items() for method in ops]
# Operations with no input to corrupt: negative generation has nothing to work with.
NO_INPUT = {(m.upper(), p) for p, ops in _DOC["paths"].items() for m, op in ops.items()
            if "requestBody" not in op and "parameters" not in op}
# A span record has two cross-field rules JSON Schema cannot state (ttft <= total latency,
# cached <= prompt tokens; the contract says so in words), so schema-valid records may be
# rightly refused with 422 naming the field.
CROSS_FIELD_RULES = {("POST", "/v1/metrics/record")}
# Invalid data may be refused by its size before its shape is read: 413 is a rejection too.
CONFIG = """
[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422",
                     "428", "429"]
"""


class Live:
    def __init__(self, url: str, schema: Any, embeddings: bool) -> None:
        self.url = url
        self.schema = schema
        self.embeddings = embeddings
        self.session = requests.Session()


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    import llm_observe.instrument as instrument

    with FakeProvider() as openai_fake, FakeProvider() as anthropic_fake:
        collector = make_collector(api_token=TOKEN, openai_base_url=openai_fake.openai_base_url,
                                   anthropic_base_url=anthropic_fake.base_url,
                                   embedding_enabled=True)
        embedder = collector.embedder
        if embedder is not None:
            embedder.start_warmup()
        with served(collector) as (url, _loop, _app):
            # Start the scrape endpoint on a free port now: generated metrics/init calls
            # are then idempotent and never bind random ports on the machine.
            resp = requests.post(f"{url}/v1/metrics/init", json={"port": 0}, headers=AUTH,
                                 timeout=10)
            assert resp.status_code == 200
            ready = embedder is not None and embedder.wait(60)
            schema = schemathesis.openapi.from_url(
                f"{url}/v1/openapi.yaml", headers=AUTH,
                config=schemathesis.Config.from_str(CONFIG))
            try:
                yield Live(url, schema, ready)
            finally:
                instrument.uninstrument_all()


@pytest.mark.parametrize("mode", list(schemathesis.GenerationMode), ids=lambda m: m.value)
@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_operation_conforms_to_the_contract(live: Live, method: str, path: str,
                                            mode: schemathesis.GenerationMode) -> None:
    if path == "/v1/embeddings/embed" and not live.embeddings:
        pytest.skip("the embedding model is not available in this environment")
    if mode is schemathesis.GenerationMode.NEGATIVE and (method, path) in NO_INPUT:
        pytest.skip("no input to make invalid")
    operation = live.schema[path][method]
    excluded = [positive_data_acceptance] if (method, path) in CROSS_FIELD_RULES else []

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck))
    def check(case: schemathesis.Case) -> None:
        case.call_and_validate(base_url=live.url, session=live.session, headers=AUTH,
                               excluded_checks=excluded)

    check()
