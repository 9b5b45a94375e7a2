"""The OpenAI Agents SDK end to end (issue 25): an agent with one tool, traced by
openinference-instrumentation-openai-agents, run as a program of its own venv
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
from tests.fakes.otlp_sink import OtlpSink, attributes
from tests.fakes.provider import FakeProvider, Settings
from tests.receiver.conftest import Stack
from tests.receiver.test_agents_e2e import EMAIL, RESULT, assert_one_run

APP = Path(__file__).parent / "producers" / "openai_agents_app.py"


def run_app(python: Path, provider_url: str, endpoint: str, *extra: str) -> int:
    """Run the agent; the number of spans it exported."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", ""),
           "OPENAI_API_KEY": "test-key", "NO_PROXY": "127.0.0.1"}
    done = subprocess.run([str(python), str(APP), provider_url, endpoint, RESULT,
                           f"Where is order 88213? I am {EMAIL}", *extra],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    count, answer = done.stdout.splitlines()[-2:]
    assert answer == "It shipped."
    return int(count)


@pytest.mark.parametrize("instrumented", [(), ("client",)], ids=["alone", "beside-client"])
async def test_openai_agents_sdk_via_openinference_end_to_end(
        stack: Stack, sink: OtlpSink, instrumented: tuple[str, ...]) -> None:
    """Alone, and beside the OpenAI client's instrumentation (each call then described by
    the SDK's LLM span and the client span under it): the same numbers."""
    python = venv_bin("openai-agents", "python")
    with FakeProvider(Settings(reply="It shipped.", prompt_tokens=100, completion_tokens=20,
                               tool_call=("lookup_order", '{"order": "88213"}'))) as fake:
        exported = await asyncio.to_thread(run_app, python, fake.openai_base_url,
                                           stack.endpoint, *instrumented)
    assert len(fake.requests) == 2  # a tool call, then the answer
    await sink.wait_for_spans(exported)
    llm = [s for s in sink.spans() if attributes(s).get("openinference.span.kind") == "LLM"]
    assert len(llm) == 2 * (1 + len(instrumented))  # every description forwarded
    runs = next(e for e in stack.collector.pipeline.exporters
                if isinstance(e, AgentRunExporter))
    runs.flush(late_by=5)  # the run's settle time (agents/runs.py SETTLE_S)

    forwarded = b"".join(s.SerializeToString() for s in sink.spans())
    assert EMAIL.encode() not in forwarded  # the question, tool result, agent and LLM spans
    tools = [attributes(s) for s in sink.spans()
             if attributes(s).get("openinference.span.kind") == "TOOL"]
    assert len(tools) == 1 and tools[0]["llm_observe.injection_attempt"] is True
    m = stack.metrics()
    # the e-mail did arrive in the tool result (redacted, not lost) and the instruction
    assert m("llm_untrusted_text_flags_total", span_kind="tool", finding="pii") == 1
    assert m("llm_untrusted_text_flags_total", span_kind="tool", finding="injection") == 1
    runs_by = {dict(labels)["gen_ai_agent_name"] for (name, labels) in m.samples
               if name == "gen_ai_invoke_agent_inference_calls_count"}
    assert runs_by == {"support"}  # one agent: the SDK's "Agent workflow" root is no run
    assert m("gen_ai_invoke_agent_inference_calls_count", gen_ai_agent_name="support") == 1
    assert_one_run(m, "agents-sdk")
