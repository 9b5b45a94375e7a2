"""TokensProcessor: fills token counts a span arrived without.

Provider-reported counts always win: a count is only computed when the span's
field is 0 and its text is present. ``prompt_text`` is counted as plain text
(no chat framing): by the time a span carries it, it is a flattened string,
not the message list the provider framed — so for chat calls the local count
is a few tokens under the billed one (3 per message + 3).

A text longer than ``max_text_chars`` is counted exactly on its first
``max_text_chars`` characters and the rest extrapolated at the prefix's
tokens-per-character (method ``heuristic``; the span's ``notes`` say so): exact
counting costs ~0.5 µs a character, and a 15 MiB prompt would hold the
collector for seconds.
"""

from __future__ import annotations

from llm_observe import semconv
from llm_observe.span import LlmSpan
from llm_observe.tokens import TokenCounter, default_counter

DEFAULT_MAX_TEXT_CHARS = 100_000
NOT_SEEN = "completion tokens: no usage and no output on the span, counted as 0"


class TokensProcessor:
    """Counts missing prompt/completion tokens locally; never overwrites reported ones.

    Sets ``token_count_method`` (exact or heuristic) when it filled a count and
    the span had no method yet; ``heuristic`` when a successful call shows neither usage
    nor output (the prompt counted, the completion not seen: never ``exact``). CPU only,
    no I/O: runs on the event loop.
    """

    name = "tokens"
    blocking = False

    def __init__(self, counter: TokenCounter | None = None,
                 max_text_chars: int = DEFAULT_MAX_TEXT_CHARS) -> None:
        self._counter = counter if counter is not None else default_counter()
        self.max_text_chars = max_text_chars

    def process(self, batch: list[LlmSpan]) -> None:
        count = self._count
        for span in batch:
            method: str | None = None
            if span.prompt_tokens == 0 and span.prompt_text:
                span.prompt_tokens, method = count(span, span.prompt_text, "prompt")
            if span.completion_tokens == 0 and span.completion_text:
                span.completion_tokens, completion_method = count(
                    span, span.completion_text, "completion")
                method = method or completion_method
            if (method is not None and span.completion_tokens == 0
                    and not span.completion_text and span.status == semconv.STATUS_SUCCESS):
                # no usage and no output on the span (OpenLLMetry's agents SDK spans on Chat
                # Completions): the answer was not seen, its tokens are unknown, not 0
                method = semconv.METHOD_HEURISTIC
                if NOT_SEEN not in span.notes:
                    span.notes.append(NOT_SEEN)
            if method is not None and span.token_count_method is None:
                span.token_count_method = method

    def warm(self) -> None:
        """Load the shipped encodings now (~0.3 s of one long call each): the pipeline does
        it at start, in its worker thread, so the first span of a text-counting sender does
        not pay it while other clients wait."""
        for model in ("gpt-4o", "gpt-4"):  # o200k_base, cl100k_base
            self._counter.text_tokens("warm", model)

    def _count(self, span: LlmSpan, text: str, which: str) -> tuple[int, str]:
        model = span.actual_model or span.model
        limit = self.max_text_chars
        if len(text) <= limit:
            return self._counter.text_tokens(text, model)
        tokens, _ = self._counter.text_tokens(text[:limit], model)
        note = f"{which} tokens: counted {limit} of {len(text)} characters, rest extrapolated"
        if note not in span.notes:
            span.notes.append(note)
        return round(tokens * len(text) / limit), semconv.METHOD_HEURISTIC
