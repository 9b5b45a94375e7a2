"""Bad input of every kind gets its status and the JSON error body; the server stays up."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import ClientSession

from tests.api.conftest import MakeClient, make_collector

SPAN = {"model": "gpt-4o", "provider": "openai", "prompt_tokens": 10}


def assert_error(body: Any, code: str) -> None:
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code
    assert "Traceback" not in body["error"]["message"]


async def assert_healthy(api: Any) -> None:
    resp = await api.get("/v1/metrics/health")
    assert resp.status == 200


async def test_malformed_json_is_400(api: Any) -> None:
    resp = await api.post("/v1/metrics/record", data=b'{"model": "gpt-4o",',
                          headers={"Content-Type": "application/json"})
    assert resp.status == 400
    assert_error(await resp.json(), "malformed_json")
    await assert_healthy(api)


async def test_json_nested_absurdly_deep_is_400_not_a_crash(api: Any) -> None:
    # 400 kB, under the body limit: json.loads recurses past Python's limit on it.
    deep = b"[" * 200_000 + b"]" * 200_000
    for path in ("/v1/metrics/record-batch", "/v1/metrics/record"):
        resp = await api.post(path, data=deep, headers={"Content-Type": "application/json"})
        assert resp.status == 400
        assert_error(await resp.json(), "malformed_json")
    await assert_healthy(api)


async def test_a_body_that_is_not_what_its_content_encoding_says_is_400(api: Any) -> None:
    resp = await api.post("/v1/metrics/record", data=b"not gzip at all",
                          headers={"Content-Type": "application/json",
                                   "Content-Encoding": "gzip"})
    assert resp.status == 400
    assert_error(await resp.json(), "malformed_body")
    await assert_healthy(api)


async def test_get_routes_answer_head(api: Any) -> None:
    resp = await api.head("/v1/metrics/health")
    assert resp.status == 200


async def test_empty_body_is_400(api: Any) -> None:
    resp = await api.post("/v1/sampling/should-sample", data=b"",
                          headers={"Content-Type": "application/json"})
    assert resp.status == 400
    assert_error(await resp.json(), "malformed_json")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "application/xml"])
async def test_wrong_content_type_is_415(api: Any, content_type: str) -> None:
    resp = await api.post("/v1/metrics/record", data=b'{"model": "m", "provider": "p"}',
                          headers={"Content-Type": content_type})
    assert resp.status == 415
    body = await resp.json()
    assert_error(body, "unsupported_media_type")
    assert content_type in body["error"]["message"]


async def test_vendor_json_content_type_is_accepted(api: Any) -> None:
    resp = await api.post("/v1/sampling/should-sample", data=b'{"span_id": "a"}',
                          headers={"Content-Type": "application/vnd.api+json"})
    assert resp.status == 200


async def test_wrong_types_are_422_naming_every_field(api: Any) -> None:
    resp = await api.post("/v1/metrics/record", json={
        "model": 5, "provider": "openai", "prompt_tokens": "ten", "pii_detected": "yes"})
    assert resp.status == 422
    body = await resp.json()
    assert_error(body, "validation_failed")
    fields = {d["field"] for d in body["error"]["details"]}
    assert fields == {"model", "prompt_tokens", "pii_detected"}


async def test_missing_required_field_is_422(api: Any) -> None:
    resp = await api.post("/v1/instrumentation/detect", json={"body": "{}"})
    assert resp.status == 422
    body = await resp.json()
    assert body["error"]["details"] == [{"field": "url", "message": "is required"}]


async def test_json_that_is_not_an_object_is_422(api: Any) -> None:
    resp = await api.post("/v1/sampling/should-sample", json=["span_id"])
    assert resp.status == 422
    assert (await resp.json())["error"]["details"][0]["field"] == "$"


async def test_oversized_body_is_413_by_content_length(make_client: MakeClient) -> None:
    api = await make_client(max_body_bytes=1024)
    resp = await api.post("/v1/pii-injection/scan", json={"text": "x" * 2000})
    assert resp.status == 413
    body = await resp.json()
    assert_error(body, "payload_too_large")
    assert body["error"]["details"] == {"limit_bytes": 1024}
    await assert_healthy(api)


async def test_oversized_chunked_body_is_413(make_client: MakeClient) -> None:
    api = await make_client(max_body_bytes=1024)

    async def chunks() -> Any:
        yield b'{"text": "'
        for _ in range(20):
            yield b"y" * 100
        yield b'"}'

    resp = await api.post("/v1/pii-injection/scan", data=chunks(),
                          headers={"Content-Type": "application/json"})
    assert resp.status == 413
    assert_error(await resp.json(), "payload_too_large")
    await assert_healthy(api)


async def test_default_body_limit_is_one_mib(api: Any) -> None:
    ok = await api.post("/v1/pii-injection/scan", json={"text": "a" * 1_000_000})
    assert ok.status == 200
    too_big = await api.post("/v1/pii-injection/scan", json={"text": "a" * (1024 * 1024)})
    assert too_big.status == 413


async def test_unknown_route_is_404(api: Any) -> None:
    for path in ("/v1/nope", "/", "/v2/metrics/record"):
        resp = await api.get(path)
        assert resp.status == 404
        assert_error(await resp.json(), "not_found")


async def test_wrong_method_is_405_with_allow(api: Any) -> None:
    resp = await api.get("/v1/metrics/record")
    assert resp.status == 405
    assert resp.headers["Allow"] == "POST"
    body = await resp.json()
    assert_error(body, "method_not_allowed")
    assert body["error"]["details"] == {"allowed": ["POST"]}
    resp = await api.delete("/v1/version")
    assert resp.status == 405


async def test_unexpected_failure_is_500_without_traceback(make_client: MakeClient) -> None:
    collector = make_collector()

    class Broken:
        def scan(self, text: str) -> Any:
            raise RuntimeError("secret internal detail")

    collector.scanner = Broken()
    api = await make_client(collector)
    resp = await api.post("/v1/pii-injection/scan", json={"text": "hi"})
    assert resp.status == 500
    body = await resp.json()
    assert_error(body, "internal")
    assert "secret internal detail" not in await resp.text()
    await assert_healthy(api)


async def test_many_bad_requests_leave_the_server_serving(api: Any) -> None:
    url = str(api.make_url("/v1/metrics/record"))
    async with ClientSession() as session:
        for data in (b"{", b"[]", b"null", b'"x"', b"\xff\xfe", b'{"model": []}'):
            async with session.post(url, data=data,
                                    headers={"Content-Type": "application/json"}) as resp:
                assert resp.status in (400, 422)
                assert (await resp.json())["error"]["code"]
    resp = await api.post("/v1/metrics/record", json=SPAN)
    assert resp.status == 200


def _body_routes() -> list[tuple[str, str]]:
    from importlib import resources

    import yaml

    doc = yaml.safe_load((resources.files("llm_observe.api") / "contracts" / "v1.yaml")
                         .read_text())
    return [(m.upper(), p) for p, ops in doc["paths"].items() for m, op in ops.items()
            if op.get("requestBody", {}).get("required")]


BODY_ROUTES = _body_routes()


@pytest.mark.parametrize(("method", "path"), BODY_ROUTES, ids=[p for _, p in BODY_ROUTES])
async def test_every_body_route_rejects_bad_bodies(api: Any, method: str, path: str) -> None:
    cases = [(b'{"oops', "application/json", 400, "malformed_json"),
             (b"", "application/json", 400, "malformed_json"),
             (b"{}", "text/plain", 415, "unsupported_media_type"),
             (b"[1, 2]", "application/json", 422, "validation_failed")]
    for data, content_type, status, code in cases:
        resp = await api.request(method, path, data=data, headers={"Content-Type": content_type})
        assert resp.status == status, (path, data, await resp.text())
        assert_error(await resp.json(), code)
    await assert_healthy(api)


async def test_every_route_rejects_a_body_over_the_limit(make_client: MakeClient) -> None:
    api = await make_client(max_body_bytes=64)
    for method, path in BODY_ROUTES:
        resp = await api.request(method, path, json={"pad": "x" * 100})
        assert resp.status == 413, path
        assert_error(await resp.json(), "payload_too_large")
