"""A call whose span shows no usage and no output is never counted as ``exact``
(issue 25: OpenLLMetry's agents SDK spans on Chat Completions)."""

from __future__ import annotations

import pytest

from tests.agents.helpers import Run, captured


def test_openllmetry_agents_chat_spans_alone_are_heuristic() -> None:
    run = Run()
    w = run.send(captured("openai_agents_openllmetry_chat"))
    calls = [s for s in w.llm if s.duplicate_of is None]
    assert len(calls) == 2
    for span in calls:
        assert span.completion_tokens == 0 and not span.completion_text
        assert span.prompt_tokens > 0  # the prompt it shows was counted ...
        assert span.token_count_method == "heuristic"  # ... but the answer was not seen
        assert any("no usage and no output" in n for n in span.notes)


@pytest.mark.parametrize("name", ["openai_agents_openllmetry_chat_with_client",
                                  "openai_agents_openinference_chat_with_client"])
def test_beside_the_client_instrumentation_the_client_s_usage_counts(name: str) -> None:
    run = Run()
    w = run.send(captured(name))
    calls = [s for s in w.llm if s.duplicate_of is None]
    assert len(calls) == 2
    for span in calls:  # the client's span: the provider's usage, as billed
        assert (span.prompt_tokens, span.completion_tokens) == (100, 20)
        assert span.token_count_method is None
