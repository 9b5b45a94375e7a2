"""Price fields, their defaults, and the exact charge of a :class:`Usage` at one rate set.

A rate set is the ten prices of one (context tier, service tier) as integers in 1e-9 USD
per 1M tokens, i.e. 1e-9 micro-USD per token: ``tokens x rate`` summed is exact integer
arithmetic, rounded half up once at the end (ARCHITECTURE "Decisions").
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from llm_observe.pricing.usage import Usage

PRICE_DECIMALS = 9
SCALE: int = 10**PRICE_DECIMALS
HALF = SCALE // 2

INPUT = "input_price_per_1m"
OUTPUT = "output_price_per_1m"
CACHE_READ = "cache_read_price_per_1m"
CACHE_WRITE = "cache_write_price_per_1m"          # 5-minute TTL (Anthropic's default)
CACHE_WRITE_1H = "cache_write_1h_price_per_1m"
REASONING = "reasoning_price_per_1m"
AUDIO_INPUT = "audio_input_price_per_1m"
AUDIO_OUTPUT = "audio_output_price_per_1m"
IMAGE_INPUT = "image_input_price_per_1m"
IMAGE_OUTPUT = "image_output_price_per_1m"

# Every price field in rate-set order, with the field a missing one falls back to: the
# price those tokens were billed at before the structure existed, so an entry with only
# the spec's five fields costs what it always did.
DEFAULTS: dict[str, str | None] = {
    INPUT: None, OUTPUT: None,
    CACHE_READ: INPUT, CACHE_WRITE: INPUT, CACHE_WRITE_1H: CACHE_WRITE,
    REASONING: OUTPUT,
    AUDIO_INPUT: INPUT, AUDIO_OUTPUT: OUTPUT, IMAGE_INPUT: INPUT, IMAGE_OUTPUT: OUTPUT,
}
PRICE_FIELDS: tuple[str, ...] = tuple(DEFAULTS)

Rates = tuple[int, int, int, int, int, int, int, int, int, int]


def scale_price(price: Decimal) -> int:
    """USD per 1M tokens -> integer in 1e-9 units; ValueError if not exact."""
    scaled = price * SCALE
    if scaled != scaled.to_integral_value():
        raise ValueError(f"has more than {PRICE_DECIMALS} decimal places")
    return int(scaled)


def effective_prices(declared: Mapping[str, Decimal]) -> dict[str, Decimal]:
    """All ten prices: the declared ones, the others from their defaults."""
    prices: dict[str, Decimal] = {}
    for name, fallback in DEFAULTS.items():
        value = declared.get(name)
        if value is None:
            if fallback is None:
                raise ValueError(f"{name}: is missing")
            value = prices[fallback]
        prices[name] = value
    return prices


def resolve(declared: Mapping[str, Decimal], multiplier: Decimal | None = None,
            where: str = "") -> Rates:
    """The rate set of ``declared`` prices (times ``multiplier``); ValueError names the field."""
    scaled: list[int] = []
    for name, price in effective_prices(declared).items():
        value = price if multiplier is None else price * multiplier
        try:
            scaled.append(scale_price(value))
        except ValueError:
            raise ValueError(f"{where}{name}: {price} x {multiplier} = {value.normalize()} has "
                             f"more than {PRICE_DECIMALS} decimal places") from None
    return tuple(scaled)  # type: ignore[return-value]


def charge(rates: Rates, u: Usage) -> int:
    """Exact cost of ``u`` at ``rates`` in 1e-9 micro-USD, before rounding.

    Subsets are clamped in a fixed order (cache read, cache write, its 1-hour part, audio,
    image within the prompt; reasoning, audio, image within the completion), so a count
    larger than its whole is cut to what is left and nothing is billed twice.
    """
    inp, out, read_r, write_r, write1h_r, reason_r, ain_r, aout_r, iin_r, iout_r = rates
    rest = max(u.prompt_tokens, 0)
    read = min(max(u.cache_read_tokens, 0), rest)
    rest -= read
    write = min(max(u.cache_write_tokens, 0), rest)
    rest -= write
    write1h = min(max(u.cache_write_1h_tokens, 0), write)
    audio_in = min(max(u.audio_input_tokens, 0), rest)
    rest -= audio_in
    image_in = min(max(u.image_input_tokens, 0), rest)
    rest -= image_in
    left = max(u.completion_tokens, 0)
    reasoning = min(max(u.reasoning_tokens, 0), left)
    left -= reasoning
    audio_out = min(max(u.audio_output_tokens, 0), left)
    left -= audio_out
    image_out = min(max(u.image_output_tokens, 0), left)
    left -= image_out
    return (rest * inp + read * read_r + (write - write1h) * write_r + write1h * write1h_r
            + audio_in * ain_r + image_in * iin_r
            + left * out + reasoning * reason_r + audio_out * aout_r + image_out * iout_r)
