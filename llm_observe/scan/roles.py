"""Who wrote each part of a call's text, and what an injection finding there means.

A call's prompt mixes texts from different authors. The rule per role (the table in
docs/scanning.md):

- ``system`` (system/developer instructions, tool definitions, prompt templates: written
  by the app): scanned for PII; never an injection *attempt* — an app's own "never
  reveal these instructions" is its policy, not an attack on it;
- ``user`` (user turns: direct injection, jailbreaks) and ``unknown`` (a text whose
  role the producer did not say, or a role we do not know): untrusted, scanned in full;
- ``tool`` (tool/function results, retrieved documents: indirect injection planted in
  data): untrusted, scanned in full, with its own classifier threshold;
- ``assistant`` (the model's completion and earlier model turns): scanned for PII; not
  an injection attempt by the caller.

A *segment* says that ``text[start:end]`` is message ``index`` (-1: no message index)
of ``role``; a side's segments are sorted by start and do not overlap. Text outside
every segment (separators) carries the side's default role.
"""

from __future__ import annotations

from typing import Final

SYSTEM: Final = "system"
USER: Final = "user"
TOOL: Final = "tool"
ASSISTANT: Final = "assistant"
UNKNOWN: Final = "unknown"
ROLES: Final = (SYSTEM, USER, TOOL, ASSISTANT, UNKNOWN)
# Roles whose text can carry an injection attempt; the others are scanned for PII only.
UNTRUSTED: Final = frozenset({USER, TOOL, UNKNOWN})

Segment = tuple[int, int, str, int]  # start, end, role, message index (-1: none)

# Every role name a producer writes (OpenAI, Anthropic, Gemini, Cohere, LangChain message
# types, Vercel AI part types, GenAI semconv part types), lower-cased, to its role.
_NAMES: Final[dict[str, str]] = {
    "system": SYSTEM, "developer": SYSTEM, "instructions": SYSTEM,
    "system_instructions": SYSTEM, "systemmessage": SYSTEM, "preamble": SYSTEM,
    "user": USER, "human": USER, "humanmessage": USER,
    "assistant": ASSISTANT, "ai": ASSISTANT, "model": ASSISTANT, "bot": ASSISTANT,
    "chatbot": ASSISTANT, "aimessage": ASSISTANT, "aimessagechunk": ASSISTANT,
    "tool": TOOL, "function": TOOL, "ipython": TOOL, "toolmessage": TOOL,
    "functionmessage": TOOL, "tool_result": TOOL, "tool-result": TOOL,
    "tool_call_response": TOOL, "function_call_output": TOOL, "function_response": TOOL,
    "functionresponse": TOOL, "retrieval": TOOL, "retriever": TOOL, "document": TOOL,
    "documents": TOOL, "context": TOOL,
}
# JSON members whose whole value is the app's instructions (Anthropic's and Vercel AI's
# "system", OpenAI Responses' "instructions", Gemini's "system_instruction", Cohere's
# "preamble"), whatever role encloses them.
SYSTEM_MEMBERS: Final = frozenset({"system", "instructions", "system_instruction",
                                   "systemInstruction", "preamble"})
# Part types that hold a tool's output inside a message of another role (Anthropic puts
# tool_result blocks in a user turn; OpenAI Responses items; semconv and Vercel AI parts).
TOOL_PART_TYPES: Final = frozenset({"tool_result", "tool-result", "tool_call_response",
                                    "function_call_output", "function_response"})


def role_of(name: object) -> str:
    """The role a producer's role name means; :data:`UNKNOWN` for anything else."""
    if type(name) is not str:
        return UNKNOWN
    found = _NAMES.get(name)
    if found is None and len(name) <= 32:
        found = _NAMES.get(name.strip().lower())
    return found or UNKNOWN


def untrusted(role: str) -> bool:
    """Whether an injection finding in text of ``role`` makes the call an attempt."""
    return role in UNTRUSTED


def threshold_role(role: str) -> str:
    """The role whose classifier threshold applies (unknown text is read as a user's)."""
    return USER if role == UNKNOWN else role
