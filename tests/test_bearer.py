"""The one bearer-token rule every door uses (REST API, /metrics, OTLP metadata)."""

from __future__ import annotations

from llm_observe.bearer import bearer_ok

TOKEN = b"s3cret"


def test_one_bearer_value_with_the_token_passes_whatever_the_scheme_case() -> None:
    assert bearer_ok(["Bearer s3cret"], TOKEN)
    assert bearer_ok([b"bearer   s3cret"], TOKEN)


def test_anything_else_fails_without_raising() -> None:
    for values in ([], ["Bearer"], ["Bearer s3cre"], ["Basic s3cret"], ["Bearer s3cret"] * 2,
                   [b"Bearer \xff\xfe"], ["Bearer s3cret\ud800"], [b"Bearer s3cret\x00"]):
        assert not bearer_ok(values, TOKEN), values


def test_aiohttps_surrogateescape_decoding_is_undone_before_comparing() -> None:
    token = "tök".encode()
    header = b"Bearer " + token
    assert bearer_ok([header.decode("utf-8", "surrogateescape")], token)
    assert bearer_ok([header.decode("latin-1").encode("latin-1")], token)
