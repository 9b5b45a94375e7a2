"""Print price-table candidates from the litellm wheel's community price table.

One-off helper for maintaining ``config/model_prices.yaml`` (the committed
source of truth, written by hand): it reads
``litellm/model_prices_and_context_window_backup.json`` from the installed
wheel *without importing litellm* and prints YAML entries in our schema for the
keys given, so a maintainer can compare them with the vendor pages.

    python scripts/litellm_price_candidates.py gpt-4o claude-haiku-4-5 gemini/gemini-2.5-pro
    python scripts/litellm_price_candidates.py --provider mistral  # all chat models of one
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

_FILE = "model_prices_and_context_window_backup.json"
_FIELDS = (
    ("input_price_per_1m", "input_cost_per_token"),
    ("output_price_per_1m", "output_cost_per_token"),
    ("cache_read_price_per_1m", "cache_read_input_token_cost"),
    ("cache_write_price_per_1m", "cache_creation_input_token_cost"),
)


def _table_path() -> Path:
    spec = importlib.util.find_spec("litellm")  # locates the package without running it
    if spec is None or not spec.submodule_search_locations:
        sys.exit("litellm is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / _FILE


def _per_1m(per_token: float) -> str:
    # repr() is the shortest exact decimal for the float; scaling a Decimal
    # avoids 2.4999999999999996-style noise.
    return format((Decimal(repr(per_token)) * 1_000_000).normalize(), "f")


def _entry(key: str, data: dict[str, Any], version: str) -> str:
    model = key.split("/", 1)[1] if "/" in key and key.split("/", 1)[0] == data.get(
        "litellm_provider") else key
    lines = [f"- model: {model}", f"  provider: {data.get('litellm_provider')}"]
    for ours, theirs in _FIELDS:
        if data.get(theirs) is not None:
            lines.append(f"  {ours}: {_per_1m(data[theirs])}")
    lines.append(f"  version: {version}")
    if data.get("deprecation_date"):
        lines.append(f"  # litellm deprecation_date: {data['deprecation_date']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("keys", nargs="*", help="litellm table keys")
    parser.add_argument("--provider", help="print every chat model of this litellm provider")
    parser.add_argument("--label", help="version label to print (default litellm-<version>)")
    args = parser.parse_args()
    path = _table_path()
    table: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    version = args.label or f"litellm-{importlib.metadata.version('litellm')}"
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
