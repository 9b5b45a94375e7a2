"""Price table: the shipped file, exact cost arithmetic, name resolution, loader errors."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from llm_observe.errors import ConfigError
from llm_observe.pricing import (
    ENV_VAR,
    PriceEntry,
    PriceTable,
    default_price_file,
    load_price_table,
    parse_price_table,
)


@pytest.fixture(scope="module")
def table() -> PriceTable:
    return load_price_table()


def entry(input_price: str, output_price: str = "0", *, read: str | None = None,
          write: str | None = None) -> PriceEntry:
    return PriceEntry("m", "p", Decimal(input_price), Decimal(output_price), "test",
                      None if read is None else Decimal(read),
                      None if write is None else Decimal(write))


# --- the shipped file ---------------------------------------------------------

def test_shipped_file_has_60_models_from_8_providers(table: PriceTable) -> None:
    assert len({e.model.lower() for e in table.entries}) >= 60
    assert len(table.providers) >= 8
    # Providers answer by their one canonical name: the file's "google" is the Gemini API.
    assert {"openai", "anthropic", "gemini", "mistral", "deepseek", "xai", "cohere", "groq",
            "together"} <= table.providers
    assert all(e.version.strip() for e in table.entries)
    assert table.source == default_price_file()


def test_config_symlink_serves_the_packaged_file() -> None:
    repo = Path(__file__).resolve().parents[2]
    assert (repo / "config" / "model_prices.yaml").resolve() == Path(default_price_file()).resolve()


@pytest.mark.parametrize(("model", "provider", "prompt", "completion", "micro_usd"), [
    # hand-computed: tokens x USD per 1M = micro-USD
    ("gpt-4o", "openai", 1000, 500, 1000 * 2.5 + 500 * 10),                  # 7,500
    ("gpt-4o-mini", "openai", 12_000, 800, 12_000 * 0.15 + 800 * 0.6),       # 2,280
    ("claude-3-5-sonnet", "anthropic", 1200, 300, 1200 * 3 + 300 * 15),      # 8,100
    ("gemini-1.5-flash", "google", 10_000, 2000, 10_000 * 0.075 + 2000 * 0.3),  # 1,350
    ("deepseek-chat", "deepseek", 1000, 1000, 280 + 420),
    ("llama-3.3-70b-versatile", "groq", 1000, 1000, 590 + 790),
    ("command-r-08-2024", "cohere", 4000, 1000, 4000 * 0.15 + 1000 * 0.6),    # 1,200
    ("mistral-large-2411", "mistral", 1_000_000, 1_000_000, 2_000_000 + 6_000_000),
])
def test_known_list_prices(table: PriceTable, model: str, provider: str, prompt: int,
                           completion: int, micro_usd: float) -> None:
    found = table.lookup(model, provider)
    assert found is not None
    assert found.cost_usd_micro(prompt, completion) == round(micro_usd)


# --- exact arithmetic, half up ------------------------------------------------

@pytest.mark.parametrize(("price", "tokens", "expected"), [
    ("0.15", 333, 50),   # 49.95
    ("0.15", 3, 0),      # 0.45
    ("0.15", 10, 2),     # 1.5 -> 2 (half up)
    ("2.5", 1, 3),       # 2.5 -> 3 (Python's round() would give 2)
    ("0.5", 1, 1),       # 0.5 -> 1 (round() would give 0)
    ("0.29", 50, 15),    # 14.5 exactly; as floats 50 * 0.29 = 14.499999999999998
    ("0.175", 180, 32),  # 31.5 exactly; floats give 31.499999999999996
    ("0.0375", 4, 0),    # 0.15
    ("0.0375", 40, 2),   # 1.5
])
def test_rounds_half_up_exactly(price: str, tokens: int, expected: int) -> None:
    assert entry(price).cost_usd_micro(tokens, 0) == expected


def test_float_price_from_yaml_is_read_as_written(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("- {model: qwen, provider: groq, input_price_per_1m: 0.29, "
                    "output_price_per_1m: 0.59, version: v1}\n")
    found = load_price_table(path).lookup("qwen", "groq")
    assert found is not None
    assert found.input_price_per_1m == Decimal("0.29")
    assert found.cost_usd_micro(50, 0) == 15


def test_input_and_output_sum_before_rounding() -> None:
    # 0.45 + 0.45 = 0.9 -> 1; rounding each part first would give 0.
    assert entry("0.15", "0.15").cost_usd_micro(3, 3) == 1


def test_cached_tokens_are_part_of_prompt_and_never_double_counted() -> None:
    e = entry("3", "15", read="0.3", write="3.75")
    # 100 uncached + 2000 cache writes: 300 + 7,500 + 500 x 15
    assert e.cost_usd_micro(2100, 500, 0, 2000) == 300 + 7500 + 7500
    # cached tokens beyond prompt_tokens are clamped, not billed on top
    assert e.cost_usd_micro(1000, 0, 5000, 5000) == 1000 * 0.3


def test_missing_cache_prices_bill_cached_tokens_at_input_price() -> None:
    assert entry("2", "8").cost_usd_micro(1000, 0, 600, 300) == 2000
    # only a read price: writes fall back to the input price
    assert entry("2", "8", read="0.5").cost_usd_micro(1000, 0, 600, 300) == 300 + 600 + 200


# --- name resolution ----------------------------------------------------------

@pytest.mark.parametrize(("model", "provider", "base"), [
    ("gpt-4o-2024-08-06", "openai", "gpt-4o"),
    ("gpt-4o-mini-2024-07-18", "openai", "gpt-4o-mini"),
    ("claude-3-5-sonnet-20241022", "anthropic", "claude-3-5-sonnet"),
    ("claude-3-5-sonnet@20240620", "anthropic", "claude-3-5-sonnet"),   # Vertex spelling
    ("claude-3-5-sonnet-latest", "anthropic", "claude-3-5-sonnet"),
    ("claude-sonnet-4-5-20250929", "anthropic", "claude-sonnet-4-5"),
    ("gemini-1.5-pro-002", "google", "gemini-1.5-pro"),
    ("gpt-4-0613", "openai", "gpt-4"),
    ("grok-4-0709", "xai", "grok-4"),
    ("mistral-large-latest", "mistral", "mistral-large"),
    ("mistral-large-2512", "mistral", "mistral-large"),
])
def test_dated_snapshots_resolve_to_base(table: PriceTable, model: str, provider: str,
                                         base: str) -> None:
    found = table.lookup(model, provider)
    assert found is not None and found.model == base


def test_snapshot_with_its_own_entry_uses_it(table: PriceTable) -> None:
    old = table.lookup("gpt-4o-2024-05-13", "openai")
    assert old is not None and old.model == "gpt-4o-2024-05-13"
    assert old.cost_usd_micro(1000, 1000) == 5000 + 15000   # not gpt-4o's 2,500 + 10,000
    large = table.lookup("mistral-large-2411", "mistral")
    assert large is not None and large.input_price_per_1m == Decimal("2")


@pytest.mark.parametrize(("model", "provider", "want_model", "want_provider"), [
    ("openai/gpt-4o", "litellm", "gpt-4o", "openai"),
    ("anthropic/claude-3-5-sonnet-20241022", "litellm", "claude-3-5-sonnet", "anthropic"),
    ("gemini/gemini-2.5-flash", "litellm", "gemini-2.5-flash", "google"),
    ("models/gemini-2.5-flash", "gcp.gemini", "gemini-2.5-flash", "google"),
    ("together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo", "together_ai",
     "meta-llama/Llama-3.3-70B-Instruct-Turbo", "together"),
    ("groq/openai/gpt-oss-120b", "litellm", "openai/gpt-oss-120b", "groq"),
    ("deepseek-ai/DeepSeek-R1-0528", "together", "deepseek-ai/DeepSeek-R1", "together"),
])
def test_provider_prefixed_names(table: PriceTable, model: str, provider: str, want_model: str,
                                 want_provider: str) -> None:
    found = table.lookup(model, provider)
    assert found is not None
    assert (found.model, found.provider) == (want_model, want_provider)


def test_provider_and_model_match_case_insensitively_and_by_alias(table: PriceTable) -> None:
    assert table.lookup("GPT-4o", "OpenAI") is table.lookup("gpt-4o", "openai")
    gemini = table.lookup("gemini-2.5-pro", "gcp.gemini")
    assert gemini is not None and gemini.provider == "google"
    mistral = table.lookup("codestral", "mistral_ai")
    assert mistral is not None and mistral.provider == "mistral"


def test_model_alone_when_one_provider_prices_it(table: PriceTable) -> None:
    # Azure OpenAI reports OpenAI's model names; only openai prices gpt-4o.
    found = table.lookup("gpt-4o", "azure.ai.openai")
    assert found is not None and found.provider == "openai"


def test_ambiguous_or_unknown_models_are_unpriced(table: PriceTable) -> None:
    # gpt-oss-120b is priced by groq and together at different hosts: no guess.
    assert table.lookup("openai/gpt-oss-120b", "fireworks") is None
    assert table.lookup("my-finetune-v7", "openai") is None
    # fine-tunes bill at their own rates, never at the base model's
    assert table.lookup("ft:gpt-4o-mini-2024-07-18:acme::abc123", "openai") is None


def test_exact_provider_entry_wins_over_other_hosts(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "- {model: llama, provider: groq, input_price_per_1m: 1, output_price_per_1m: 1,"
        " version: g}\n"
        "- {model: llama, provider: together, input_price_per_1m: 2, output_price_per_1m: 2,"
        " version: t}\n")
    t = load_price_table(path)
    assert t.lookup("llama", "Together").version == "t"  # type: ignore[union-attr]
    assert t.lookup("llama", "groq").version == "g"  # type: ignore[union-attr]
    assert t.lookup("llama", "other") is None


# --- which file ---------------------------------------------------------------

def _small_file(path: Path, version: str) -> Path:
    path.write_text(f"- {{model: m, provider: p, input_price_per_1m: 1, output_price_per_1m: 2, "
                    f"version: {version}}}\n")
    return path


def test_env_var_overrides_default_and_explicit_path_overrides_env(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_file = _small_file(tmp_path / "env.yaml", "from-env")
    arg_file = _small_file(tmp_path / "arg.yaml", "from-arg")
    monkeypatch.setenv(ENV_VAR, str(env_file))
    assert load_price_table().lookup("m", "p").version == "from-env"  # type: ignore[union-attr]
    assert load_price_table(arg_file).lookup("m", "p").version == "from-arg"  # type: ignore[union-attr]
    monkeypatch.delenv(ENV_VAR)
    assert load_price_table().lookup("m", "p") is None


def test_unquoted_date_version_is_kept_as_text(tmp_path: Path) -> None:
    t = load_price_table(_small_file(tmp_path / "p.yaml", "2025-08-07"))
    assert t.lookup("m", "p").version == "2025-08-07"  # type: ignore[union-attr]


# --- loader rejections ----------------------------------------------------------

GOOD = ("- model: a\n  provider: openai\n  input_price_per_1m: 1\n  output_price_per_1m: 2\n"
        "  version: v1\n")


@pytest.mark.parametrize(("body", "expected"), [
    ("model: a\nprovider: b\n", ["file", "must be a YAML list", "got a dict"]),
    ("", ["file", "got empty"]),
    ("[]\n", ["file", "no price entries"]),
    ("- model: a\n  provider: [unclosed\n", ["file", "invalid YAML at line"]),
    (GOOD + "- just a string\n", ["entry[1] (line 6)", "must be a mapping"]),
    (GOOD + "- model: b\n  provider: openai\n  input_price_per_1m: 1\n  version: v1\n",
     ["entry[1] (line 6, model 'b')", "'output_price_per_1m'", "is missing"]),
    (GOOD + "- model: b\n  provider: openai\n  input_price_per_1m: cheap\n"
     "  output_price_per_1m: 2\n  version: v1\n",
     ["entry[1] (line 6, model 'b')", "'input_price_per_1m'", "must be a number", "'cheap'"]),
    (GOOD + "- model: b\n  provider: openai\n  input_price_per_1m: true\n"
     "  output_price_per_1m: 2\n  version: v1\n",
     ["entry[1]", "'input_price_per_1m'", "must be a number"]),
    (GOOD + "- model: 42\n  provider: openai\n  input_price_per_1m: 1\n"
     "  output_price_per_1m: 2\n  version: v1\n",
     ["entry[1] (line 6)", "'model'", "must be a string", "int"]),
    (GOOD + "- model: b\n  provider: openai\n  input_price_per_1m: 1\n"
     "  output_price_per_1m: -0.5\n  version: v1\n",
     ["entry[1] (line 6, model 'b')", "'output_price_per_1m'", "must be >= 0", "-0.5"]),
    (GOOD + "- model: b\n  provider: openai\n  input_price_per_1m: 1\n"
     "  output_price_per_1m: 2\n  cache_read_price_per_1m: -1\n  version: v1\n",
     ["entry[1]", "'cache_read_price_per_1m'", "must be >= 0"]),
    (GOOD + "- model: b\n  provider: openai\n  input_price_per_1m: .nan\n"
     "  output_price_per_1m: 2\n  version: v1\n",
     ["entry[1]", "'input_price_per_1m'", "finite"]),
    (GOOD + "- model: b\n  provider: openai\n  input_price_per_1m: 0.0000000001\n"
     "  output_price_per_1m: 2\n  version: v1\n",
     ["entry[1]", "'input_price_per_1m'", "decimal places"]),
    (GOOD + "- model: b\n  provider: openai\n  input_price_per_1m: 1\n"
     "  output_price_per_1m: 2\n  version: '  '\n",
     ["entry[1] (line 6, model 'b')", "'version'", "must not be empty"]),
    (GOOD + "- model: b\n  provider: openai\n  input_price_per_1m: 1\n"
     "  output_price_per_1m: 2\n",
     ["entry[1]", "'version'", "is missing"]),
    (GOOD + "- model: b\n  provider: openai\n  input_price_per_1m: 1\n"
     "  output_price_per_1m: 2\n  cache_read_price_per_1M: 0.1\n  version: v1\n",
     ["entry[1]", "'cache_read_price_per_1M'", "unknown field"]),
    (GOOD + GOOD.replace("model: a", "model: x") + GOOD.replace("model: a", "model: A")
     .replace("openai", "OpenAI"),
     ["entry[2] (line 11, model 'A')", "'model'", "duplicate (model, provider)",
      "('a', 'openai')", "entry[0] (line 1)"]),
])
def test_bad_file_is_rejected_naming_file_entry_and_field(
        tmp_path: Path, body: str, expected: list[str]) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(body)
    with pytest.raises(ConfigError) as info:
        load_price_table(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert "\n" not in message
    for part in expected:
        assert part in message


def test_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError, match=r"nope\.yaml: file: cannot read price file"):
        load_price_table(missing)


def test_parse_price_table_names_its_source() -> None:
    with pytest.raises(ConfigError, match=r"^upload: file: has no price entries$"):
        parse_price_table("[]", source="upload")


def test_a_host_with_its_own_prices_never_borrows_anothers(table: PriceTable) -> None:
    # Groq lists llama-3.3-70b-versatile; Together has entries of its own, so a Together
    # span of that name is unpriced (null, counted), not billed at Groq's price.
    groq = table.lookup("llama-3.3-70b-versatile", "groq")
    assert groq is not None and groq.provider == "groq"
    assert table.lookup("llama-3.3-70b-versatile", "together") is None
    # Hosts with no entries of their own resell the model's list price.
    azure = table.lookup("gpt-4o", "azure")
    bedrock = table.lookup("claude-3-5-sonnet-20241022", "bedrock")
    assert azure is not None and azure.provider == "openai"
    assert bedrock is not None and bedrock.provider == "anthropic"
