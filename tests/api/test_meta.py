"""GET /v1/version and GET /v1/openapi.yaml."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

import llm_observe


async def test_version_reports_package_and_price_versions(api: Any) -> None:
    resp = await api.get("/v1/version")
    body = await resp.json()
    assert body["version"] == llm_observe.__version__ == "1.8.2"
    assert body["api_version"] == "v1"
    table = body["price_table"]
    assert table["entries"] > 50 and table["source"].endswith("model_prices.yaml")
    assert table["versions"] == sorted(set(table["versions"])) and table["versions"]


async def test_openapi_is_the_shipped_contract(api: Any) -> None:
    resp = await api.get("/v1/openapi.yaml")
    assert resp.status == 200
    assert resp.content_type == "application/yaml"
    text = await resp.text()
    shipped = (resources.files("llm_observe.api") / "contracts" / "v1.yaml").read_text()
    assert text == shipped
    doc = yaml.safe_load(text)
    assert doc["openapi"].startswith("3.1")
    assert doc["info"]["version"] == llm_observe.__version__
