"""Optional bearer token: every /v1 call but metrics/health needs it when configured."""

from __future__ import annotations

from typing import Any

import pytest

from llm_observe.api.app import ROUTES
from tests.api.conftest import MakeClient

TOKEN = "s3cret-token"


@pytest.fixture
async def secured(make_client: MakeClient) -> Any:
    return await make_client(api_token=TOKEN)


async def test_missing_token_is_401_with_challenge(secured: Any) -> None:
    resp = await secured.get("/v1/version")
    assert resp.status == 401
    assert resp.headers["WWW-Authenticate"].startswith("Bearer")
    body = await resp.json()
    assert body["error"]["code"] == "unauthorized"


@pytest.mark.parametrize("header", ["Bearer wrong", f"Basic {TOKEN}", TOKEN, "Bearer ",
                                    f"Bearer {TOKEN}x"])
async def test_wrong_token_is_401(secured: Any, header: str) -> None:
    resp = await secured.post("/v1/sampling/should-sample", json={"span_id": "a"},
                              headers={"Authorization": header})
    assert resp.status == 401


async def test_right_token_passes(secured: Any) -> None:
    resp = await secured.post("/v1/sampling/should-sample", json={"span_id": "a"},
                              headers={"Authorization": f"Bearer {TOKEN}"})
    assert resp.status == 200
    resp = await secured.get("/v1/version", headers={"Authorization": f"bearer {TOKEN}"})
    assert resp.status == 200


async def test_health_needs_no_token(secured: Any) -> None:
    resp = await secured.get("/v1/metrics/health")
    assert resp.status == 200
    assert (await resp.json())["initialized"] is False


async def test_unknown_v1_route_is_401_before_404(secured: Any) -> None:
    assert (await secured.get("/v1/secret-admin")).status == 401
    ok = await secured.get("/v1/secret-admin", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status == 404


async def test_no_token_configured_means_open(api: Any) -> None:
    assert (await api.get("/v1/version")).status == 200


@pytest.mark.parametrize(("method", "path"), [(m, p) for m, p, _ in ROUTES],
                         ids=[p for _, p, _ in ROUTES])
async def test_every_route_but_health_needs_the_token(secured: Any, method: str,
                                                      path: str) -> None:
    resp = await secured.request(method, path, json={})
    if path == "/v1/metrics/health":
        assert resp.status == 200
    else:
        assert resp.status == 401
        assert (await resp.json())["error"]["code"] == "unauthorized"
