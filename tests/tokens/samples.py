"""Texts shared by the token-counting tests."""

from __future__ import annotations

# Text a user would send: prose, code, numbers, non-Latin scripts, emoji,
# whitespace runs, and special-token look-alikes (ordinary text to the API).
SAMPLES = [
    "tiktoken is great!",
    "antidisestablishmentarianism",
    "2 + 2 = 4",
    "お誕生日おめでとう",
    "Summarise the Q3 report in 3 bullet points; flag any risk > $1,000,000.",
    "def fib(n: int) -> int:\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    "Привет, как дела? Ça va très bien, merci! ¿Dónde está la biblioteca?",
    "مرحبا بالعالم — नमस्ते दुनिया — 你好\uff0c世界 — 안녕하세요",  # \uff0c: fullwidth comma
    "emoji 🚀🔥👍🏽 and ZWJ 👩‍👩‍👧‍👦",
    "   leading and trailing   \n\n\t tabs\r\n",
    "<|endoftext|> is just text here, and so is <|fim_prefix|>",
    '{"role": "user", "content": "JSON inside a prompt"}',
    "",
]
