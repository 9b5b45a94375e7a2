"""Which int8 weight range this CPU's onnxruntime kernels can use without saturating.

On x86 without VNNI, onnxruntime's u8 x s8 kernels multiply with ``vpmaddubsw``, which adds
two u8 x s8 products into a saturating int16: 2 x 255 x 127 = 64,770 overflows 32,767, so
full-range 8-bit weights silently clip. Measured on this model: min cosine to
sentence-transformers 0.982 with 8-bit weights on an AVX2-only EPYC, against 0.998 on an
AVX-512 VNNI box. With 7-bit weights (|w| <= 63: 2 x 255 x 63 = 32,130) nothing saturates
(min 0.995 there). This is the ``reduce_range`` advice of onnxruntime's quantization docs
("quantize weights with 7-bits ... on non-VNNI machines"). VNNI (``vpdpbusd``) and ARM's
dot-product kernels accumulate in int32, so they keep the full 8 bits.
"""

from __future__ import annotations

import platform
from functools import cache
from pathlib import Path

_VNNI_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")


@cache
def int8_weight_levels() -> int:
    """127 where u8 x s8 products accumulate without saturation, else 63 (7-bit weights)."""
    if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686", "x86"):
        return 127
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return 63  # cannot tell (not Linux): the range that is safe on every x86 kernel
    return 127 if any(flag in flags for flag in _VNNI_FLAGS) else 63
