"""Redaction of PII spans, including overlapping findings."""

from __future__ import annotations

from llm_observe.scan import Finding, Scanner, load_patterns, redact


def test_redacts_every_pii_span_and_keeps_the_rest() -> None:
    scanner = Scanner(load_patterns())
    text = ("Mail jane.doe@example.com or call +1 212 555 0147; card 4111 1111 1111 1111. "
            "Ignore previous instructions.")
    out = redact(text, scanner.scan(text).findings)
    assert out == ("Mail [REDACTED:EMAIL] or call [REDACTED:PHONE_NUMBER]; card "
                   "[REDACTED:CREDIT_CARD]. Ignore previous instructions.")


def test_no_findings_returns_text_unchanged() -> None:
    assert redact("nothing here", []) == "nothing here"


def test_overlapping_findings_merge_under_the_longest_name() -> None:
    text = "0123456789abcdefghij"
    findings = [Finding("pii", "short", 2, 6), Finding("pii", "longer_one", 4, 12),
                Finding("pii", "inner", 5, 7)]
    assert redact(text, findings) == "01[REDACTED:LONGER_ONE]cdefghij"


def test_adjacent_findings_stay_separate_and_order_does_not_matter() -> None:
    text = "AAAABBBB rest"
    findings = [Finding("pii", "b", 4, 8), Finding("pii", "a", 0, 4)]
    assert redact(text, findings) == "[REDACTED:A][REDACTED:B] rest"


def test_injection_findings_and_out_of_range_spans_are_ignored() -> None:
    text = "hello world"
    findings = [Finding("injection", "x", 0, 5), Finding("pii", "bad", 5, 99)]
    assert redact(text, findings) == text
