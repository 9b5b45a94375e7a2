"""What a scan reports: findings (type, name, offsets) and the two verdicts.

A finding never carries the matched text: findings travel into logs, span
attributes and API answers, and a secret copied there would be leaked by the very
tool that was meant to catch it. Callers who hold the text can slice it themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

FindingType = Literal["pii", "injection"]
PII: FindingType = "pii"
INJECTION: FindingType = "injection"
# Which tier fired: a phrase of the automaton, a regex, or the learned classifier.
DETECTORS = ("phrase", "regex", "classifier")
_TRUSTED = frozenset({"system", "assistant"})  # scan/roles.py: no injection attempt there


@dataclass(frozen=True, slots=True, init=False)
class Finding:
    """One match: ``text[start:end]`` of the scanned text is a ``name`` of ``type``.

    Frozen, with the ``__init__`` a dataclass would generate written out: the generated
    one sets each field by ``object.__setattr__`` (~16k instructions a finding, ~10% of
    the scan stage on the bench's texts); this one calls each slot's setter (~9k).
    """

    type: FindingType
    name: str
    start: int
    end: int
    severity: str = "medium"
    # Which text was scanned: "prompt" / "completion" on spans, "text" for a plain scan.
    field: str = "text"
    detector: str = "regex"
    # The classifier's probability (its finding spans the scored window); None otherwise.
    score: float | None = None
    # Who wrote the text it is in (scan/roles.py) and that message's index (-1: none);
    # None for a plain scan of one text of unknown role.
    role: str | None = None
    message: int | None = None

    def __init__(self, type: FindingType, name: str, start: int, end: int,
                 severity: str = "medium", field: str = "text", detector: str = "regex",
                 score: float | None = None, role: str | None = None,
                 message: int | None = None) -> None:
        _type(self, type)
        _name(self, name)
        _start(self, start)
        _end(self, end)
        _severity(self, severity)
        _field(self, field)
        _detector(self, detector)
        _score(self, score)
        _role(self, role)
        _message(self, message)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (no matched text, by design)."""
        out: dict[str, Any] = {"type": self.type, "name": self.name, "start": self.start,
                               "end": self.end, "severity": self.severity, "field": self.field,
                               "detector": self.detector}
        if self.score is not None:
            out["score"] = self.score
        if self.role is not None:
            out["role"] = self.role
            if self.message is not None and self.message >= 0:
                out["message"] = self.message
        return out


# Each slot's setter (a C member descriptor: no __setattr__, which frozen forbids).
(_type, _name, _start, _end, _severity, _field, _detector, _score, _role, _message) = (
    vars(Finding)[f.name].__set__ for f in fields(Finding))


@dataclass(frozen=True, slots=True)
class ScanResult:
    """All findings of one scan, ordered by start offset."""

    findings: tuple[Finding, ...] = ()

    @property
    def pii_detected(self) -> bool:
        return any(f.type == PII for f in self.findings)

    @property
    def injection_attempt(self) -> bool:
        """An injection finding in untrusted text (a finding without a role is untrusted)."""
        return any(f.type == INJECTION and f.role not in _TRUSTED for f in self.findings)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form: the two verdicts and the findings."""
        return {"pii_detected": self.pii_detected, "injection_attempt": self.injection_attempt,
                "findings": [f.as_dict() for f in self.findings]}
