"""Model name → tiktoken encoding name, for names as callers really send them.

Names arrive with provider prefixes (``openai/gpt-4o``, ``azure/gpt-4o``,
``openrouter/openai/gpt-4o``, ``openai:gpt-4o``), dated snapshot suffixes
(``gpt-4o-2024-08-06``) and odd case. We normalise, then ask tiktoken's own
table (``tiktoken.model``, a pure lookup that downloads nothing), then a few
names it does not know yet.
"""

from __future__ import annotations

from tiktoken.model import encoding_name_for_model as _tiktoken_lookup

# Names tiktoken 0.14's table misses, checked as prefixes after its lookup
# fails. Sources: OpenAI model pages (platform.openai.com/docs/models) list
# these as GPT-4o-generation models, which all use o200k_base.
_EXTRA_PREFIXES: tuple[tuple[str, str], ...] = (
    ("gpt-4.5", "o200k_base"),
    ("codex-mini", "o200k_base"),
    ("computer-use-preview", "o200k_base"),
    ("gpt-oss", "o200k_base"),
    ("gpt-realtime", "o200k_base"),
    ("gpt-audio", "o200k_base"),
)

# o200k_harmony (gpt-oss) is o200k_base plus special tokens only; ordinary text
# encodes identically, and we always encode text as ordinary text.
_ALIASES = {"o200k_harmony": "o200k_base"}

_COLON_PROVIDERS = ("openai:", "azure:", "azure_ai:", "openrouter:")


def normalize_model(model: str) -> str:
    """Lower-case model name without provider prefix: ``Azure/GPT-4o`` → ``gpt-4o``."""
    name = model.strip().lower()
    if "/" in name:
        name = name.rsplit("/", 1)[1]
    for prefix in _COLON_PROVIDERS:
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    return name


def encoding_name_for_model(model: str) -> str | None:
    """tiktoken encoding name for ``model`` (any spelling), or None if unknown."""
    name = normalize_model(model)
    if not name:
        return None
    try:
        encoding = _tiktoken_lookup(name)
    except KeyError:
        encoding = next((enc for prefix, enc in _EXTRA_PREFIXES if name.startswith(prefix)), "")
    return _ALIASES.get(encoding, encoding) or None
