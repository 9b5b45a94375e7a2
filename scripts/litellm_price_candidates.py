"""Print price-table candidates from the litellm wheel's community price table.

One-off helper for maintaining ``config/model_prices.yaml`` (the committed
source of truth, written by hand): it reads
``litellm/model_prices_and_context_window_backup.json`` from the installed
wheel (or ``--json FILE``, e.g. unpacked from a newer wheel fetched with
``pip download --no-deps litellm``) *without importing litellm* and prints YAML
entries in our schema for the keys given, price structures included (1-hour
cache writes, reasoning/audio/image prices, ``*_above_<N>k_tokens`` context
tiers, ``*_flex`` / ``*_priority`` / ``*_batches`` service tiers: a multiplier
when every price scales by one factor, else own prices), so a maintainer can
compare them with the vendor pages.

    python scripts/litellm_price_candidates.py gpt-4o claude-haiku-4-5 gemini/gemini-2.5-pro
    python scripts/litellm_price_candidates.py --provider mistral  # all chat models of one
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import re
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

_FILE = "model_prices_and_context_window_backup.json"
# (our field, litellm key stem); the stems take the _above_<N>k_tokens / tier suffixes.
_FIELDS = (
    ("input_price_per_1m", "input_cost_per_token"),
    ("output_price_per_1m", "output_cost_per_token"),
    ("cache_read_price_per_1m", "cache_read_input_token_cost"),
    ("cache_write_price_per_1m", "cache_creation_input_token_cost"),
    ("cache_write_1h_price_per_1m", "cache_creation_input_token_cost_above_1hr"),
    ("reasoning_price_per_1m", "output_cost_per_reasoning_token"),
    ("audio_input_price_per_1m", "input_cost_per_audio_token"),
    ("audio_output_price_per_1m", "output_cost_per_audio_token"),
    ("image_input_price_per_1m", "input_cost_per_image_token"),
    ("image_output_price_per_1m", "output_cost_per_image_token"),
)
_TIERS = {"flex": "flex", "priority": "priority", "batches": "batch"}
_ABOVE = re.compile(r"^(?P<stem>.+)_above_(?P<k>\d+)k_tokens$")


def _table_path() -> Path:
    spec = importlib.util.find_spec("litellm")  # locates the package without running it
    if spec is None or not spec.submodule_search_locations:
        sys.exit("litellm is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / _FILE


def _per_1m(per_token: float) -> Decimal:
    # repr() is the shortest exact decimal for the float; scaling a Decimal
    # avoids 2.4999999999999996-style noise.
    return (Decimal(repr(per_token)) * 1_000_000).normalize()


def _text(value: Decimal) -> str:
    return format(value.normalize(), "f")


def _prices(data: dict[str, Any], suffix: str = "") -> dict[str, Decimal]:
    found = {}
    for ours, stem in _FIELDS:
        value = data.get(stem + suffix)
        if isinstance(value, int | float) and not isinstance(value, bool):
            found[ours] = _per_1m(value)
    if found.get("reasoning_price_per_1m") == found.get("output_price_per_1m"):
        found.pop("reasoning_price_per_1m", None)  # the default: reasoning at the output rate
    return found


def _tiers(data: dict[str, Any], suffix: str = "") -> dict[int, dict[str, Decimal]]:
    tiers: dict[int, dict[str, Decimal]] = {}
    for key, value in data.items():
        match = _ABOVE.match(key.removesuffix(suffix) if suffix and key.endswith(suffix)
                             else ("" if suffix else key))
        if not match or not isinstance(value, int | float) or isinstance(value, bool):
            continue
        ours = next((o for o, stem in _FIELDS if stem == match["stem"]), None)
        if ours is not None:
            tiers.setdefault(int(match["k"]) * 1000, {})[ours] = _per_1m(value)
    return tiers


def _entry(key: str, data: dict[str, Any], version: str) -> str:
    model = key.split("/", 1)[1] if "/" in key and key.split("/", 1)[0] == data.get(
        "litellm_provider") else key
    lines = [f"- model: {model}", f"  provider: {data.get('litellm_provider')}"]
    base = _prices(data)
    lines += [f"  {k}: {_text(v)}" for k, v in base.items()]
    tiers = _tiers(data)
    if tiers:
        lines.append("  context_tiers:")
        for above, prices in sorted(tiers.items()):
            body = ", ".join(f"{k}: {_text(v)}" for k, v in prices.items())
            lines.append(f"    - {{above_prompt_tokens: {above}, {body}}}")
    services = []
    for suffix, name in _TIERS.items():
        own = _prices(data, "_" + suffix)
        if not own:
            continue
        ratios = {own[k] / base[k] for k in own if base.get(k)}
        own_tiers = _tiers(data, "_" + suffix)
        if len(ratios) == 1 and not own_tiers and len(own) == len(base):
            services.append(f"    {name}: {{multiplier: {_text(ratios.pop())}}}")
        else:
            body = ", ".join(f"{k}: {_text(v)}" for k, v in own.items())
            services.append(f"    {name}: {{{body}}}  # own prices; check inheritance")
    if services:
        lines += ["  service_tiers:", *services]
    lines.append(f"  version: {version}")
    if data.get("deprecation_date"):
        lines.append(f"  # litellm deprecation_date: {data['deprecation_date']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("keys", nargs="*", help="litellm table keys")
    parser.add_argument("--provider", help="print every chat model of this litellm provider")
    parser.add_argument("--label", help="version label to print (default litellm-<version>)")
    parser.add_argument("--json", type=Path, help="the price JSON to read (default: the "
                        "installed wheel's)")
    args = parser.parse_args()
    path = args.json or _table_path()
    table: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    version = args.label or (f"litellm-{importlib.metadata.version('litellm')}"
                             if args.json is None else "litellm-<version>")
    print(f"# from {path} ({version})")
    keys = list(args.keys)
    if args.provider:
        keys += [k for k, v in table.items() if isinstance(v, dict)
                 and v.get("litellm_provider") == args.provider and v.get("mode") == "chat"]
    for key in keys:
        data = table.get(key)
        if not isinstance(data, dict) or data.get("input_cost_per_token") is None:
            print(f"# {key}: not in the table")
            continue
        print(_entry(key, data, version))


if __name__ == "__main__":
    main()
