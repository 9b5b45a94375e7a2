"""The texts of a span that is no LLM call, read for the scan (agents/untrusted.py).

The same catalogue and layout as an LLM call's text (:mod:`otlp.texts`), so the forwarder's
redactor rewrites the same pieces; only the role a piece gets when nothing names it differs
(rules: scan/roles.py, docs/scanning.md "Roles"):

- a tool, retriever or MCP span (``tool_like``): ``tool`` on both sides — its arguments and
  its result are data that crossed a tool boundary; a key that names its writer keeps it
  (semconv ``gen_ai.tool.call.arguments`` are the model's), and JSON structure can only
  lower trust, never raise it;
- any other span (agent, workflow, chain, task): an LLM call's defaults — ``unknown`` (read
  as user input) in the input, ``assistant`` in the output — with the roles its messages
  name (Pydantic AI's ``pydantic_ai.all_messages``: system, user, tool results).

Cheap on a plain span: a span with no content event and none of the gate's keys is not read
(one C-level pass over its keys); the others' families are cached per key set
(``texts.both_sides``).
"""

from __future__ import annotations

from typing import Any

from llm_observe.agents.untrusted import OtherText
from llm_observe.otlp import textroles, texts
from llm_observe.otlp.textkeys import COMPLETION, EXACT, PROMPT
from llm_observe.scan import roles as r

SIDES = (PROMPT, COMPLETION)
# A span is read when it has a content event, a text key of the catalogue, or a key of a GenAI
# or agent producer (whose indexed text keys, ``llm.input_messages.{i}...``,
# ``retrieval.documents.{i}...``, a set membership cannot see).
GATE = frozenset(EXACT) | frozenset({
    "gen_ai.operation.name", "openinference.span.kind", "traceloop.span.kind",
    "gen_ai.tool.name", "gen_ai.agent.name", "ai.toolCall.name", "mcp.method.name",
    "langfuse.observation.type", "gen_ai.system", "gen_ai.provider.name", "llm.system"})


def read_other(span: Any, position: tuple[int, int, int], tool_like: bool) -> OtherText | None:
    """The texts of a non-LLM span (a ``wire.Span``) with their roles, or None if it has none.

    Never raises on hostile values: a value the reader cannot parse is read as plain text
    (the layout's rule), so it is still scanned and redacted."""
    attrs, events = span.attributes, span.events
    if not events and GATE.isdisjoint(attrs):
        return None  # the common plain span (HTTP, DB ...): one C-level pass over its keys
    sides = texts.both_sides(attrs)
    # each side always holds the content-event family; more means a text key is present
    if len(sides[PROMPT]) == 1 and len(sides[COMPLETION]) == 1 and not (
            events and any(texts.content_events(span, events).values())):
        return None
    found: dict[str, tuple[str | None, list[Any]]] = {}
    for which in SIDES:
        lay = texts.layout(span, sides[which], attrs, events)
        text = lay.text()
        default = r.TOOL if tool_like else None
        found[which] = (text, textroles.segments(span, lay.sources, which, default)
                        if text else [])
    prompt, completion = found[PROMPT][0], found[COMPLETION][0]
    if prompt is None and completion is None:
        return None
    return OtherText(position, span.trace_id, span.span_id, span.parent_span_id, tool_like,
                     span.start_time_unix_nano, span.end_time_unix_nano, prompt, completion,
                     {PROMPT: found[PROMPT][1], COMPLETION: found[COMPLETION][1]})
