"""TokensProcessor: fills token counts a span arrived without.

Provider-reported counts always win: a count is only computed when the span's
field is 0 and its text is present. ``prompt_text`` is counted as plain text
(no chat framing): by the time a span carries it, it is a flattened string,
not the message list the provider framed — so for chat calls the local count
is a few tokens under the billed one (3 per message + 3).
"""

from __future__ import annotations

from llm_observe.span import LlmSpan
from llm_observe.tokens import TokenCounter, default_counter


class TokensProcessor:
    """Counts missing prompt/completion tokens locally; never overwrites reported ones.

    Sets ``token_count_method`` (exact or heuristic) when it filled a count and
    the span had no method yet. CPU only, no I/O: runs on the event loop.
    """

    name = "tokens"
    blocking = False

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self._counter = counter if counter is not None else default_counter()

    def process(self, batch: list[LlmSpan]) -> None:
        text_tokens = self._counter.text_tokens
        for span in batch:
            method: str | None = None
            if span.prompt_tokens == 0 and span.prompt_text:
                span.prompt_tokens, method = text_tokens(span.prompt_text,
                                                         span.actual_model or span.model)
            if span.completion_tokens == 0 and span.completion_text:
                span.completion_tokens, completion_method = text_tokens(
                    span.completion_text, span.actual_model or span.model)
                method = method or completion_method
            if method is not None and span.token_count_method is None:
                span.token_count_method = method
