"""llm-observe: observability for LLM calls."""

from __future__ import annotations

__version__ = "1.8.2"
