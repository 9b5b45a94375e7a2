"""The patterns file's ``guard:`` section (the encoder tier's switch, gate, thresholds)."""

from __future__ import annotations

from typing import Any

import pytest

from llm_observe.errors import ConfigError
from llm_observe.scan.patterns import GuardSection, load_patterns, parse_patterns

ENTRY = {"name": "x", "kind": "injection", "phrases": ["ignore previous instructions"]}


def parse(guard: Any) -> GuardSection:
    return parse_patterns({"entries": [ENTRY], "guard": guard}).guard


def test_absent_section_is_on_with_the_models_settings() -> None:
    assert parse_patterns({"entries": [ENTRY]}).guard == GuardSection()


def test_shipped_file_has_it_on_for_scan_requests_and_off_on_spans() -> None:
    guard = load_patterns().guard
    assert guard.enabled and not guard.spans


def test_fields_parse() -> None:
    got = parse({"enabled": False, "gate": 0.1, "thresholds": {"tool": 0.97, "user": 0.9},
                 "spans": True})
    assert got == GuardSection(False, 0.1, (("user", 0.9), ("tool", 0.97)), True)


@pytest.mark.parametrize(("guard", "message"), [
    ([], "must be a mapping"),
    ({"gaet": 0.1}, "unknown field 'gaet'"),
    ({"gate": 2}, "'gate' must be a probability"),
    ({"thresholds": {"system": 0.5}}, "unknown role 'system'"),
    ({"enabled": "yes"}, "'enabled' must be true or false"),
    ({"spans": 1}, "'spans' must be true or false"),
])
def test_bad_section_names_the_field(guard: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse(guard)
