"""count_tokens / count_text_tokens: local prompt and completion token counts.

A model whose tiktoken encoding we can load offline is counted with it
(method ``exact``); any other model gets the character heuristic (method
``heuristic``). Chat message lists add OpenAI's framing tokens (chat.py) and
price image parts with the model's documented vision rule (vision.py). Parts
that had to be guessed — an image we cannot read, a tool call, an odd shape —
are listed in ``TokenCount.notes``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from llm_observe import semconv
from llm_observe.tokens import vision
from llm_observe.tokens.chat import ChatRule, ImageRef, chat_rule, count_messages
from llm_observe.tokens.encodings import EncodingStore
from llm_observe.tokens.heuristic import heuristic_tokens
from llm_observe.tokens.images import image_size_from_base64
from llm_observe.tokens.models import encoding_name_for_model, normalize_model

# Distinct model names remembered; past this the cache is emptied, so names
# sent by a misbehaving client cannot grow memory without bound.
_MAX_CACHED_MODELS = 4096


@dataclass(frozen=True, slots=True)
class TokenCount:
    """A local token count.

    ``tokens`` includes ``image_tokens``. ``method`` is ``exact`` when the
    model's own tokenizer was used, else ``heuristic``. ``notes`` names every
    part that was estimated or skipped; an ``exact`` count with no notes is
    what OpenAI bills under its documented rules.
    """

    tokens: int
    method: str
    encoding: str | None
    image_tokens: int = 0
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (REST responses)."""
        return {"tokens": self.tokens, "method": self.method, "encoding": self.encoding,
                "image_tokens": self.image_tokens, "notes": list(self.notes)}


@dataclass(frozen=True, slots=True)
class _Model:
    """Everything resolved once per model name."""

    name: str
    count: Callable[[str], int]
    method: str
    encoding: str | None
    rule: ChatRule
    vision: vision.VisionProfile | None


class TokenCounter:
    """Counts tokens for any model name; resolves each name once and caches it."""

    def __init__(self, store: EncodingStore | None = None) -> None:
        self.store = store if store is not None else EncodingStore()
        self._models: dict[str, _Model] = {}

    def count(self, prompt: str | Sequence[Any], model: str) -> TokenCount:
        """Tokens of a prompt string (no chat framing) or a chat message list.

        Raises ValueError only if ``prompt`` is neither a str nor a list/tuple.
        """
        if isinstance(prompt, str):
            return self.count_text(prompt, model)
        if not isinstance(prompt, list | tuple):
            kind = type(prompt).__name__
            raise ValueError(f"prompt must be a string or a list of message objects, not {kind}")
        m = self._model(model)
        tally = count_messages(prompt, m.count, lambda ref: self._price_image(m, ref), m.rule)
        return TokenCount(tally.tokens, m.method, m.encoding, tally.image_tokens,
                          tuple(tally.notes))

    def count_text(self, text: str, model: str) -> TokenCount:
        """Tokens of plain text (a completion, or a completions-API prompt)."""
        if not isinstance(text, str):
            raise ValueError(f"text must be a string, not {type(text).__name__}")
        m = self._model(model)
        return TokenCount(m.count(text), m.method, m.encoding)

    def text_tokens(self, text: str, model: str) -> tuple[int, str]:
        """Fast path for processors: (tokens, method) of plain text."""
        m = self._models.get(model) if isinstance(model, str) else None
        if m is None:
            m = self._model(model)
        return m.count(text), m.method

    def _model(self, model: str) -> _Model:
        key = model if isinstance(model, str) else ""
        m = self._models.get(key)
        if m is None:
            m = self._resolve(key)
            if len(self._models) >= _MAX_CACHED_MODELS:
                self._models.clear()
            self._models[key] = m
        return m

    def _resolve(self, model: str) -> _Model:
        name = normalize_model(model)
        encoding_name = encoding_name_for_model(name)
        encoding = self.store.get(encoding_name) if encoding_name else None
        if encoding is None:
            return _Model(name, heuristic_tokens, semconv.METHOD_HEURISTIC, None,
                          chat_rule(name), vision.vision_profile(name))
        # encode_ordinary: special-token look-alikes ("<|endoftext|>") in user
        # text are counted as the ordinary text they are (encode() would raise).
        encode = encoding.encode_ordinary

        def count(text: str) -> int:
            return len(encode(text))

        return _Model(name, count, semconv.METHOD_EXACT, encoding_name, chat_rule(name),
                      vision.vision_profile(name))

    def _price_image(self, m: _Model, ref: ImageRef) -> tuple[int, str | None]:
        notes = []
        profile = m.vision
        if profile is None:
            profile = vision.DEFAULT_PROFILE
            notes.append(f"no documented image rule for {m.name or 'this model'}; "
                         "counted with the gpt-4o tile rule")
        if ref.detail == "low" and not profile.uses_patches:
            size: tuple[int, int] | None = vision.ASSUMED_SIZE  # any size costs the same
        else:
            size = image_size_from_base64(ref.data) if ref.data is not None else None
        if size is None:
            size = vision.ASSUMED_SIZE
            why = "remote image URL not fetched" if ref.data is None else "image bytes unreadable"
            notes.append(f"{why}; size assumed {size[0]}x{size[1]}")
        tokens = vision.image_tokens(profile, size[0], size[1], ref.detail)
        return tokens, "; ".join(notes) or None


_default = TokenCounter()


def default_counter() -> TokenCounter:
    """The process-wide counter behind count_tokens (shared encoding cache)."""
    return _default


def count_tokens(prompt: str | Sequence[Any], model: str) -> TokenCount:
    """Tokens of ``prompt`` (text, or a chat message list with OpenAI framing) for ``model``.

    Never raises for any model name or message shape; raises ValueError only
    when ``prompt`` is neither a str nor a list/tuple.
    """
    return _default.count(prompt, model)


def count_text_tokens(text: str, model: str) -> TokenCount:
    """Tokens of plain ``text`` for ``model``, with no chat framing (e.g. a completion)."""
    return _default.count_text(text, model)
