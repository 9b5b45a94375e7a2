"""Load and validate the price table (``config/model_prices.yaml``, spec 2.5).

The file is a YAML list of entries::

    - model: gpt-4o
      provider: openai
      input_price_per_1m: 2.5        # USD per 1,000,000 input tokens
      output_price_per_1m: 10
      cache_read_price_per_1m: 1.25  # optional
      cache_write_price_per_1m: 3.75 # optional
      version: openai-2025-08        # where/when the price is from

plus, optionally, a 1-hour cache write, reasoning, audio and image prices, context tiers
and service tiers (validated in :mod:`.structures`; format in docs/pricing.md).

Which file: an explicit ``path``, else ``$LLM_OBSERVE_PRICES_FILE``, else the
default shipped inside the package. A bad file raises :class:`ConfigError` with
one line naming the file, the entry (index, line, model) and the field, so the
collector stops at start-up instead of mispricing spans.
"""

from __future__ import annotations

import datetime as dt
import os
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml

from llm_observe.errors import ConfigError
from llm_observe.pricing import structures
from llm_observe.pricing.rates import INPUT, OUTPUT, PRICE_FIELDS
from llm_observe.pricing.structures import EntryRef
from llm_observe.pricing.table import PriceEntry, PriceTable
from llm_observe.providers.registry import canonical

ENV_VAR = "LLM_OBSERVE_PRICES_FILE"
_REQUIRED_STR = ("model", "provider", "version")
_KNOWN = frozenset((*_REQUIRED_STR, *PRICE_FIELDS, "context_tiers", "service_tiers"))
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
    origin = "path"
    if path is None or str(path) == "":
        path = os.environ.get(ENV_VAR) or None
        origin = "env"
    if path is None:
        source, origin = default_price_file(), "default"
        text = _packaged().read_text(encoding="utf-8")
    else:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ConfigError(source, "file", f"cannot read price file: {reason}") from exc
    return parse_price_table(text, source, origin)


def parse_price_table(text: str, source: str = "<string>", origin: str = "memory") -> PriceTable:
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
        entry = _parse_entry(raw, EntryRef(source, index, lines[index], raw))
        key = (entry.model.lower(), canonical(entry.provider))
        if key in seen:
            first = seen[key]
            EntryRef(source, index, lines[index], raw).fail(
                "model", f"duplicate (model, provider) {key!r}; first defined at "
                f"entry[{first}] (line {lines[first]})")
        seen[key] = index
        entries.append(entry)
    return PriceTable(entries, source, origin)


def _parse_entry(raw: Any, ref: EntryRef) -> PriceEntry:
    if not isinstance(raw, dict):
        ref.fail(None, f"must be a mapping of fields, got {type(raw).__name__}")
    structures.check_known(raw, _KNOWN, ref)
    strings = {name: _string(raw, name, ref) for name in _REQUIRED_STR}
    prices = structures.prices(raw, ref)
    for name in (INPUT, OUTPUT):
        if name not in prices:
            ref.fail(name, "is missing")
    context = structures.context_tiers(raw.get("context_tiers"), ref, "context_tiers")
    service = structures.service_tiers(raw.get("service_tiers"), ref)
    try:
        return PriceEntry(model=strings["model"], provider=strings["provider"],
                          version=strings["version"], context_tiers=context,
                          service_tiers=service, **prices)
    except ValueError as exc:  # a combination the engine refuses, e.g. an inexact multiple
        field, _, problem = str(exc).partition(": ")
        ref.fail(field, problem)


def _string(raw: dict[str, Any], name: str, ref: EntryRef) -> str:
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


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return " ".join(f"invalid YAML{where}: {problem}".split())
