"""The OpenAI Agents SDK end to end (issue 25): an agent with one tool, traced by
openinference-instrumentation-openai-agents or OpenLLMetry's
opentelemetry-instrumentation-openai-agents, on Chat Completions and the Responses API, run
as a program of its own venv
(scripts/install_backends.sh, entry ``openai-agents``: the SDK's websockets pin would
downgrade ours) against the fake provider; its spans exported over OTLP to the real receiver,
forwarded to a real trace sink. Skips with one line when that venv is absent."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from llm_observe.collector.exporters.agent_runs import AgentRunExporter
from tests.backends.servers import venv_bin
from tests.fakes.otlp_sink import OtlpSink
from tests.fakes.provider import FakeProvider, Settings
from tests.receiver.conftest import Scrape, Stack
from tests.receiver.test_agents_e2e import EMAIL, RESULT, assert_one_run

APP = Path(__file__).parent / "producers" / "openai_agents_app.py"


def run_app(python: Path, provider_url: str, endpoint: str, *extra: str) -> int:
    """Run the agent (``extra``: the app's options); the number of spans it exported."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", ""),
           "OPENAI_API_KEY": "test-key", "NO_PROXY": "127.0.0.1"}
    done = subprocess.run([str(python), str(APP), provider_url, endpoint, RESULT,
                           f"Where is order 88213? I am {EMAIL}", *extra],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    if "ModuleNotFoundError: No module named 'opentelemetry.instrumentation" in done.stderr:
        pytest.skip("the openai-agents venv predates OpenLLMetry's pins: "
                    "bash scripts/install_backends.sh")
    assert done.returncode == 0, done.stderr[-3000:]
    count, answer = done.stdout.splitlines()[-2:]
    assert answer == "It shipped."
    return int(count)


PRODUCERS = ["openinference", "openllmetry"]


def total(m: Scrape, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, got), v in m.samples.items() if n == name and want <= got)
APIS = ["chat", "responses"]


@pytest.mark.parametrize("instrumented", [(), ("client",)], ids=["alone", "beside-client"])
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("producer", PRODUCERS)
async def test_openai_agents_sdk_end_to_end(stack: Stack, sink: OtlpSink, producer: str,
                                            api: str, instrumented: tuple[str, ...]) -> None:
    """Traced by OpenInference or OpenLLMetry, on Chat Completions or the Responses API,
    alone and beside the same project's OpenAI client instrumentation (each call then also
    described by the client's span, under the SDK's or beside it): each call counted once,
    the tool measured and flagged, no e-mail forwarded, the run's cost its calls'."""
    python = venv_bin("openai-agents", "python")
    with FakeProvider(Settings(reply="It shipped.", prompt_tokens=100, completion_tokens=20,
                               tool_call=("lookup_order", '{"order": "88213"}'))) as fake:
        exported = await asyncio.to_thread(run_app, python, fake.openai_base_url,
                                           stack.endpoint, producer, api, *instrumented)
    assert len(fake.requests) == 2  # a tool call, then the answer
    await sink.wait_for_spans(exported)
    runs = next(e for e in stack.collector.pipeline.exporters
                if isinstance(e, AgentRunExporter))
    runs.flush(late_by=5)  # the run's settle time (agents/runs.py SETTLE_S)

    forwarded = b"".join(s.SerializeToString() for s in sink.spans())
    assert EMAIL.encode() not in forwarded  # the question, tool result, agent and LLM spans
    m = stack.metrics()
    # the e-mail did arrive in the tool result (redacted, not lost) and the instruction
    assert m("llm_untrusted_text_flags_total", span_kind="tool", finding="pii") == 1
    assert m("llm_untrusted_text_flags_total", span_kind="tool", finding="injection") == 1
    assert total(m, "gen_ai_execute_tool_duration_seconds_count",
                 gen_ai_tool_name="lookup_order") == 1
    runs_by = {dict(labels)["gen_ai_agent_name"] for (name, labels) in m.samples
               if name == "gen_ai_invoke_agent_inference_calls_count"}
    assert runs_by == {"support"}  # one agent: the SDK's "Agent workflow" root is no run
    assert m("gen_ai_invoke_agent_inference_calls_count", gen_ai_agent_name="support") == 1
    assert_one_run(m, "agents-sdk")
    described = total(m, "llm_observe_receiver_spans_accepted_total", kind="llm")
    duplicates = m("llm_observe_dedup_duplicates_total")
    assert described - duplicates == 2  # every description forwarded, each call counted once
    assert m("llm_observe_dedup_wrapper_counted_total") == 0  # the inner span came first
    if (producer, api, instrumented) == ("openllmetry", "chat", ()):
        # its agents spans carry no usage: counted from the prompt, never called exact
        assert total(m, "llm_tokens_total", token_type="prompt",
                     token_count_method="exact") == 0
    else:  # the fake's usage: 100 + 20 tokens a call, as billed
        assert total(m, "llm_tokens_total", token_type="prompt") == 200
        assert total(m, "llm_cost_usd_micro_total") == 900
