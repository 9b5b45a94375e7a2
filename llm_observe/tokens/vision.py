"""Image input tokens for OpenAI vision models: the tile method and the patch method.

Source: OpenAI "Images and vision" guide, section "Calculating costs"
(https://platform.openai.com/docs/guides/images-vision#calculating-costs).

Tile method (GPT-4o, GPT-4.1, GPT-4.5, o1/o3, GPT-5, ...):
- ``detail: low`` costs the model's base tokens, whatever the size;
- ``detail: high`` scales the image (down only) to fit a 2048x2048 square,
  then so its shortest side is 768 px, counts the 512 px tiles that cover it,
  and costs ``base + tiles x tile``; ``auto`` is counted as high.
  Worked examples in the guide (gpt-4o): 1024x1024 high → 765,
  2048x4096 high → 1105, any size low → 85.
- Base/tile constants per model: gpt-4o, gpt-4.1, gpt-4.5, gpt-4-turbo 85/170;
  gpt-4o-mini 2833/5667; o1, o1-pro, o3 75/150; gpt-5 70/140;
  computer-use-preview 65/129.
- Intermediate sizes are rounded to the nearest pixel: measured billing of
  2049x513 (8 tiles) vs 2050x513 (4 tiles) on gpt-4.1 only fits that
  (community.openai.com/t/1281361).

Patch method (gpt-4.1-mini, gpt-4.1-nano, o4-mini, gpt-5-mini, gpt-5-nano):
32 px patches covering the image, capped at 1536 (shrinking the image to fit),
times a per-model multiplier (1.62, 2.46, 1.72, 1.62, 2.46); ``detail`` does
not change the cost. Guide example: 1800x2400 → 33x44 = 1452 patches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Size assumed for an image whose bytes we cannot read (a remote URL: we do no
# network I/O). 1024x1024 is the guide's own first example.
ASSUMED_SIZE = (1024, 1024)

_TILE_FIT = 2048
_TILE_SHORT_SIDE = 768
_TILE = 512
_PATCH = 32
_PATCH_CAP = 1536


@dataclass(frozen=True, slots=True)
class VisionProfile:
    """How one model family bills images: tiles (base, per-tile) or patches (multiplier)."""

    family: str
    base: int = 0
    per_tile: int = 0
    patch_multiplier: float = 0.0

    @property
    def uses_patches(self) -> bool:
        return self.patch_multiplier > 0


_GPT4O = VisionProfile("gpt-4o", 85, 170)
# Checked in order, so longer prefixes come before shorter ones they extend.
_PROFILES: tuple[tuple[str, VisionProfile], ...] = (
    ("gpt-4.1-mini", VisionProfile("gpt-4.1-mini", patch_multiplier=1.62)),
    ("gpt-4.1-nano", VisionProfile("gpt-4.1-nano", patch_multiplier=2.46)),
    ("gpt-5-mini", VisionProfile("gpt-5-mini", patch_multiplier=1.62)),
    ("gpt-5-nano", VisionProfile("gpt-5-nano", patch_multiplier=2.46)),
    ("o4-mini", VisionProfile("o4-mini", patch_multiplier=1.72)),
    ("gpt-4o-mini", VisionProfile("gpt-4o-mini", 2833, 5667)),
    ("gpt-4o", _GPT4O),
    ("chatgpt-4o", _GPT4O),
    ("gpt-4.1", _GPT4O),
    ("gpt-4.5", _GPT4O),
    ("gpt-4-turbo", _GPT4O),
    ("gpt-4-vision", _GPT4O),
    ("gpt-4-1106-vision", _GPT4O),
    ("o1", VisionProfile("o1", 75, 150)),
    ("o3", VisionProfile("o3", 75, 150)),
    ("gpt-5", VisionProfile("gpt-5", 70, 140)),
    ("computer-use-preview", VisionProfile("computer-use-preview", 65, 129)),
)

# Used for models with no documented vision rule; the caller notes the guess.
DEFAULT_PROFILE = _GPT4O


def vision_profile(normalized_model: str) -> VisionProfile | None:
    """The documented image rule for a normalised model name, or None if none is known."""
    for prefix, profile in _PROFILES:
        if normalized_model.startswith(prefix):
            return profile
    return None


def image_tokens(profile: VisionProfile, width: int, height: int, detail: str) -> int:
    """Tokens billed for one ``width`` x ``height`` image at ``detail`` (low/high/auto)."""
    if profile.uses_patches:
        return round(patch_count(width, height) * profile.patch_multiplier)
    if detail == "low":
        return profile.base
    return profile.base + profile.per_tile * tile_count(width, height)


def tile_count(width: int, height: int) -> int:
    """512 px tiles covering the image after the high-detail resize."""
    w, h = float(width), float(height)
    if max(w, h) > _TILE_FIT:
        scale = _TILE_FIT / max(w, h)
        w, h = round(w * scale), round(h * scale)
    if min(w, h) > _TILE_SHORT_SIDE:
        scale = _TILE_SHORT_SIDE / min(w, h)
        w, h = round(w * scale), round(h * scale)
    return math.ceil(w / _TILE) * math.ceil(h / _TILE)


def patch_count(width: int, height: int) -> int:
    """32 px patches covering the image, after shrinking it to at most 1536 patches."""
    patches = math.ceil(width / _PATCH) * math.ceil(height / _PATCH)
    if patches <= _PATCH_CAP:
        return patches
    shrink = math.sqrt(_PATCH_CAP * _PATCH * _PATCH / (width * height))
    w, h = width * shrink, height * shrink
    # Shrink again so each side spans a whole number of patches (the guide's
    # 1800x2400 example fits the width: 33.94 patches → 33).
    fit = min(max(1, math.floor(w / _PATCH)) / (w / _PATCH),
              max(1, math.floor(h / _PATCH)) / (h / _PATCH))
    w, h = int(w * fit), int(h * fit)  # whole pixels, as in the guide's example
    return min(_PATCH_CAP, math.ceil(w / _PATCH) * math.ceil(h / _PATCH))
