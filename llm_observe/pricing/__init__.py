"""Prices: the dated table (:mod:`.table`, exact micro-USD cost, name resolution) and its
loader (:mod:`.loader`, ``model_prices.yaml`` with errors that name the entry)."""

from __future__ import annotations

from llm_observe.pricing.loader import (
    ENV_VAR,
    default_price_file,
    load_price_table,
    parse_price_table,
)
from llm_observe.pricing.table import PriceEntry, PriceTable

__all__ = ["ENV_VAR", "PriceEntry", "PriceTable", "default_price_file", "load_price_table",
           "parse_price_table"]
