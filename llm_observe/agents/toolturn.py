"""A turn reported as ``stop`` whose output holds a tool call is a tool-call turn.

Some producers report ``stop`` for a turn that asked for tools (the Responses API has no
finish reason at all; the GenAI semconv puts a ``tool_call`` part in the output message
whatever the reason). Where the dialect shows the tool call, it is read here:

- GenAI semconv ``gen_ai.output.messages`` (JSON text): a part ``"type": "tool_call"``;
- OpenInference ``llm.output_messages.<i>.message.tool_calls.<j>.*`` keys;
- OpenLLMetry ``gen_ai.completion.<i>.tool_calls.<j>.*`` keys;
- Vercel AI SDK ``ai.response.toolCalls``.

Key tests are cached per attribute-key set (the :class:`~llm_observe.otlp.plan.Plan` object
identifies one); only the semconv JSON is searched per span, as raw bytes, and only for a
span already read as ``stop``.
"""

from __future__ import annotations

import re
from typing import Any

OUTPUT_MESSAGES = "gen_ai.output.messages"
VERCEL_TOOL_CALLS = "ai.response.toolCalls"
_TOOL_CALL_KEY = re.compile(
    r"llm\.output_messages\.\d+\.message\.tool_calls\.\d+\."
    r"|gen_ai\.completion\.\d+\.tool_calls\.\d+\.")
# A part's type in JSON text; a quote escaped inside a text part (\") does not match.
_TOOL_CALL_PART = re.compile(rb'(?<!\\)"type"\s*:\s*"tool_call"')
_MAX_CACHED = 1024
_by_plan: dict[int, tuple[Any, bool]] = {}  # id(plan) -> (plan, keys show a tool call)


def _keys_show_call(a: Any, plan: Any) -> bool:
    hit = _by_plan.get(id(plan))
    if hit is not None and hit[0] is plan:
        return hit[1]
    found = VERCEL_TOOL_CALLS in a or any(_TOOL_CALL_KEY.match(k) for k in a)
    if len(_by_plan) >= _MAX_CACHED:  # uncached plans (huge key sets) are new each span
        _by_plan.clear()
    _by_plan[id(plan)] = (plan, found)
    return found


def shows_tool_call(a: Any, plan: Any) -> bool:
    """True when a span's attributes ``a`` (raw AnyValue bytes by key) show a tool-call
    part in the output. ``plan`` is the span's cached Plan (identity = key set)."""
    if OUTPUT_MESSAGES in a and _TOOL_CALL_PART.search(a[OUTPUT_MESSAGES]):
        return True
    return _keys_show_call(a, plan)
