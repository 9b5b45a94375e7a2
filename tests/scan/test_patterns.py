"""The patterns file: the shipped default, and one-line errors for every kind of bad entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_observe.errors import ConfigError
from llm_observe.scan import load_patterns
from llm_observe.scan.patterns import default_patterns_path

GOOD = """\
version: 1
entries:
  - name: email
    kind: pii
    regex: '[a-z]+@[a-z]+\\.com'
    triggers: ["@"]
  - name: override
    kind: injection
    phrases: [ignore previous instructions]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "patterns.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_default_file_ships_the_promised_coverage() -> None:
    patterns = load_patterns()
    pii = patterns.names("pii")
    assert len(pii) >= 12
    for kind in ("email", "phone_number", "credit_card", "us_ssn", "ipv4_address",
                 "ipv6_address", "iban", "openai_api_key", "anthropic_api_key",
                 "aws_access_key_id", "github_token", "google_api_key", "slack_token",
                 "stripe_secret_key", "jwt", "private_key"):
        assert kind in pii
    injection_phrases = sum(len(e.phrases) for e in patterns.entries if e.kind == "injection")
    assert injection_phrases >= 100
    assert any(e.regex is not None for e in patterns.entries if e.kind == "injection")


def test_default_path_is_inside_the_package_and_config_symlink_agrees() -> None:
    path = default_patterns_path()
    assert path.is_file()
    assert path.parent.name == "config" and path.parent.parent.name == "llm_observe"
    repo_config = Path(__file__).resolve().parents[2] / "config" / "patterns.yaml"
    assert repo_config.read_bytes() == path.read_bytes()


def test_a_good_custom_file_loads(tmp_path: Path) -> None:
    patterns = load_patterns(write(tmp_path, GOOD))
    assert patterns.names() == ["email", "override"]
    assert patterns.entries[0].triggers == ("@",)
    assert patterns.entries[1].phrases == ("ignore previous instructions",)
    assert patterns.source.endswith("patterns.yaml")


def test_phrases_are_folded_at_load(tmp_path: Path) -> None:
    text = GOOD.replace("[ignore previous instructions]", '["Ignore   PREVIOUS\\tinstructions"]')
    patterns = load_patterns(write(tmp_path, text))
    assert patterns.entries[1].phrases == ("ignore previous instructions",)


BAD_ENTRIES = [
    # (replacement for the email entry, expected entry label, expected words in message)
    ("  - name: email\n    kind: pii\n    regex: '[a-z+'\n",
     "entry 0 (email)", "bad regex: unterminated character set at position 0"),
    ("  - kind: pii\n    regex: 'x'\n", "entry 0", "missing field 'name'"),
    ("  - name: email\n    regex: 'x'\n", "entry 0 (email)", "missing field 'kind'"),
    ("  - name: email\n    kind: secret\n    regex: 'x'\n", "entry 0 (email)",
     "'kind' must be one of pii, injection"),
    ("  - name: email\n    kind: pii\n    regex: 'x'\n    validator: crc32\n",
     "entry 0 (email)",
     "unknown validator 'crc32' (known: iban, ipv6, luhn, phone, phone_national, ssn)"),
    ("  - name: email\n    kind: injection\n    phrases: []\n", "entry 0 (email)",
     "'phrases' must be a non-empty list"),
    ("  - name: email\n    kind: injection\n    phrases: ['  ']\n", "entry 0 (email)",
     "phrase 0 is empty"),
    ("  - name: email\n    kind: pii\n", "entry 0 (email)",
     "needs exactly one of 'phrases' or 'regex'"),
    ("  - name: email\n    kind: pii\n    regex: 'x'\n    phrases: [x]\n", "entry 0 (email)",
     "needs exactly one of 'phrases' or 'regex'"),
    ("  - name: email\n    kind: pii\n    regx: 'x'\n", "entry 0 (email)",
     "unknown field 'regx'"),
    ("  - name: email\n    kind: pii\n    regex: 'a*'\n", "entry 0 (email)",
     "regex matches the empty string"),
    ("  - name: email\n    kind: injection\n    phrases: [x]\n    validator: luhn\n",
     "entry 0 (email)", "'validator' applies to regex entries only"),
    ("  - name: email\n    kind: pii\n    regex: 'x'\n    min_digits: 0\n", "entry 0 (email)",
     "'min_digits' must be a positive integer"),
    ("  - name: email\n    kind: pii\n    regex: 'x'\n    severity: urgent\n", "entry 0 (email)",
     "'severity' must be one of low, medium, high, critical"),
    ("  - name: Email-Address\n    kind: pii\n    regex: 'x'\n", "entry 0 (Email-Address)",
     "'name' must match"),
    ("  - name: override\n    kind: pii\n    regex: 'x'\n", "entry 1 (override)",
     "duplicate name (first used by entry 0)"),
    ("  - name: other\n    kind: injection\n    phrases: ['Ignore previous  instructions']\n",
     "entry 1 (override)", "duplicate phrase 'ignore previous instructions' (already in other)"),
    ("  - just a string\n", "entry 0", "must be a mapping"),
]


@pytest.mark.parametrize(("entry", "label", "message"), BAD_ENTRIES)
def test_bad_entry_names_file_entry_and_problem_on_one_line(
        tmp_path: Path, entry: str, label: str, message: str) -> None:
    email_entry = GOOD.split("  - name: override")[0].split("entries:\n")[1]
    path = write(tmp_path, GOOD.replace(email_entry, entry))
    with pytest.raises(ConfigError) as info:
        load_patterns(path)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"{path}: {label}: ")
    assert message in text


@pytest.mark.parametrize(("content", "message"), [
    ("entries: [\n  - name: x\n", "invalid YAML at line"),
    ("- just\n- a list\n", "top level must be a mapping"),
    ("version: 2\nentries: []\n", "unsupported version 2"),
    ("version: 1\nentries: []\n", "'entries' must be a non-empty list"),
    ("version: 1\npatterns: []\nentries: []\n", "unknown top-level field 'patterns'"),
])
def test_bad_file_structure(tmp_path: Path, content: str, message: str) -> None:
    path = write(tmp_path, content)
    with pytest.raises(ConfigError) as info:
        load_patterns(path)
    assert str(info.value).startswith(f"{path}: file: ")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.yaml: file: cannot read"):
        load_patterns(tmp_path / "nope.yaml")
