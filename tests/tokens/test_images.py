from __future__ import annotations

import base64

import pytest

from llm_observe.tokens.images import base64_payload, image_size, image_size_from_base64
from tests.tokens import image_bytes

SIZES = [(1, 1), (17, 9), (512, 512), (1024, 768), (2048, 4096), (4096, 1000)]


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_png_size(width: int, height: int) -> None:
    assert image_size(image_bytes.png(width, height)) == (width, height)


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_jpeg_size(width: int, height: int) -> None:
    assert image_size(image_bytes.jpeg(width, height)) == (width, height)


@pytest.mark.parametrize(("width", "height"), [(1, 1), (17, 9), (640, 480), (1024, 256)])
def test_gif_size(width: int, height: int) -> None:
    assert image_size(image_bytes.gif(width, height)) == (width, height)


def test_jpeg_frame_header_behind_a_large_exif_segment() -> None:
    data = image_bytes.jpeg(3024, 4032, app1_bytes=150_000)  # phone photos carry big EXIF
    assert image_size(data) == (3024, 4032)
    # Through base64 the 4 KB prefix lacks the SOF, so the whole payload is read.
    assert image_size_from_base64(base64.b64encode(data).decode()) == (3024, 4032)


def test_progressive_jpeg_size() -> None:
    assert image_size(image_bytes.jpeg(800, 600, progressive=True)) == (800, 600)


def test_webp_extended_header_size() -> None:
    assert image_size(image_bytes.webp_vp8x(1920, 1080)) == (1920, 1080)


@pytest.mark.parametrize("data", [
    b"", b"not an image", b"\x89PNG\r\n\x1a\n", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00",
    b"GIF89a\x01", b"\xff\xd8", b"\xff\xd8\xff\xda\x00\x08" + b"\x00" * 20,
    b"\xff\xd8\x00\x00\x00\x00", b"RIFF\x00\x00\x00\x00WEBPVP8 ",
])
def test_truncated_or_foreign_bytes_give_none(data: bytes) -> None:
    assert image_size(data) is None


def test_truncated_jpeg_before_its_frame_header_gives_none() -> None:
    data = image_bytes.jpeg(640, 480, app1_bytes=5000)
    assert image_size(data[:3000]) is None


def test_data_url_payload() -> None:
    url = image_bytes.data_url(image_bytes.png(300, 200), "image/png")
    payload = base64_payload(url)
    assert payload is not None
    assert image_size_from_base64(payload) == (300, 200)
    assert base64_payload("https://example.com/cat.png") is None
    assert base64_payload("data:image/svg+xml,<svg/>") is None


def test_wrapped_unpadded_and_url_safe_base64_are_read() -> None:
    raw = base64.b64encode(image_bytes.gif(333, 111)).decode()
    wrapped = "\n".join(raw[i:i + 76] for i in range(0, len(raw), 76))
    assert image_size_from_base64(wrapped) == (333, 111)
    assert image_size_from_base64(raw.rstrip("=")) == (333, 111)
    url_safe = base64.urlsafe_b64encode(image_bytes.jpeg(640, 480)).decode()
    assert "_" in url_safe[:4096]  # the alphabet difference is really exercised
    assert image_size_from_base64(url_safe) == (640, 480)


def test_garbage_base64_gives_none() -> None:
    assert image_size_from_base64("!!!not base64!!!") is None
    assert image_size_from_base64("") is None
