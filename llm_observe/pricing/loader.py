"""Load and validate the price table (``config/model_prices.yaml``, spec 2.5).

The file is a YAML list of entries::

    - model: gpt-4o
      provider: openai
      input_price_per_1m: 2.5        # USD per 1,000,000 input tokens
      output_price_per_1m: 10
      cache_read_price_per_1m: 1.25  # optional
      cache_write_price_per_1m: 3.75 # optional
      version: openai-2025-08        # where/when the price is from

Which file: an explicit ``path``, else ``$LLM_OBSERVE_PRICES_FILE``, else the
default shipped inside the package. A bad file raises :class:`ConfigError` with
one line naming the file, the entry (index, line, model) and the field, so the
collector stops at start-up instead of mispricing spans.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from decimal import Decimal
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, NoReturn

import yaml

from llm_observe.errors import ConfigError
from llm_observe.pricing.table import (
    PRICE_DECIMALS,
    PriceEntry,
    PriceTable,
    scale_price,
)
from llm_observe.providers.registry import canonical

ENV_VAR = "LLM_OBSERVE_PRICES_FILE"
_REQUIRED_STR = ("model", "provider", "version")
_REQUIRED_PRICES = ("input_price_per_1m", "output_price_per_1m")
_OPTIONAL_PRICES = ("cache_read_price_per_1m", "cache_write_price_per_1m")
_KNOWN = frozenset(_REQUIRED_STR + _REQUIRED_PRICES + _OPTIONAL_PRICES)
# libyaml's loader when PyYAML was built with it (same results, ~10x faster).
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _packaged() -> Traversable:
    return resources.files("llm_observe") / "config" / "model_prices.yaml"


def default_price_file() -> str:
    """Path of the price table shipped in the package."""
    return str(_packaged())


def load_price_table(path: str | Path | None = None) -> PriceTable:
    """Load a price file: ``path``, else ``$LLM_OBSERVE_PRICES_FILE``, else the default.

    Raises ConfigError (one line: file, entry, field) if the file is unreadable or invalid.
    """
    if path is None or str(path) == "":
        path = os.environ.get(ENV_VAR) or None
    if path is None:
        source = default_price_file()
        text = _packaged().read_text(encoding="utf-8")
    else:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ConfigError(source, "file", f"cannot read price file: {reason}") from exc
    return parse_price_table(text, source)


def parse_price_table(text: str, source: str = "<string>") -> PriceTable:
    """Validate the YAML text of a price file and build the table; raise ConfigError."""
    try:
        data = yaml.load(text, Loader=_Loader)  # _Loader is a *safe* loader
        node = yaml.compose(text, Loader=_Loader)  # again, for line numbers
    except yaml.YAMLError as exc:
        raise ConfigError(source, "file", _yaml_problem(exc)) from exc
    if not isinstance(data, list):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise ConfigError(source, "file", f"must be a YAML list of price entries, got {kind}")
    if not data:
        raise ConfigError(source, "file", "has no price entries")
    lines = [item.start_mark.line + 1 for item in node.value] \
        if isinstance(node, yaml.SequenceNode) else [0] * len(data)
    entries: list[PriceEntry] = []
    seen: dict[tuple[str, str], int] = {}
    for index, raw in enumerate(data):
        entry = _parse_entry(raw, _EntryRef(source, index, lines[index], raw))
        key = (entry.model.lower(), canonical(entry.provider))
        if key in seen:
            first = seen[key]
            _EntryRef(source, index, lines[index], raw).fail(
                "model", f"duplicate (model, provider) {key!r}; first defined at "
                f"entry[{first}] (line {lines[first]})")
        seen[key] = index
        entries.append(entry)
    return PriceTable(entries, source)


class _EntryRef:
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


def _parse_entry(raw: Any, ref: _EntryRef) -> PriceEntry:
    if not isinstance(raw, dict):
        ref.fail(None, f"must be a mapping of fields, got {type(raw).__name__}")
    unknown = sorted(str(k) for k in raw if k not in _KNOWN)
    if unknown:
        # A typo such as "cache_read_price_per_1M" must not silently drop a price.
        ref.fail(unknown[0], f"unknown field (allowed: {', '.join(sorted(_KNOWN))})")
    strings = {name: _string(raw, name, ref) for name in _REQUIRED_STR}
    prices = {name: _price(raw, name, ref) for name in _REQUIRED_PRICES + _OPTIONAL_PRICES}
    return PriceEntry(
        model=strings["model"],
        provider=strings["provider"],
        version=strings["version"],
        input_price_per_1m=_required(prices, "input_price_per_1m", ref),
        output_price_per_1m=_required(prices, "output_price_per_1m", ref),
        cache_read_price_per_1m=prices["cache_read_price_per_1m"],
        cache_write_price_per_1m=prices["cache_write_price_per_1m"],
    )


def _required(prices: dict[str, Decimal | None], name: str, ref: _EntryRef) -> Decimal:
    value = prices[name]
    if value is None:
        ref.fail(name, "is missing")
    return value


def _string(raw: dict[str, Any], name: str, ref: _EntryRef) -> str:
    if name not in raw or raw[name] is None:
        ref.fail(name, "is missing")
    value = raw[name]
    if name == "version" and isinstance(value, dt.date):
        value = value.isoformat()  # YAML reads an unquoted 2025-08-07 as a date
    if not isinstance(value, str):
        ref.fail(name, f"must be a string, got {type(value).__name__} {value!r}")
    value = value.strip()
    if not value:
        ref.fail(name, "must not be empty")
    return str(value)


def _price(raw: dict[str, Any], name: str, ref: _EntryRef) -> Decimal | None:
    if raw.get(name) is None:
        return None
    value = raw[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        ref.fail(name, f"must be a number (USD per 1M tokens), got {type(value).__name__} "
                       f"{value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        ref.fail(name, f"must be a finite number, got {value!r}")
    if value < 0:
        ref.fail(name, f"must be >= 0, got {value!r}")
    # repr() of a float is the shortest decimal that reads back to it, i.e. what
    # the file says: 0.15 -> Decimal("0.15"), not 0.1499999999999999944...
    price = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    try:
        scale_price(price)
    except ValueError:
        ref.fail(name, f"must have at most {PRICE_DECIMALS} decimal places, got {value!r}")
    return price


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return " ".join(f"invalid YAML{where}: {problem}".split())
