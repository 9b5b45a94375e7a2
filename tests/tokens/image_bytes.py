"""Minimal real image encoders for the token-counting tests (no image library).

Each builds a complete, decodable file of a given size: a 1-bit grayscale PNG,
a 2-colour GIF whose LZW stream resets every two pixels (so codes stay 3 bits
wide), and a baseline grayscale JPEG whose blocks are all mid-grey (DC 0, EOB)
coded with one-symbol Huffman tables.
"""

from __future__ import annotations

import base64
import struct
import zlib


def data_url(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def png(width: int, height: int) -> bytes:
    """A white 1-bit grayscale PNG (PNG spec §11.2.2 IHDR, §11.2.4 IDAT)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(
            ">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    row = b"\x00" + b"\xff" * ((width + 7) // 8)  # filter byte 0, then pixels
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(row * height)) + chunk(b"IEND", b""))


def gif(width: int, height: int) -> bytes:
    """A GIF89a of colour-0 pixels (GIF89a spec §18-§22)."""
    header = b"GIF89a" + struct.pack("<HHBBB", width, height, 0x80, 0, 0)  # 2-entry table
    palette = b"\x00\x00\x00\xff\xff\xff"
    descriptor = b"," + struct.pack("<HHHHB", 0, 0, width, height, 0)
    # Min code size 2: clear = 4, end = 5. [clear, 0, 0] adds one dictionary
    # entry (6), so the decoder never widens past 3 bits.
    # Eight groups are 72 bits, a whole 9 bytes: repeat that block, pack the rest.
    groups, odd = divmod(width * height, 2)
    tail = [4, 0, 0] * (groups % 8) + ([4, 0] if odd else []) + [5]
    stream = _pack_lsb([4, 0, 0] * 8, 3) * (groups // 8) + _pack_lsb(tail, 3)
    blocks = b"".join(bytes([len(stream[i:i + 255])]) + stream[i:i + 255]
                      for i in range(0, len(stream), 255))
    return header + palette + descriptor + b"\x02" + blocks + b"\x00;"


def _pack_lsb(codes: list[int], width: int) -> bytes:
    value = 0
    for i, code in enumerate(codes):
        value |= code << (i * width)
    return value.to_bytes((len(codes) * width + 7) // 8, "little")


def jpeg(width: int, height: int, *, app1_bytes: int = 0, progressive: bool = False) -> bytes:
    """A grayscale JPEG (ITU-T T.81); ``app1_bytes`` of APP1 padding before the
    frame header, as EXIF/ICC data sits in real photos."""

    def segment(marker: int, body: bytes) -> bytes:
        return struct.pack(">BBH", 0xFF, marker, len(body) + 2) + body

    out = [b"\xff\xd8", segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")]
    remaining = app1_bytes
    while remaining > 0:
        size = min(remaining, 65000)
        out.append(segment(0xE1, b"Exif\x00\x00" + b"\x00" * size))
        remaining -= size
    out.append(segment(0xDB, b"\x00" + b"\x01" * 64))  # quantisation table 0, all ones
    frame = struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00"
    out.append(segment(0xC2 if progressive else 0xC0, frame))
    one_code = b"\x01" + b"\x00" * 15  # a single Huffman code of length 1 ("0")
    out.append(segment(0xC4, b"\x00" + one_code + b"\x00"    # DC table 0: category 0
                       + b"\x10" + one_code + b"\x00"))      # AC table 0: EOB
    spectral_end = 0 if progressive else 63
    out.append(segment(0xDA, b"\x01\x01\x00\x00" + bytes([spectral_end, 0])))
    blocks = -(-width // 8) * -(-height // 8)
    bits = blocks * (1 if progressive else 2)  # "0" DC (+ "0" EOB) per block
    data = b"\x00" * (bits // 8)
    if bits % 8:
        data += bytes([(1 << (8 - bits % 8)) - 1])  # pad the last byte with 1s
    out += [data, b"\xff\xd9"]
    return b"".join(out)


def webp_vp8x(width: int, height: int) -> bytes:
    """The RIFF/VP8X header of an extended WebP (container spec), no image chunk."""
    body = b"WEBP" + b"VP8X" + struct.pack("<I", 10) + b"\x00\x00\x00\x00"
    body += (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", len(body)) + body
