from __future__ import annotations

import os
from pathlib import Path

import pytest
import tiktoken

from llm_observe.tokens.encodings import _litellm_tokenizers_dir


@pytest.fixture(scope="session")
def bundled_dir() -> Path:
    """litellm's bundled tiktoken cache dir (the install brings it)."""
    directory = _litellm_tokenizers_dir()
    assert directory is not None, "litellm (llm-observe[tokens]) must be installed"
    return directory


@pytest.fixture(scope="session")
def reference(bundled_dir: Path) -> dict[str, tiktoken.Encoding]:
    """tiktoken's own encodings, loaded through its registry from the same files.

    The env var is set only while loading (tiktoken keeps the loaded objects),
    so no other test sees it.
    """
    old = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(bundled_dir)
    try:
        return {name: tiktoken.get_encoding(name)
                for name in ("o200k_base", "cl100k_base", "p50k_base")}
    finally:
        if old is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = old
