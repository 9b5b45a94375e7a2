"""Validation of one price file entry's fields: prices, context tiers, service tiers.

Every problem is reported through :class:`EntryRef` as one line naming the file, the
entry (index, line, model) and the field path (``service_tiers.batch.context_tiers[0]
.input_price_per_1m``), the same discipline as the spec's five fields.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any, NoReturn

from llm_observe.errors import ConfigError
from llm_observe.pricing.entry import STANDARD_TIERS, ContextTier, ServiceTier
from llm_observe.pricing.rates import PRICE_DECIMALS, PRICE_FIELDS, scale_price

ABOVE = "above_prompt_tokens"
TIER_FIELDS = frozenset((ABOVE, *PRICE_FIELDS))
SERVICE_FIELDS = frozenset(("multiplier", "context_tiers", *PRICE_FIELDS))
MAX_MULTIPLIER = Decimal(100)  # a typo guard: no provider bills 100x its list price
_TIER_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,31}")


class EntryRef:
    """Names one entry in error messages: ``entry[3] (line 20, model 'gpt-4o')``."""

    __slots__ = ("index", "label", "source")

    def __init__(self, source: str, index: int, line: int, raw: Any) -> None:
        self.source = source
        self.index = index
        model = raw.get("model") if isinstance(raw, dict) else None
        where = f"line {line}" if line else "line ?"
        self.label = f"entry[{index}] ({where}, model {model!r})" if isinstance(model, str) \
            else f"entry[{index}] ({where})"

    def fail(self, field: str | None, problem: str) -> NoReturn:
        message = f"field {field!r}: {problem}" if field else problem
        raise ConfigError(self.source, self.label, message)


def check_known(raw: dict[Any, Any], allowed: frozenset[str], ref: EntryRef,
                where: str = "") -> None:
    """Reject unknown keys: a typo such as ``cache_read_price_per_1M`` must not drop a price."""
    unknown = sorted(str(k) for k in raw if k not in allowed)
    if unknown:
        ref.fail(f"{where}{unknown[0]}", f"unknown field (allowed: {', '.join(sorted(allowed))})")


def number(raw: dict[str, Any], name: str, ref: EntryRef, where: str = "",
           what: str = "USD per 1M tokens") -> Decimal | None:
    """A finite number >= 0 with at most 9 decimals, as written; None when absent."""
    if raw.get(name) is None:
        return None
    value, field = raw[name], f"{where}{name}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        ref.fail(field, f"must be a number ({what}), got {type(value).__name__} {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        ref.fail(field, f"must be a finite number, got {value!r}")
    if value < 0:
        ref.fail(field, f"must be >= 0, got {value!r}")
    # repr() of a float is the shortest decimal that reads back to it, i.e. what
    # the file says: 0.15 -> Decimal("0.15"), not 0.1499999999999999944...
    exact = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    try:
        scale_price(exact)
    except ValueError:
        ref.fail(field, f"must have at most {PRICE_DECIMALS} decimal places, got {value!r}")
    return exact


def prices(raw: dict[str, Any], ref: EntryRef, where: str = "") -> dict[str, Decimal]:
    """The price fields ``raw`` gives, validated."""
    found = {name: number(raw, name, ref, where) for name in PRICE_FIELDS}
    return {name: value for name, value in found.items() if value is not None}


def _mapping(value: Any, ref: EntryRef, field: str, what: str) -> dict[Any, Any]:
    if not isinstance(value, dict) or not value:
        kind = "empty" if isinstance(value, dict) else type(value).__name__
        ref.fail(field, f"must be a non-empty mapping of {what}, got {kind}")
    return value


def context_tiers(value: Any, ref: EntryRef, where: str) -> tuple[ContextTier, ...]:
    """``[{above_prompt_tokens: N, <prices>}, ...]`` -> tiers (None -> none)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not value:
        kind = "empty list" if isinstance(value, list) else type(value).__name__
        ref.fail(where, f"must be a non-empty list of {{{ABOVE}: N, <prices>}}, got {kind}")
    tiers: list[ContextTier] = []
    for i, item in enumerate(value):
        here = f"{where}[{i}]."
        tier = _mapping(item, ref, here[:-1], "fields")
        check_known(tier, TIER_FIELDS, ref, here)
        above = tier.get(ABOVE)
        if isinstance(above, bool) or not isinstance(above, int) or above < 1:
            ref.fail(here + ABOVE, f"must be a whole number of prompt tokens >= 1, got {above!r}")
        given = prices(tier, ref, here)
        if not given:
            ref.fail(here[:-1], "gives no price (a tier without prices changes nothing)")
        tiers.append(ContextTier(above, tuple(given.items())))
    return tuple(tiers)


def service_tiers(value: Any, ref: EntryRef) -> tuple[ServiceTier, ...]:
    """``{flex: {multiplier: 0.5}, batch: {<prices>, context_tiers: [...]}}`` -> tiers."""
    if value is None:
        return ()
    tiers: list[ServiceTier] = []
    seen: set[str] = set()
    for key, spec in _mapping(value, ref, "service_tiers", "tier names").items():
        name = key.strip().lower() if isinstance(key, str) else ""
        where = f"service_tiers.{key}"
        if not _TIER_NAME.fullmatch(name):
            ref.fail(where, "a tier name is the service tier the provider reports: letters, "
                            "digits, '_', '-', '.', at most 32")
        if name in STANDARD_TIERS:
            ref.fail(where, f"{name!r} is the entry's own prices; give them at the entry level")
        if name in seen:
            ref.fail(where, "duplicate service tier (names compare case-insensitively)")
        seen.add(name)
        body = _mapping(spec, ref, where, "fields")
        check_known(body, SERVICE_FIELDS, ref, where + ".")
        multiplier = number(body, "multiplier", ref, where + ".", "a factor on every price")
        given = prices(body, ref, where + ".")
        tiers_here = context_tiers(body.get("context_tiers"), ref, where + ".context_tiers")
        if multiplier is not None:
            if given or tiers_here:
                ref.fail(where + ".multiplier", "give a multiplier or own prices, not both")
            if not 0 < multiplier <= MAX_MULTIPLIER:
                ref.fail(where + ".multiplier", f"must be > 0 and <= {MAX_MULTIPLIER}, got "
                                                f"{body['multiplier']!r}")
        elif not given and not tiers_here:
            ref.fail(where, "gives neither a multiplier nor prices")
        tiers.append(ServiceTier(name, multiplier, tuple(given.items()), tiers_here))
    return tuple(tiers)
