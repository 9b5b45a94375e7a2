"""Width and height of PNG, JPEG, GIF and WebP bytes, without an image library.

Only headers are read: PNG's IHDR chunk, GIF's logical screen descriptor,
WebP's VP8/VP8L/VP8X chunk, and for JPEG the first SOFn segment found by
walking the marker segments (the SOF can sit behind large EXIF/ICC segments).
Format references: PNG spec §11.2.2 (IHDR), GIF89a spec §18, ITU-T T.81 Annex B
(JPEG markers), Google's WebP container spec.
"""

from __future__ import annotations

import binascii
import struct

_PNG_SIG = b"\x89PNG\r\n\x1a\n"
# SOF0..SOF15 minus DHT (C4), JPG (C8) and DAC (CC), which share the range.
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
# Markers with no length field: TEM, RST0..7, SOI, EOI.
_JPEG_STANDALONE = frozenset({0x01, *range(0xD0, 0xDA)})
_JPEG_SOS = 0xDA


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) of PNG/JPEG/GIF/WebP bytes, or None if unreadable."""
    try:
        if data.startswith(_PNG_SIG):
            return _png_size(data)
        if data.startswith((b"GIF87a", b"GIF89a")):
            return _positive(*struct.unpack_from("<HH", data, 6))
        if data.startswith(b"\xff\xd8"):
            return _jpeg_size(data)
        if data.startswith(b"RIFF") and data[8:12] == b"WEBP":
            return _webp_size(data)
    except struct.error:  # truncated header
        return None
    return None


def base64_payload(url: str) -> str | None:
    """The base64 payload of a ``data:<mime>;base64,<payload>`` URL, or None."""
    if not url.startswith("data:"):
        return None
    head, sep, payload = url.partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    return payload


def image_size_from_base64(payload: str) -> tuple[int, int] | None:
    """(width, height) of base64-encoded image bytes, decoding no more than needed.

    PNG/GIF/WebP sizes sit in the first 30 bytes and a JPEG frame header is
    usually within the first few KB, so a 4 KB prefix is tried first and the
    whole payload only when the prefix is a JPEG whose SOF lies further on.
    """
    head = _b64decode(payload[:_PREFIX_CHARS], partial=True)
    if head is None:
        return None
    size = image_size(head)
    if size is None and len(payload) > _PREFIX_CHARS and head.startswith(b"\xff\xd8"):
        whole = _b64decode(payload)
        size = image_size(whole) if whole is not None else None
    return size


_PREFIX_CHARS = 4096  # a multiple of 4: decodes to whole bytes


def _b64decode(payload: str, *, partial: bool = False) -> bytes | None:
    payload = payload.strip()
    if "-" in payload or "_" in payload:  # URL-safe alphabet
        payload = payload.replace("-", "+").replace("_", "/")
    try:
        return binascii.a2b_base64(payload)
    except (binascii.Error, ValueError):
        pass
    # Line-wrapped or unpadded payloads (or a prefix cut mid-quantum): drop
    # whitespace, then pad a whole payload or trim a prefix to whole quanta.
    cleaned = "".join(payload.split()).rstrip("=")
    if partial:
        cleaned = cleaned[: len(cleaned) - len(cleaned) % 4]
    else:
        cleaned += "=" * (-len(cleaned) % 4)
    try:
        return binascii.a2b_base64(cleaned)
    except (binascii.Error, ValueError):
        return None


def _positive(width: int, height: int) -> tuple[int, int] | None:
    return (width, height) if width > 0 and height > 0 else None


def _png_size(data: bytes) -> tuple[int, int] | None:
    if data[12:16] != b"IHDR":
        return None
    return _positive(*struct.unpack_from(">II", data, 16))


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    pos, end = 2, len(data)
    while pos + 4 <= end:
        if data[pos] != 0xFF:
            return None  # lost sync: not a marker where one must be
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte before a marker (T.81 B.1.1.2)
            pos += 1
            continue
        if marker in _JPEG_STANDALONE:
            pos += 2
            continue
        (length,) = struct.unpack_from(">H", data, pos + 2)
        if marker in _JPEG_SOF:
            # SOF payload: precision (1 byte), height (2), width (2).
            height, width = struct.unpack_from(">HH", data, pos + 5)
            return _positive(width, height)
        if marker == _JPEG_SOS or length < 2:
            return None  # image data starts before any frame header
        pos += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 ":  # lossy: 14-bit sizes after the 3-byte start code
        width, height = struct.unpack_from("<HH", data, 26)
        return _positive(width & 0x3FFF, height & 0x3FFF)
    if chunk == b"VP8L":  # lossless: 14+14 bits after the 0x2F signature
        (bits,) = struct.unpack_from("<I", data, 21)
        return _positive((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if chunk == b"VP8X":  # extended: 24-bit canvas size minus one
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return _positive(width, height)
    return None
