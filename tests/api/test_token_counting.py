"""POST /v1/token-counting/count: local counts, exact for known models, heuristic otherwise."""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

import pytest

from llm_observe.tokens import count_tokens


async def count(api: Any, prompt: Any, model: str = "gpt-4o") -> Any:
    resp = await api.post("/v1/token-counting/count", json={"prompt": prompt, "model": model})
    assert resp.status == 200, await resp.text()
    return await resp.json()


async def test_string_prompt_is_counted_exactly(api: Any) -> None:
    body = await count(api, "The quick brown fox jumps over the lazy dog.")
    assert body["method"] == "exact" and body["encoding"] == "o200k_base"
    assert body["tokens"] == 10
    assert body["model"] == "gpt-4o"


async def test_messages_include_chat_framing(api: Any) -> None:
    messages = [{"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Hi"}]
    body = await count(api, messages)
    expected = count_tokens(messages, "gpt-4o")
    assert body["tokens"] == expected.tokens
    assert body["tokens"] > (await count(api, "You are terse. Hi"))["tokens"]


async def test_unknown_model_falls_back_to_heuristic(api: Any) -> None:
    body = await count(api, "some words to estimate " * 10, model="my-own-model-v9")
    assert body["method"] == "heuristic"
    assert body["tokens"] > 0


def tiny_png(width: int, height: int) -> str:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data))
    raw = b"".join(b"\x00" + b"\x00" * width * 3 for _ in range(height))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0,
                                                           0, 0)) \
        + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    return "data:image/png;base64," + base64.b64encode(png).decode()


async def test_images_are_counted_by_tiles(api: Any) -> None:
    messages = [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": tiny_png(512, 512), "detail": "high"}}]}]
    body = await count(api, messages)
    assert body["image_tokens"] > 0
    assert body["tokens"] > body["image_tokens"]


@pytest.mark.parametrize(("payload", "field"), [
    ({"model": "gpt-4o"}, "prompt"),
    ({"prompt": "hi"}, "model"),
    ({"prompt": 5, "model": "gpt-4o"}, "prompt"),
    ({"prompt": ["hi"], "model": "gpt-4o"}, "prompt[0]"),
    ({"prompt": [{"content": "hi"}], "model": "gpt-4o"}, "prompt[0].role"),
    ({"prompt": [{"role": "user", "content": 3}], "model": "gpt-4o"}, "prompt[0].content"),
    ({"prompt": "hi", "model": ""}, "model"),
])
async def test_bad_input_is_422_naming_the_field(api: Any, payload: Any, field: str) -> None:
    resp = await api.post("/v1/token-counting/count", json=payload)
    assert resp.status == 422
    assert field in [d["field"] for d in (await resp.json())["error"]["details"]]


async def test_large_prompt_is_counted(api: Any) -> None:
    text = "lorem ipsum dolor sit amet " * 20_000  # ~540 kB, counted off the event loop
    body = await count(api, text)
    assert body["tokens"] == count_tokens(text, "gpt-4o").tokens
