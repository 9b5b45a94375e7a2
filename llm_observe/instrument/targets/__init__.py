"""Built-in patch targets, one module each; ``BUILTIN`` is the order they are patched in.

SDK-level targets come first so that by the time the HTTP catch-all is installed,
every SDK call it could see is already recorded one level up.
"""

from __future__ import annotations

from llm_observe.instrument.patching import Patcher
from llm_observe.instrument.targets import (
    anthropic,
    httpx,
    langchain,
    litellm,
    mcp,
    openai,
    requests,
)

BUILTIN: tuple[Patcher, ...] = (
    openai.PATCHER,
    anthropic.PATCHER,
    litellm.PATCHER,
    langchain.PATCHER,
    mcp.PATCHER,
    httpx.HTTPX,
    httpx.HTTPX2,
    requests.PATCHER,
)
