"""``GET /v1/pricing/models``: the price table as loaded, and the models seen unpriced.

The table part (source file, how it was chosen, versions, every entry with its context
and service tiers) is what prices every span, so a cost can be audited against it; the
unpriced part is the cost step's bounded record since start, so the
``llm_observe_unpriced_spans_total`` signal names the models to add.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from aiohttp import web

from llm_observe.api.keys import AppKeys
from llm_observe.pricing.table import PriceTable


@lru_cache(maxsize=4)
def _table_body(table: PriceTable) -> dict[str, Any]:
    # The table never changes after load: serialise its ~150 entries once.
    return {
        "source": table.source,
        "origin": table.origin,
        "versions": sorted({entry.version for entry in table.entries}),
        "entries_count": len(table),
        "entries": [entry.as_dict() for entry in table.entries],
    }


async def models_handler(request: web.Request) -> web.Response:
    """``{source, origin, versions, entries_count, entries, unpriced}``."""
    collector = request.app[AppKeys.collector]
    body = {**_table_body(collector.price_table), "unpriced": collector.cost.unpriced.snapshot()}
    return web.json_response(body)
