"""``GET /v1/version`` and ``GET /v1/openapi.yaml`` (spec 9)."""

from __future__ import annotations

from functools import cache
from importlib import resources

from aiohttp import web

from llm_observe import __version__
from llm_observe.api.keys import AppKeys

API_VERSION = "v1"


@cache
def openapi_text() -> str:
    """The OpenAPI 3.1 contract shipped in the package (``api/contracts/v1.yaml``)."""
    return (resources.files("llm_observe.api") / "contracts" / "v1.yaml").read_text("utf-8")


async def version_handler(request: web.Request) -> web.Response:
    """Package and API version, and which price table (file, versions) prices spans."""
    table = request.app[AppKeys.collector].price_table
    versions = sorted({entry.version for entry in table.entries})
    return web.json_response({
        "version": __version__,
        "api_version": API_VERSION,
        "price_table": {"source": table.source, "entries": len(table),
                        "versions": versions},
    })


async def openapi_handler(request: web.Request) -> web.Response:
    """The OpenAPI contract as YAML."""
    return web.Response(text=openapi_text(), content_type="application/yaml")
