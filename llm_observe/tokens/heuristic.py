"""Character-based token estimate for models whose tokenizer we do not have.

Rule: one token per 4 UTF-8 bytes, rounded up (at least 1 for non-empty text).
BPE tokenizers merge bytes, so counting bytes rather than characters keeps the
estimate sane beyond English: ASCII English gets OpenAI's rule of thumb of
~4 characters per token (help.openai.com "What are tokens and how to count
them"), while a CJK character (3 bytes) counts 0.75 tokens instead of 0.25.
docs/token-counting.md lists how far this lands from o200k_base on sample
texts in several languages.
"""

from __future__ import annotations

BYTES_PER_TOKEN = 4


def heuristic_tokens(text: str) -> int:
    """Estimated token count of ``text``: ceil(utf-8 bytes / 4)."""
    if not text:
        return 0
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    return -(-size // BYTES_PER_TOKEN)
