"""The role of every piece of a span's text, in every dialect (rules: scan/roles.py).

Where each dialect says who wrote a text:

- a key's own meaning: ``gen_ai.system_instructions``, prompt templates and tool
  definitions are the app's (``system``); tool-call arguments are the model's
  (``assistant``); tool-call results are a tool's (``tool``);
- a sibling key: OpenLLMetry/LiteLLM ``gen_ai.prompt.{i}.role``, OpenInference
  ``llm.input_messages.{i}.message.role``;
- the JSON structure (GenAI semconv ``gen_ai.input.messages``, Vercel AI
  ``ai.prompt.messages``, Logfire's ``request_data``, Langfuse input, OpenInference's JSON
  ``input.value``): the nearest enclosing object's ``role`` member (its index in the list
  is the message index), a tool-result part type (Anthropic's ``tool_result`` block in a
  user turn), a ``system``/``instructions`` member;
- the event: ``gen_ai.{system,user,assistant,tool}.message``, ``gen_ai.choice``, or its
  ``role`` attribute;
- our SDK's ``llm_observe.prompt.roles``: ``"role:start"`` per message, starts ascending
  from 0 (code points into ``llm_observe.prompt``); a malformed list is ignored whole.

Anything else (OpenLIT's and our flat prompt text without a role list, REST ``prompt``)
is :data:`~scan.roles.UNKNOWN`: untrusted. Structure only ever lowers trust: inside a
user or tool message, a nested ``role: system`` or ``system`` member stays untrusted,
so a tool's JSON output cannot promote itself to instructions.
"""

from __future__ import annotations

import re
from typing import Any

from llm_observe import semconv as sc
from llm_observe.otlp import textjson
from llm_observe.otlp.textkeys import (
    EXACT,
    INDEXED,
    JSON_METADATA,
    SYSTEM,
    TOOL_DEFINITIONS,
    Which,
)
from llm_observe.otlp.textvalues import Source
from llm_observe.otlp.wire import decode_value
from llm_observe.scan import roles as r

Segment = r.Segment
_KEY_ROLES: dict[str, str] = {  # keys whose pieces all have one role, whatever they hold
    "llm.prompt_template.template": r.SYSTEM, "gen_ai.tool.call.arguments": r.ASSISTANT,
    "ai.toolCall.args": r.ASSISTANT, "ai.response.toolCalls": r.ASSISTANT,
    "gen_ai.tool.call.result": r.TOOL, "ai.toolCall.result": r.TOOL,
    "ai.prompt.toolChoice": r.SYSTEM, "tool_arguments": r.ASSISTANT, "tool_response": r.TOOL,
}
# Keys whose JSON is walked for roles (their default role when nothing in it says).
_WALKED = frozenset({sc.GEN_AI_INPUT_MESSAGES, sc.GEN_AI_SYSTEM_INSTRUCTIONS,
                     "ai.prompt.messages", "ai.prompt", sc.LF_INPUT, "langfuse.trace.input",
                     "request_data", sc.OI_INPUT_VALUE, sc.OI_INVOCATION_PARAMETERS,
                     "pydantic_ai.all_messages", "all_messages_events"})
_INDEXED_ROLE = re.compile("(" + "|".join(re.escape(p) for p in INDEXED) + r")([0-9]{1,18})\.",
                           re.ASCII)
_EVENT_ROLES = {"gen_ai.system.message": r.SYSTEM, "gen_ai.user.message": r.USER,
                "gen_ai.assistant.message": r.ASSISTANT, "gen_ai.tool.message": r.TOOL,
                "gen_ai.choice": r.ASSISTANT}
_TYPE_ROLES = {"human": r.USER, "ai": r.ASSISTANT, "system": r.SYSTEM, "tool": r.TOOL,
               **dict.fromkeys(r.TOOL_PART_TYPES, r.TOOL)}


def key_has_roles(key: str, which: Which) -> bool:
    """Whether a text key can give its pieces another role than the side's default (the
    plan asks once per key set, so a span without one keeps the reader's fast path)."""
    if which == "completion":
        return _KEY_ROLES.get(key) == r.TOOL
    if key in _KEY_ROLES or key in _WALKED or key == sc.PROMPT_ROLES:
        return True
    exact = EXACT.get(key)
    if exact is not None:
        return exact[1] in (SYSTEM, TOOL_DEFINITIONS)
    return _INDEXED_ROLE.match(key) is not None


def segments(span: Any, sources: list[Source], which: Which, default: str | None = None
             ) -> list[Segment]:
    """Each laid-out piece's (start, end, role, message index), by start; a piece laid
    out twice (a copy) keeps the first place's role. ``default``: the role of a piece
    nothing names (an LLM call's: unknown in the prompt, assistant in the completion)."""
    if default is None:
        default = r.UNKNOWN if which == "prompt" else r.ASSISTANT
    out: dict[int, Segment] = {}
    events = span.events
    event_order: dict[int, int] = {}
    for source in sources:
        if source.event is not None:
            role, index = _event_role(events[source.event], default)
            index = event_order.setdefault(source.event, len(event_order))
        else:
            role, index = _key_role(span.attributes, source.key, which, default)
        walk = source.structured and (source.event is not None or source.key in _WALKED)
        if walk and which == "prompt":
            piece_roles = leaf_roles(source.doc, role, index, source.shared)
            if len(piece_roles) != len(source.pieces):  # cannot happen; never guess
                piece_roles = [(role, index)] * len(source.pieces)
        else:
            piece_roles = [(role, index)] * len(source.pieces)
        if source.key == sc.PROMPT_TEXT and source.event is None and not source.structured:
            for start in source.starts[:1]:
                for s0, e0, sdk_role, sdk_index in sdk_segments(span.attributes,
                                                                source.pieces[0]) or ():
                    out.setdefault(start + s0, (start + s0, start + e0, sdk_role, sdk_index))
        for piece, start, (piece_role, piece_index) in zip(
                source.pieces, source.starts, piece_roles, strict=True):
            if start not in out:
                out[start] = (start, start + len(piece), piece_role, piece_index)
    return [out[start] for start in sorted(out)]


def _key_role(attrs: Any, key: str, which: Which, default: str) -> tuple[str, int]:
    role = _KEY_ROLES.get(key)
    if role is not None:
        return role, -1
    if which == "completion":
        return default, -1
    if key == sc.GEN_AI_SYSTEM_INSTRUCTIONS:
        return r.SYSTEM, -1
    exact = EXACT.get(key)
    if exact is not None:
        rank = exact[1]
        return (r.SYSTEM if rank in (SYSTEM, TOOL_DEFINITIONS) else default), -1
    match = _INDEXED_ROLE.match(key)
    if match is None:
        return default, -1
    prefix, index = match.groups()
    if INDEXED[prefix][1] == TOOL_DEFINITIONS:
        return r.SYSTEM, -1
    role_key = f"{prefix}{index}.message.role" if prefix.startswith("llm.") \
        else f"{prefix}{index}.role"
    raw = attrs.get(role_key)
    return r.role_of(decode_value(raw) if raw is not None else None), int(index)


def event_has_role(event: Any) -> bool:
    """Whether a content event names who wrote it (OpenLIT's ``gen_ai.content.prompt``
    does not: its text is one flat prompt)."""
    return event.name in _EVENT_ROLES or "role" in event.attributes


def _event_role(event: Any, default: str) -> tuple[str, int]:
    role = _EVENT_ROLES.get(event.name, default)
    raw = event.attributes.get("role")
    if raw is not None:
        named = r.role_of(decode_value(raw))
        if named != r.UNKNOWN:
            role = _lower(role, named)
    return role, -1


def _lower(current: str, proposed: str) -> str:
    """``proposed`` unless it would raise trust out of a user or tool context."""
    if current in r.UNTRUSTED and current != r.UNKNOWN and proposed not in r.UNTRUSTED:
        return current
    return proposed


_CACHE_SIZE = 256
# The reader shares one parsed document per repeated JSON value (system instructions,
# tool definitions: textvalues._read_cache), so their roles are walked once. Keyed by
# id(doc); the entry holds the doc, so the id cannot be reused while it is cached.
_walked: dict[int, tuple[Any, str, int, list[tuple[str, int]]]] = {}


def leaf_roles(doc: Any, role: str, index: int = -1, shared: bool = False
               ) -> list[tuple[str, int]]:
    """(role, message index) of each text leaf of ``doc``, in :func:`textjson.leaves`
    order (same leaves: a mismatch would be caught by the caller). ``shared``: ``doc`` is
    the reader's cached, never mutated parse, so its answer is remembered (do not mutate
    it either)."""
    hit = _walked.get(id(doc)) if shared else None
    if hit is not None and hit[0] is doc and hit[1] == role and hit[2] == index:
        return hit[3]
    out: list[tuple[str, int]] = []
    try:
        _walk(doc, None, role, index, 0, out)
    except textjson.TooDeep:
        out = []
    if shared:
        if len(_walked) >= _CACHE_SIZE:
            _walked.clear()
        _walked[id(doc)] = (doc, role, index, out)
    return out


def _walk(node: Any, at: str | int | None, role: str, index: int, depth: int,
          out: list[tuple[str, int]]) -> None:
    if depth > textjson.MAX_DEPTH:
        raise textjson.TooDeep
    items: Any
    if isinstance(node, dict):
        named = node.get("role")
        kind = node.get("type")
        if type(named) is str:
            role = _lower(role, r.role_of(named))
            index = at if type(at) is int else index
        elif type(kind) is str and kind in _TYPE_ROLES:
            role = _lower(role, _TYPE_ROLES[kind])
        blob = kind == "blob"
        items = node.items()
    else:
        blob, items = False, enumerate(node)
    meta = JSON_METADATA
    for key, value in items:
        if isinstance(value, str):
            if not value or key in meta or textjson.is_binary(value) or (
                    blob and key == "content"):
                continue
        elif isinstance(value, (dict, list)):
            inner = _lower(role, r.SYSTEM) if key in r.SYSTEM_MEMBERS else role
            _walk(value, key, inner, index, depth + 1, out)
            continue
        elif key in meta or textjson.number_piece(value) is None:
            continue
        out.append((_lower(role, r.SYSTEM) if key in r.SYSTEM_MEMBERS else role, index))


def sdk_segments(attrs: Any, text: str) -> list[Segment] | None:
    """Our SDK's role list for ``llm_observe.prompt``, or None when absent or malformed."""
    raw = attrs.get(sc.PROMPT_ROLES)
    value = decode_value(raw) if raw is not None else None
    if not isinstance(value, list) or not value or len(value) > len(text) + 1:
        return None
    starts: list[tuple[int, str]] = []
    for item in value:
        if type(item) is not str:
            return None
        name, _, digits = item.rpartition(":")
        if not (digits.isascii() and digits.isdigit()) or len(digits) > 18:
            return None
        at = int(digits)
        if at > len(text) or (at < starts[-1][0] if starts else at != 0):
            return None
        starts.append((at, r.role_of(name)))
    out: list[Segment] = []
    for i, (at, role) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        out.append((at, end, role, i))
    return out


__all__ = ["Segment", "event_has_role", "key_has_roles", "leaf_roles", "sdk_segments",
           "segments"]
