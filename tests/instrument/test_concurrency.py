"""100 concurrent asyncio tasks making patched calls: every span stays with its task."""

from __future__ import annotations

import asyncio

import openai

from llm_observe import instrument, semconv
from tests.fakes import FakeProvider
from tests.instrument.conftest import Spans


async def test_100_concurrent_tasks_are_isolated(instrumented: Spans, fake: FakeProvider) -> None:
    fake.settings.chunk_delay_s = 0.001
    client = openai.AsyncOpenAI(base_url=fake.openai_base_url, api_key="k")

    @instrument.observe("chat-api", "answer")
    async def answer(i: int) -> str:
        instrument.current_span().set_metadata("task", str(i))  # type: ignore[union-attr]
        stream = i % 2 == 0
        messages = [{"role": "user", "content": f"task {i}"}]
        if not stream:
            response = await client.chat.completions.create(model="gpt-4o", messages=messages)
            return response.choices[0].message.content or ""
        chunks = await client.chat.completions.create(model="gpt-4o", messages=messages,
                                                      stream=True)
        return "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])

    results = await asyncio.gather(*(answer(i) for i in range(100)))
    assert results == [f"You said: task {i}" for i in range(100)]

    parents = {s.context.span_id: s for s in instrumented.all() if s.name == "answer"}
    llm = instrumented.llm()
    assert len(parents) == 100 and len(llm) == 100
    seen = set()
    for span in llm:
        attrs = span.attributes or {}
        # Prompt and completion of one span belong to the same call...
        task = str(attrs[semconv.PROMPT_TEXT]).removeprefix("user: ")
        assert attrs[semconv.COMPLETION_TEXT] == f"You said: {task}"
        # ...and the span sits under the decorated call of that same task.
        assert span.parent is not None
        parent = parents[span.parent.span_id]
        assert parent.attributes[semconv.METADATA_PREFIX + "task"] == task.split()[-1]  # type: ignore[index]
        assert parent.context.trace_id == span.context.trace_id
        assert attrs[semconv.ENDPOINT] == "answer"
        seen.add(span.parent.span_id)
    assert seen == set(parents)
