"""Prompt tokens of a chat message list, with OpenAI's per-message framing.

Rule (OpenAI cookbook "How to count tokens with tiktoken", section 6,
github.com/openai/openai-cookbook/blob/main/examples/How_to_count_tokens_with_tiktoken.ipynb):
every message costs 3 tokens of framing (``<|start|>{role/name}\\n{content}<|end|>\\n``)
plus the tokens of each of its string values (role and content included),
a ``name`` field costs 1 more, and the reply is primed with 3 tokens
(``<|start|>assistant<|message|>``). The cookbook checks this against the
API's reported prompt_tokens for gpt-3.5-turbo, gpt-4, gpt-4o and gpt-4o-mini.
The retired gpt-3.5-turbo-0301 used 4 per message and -1 for a name.

Beyond the cookbook (counted, and said so in the notes): content given as a
list of parts (text parts add their text; image parts are priced by the
caller's image rule), and tool/function calls in the history (their name and
arguments text).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from llm_observe.tokens.images import base64_payload


@dataclass(frozen=True, slots=True)
class ChatRule:
    """Framing tokens of one model's chat format."""

    per_message: int = 3
    per_name: int = 1
    reply_priming: int = 3


DEFAULT_RULE = ChatRule()
_LEGACY_0301 = ChatRule(per_message=4, per_name=-1)


def chat_rule(normalized_model: str) -> ChatRule:
    """The framing rule for a normalised model name (every current model uses 3/1/3)."""
    return _LEGACY_0301 if normalized_model.startswith("gpt-3.5-turbo-0301") else DEFAULT_RULE


@dataclass(frozen=True, slots=True)
class ImageRef:
    """An image part: base64 bytes if inline, else a URL we will not fetch."""

    data: str | None
    url: str | None
    detail: str


@dataclass(slots=True)
class ChatTally:
    tokens: int = 0
    image_tokens: int = 0
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


TextCounter = Callable[[str], int]
ImagePricer = Callable[[ImageRef], tuple[int, str | None]]

_TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})
_IMAGE_PART_TYPES = frozenset({"image_url", "input_image", "image"})


def count_messages(messages: Sequence[Any], count_text: TextCounter, price_image: ImagePricer,
                   rule: ChatRule = DEFAULT_RULE) -> ChatTally:
    """Tokens of a chat message list; never raises on odd shapes (they become notes)."""
    tally = ChatTally()
    for index, message in enumerate(messages):
        tally.tokens += rule.per_message
        if isinstance(message, str):
            tally.note(f"message {index} is a bare string; counted as content")
            tally.tokens += count_text(message)
        elif isinstance(message, Mapping):
            _count_message(message, count_text, price_image, rule, tally)
        else:
            tally.note(f"message {index} is a {type(message).__name__}, not an object; skipped")
    if messages:
        tally.tokens += rule.reply_priming
    return tally


def _count_message(message: Mapping[Any, Any], count_text: TextCounter,
                   price_image: ImagePricer, rule: ChatRule, tally: ChatTally) -> None:
    for key, value in message.items():
        if isinstance(value, str):
            tally.tokens += count_text(value)
            if key == "name":
                tally.tokens += rule.per_name
        elif value is None:
            continue
        elif key == "content":
            parts = [value] if isinstance(value, Mapping) else value
            if isinstance(parts, Sequence):
                for part in parts:
                    _count_part(part, count_text, price_image, tally)
            else:
                tally.note(f"content of type {type(value).__name__} not counted")
        elif key == "tool_calls" and isinstance(value, Sequence):
            tally.note("tool calls counted approximately (name + arguments text)")
            for call in value:
                function = call.get("function") if isinstance(call, Mapping) else None
                _count_function(function, count_text, tally)
        elif key == "function_call":
            tally.note("tool calls counted approximately (name + arguments text)")
            _count_function(value, count_text, tally)
        else:
            tally.note(f"field {key!r} ({type(value).__name__}) not counted")


def _count_function(function: Any, count_text: TextCounter, tally: ChatTally) -> None:
    if isinstance(function, Mapping):
        for key in ("name", "arguments"):
            text = function.get(key)
            if isinstance(text, str):
                tally.tokens += count_text(text)


def _count_part(part: Any, count_text: TextCounter, price_image: ImagePricer,
                tally: ChatTally) -> None:
    if isinstance(part, str):
        tally.tokens += count_text(part)
        return
    if not isinstance(part, Mapping):
        tally.note(f"content part of type {type(part).__name__} not counted")
        return
    kind = part.get("type")
    text = part.get("text")
    if kind in _TEXT_PART_TYPES or (kind is None and isinstance(text, str)):
        if isinstance(text, str):
            tally.tokens += count_text(text)
        return
    if kind in _IMAGE_PART_TYPES:
        ref = image_ref(part)
        if ref is None:
            tally.note(f"{kind} part without an image URL or data; not counted")
            return
        tokens, note = price_image(ref)
        tally.tokens += tokens
        tally.image_tokens += tokens
        if note:
            tally.note(note)
        return
    tally.note(f"content part of type {kind!r} not counted")


def image_ref(part: Mapping[Any, Any]) -> ImageRef | None:
    """Where an image part's bytes are, across the chat shapes in use.

    OpenAI chat ``{"type": "image_url", "image_url": {"url", "detail"}}`` (or a
    bare URL string), Responses ``{"type": "input_image", "image_url", "detail"}``,
    Anthropic ``{"type": "image", "source": {"type": "base64", "data"}}`` and
    LangChain ``{"type": "image", "base64" | "url"}``.
    """
    detail = part.get("detail")
    url: Any = None
    data: Any = part.get("base64") or part.get("data")
    image_url = part.get("image_url")
    if isinstance(image_url, Mapping):
        url = image_url.get("url")
        detail = image_url.get("detail", detail)
    elif isinstance(image_url, str):
        url = image_url
    source = part.get("source")
    if isinstance(source, Mapping):
        data = data or source.get("data")
        url = url or source.get("url")
    url = url or part.get("url")
    payload = base64_payload(url) if isinstance(url, str) else None
    if payload is not None:
        data, url = payload, None
    data = data if isinstance(data, str) and data else None
    url = url if isinstance(url, str) and url else None
    if data is None and url is None:
        return None
    detail = detail.lower() if isinstance(detail, str) else "auto"
    return ImageRef(data=data, url=url, detail=detail)
