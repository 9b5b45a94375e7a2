"""PII and prompt-injection scanning (spec 4.6; patterns in config/patterns.yaml).

Typical use::

    scanner = Scanner(load_patterns())          # once; the packaged default file
    result = scanner.scan(prompt)
    result.pii_detected, result.injection_attempt, result.findings
    safe = redact(prompt, result.findings)
"""

from __future__ import annotations

from llm_observe.scan.findings import INJECTION, PII, Finding, ScanResult
from llm_observe.scan.patterns import (
    PatternEntry,
    PatternSet,
    default_patterns_path,
    load_patterns,
    parse_patterns,
)
from llm_observe.scan.redact import redact
from llm_observe.scan.scanner import Scanner

__all__ = [
    "INJECTION",
    "PII",
    "Finding",
    "PatternEntry",
    "PatternSet",
    "ScanResult",
    "Scanner",
    "default_patterns_path",
    "load_patterns",
    "parse_patterns",
    "redact",
]
