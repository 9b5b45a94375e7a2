"""Prices: the dated table (:mod:`.table`, name resolution), its entries (:mod:`.entry`:
context tiers, service tiers, exact micro-USD cost of a :class:`Usage`), the loader
(:mod:`.loader`, ``model_prices.yaml`` with errors that name the entry and field) and the
bounded record of models seen without a price (:mod:`.unpriced`)."""

from __future__ import annotations

from llm_observe.pricing.entry import ContextTier, PriceEntry, ServiceTier
from llm_observe.pricing.loader import (
    ENV_VAR,
    default_price_file,
    load_price_table,
    parse_price_table,
)
from llm_observe.pricing.table import PriceTable
from llm_observe.pricing.unpriced import UnpricedTracker
from llm_observe.pricing.usage import Usage

__all__ = ["ENV_VAR", "ContextTier", "PriceEntry", "PriceTable", "ServiceTier",
           "UnpricedTracker", "Usage", "default_price_file", "load_price_table",
           "parse_price_table"]
