"""Image tokens against OpenAI's documented worked examples.

Sources (listed again in docs/token-counting.md):
- OpenAI "Images and vision" guide, "Calculating costs": 1024x1024 high → 765,
  2048x4096 high → 1105, 4096x8192 low → 85 (gpt-4o); per-model base/tile
  constants (gpt-4o-mini 2833/5667, o1/o3 75/150, gpt-5 70/140); patch models:
  1800x2400 → 1452 patches, 1024x1024 → 1024 patches, multipliers.
- community.openai.com/t/1281361: gpt-4.1 billed 2049x513 as 8 tiles and
  2050x513 as 4 (pins the rounding of intermediate sizes).
"""

from __future__ import annotations

from typing import Any

import pytest
import tiktoken

from llm_observe import semconv
from llm_observe.tokens import count_tokens
from llm_observe.tokens.vision import image_tokens, patch_count, tile_count, vision_profile
from tests.tokens import image_bytes


def _profile(model: str) -> Any:
    profile = vision_profile(model)
    assert profile is not None
    return profile


@pytest.mark.parametrize(("model", "width", "height", "detail", "tokens"), [
    ("gpt-4o", 1024, 1024, "high", 765),
    ("gpt-4o", 2048, 4096, "high", 1105),
    ("gpt-4o", 4096, 8192, "low", 85),
    ("gpt-4o", 2048, 4096, "auto", 1105),  # auto is counted as high
    ("gpt-4o", 512, 512, "high", 255),
    ("gpt-4o", 100, 100, "high", 255),     # small images are not scaled up
    ("gpt-4.1", 2049, 513, "high", 85 + 170 * 8),
    ("gpt-4.1", 2050, 513, "high", 85 + 170 * 4),
    ("gpt-4o-mini", 1024, 1024, "high", 2833 + 5667 * 4),
    ("gpt-4o-mini", 1024, 1024, "low", 2833),
    ("o1", 1024, 1024, "high", 75 + 150 * 4),
    ("o3", 64, 64, "low", 75),
    ("gpt-5", 1024, 1024, "high", 70 + 140 * 4),
    ("computer-use-preview", 1024, 1024, "low", 65),
    ("gpt-4.1-mini", 1024, 1024, "high", round(1024 * 1.62)),
    ("gpt-4.1-mini", 1024, 1024, "low", round(1024 * 1.62)),  # detail has no effect
    ("gpt-4.1-nano", 1024, 1024, "high", round(1024 * 2.46)),
    ("o4-mini", 1024, 1024, "high", round(1024 * 1.72)),
    ("gpt-5-mini", 1800, 2400, "high", round(1452 * 1.62)),
])
def test_documented_examples(model: str, width: int, height: int, detail: str,
                             tokens: int) -> None:
    assert image_tokens(_profile(model), width, height, detail) == tokens


def test_patch_counts_of_the_guide() -> None:
    assert patch_count(1024, 1024) == 1024
    assert patch_count(1800, 2400) == 1452
    assert patch_count(100_000, 100_000) <= 1536
    assert patch_count(32, 49_152) == 1536  # extreme aspect ratios stay capped, never 0


def test_tile_count_is_symmetric() -> None:
    for width, height in [(2048, 4096), (3000, 1000), (777, 1333)]:
        assert tile_count(width, height) == tile_count(height, width)


def _image_message(url: str, detail: str | None = None) -> list[dict[str, Any]]:
    image_url: dict[str, Any] = {"url": url}
    if detail is not None:
        image_url["detail"] = detail
    return [{"role": "user", "content": [
        {"type": "text", "text": "What is in this image?"},
        {"type": "image_url", "image_url": image_url}]}]


def _text_part(reference: dict[str, tiktoken.Encoding]) -> int:
    enc = reference["o200k_base"]
    return 3 + len(enc.encode("user")) + len(enc.encode("What is in this image?")) + 3


@pytest.mark.parametrize(("build", "mime"), [
    (image_bytes.png, "image/png"), (image_bytes.jpeg, "image/jpeg"),
    (image_bytes.gif, "image/gif")])
def test_inline_image_in_a_chat_message(build: Any, mime: str,
                                        reference: dict[str, tiktoken.Encoding]) -> None:
    url = image_bytes.data_url(build(1024, 1024), mime)
    result = count_tokens(_image_message(url, "high"), "gpt-4o")
    assert result.image_tokens == 765
    assert result.tokens == _text_part(reference) + 765
    assert result.method == semconv.METHOD_EXACT
    assert result.notes == ()


def test_inline_image_sizes_change_the_count() -> None:
    small = image_bytes.data_url(image_bytes.png(500, 500), "image/png")
    tall = image_bytes.data_url(image_bytes.jpeg(2048, 4096), "image/jpeg")
    assert count_tokens(_image_message(small), "gpt-4o").image_tokens == 255
    assert count_tokens(_image_message(tall), "gpt-4o").image_tokens == 1105
    assert count_tokens(_image_message(tall, "low"), "gpt-4o").image_tokens == 85
    assert count_tokens(_image_message(tall), "gpt-4o-mini").image_tokens == 2833 + 5667 * 6


def test_remote_image_url_is_assumed_1024_square_and_says_so() -> None:
    result = count_tokens(_image_message("https://example.com/cat.jpg"), "gpt-4o")
    assert result.image_tokens == 765
    assert any("remote image URL not fetched" in note for note in result.notes)


def test_remote_image_at_low_detail_needs_no_size() -> None:
    result = count_tokens(_image_message("https://example.com/cat.jpg", "low"), "gpt-4o")
    assert result.image_tokens == 85
    assert result.notes == ()


def test_unreadable_inline_bytes_are_flagged() -> None:
    result = count_tokens(_image_message("data:image/png;base64,bm90IGFuIGltYWdl"), "gpt-4o")
    assert result.image_tokens == 765
    assert any("image bytes unreadable" in note for note in result.notes)


def test_other_image_part_shapes() -> None:
    png = image_bytes.png(1024, 1024)
    url = image_bytes.data_url(png, "image/png")
    payload = url.split(",", 1)[1]
    shapes: list[dict[str, Any]] = [
        {"type": "image_url", "image_url": url},                        # bare URL string
        {"type": "input_image", "image_url": url, "detail": "high"},    # Responses API
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": payload}},                 # Anthropic
        {"type": "image", "base64": payload, "mime_type": "image/png"},  # LangChain
    ]
    for part in shapes:
        result = count_tokens([{"role": "user", "content": [part]}], "gpt-4o")
        assert result.image_tokens == 765, part["type"]


def test_model_without_a_vision_rule_uses_the_gpt4o_rule_and_says_so() -> None:
    url = image_bytes.data_url(image_bytes.png(1024, 1024), "image/png")
    for model in ("claude-3-5-sonnet", "gpt-3.5-turbo"):
        result = count_tokens(_image_message(url), model)
        assert result.image_tokens == 765
        assert any("no documented image rule" in note for note in result.notes)
