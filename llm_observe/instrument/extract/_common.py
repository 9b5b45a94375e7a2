"""What every provider extraction fills in, and helpers that read SDK objects and JSON alike.

Extraction is pure: request/response (or stream chunks) in, an ``Outcome`` out. The
same functions read SDK model objects (attribute access) and raw JSON dicts (the HTTP
catch-all), through ``get``, so sync, async, stream and HTTP shells share one module
per provider.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple, Protocol

# LangChain message .type -> chat role
_LANGCHAIN_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


class Request(NamedTuple):
    """What a call asks for. ``provider`` None: the caller's default (e.g. from the client)."""

    model: str | None
    prompt: Any
    streaming: bool
    provider: str | None = None


def get(obj: Any, name: str) -> Any:
    """``obj[name]`` for dicts, ``obj.name`` for SDK objects; None when absent."""
    if type(obj) is dict:
        return obj.get(name)
    return getattr(obj, name, None)


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


class Outcome:
    """What a provider's answer told us. ``None`` means "not reported"."""

    __slots__ = ("cache_read", "cache_write", "completion_tokens", "details", "finish_reason",
                 "prompt_tokens", "response_id", "response_model", "text_parts")

    def __init__(self) -> None:
        self.response_model: str | None = None
        self.response_id: str | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.cache_read: int | None = None
        self.cache_write: int | None = None
        self.finish_reason: str | None = None
        self.text_parts: list[str] = []
        # what the price structures need, when reported (record.DETAIL_KEYS names them):
        # reasoning, 1-hour cache writes, audio tokens, the service tier
        self.details: dict[str, Any] | None = None

    def detail(self, name: str, value: Any) -> None:
        """Keep one detail the provider reported (None and 0 are not kept)."""
        if value:
            if self.details is None:
                self.details = {}
            self.details[name] = value

    @property
    def text(self) -> str:
        return "".join(self.text_parts)


class Accumulator(Protocol):
    """Folds stream items (SDK chunks, JSON events or text) into an ``Outcome``.

    ``add`` is called once per item on the consumer's thread and must be cheap; it may
    raise (the stream wrapper guards it and stops accumulating, never the stream).
    """

    @property
    def outcome(self) -> Outcome: ...

    def add(self, item: Any) -> None: ...


class TextAccumulator:
    """Chunks that are plain text (``str``/``bytes``): the completion is their concatenation."""

    __slots__ = ("outcome",)

    def __init__(self) -> None:
        self.outcome = Outcome()

    def add(self, item: Any) -> None:
        if isinstance(item, bytes):
            item = item.decode("utf-8", "replace")
        if isinstance(item, str):
            self.outcome.text_parts.append(item)


def content_text(content: Any) -> str:
    """Text of a message ``content``: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable) and not isinstance(content, (bytes, dict)):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            else:
                text = get(part, "text")
                if isinstance(text, str):
                    parts.append(text)
        return "".join(parts)
    return ""


def flatten_messages(messages: Any) -> str:
    """Chat messages as ``role: text`` lines (what a span's prompt text holds)."""
    return flatten_with_roles(messages)[0]


def flatten_with_roles(messages: Any) -> tuple[str, tuple[str, ...]]:
    """:func:`flatten_messages`, and ``"role:start"`` for each message (its role and
    where its line starts: the collector scans each part under its role's rule,
    docs/scanning.md "Roles"); no roles for a plain string prompt."""
    if isinstance(messages, str):
        return messages, ()
    if not isinstance(messages, Iterable) or isinstance(messages, (bytes, dict)):
        return "", ()
    lines, roles, at = [], [], 0
    for message in messages:
        if isinstance(message, str):
            line, role = message, "unknown"
        else:
            role = get(message, "role") or _LANGCHAIN_ROLES.get(get(message, "type") or "",
                                                                "user")
            line = f"{role}: {content_text(get(message, 'content'))}"
        roles.append(f"{role if isinstance(role, str) else 'unknown'}:{at}")
        lines.append(line)
        at += len(line) + 1
    return "\n".join(lines), tuple(roles)


def as_chat_dicts(messages: Any) -> list[dict[str, Any]] | str:
    """Messages as ``{"role", "content"}`` dicts (the shape token counting takes)."""
    if isinstance(messages, str):
        return messages
    out: list[dict[str, Any]] = []
    for message in messages or ():
        if isinstance(message, dict):
            out.append(message)
            continue
        role = get(message, "role") or _LANGCHAIN_ROLES.get(get(message, "type") or "", "user")
        out.append({"role": role, "content": content_text(get(message, "content"))})
    return out
