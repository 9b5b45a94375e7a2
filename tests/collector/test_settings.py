from __future__ import annotations

import pytest

from llm_observe.collector.settings import Settings
from llm_observe.errors import ConfigError


def test_environment_then_overrides() -> None:
    env = {"LLM_OBSERVE_METRICS_PORT": "9999", "LLM_OBSERVE_REDACT_PII": "false",
           "LLM_OBSERVE_API_TOKEN": "s3cret"}
    s = Settings.from_env(env, port=8123, host=None)
    assert (s.metrics_port, s.redact_pii, s.api_token, s.port, s.host) == (
        9999, False, "s3cret", 8123, "127.0.0.1")


@pytest.mark.parametrize(("env", "needle"), [
    ({"LLM_OBSERVE_PORT": "eighty"}, "LLM_OBSERVE_PORT"),
    ({"LLM_OBSERVE_PORT": "70000"}, "port"),
    ({"LLM_OBSERVE_REDACT_PII": "maybe"}, "LLM_OBSERVE_REDACT_PII"),
    ({"LLM_OBSERVE_MAX_BATCH_SPANS": "0"}, "max_batch_spans"),
    ({"LLM_OBSERVE_CONFIG_DIR": "/nonexistent/dir"}, "config_dir"),
    ({"LLM_OBSERVE_REDIS_URL": "localhost:6379"}, "redis_url"),
])
def test_bad_values_name_the_field(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        Settings.from_env(env)


def test_config_file_resolution(tmp_path) -> None:  # type: ignore[no-untyped-def]
    s = Settings.from_env({}, config_dir=str(tmp_path))
    assert s.config_file("patterns.yaml") == str(tmp_path / "patterns.yaml")
    s2 = Settings.from_env({"LLM_OBSERVE_PRICES_FILE": "/x/p.yaml"})
    assert s2.config_file("model_prices.yaml") == "/x/p.yaml"
    assert s2.config_file("patterns.yaml") is None


def test_an_empty_variable_counts_as_unset() -> None:
    s = Settings.from_env({"LLM_OBSERVE_HOST": "", "LLM_OBSERVE_PORT": " "})
    assert (s.host, s.port) == ("127.0.0.1", 8000)
