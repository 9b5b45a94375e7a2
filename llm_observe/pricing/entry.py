"""One model's prices and the exact cost of a call: :class:`PriceEntry`.

Beyond the spec's input/output prices an entry may give cache prices (reads, 5-minute and
1-hour writes), a reasoning price, audio and image prices, **context tiers** (prices for
the whole request when the prompt is over a threshold) and **service tiers** (a
multiplier or own prices for ``flex``, ``priority``, ``batch`` ...). Every combination is
resolved to integer rate sets when the entry is built, so pricing a span is a dict lookup,
at most a few comparisons and ten integer products.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from llm_observe.pricing.rates import (
    HALF,
    PRICE_FIELDS,
    SCALE,
    Rates,
    charge,
    resolve,
)
from llm_observe.pricing.usage import Usage

Prices = tuple[tuple[str, Decimal], ...]  # the price fields a tier gives, file order
Tiered = tuple[tuple[int, Rates], ...]  # (above_prompt_tokens, rates), highest first
STANDARD_TIERS = frozenset({"default", "standard", "auto"})  # the entry's own prices


@dataclass(frozen=True, slots=True)
class ContextTier:
    """Prices for the *whole* request when ``prompt_tokens > above_prompt_tokens``.

    Fields the tier does not give are inherited from the price set it belongs to (the
    entry, or a service tier's own prices), not from a lower tier.
    """

    above_prompt_tokens: int
    prices: Prices


@dataclass(frozen=True, slots=True)
class ServiceTier:
    """How a service tier is billed: every price times ``multiplier``, or own ``prices``
    (inheriting what they do not give from the entry) with their own context tiers."""

    name: str
    multiplier: Decimal | None = None
    prices: Prices = ()
    context_tiers: tuple[ContextTier, ...] = ()


def _number(value: Decimal) -> int | float:
    # float(Decimal) of a price with <= 9 decimals reads back exactly (shortest repr).
    return int(value) if value == value.to_integral_value() else float(value)


def _tier_dicts(tiers: tuple[ContextTier, ...]) -> list[dict[str, Any]]:
    return [{"above_prompt_tokens": t.above_prompt_tokens,
             **{k: _number(v) for k, v in t.prices}} for t in tiers]


@dataclass(frozen=True, slots=True)
class PriceEntry:
    """One model's list prices in USD per 1M tokens (spec 2.5) and its price structures."""

    model: str
    provider: str
    input_price_per_1m: Decimal
    output_price_per_1m: Decimal
    version: str
    cache_read_price_per_1m: Decimal | None = None
    cache_write_price_per_1m: Decimal | None = None
    cache_write_1h_price_per_1m: Decimal | None = None
    reasoning_price_per_1m: Decimal | None = None
    audio_input_price_per_1m: Decimal | None = None
    audio_output_price_per_1m: Decimal | None = None
    image_input_price_per_1m: Decimal | None = None
    image_output_price_per_1m: Decimal | None = None
    context_tiers: tuple[ContextTier, ...] = ()
    service_tiers: tuple[ServiceTier, ...] = ()
    _fast: tuple[int, int, int, int] = field(init=False, repr=False, compare=False)
    _base: Rates = field(init=False, repr=False, compare=False)
    _tiers: Tiered = field(init=False, repr=False, compare=False)
    _services: dict[str, tuple[Rates, Tiered]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        declared = self.declared()
        tiers = self._tiered(declared, self.context_tiers, None, "")
        services: dict[str, tuple[Rates, Tiered]] = {}
        for tier in self.service_tiers:
            name = tier.name.strip().lower()
            where = f"service_tiers.{name}."
            if not name or name in services or name in STANDARD_TIERS:
                raise ValueError(f"{where[:-1]}: duplicate or reserved service tier name")
            if tier.multiplier is not None:
                if tier.prices or tier.context_tiers:
                    raise ValueError(f"{where}multiplier: give a multiplier or own prices, "
                                     "not both")
                services[name] = (resolve(declared, tier.multiplier, where),
                                       self._tiered(declared, self.context_tiers,
                                                    tier.multiplier, where))
                continue
            if not tier.prices and not tier.context_tiers:
                raise ValueError(f"{where[:-1]}: gives neither a multiplier nor prices")
            if self.context_tiers and not tier.context_tiers:
                # The entry's context-tier prices are standard-tier prices: billing a long
                # batch prompt at them would be wrong, so the file must say what applies.
                raise ValueError(f"{where}context_tiers: the entry has context tiers, so a "
                                 "service tier with own prices must give its own (or use "
                                 "a multiplier)")
            own = {**declared, **dict(tier.prices)}
            services[name] = (resolve(own, None, where),
                                   self._tiered(own, tier.context_tiers, None, where))
        base = resolve(declared)
        set_ = object.__setattr__
        set_(self, "_base", base)
        set_(self, "_fast", base[:4])
        set_(self, "_tiers", tiers)
        set_(self, "_services", services)

    @staticmethod
    def _tiered(base: dict[str, Decimal], tiers: tuple[ContextTier, ...],
                multiplier: Decimal | None, where: str) -> Tiered:
        seen: set[int] = set()
        out: list[tuple[int, Rates]] = []
        for i, tier in enumerate(tiers):
            here = f"{where}context_tiers[{i}]."
            if tier.above_prompt_tokens < 1 or tier.above_prompt_tokens in seen:
                raise ValueError(f"{here}above_prompt_tokens: must be a positive whole number "
                                 f"of tokens, unique in the list, got {tier.above_prompt_tokens}")
            seen.add(tier.above_prompt_tokens)
            out.append((tier.above_prompt_tokens,
                        resolve({**base, **dict(tier.prices)}, multiplier, here)))
        return tuple(sorted(out, reverse=True))

    def declared(self) -> dict[str, Decimal]:
        """The entry-level prices the file gives (field -> USD per 1M tokens)."""
        return {name: value for name in PRICE_FIELDS
                if (value := getattr(self, name)) is not None}

    def cost(self, usage: Usage) -> int:
        """Exact cost of ``usage`` in micro-USD, rounded half up once.

        The service tier picks its rate sets (unknown/standard tiers: the entry's own);
        the prompt size then picks the highest context tier it is over (strictly), whose
        prices apply to every token of the request.
        """
        rates, tiers = self._base, self._tiers
        tier = usage.service_tier
        if tier is not None and self._services:
            found = self._services.get(tier.strip().lower())
            if found is not None:
                rates, tiers = found
        if tiers:
            prompt = usage.prompt_tokens
            for threshold, tier_rates in tiers:
                if prompt > threshold:
                    rates = tier_rates
                    break
        return (charge(rates, usage) + HALF) // SCALE

    def cost_usd_micro(self, prompt_tokens: int, completion_tokens: int,
                       cache_read_tokens: int = 0, cache_write_tokens: int = 0) -> int:
        """:meth:`cost` of a standard-tier call that reports only these four counts
        (cached tokens ⊆ prompt, clamped; every cache write at the 5-minute price)."""
        # The hot path of the cost step: charge() reduced to its four non-zero terms.
        inp, out, read_r, write_r = self._fast
        if self._tiers:
            for threshold, rates in self._tiers:
                if prompt_tokens > threshold:
                    inp, out, read_r, write_r = rates[:4]
                    break
        prompt = max(prompt_tokens, 0)
        read = min(max(cache_read_tokens, 0), prompt)
        write = min(max(cache_write_tokens, 0), prompt - read)
        scaled = ((prompt - read - write) * inp + read * read_r + write * write_r
                  + max(completion_tokens, 0) * out)
        return (scaled + HALF) // SCALE

    def as_dict(self) -> dict[str, Any]:
        """The entry as the file gives it, JSON-ready (prices as numbers)."""
        body: dict[str, Any] = {"model": self.model, "provider": self.provider,
                                "version": self.version}
        body.update({k: _number(v) for k, v in self.declared().items()})
        body["context_tiers"] = _tier_dicts(self.context_tiers)
        body["service_tiers"] = [
            {"name": t.name,
             **({"multiplier": _number(t.multiplier)} if t.multiplier is not None else {}),
             **{k: _number(v) for k, v in t.prices},
             **({"context_tiers": _tier_dicts(t.context_tiers)} if t.context_tiers else {})}
            for t in self.service_tiers]
        return body
