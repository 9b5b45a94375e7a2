"""Which span attributes and events carry prompt or completion text, in every dialect.

The catalogue the reader (:mod:`otlp.texts`) and the redactor (:mod:`otlp.redact`)
share: a key is classified by its side (prompt/completion), its *rank* (families are
laid out in rank order; the first present one is the conversation the span's text
always started with) and how its value is read (plain text, JSON, or JSON when the
OpenInference mime type says so). Indexed keys (``gen_ai.prompt.3.content``,
``llm.input_messages.12.message.tool_calls.0.tool_call.function.arguments`` ...) are
matched by prefix + message index with no cap on the index; every sub-key of a message
is text except the metadata names below (role, id, name, type, finish reason).

Sources: OTel GenAI semconv registry (current and deprecated keys and events),
traceloop/openllmetry semconv_ai, Arize-ai/openinference semconv and spec, openlit
semcov; checked against opentelemetry-instrumentation-openai 0.62.4 and
openinference-instrumentation-openai 0.1.66 (docs/attribute-mapping.md).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from llm_observe import semconv as sc

Which = Literal["prompt", "completion"]
Parse = Literal["plain", "json", "mime"]
PROMPT: Which = "prompt"
COMPLETION: Which = "completion"

# Ranks: the layout order of families on one side (lower first).
OURS, OLLM_INDEXED, OI_INDEXED, SEMCONV_MESSAGES, FLAT, SDK_MESSAGES = 0, 1, 2, 3, 4, 5
EVENTS, BODY, TEMPLATES, SYSTEM, TOOL_DEFINITIONS, TOOL_CALL, REQUEST_EXTRAS = range(6, 13)

# key -> (side, rank, how the value is read)
EXACT: dict[str, tuple[Which, int, Parse]] = {
    sc.PROMPT_TEXT: (PROMPT, OURS, "plain"),
    sc.COMPLETION_TEXT: (COMPLETION, OURS, "plain"),
    sc.GEN_AI_INPUT_MESSAGES: (PROMPT, SEMCONV_MESSAGES, "json"),
    sc.GEN_AI_OUTPUT_MESSAGES: (COMPLETION, SEMCONV_MESSAGES, "json"),
    sc.GEN_AI_PROMPT: (PROMPT, FLAT, "plain"),  # OpenLIT, semconv <= 1.27
    sc.GEN_AI_COMPLETION: (COMPLETION, FLAT, "plain"),
    sc.OI_INPUT_VALUE: (PROMPT, BODY, "mime"),
    sc.OI_OUTPUT_VALUE: (COMPLETION, BODY, "mime"),
    "llm.prompts": (PROMPT, TEMPLATES, "plain"),  # OpenInference, completions APIs (array)
    "llm.prompt_template.template": (PROMPT, TEMPLATES, "plain"),
    "llm.prompt_template.variables": (PROMPT, TEMPLATES, "json"),
    sc.GEN_AI_SYSTEM_INSTRUCTIONS: (PROMPT, SYSTEM, "json"),
    "gen_ai.tool.definitions": (PROMPT, TOOL_DEFINITIONS, "json"),
    "gen_ai.tool.description": (PROMPT, TOOL_DEFINITIONS, "plain"),
    "tool.description": (PROMPT, TOOL_DEFINITIONS, "plain"),  # OpenInference tool
    "tool.parameters": (PROMPT, TOOL_DEFINITIONS, "json"),
    "tool.json_schema": (PROMPT, TOOL_DEFINITIONS, "json"),
    "gen_ai.tool.call.arguments": (PROMPT, TOOL_CALL, "json"),
    "gen_ai.tool.call.result": (COMPLETION, TOOL_CALL, "json"),
    sc.OI_INVOCATION_PARAMETERS: (PROMPT, REQUEST_EXTRAS, "json"),  # holds "user", ...
    "gen_ai.user": (PROMPT, REQUEST_EXTRAS, "plain"),  # OpenLLMetry: the request's user
    "llm.user": (PROMPT, REQUEST_EXTRAS, "plain"),
    # Vercel AI SDK (packages/otel/src/legacy-open-telemetry.ts): the call's messages on
    # the step span, the whole prompt on the outer one, tools as an array of JSON texts.
    "ai.prompt.messages": (PROMPT, SDK_MESSAGES, "json"),
    "ai.prompt": (PROMPT, SDK_MESSAGES, "json"),
    "ai.response.text": (COMPLETION, SDK_MESSAGES, "plain"),
    "ai.response.reasoning": (COMPLETION, SDK_MESSAGES, "plain"),
    "ai.response.object": (COMPLETION, SDK_MESSAGES, "json"),
    "ai.response.toolCalls": (COMPLETION, TOOL_CALL, "json"),
    "ai.prompt.tools": (PROMPT, TOOL_DEFINITIONS, "json"),
    "ai.prompt.toolChoice": (PROMPT, REQUEST_EXTRAS, "json"),
    "ai.toolCall.args": (PROMPT, TOOL_CALL, "json"),
    "ai.toolCall.result": (COMPLETION, TOOL_CALL, "json"),
    "ai.value": (PROMPT, SDK_MESSAGES, "json"),  # embed / embedMany input
    "ai.values": (PROMPT, SDK_MESSAGES, "json"),
    # Langfuse SDK v3 (langfuse/_client/attributes.py): JSON, or a plain string as given.
    sc.LF_INPUT: (PROMPT, SDK_MESSAGES, "json"),
    sc.LF_OUTPUT: (COMPLETION, SDK_MESSAGES, "json"),
    "langfuse.trace.input": (PROMPT, SDK_MESSAGES, "json"),
    "langfuse.trace.output": (COMPLETION, SDK_MESSAGES, "json"),
    # Logfire's OpenAI/Anthropic instrumentation, semconv version 1 (its default): the
    # request body and the response (llm_providers/openai.py, llm_provider.py).
    "request_data": (PROMPT, SDK_MESSAGES, "json"),
    "response_data": (COMPLETION, SDK_MESSAGES, "json"),
    # Pydantic AI's request parameters hold the tool definitions (_instrumentation.py).
    "model_request_parameters": (PROMPT, TOOL_DEFINITIONS, "json"),
    # Spans that are no LLM call but carry one's text (docs/attribute-mapping.md, "Text of
    # agent, tool and chain spans"): Pydantic AI's agent run repeats the conversation and
    # its tool spans the call (older versions: tool_arguments / tool_response);
    # OpenLLMetry's workflow, task, agent and tool spans their input and output.
    "pydantic_ai.all_messages": (PROMPT, SDK_MESSAGES, "json"),
    "all_messages_events": (PROMPT, SDK_MESSAGES, "json"),
    "final_result": (COMPLETION, SDK_MESSAGES, "json"),
    "tool_arguments": (PROMPT, TOOL_CALL, "json"),
    "tool_response": (COMPLETION, TOOL_CALL, "json"),
    "traceloop.entity.input": (PROMPT, BODY, "json"),
    "traceloop.entity.output": (COMPLETION, BODY, "json"),
}
MIME_KEYS = {sc.OI_INPUT_VALUE: sc.OI_INPUT_MIME_TYPE, sc.OI_OUTPUT_VALUE: sc.OI_OUTPUT_MIME_TYPE}

# Indexed families: prefix + message index + "." + sub-key.
INDEXED: dict[str, tuple[Which, int]] = {
    sc.OLLM_PROMPT_PREFIX: (PROMPT, OLLM_INDEXED),
    sc.OI_INPUT_MESSAGES_PREFIX: (PROMPT, OI_INDEXED),
    "llm.request.functions.": (PROMPT, TOOL_DEFINITIONS),  # OpenLLMetry tool definitions
    "llm.tools.": (PROMPT, TOOL_DEFINITIONS),  # OpenInference tool definitions
    sc.OLLM_COMPLETION_PREFIX: (COMPLETION, OLLM_INDEXED),
    sc.OI_OUTPUT_MESSAGES_PREFIX: (COMPLETION, OI_INDEXED),
    "retrieval.documents.": (COMPLETION, OI_INDEXED),  # OpenInference RETRIEVER output
}
# Last segments of an indexed sub-key that name, not hold, text.
METADATA_SEGMENTS = frozenset({
    "role", "id", "name", "type", "finish_reason", "tool_call_id", "index", "mime_type",
    "function_call_name", "score"})
JSON_SEGMENTS = frozenset({"json_schema", "parameters"})  # sub-keys holding a JSON document

# Content events (semconv <= 1.27 content events, semconv 1.28-1.36 message events, OpenLIT):
# every attribute is text except the metadata ones; these hold JSON.
EVENTS_BY_SIDE: dict[Which, frozenset[str]] = {
    PROMPT: frozenset({sc.GEN_AI_CONTENT_PROMPT_EVENT, "gen_ai.system.message",
                       "gen_ai.user.message", "gen_ai.assistant.message",
                       "gen_ai.tool.message"}),
    COMPLETION: frozenset({sc.GEN_AI_CONTENT_COMPLETION_EVENT, "gen_ai.choice"}),
}
CONTENT_EVENTS = EVENTS_BY_SIDE[PROMPT] | EVENTS_BY_SIDE[COMPLETION]
EVENT_METADATA = frozenset({sc.GEN_AI_SYSTEM, sc.GEN_AI_PROVIDER_NAME, "role", "index",
                            "finish_reason", "id", "event.name", "gen_ai.response.id"})
EVENT_JSON = frozenset({"gen_ai.event.content", "tool_calls", "message"})

# JSON object members whose scalar value names, not holds, text: provider-generated ids,
# model names, enum values (roles, part types, finish reasons), timestamps.
JSON_METADATA = frozenset({
    "role", "type", "id", "tool_call_id", "call_id", "name", "finish_reason", "index",
    "object", "created", "model", "system_fingerprint", "service_tier", "mime_type",
    "modality", "file_id"})

SortKey = tuple[tuple[int, int | str], ...]
_INDEXED_KEY = re.compile("(" + "|".join(re.escape(p) for p in INDEXED) + r")([0-9]+)\.(.+)",
                          re.ASCII | re.DOTALL)
_CACHE_SIZE = 65_536  # keys remembered (both sides read a span's keys; redaction again)


class TextKey:
    """How one attribute key carries text (see the module docstring)."""

    __slots__ = ("order", "parse", "rank", "which")

    def __init__(self, which: Which, rank: int, parse: Parse, order: SortKey) -> None:
        self.which, self.rank, self.parse, self.order = which, rank, parse, order


_EXACT = {key: TextKey(which, rank, parse, ()) for key, (which, rank, parse) in EXACT.items()}
_classified: dict[str, TextKey | None] = {}
_natural: dict[str, SortKey] = {}


def classify(key: str) -> TextKey | None:
    """The text role of an attribute key, or None when it carries no prompt/completion text."""
    try:
        return _classified[key]
    except KeyError:
        pass
    found = _EXACT.get(key)
    if found is None:
        match = _INDEXED_KEY.fullmatch(key)
        if match is not None:
            prefix, index, rest = match.groups()
            last = rest.rpartition(".")[2]
            if last not in METADATA_SEGMENTS:
                which, rank = INDEXED[prefix]
                found = TextKey(which, rank, "json" if last in JSON_SEGMENTS else "plain",
                                ((0, _number(index)), *_natural_order(rest)))
    if len(_classified) >= _CACHE_SIZE:
        _classified.clear()
    _classified[key] = found
    return found


def _natural_order(rest: str) -> SortKey:
    """``message.tool_calls.10.x`` after ``message.tool_calls.9.x``: digit runs as numbers."""
    order = _natural.get(rest)
    if order is None:
        order = tuple((0, _number(s)) if s.isdigit() and s.isascii() else (1, s)
                      for s in rest.split("."))
        if len(_natural) >= _CACHE_SIZE:
            _natural.clear()
        _natural[rest] = order
    return order


def _number(digits: str) -> int:
    """A message index for ordering; a hostile 5,000-digit one sorts last (int() refuses
    strings over 4,300 digits), ties broken by the key."""
    return int(digits) if len(digits) <= 18 else 10**18


def carries_text(attrs: Any, events: Any) -> bool:
    """Whether a span (any span, LLM call or not) holds a text-bearing key or content event."""
    return any(classify(key) is not None for key in attrs) or any(
        event.name in CONTENT_EVENTS for event in events)
