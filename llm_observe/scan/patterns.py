"""The patterns file (config/patterns.yaml): loading and validation.

Format (documented in docs/scanning.md)::

    version: 1
    entries:
      - name: email            # [a-z][a-z0-9_]*, unique; REDACTED:<NAME> uses it
        kind: pii              # pii | injection
        regex: '...'           # either regex ...
        validator: luhn        # optional, regex only: luhn | iban | ssn | phone | ipv6
        triggers: ["@"]        # optional, regex only: the regex runs only if one occurs
        min_digits: 13         # optional, regex only: ... and a digit run this long occurs
        severity: high         # optional: low | medium | high | critical (default medium)
        description: ...       # optional, free text
      - name: instruction_override
        kind: injection
        phrases: [ignore previous instructions, ...]   # ... or phrases

    classifier:                # optional: the learned injection tier (scan/classifier.py)
      enabled: true            # default true
      threshold: 0.81          # probability in (0, 1); default: the model's own
      thresholds:              # optional, per untrusted role (docs/scanning.md, "Roles")
        tool: 0.9              # user | tool; a role left out uses threshold

A bad file stops start-up with one ConfigError line naming the file, the entry and the
problem; nothing is half-loaded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from llm_observe.errors import ConfigError
from llm_observe.scan.findings import INJECTION, PII, FindingType
from llm_observe.scan.normalize import fold
from llm_observe.scan.validators import VALIDATORS

KINDS = ("pii", "injection")
SEVERITIES = ("low", "medium", "high", "critical")
_FIELDS = frozenset({"name", "kind", "phrases", "regex", "validator", "triggers", "min_digits",
                     "severity", "description"})
_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


@dataclass(frozen=True, slots=True)
class PatternEntry:
    """One named pattern: folded phrases, or a compiled regex with its gate and validator."""

    name: str
    kind: FindingType
    phrases: tuple[str, ...] = ()
    regex: re.Pattern[str] | None = None
    validator: str | None = None
    triggers: tuple[str, ...] = ()
    min_digits: int | None = None
    severity: str = "medium"
    description: str = ""


@dataclass(frozen=True, slots=True)
class ClassifierConfig:
    """The ``classifier:`` section: whether the learned tier runs, and its threshold."""

    enabled: bool = True
    threshold: float | None = None  # None: the threshold stored with the model
    # Per untrusted role (user, tool: scan/roles.py), replacing ``threshold`` there.
    thresholds: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class GuardSection:
    """The ``guard:`` section: the encoder tier (llm_observe.guard), when installed."""

    enabled: bool = True
    gate: float | None = None  # word-model probability at which it reads a text; None: model's
    thresholds: tuple[tuple[str, float], ...] = ()  # per untrusted role; else the model's
    # Also on the span path (gate + budget); scan requests (API, library) read it anyway.
    spans: bool = False


@dataclass(frozen=True, slots=True)
class PatternSet:
    """Every entry of one patterns file, in file order, and the classifier settings."""

    entries: tuple[PatternEntry, ...]
    source: str = "<memory>"
    classifier: ClassifierConfig = ClassifierConfig()
    guard: GuardSection = GuardSection()

    @property
    def phrase_count(self) -> int:
        return sum(len(e.phrases) for e in self.entries)

    def names(self, kind: str | None = None) -> list[str]:
        """Entry names, optionally of one kind."""
        return [e.name for e in self.entries if kind is None or e.kind == kind]


def default_patterns_path() -> Path:
    """The patterns file shipped inside the package (config/patterns.yaml)."""
    return Path(str(resources.files("llm_observe") / "config" / "patterns.yaml"))


def load_patterns(path: str | Path | None = None) -> PatternSet:
    """Load and validate a patterns file (None = the packaged default); ConfigError if bad."""
    file = Path(path) if path is not None else default_patterns_path()
    try:
        raw = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(file, "file", f"cannot read: {exc}") from None
    try:
        data = yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ConfigError(file, "file", f"invalid YAML{where}: {problem}") from None
    return parse_patterns(data, source=file)


def parse_patterns(data: Any, source: str | Path = "<memory>") -> PatternSet:
    """Validate an already-parsed patterns document (the YAML's top-level mapping)."""
    if not isinstance(data, dict):
        raise ConfigError(source, "file", "top level must be a mapping with 'entries'")
    unknown = sorted(set(data) - {"version", "entries", "classifier", "guard"})
    if unknown:
        raise ConfigError(source, "file", f"unknown top-level field {unknown[0]!r}")
    if data.get("version", 1) != 1:
        raise ConfigError(source, "file", f"unsupported version {data.get('version')!r} "
                                          "(this build reads version 1)")
    items = data.get("entries")
    if not isinstance(items, list) or not items:
        raise ConfigError(source, "file", "'entries' must be a non-empty list")
    entries: list[PatternEntry] = []
    seen_names: dict[str, int] = {}
    seen_phrases: dict[str, str] = {}
    for index, item in enumerate(items):
        entry = _parse_entry(source, index, item)
        label = f"entry {index} ({entry.name})"
        if entry.name in seen_names:
            raise ConfigError(source, label,
                              f"duplicate name (first used by entry {seen_names[entry.name]})")
        seen_names[entry.name] = index
        for phrase in entry.phrases:
            if phrase in seen_phrases:
                raise ConfigError(source, label, f"duplicate phrase {phrase!r} "
                                                 f"(already in {seen_phrases[phrase]})")
            seen_phrases[phrase] = entry.name
        entries.append(entry)
    return PatternSet(tuple(entries), str(source), _classifier(data.get("classifier"), source),
                      _guard(data.get("guard"), source))


def _classifier(value: Any, source: str | Path) -> ClassifierConfig:
    if value is None:
        return ClassifierConfig()
    if not isinstance(value, dict):
        raise ConfigError(source, "classifier", "must be a mapping (enabled, threshold)")
    unknown = sorted(set(value) - {"enabled", "threshold", "thresholds"})
    if unknown:
        raise ConfigError(source, "classifier", f"unknown field {unknown[0]!r}")
    enabled = value.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(source, "classifier", "'enabled' must be true or false")
    threshold = value.get("threshold")
    if threshold is not None:
        threshold = _probability(source, "'threshold'", threshold)
    per_role = value.get("thresholds") or {}
    if not isinstance(per_role, dict):
        raise ConfigError(source, "classifier", "'thresholds' must map a role to a threshold")
    bad = sorted(set(per_role) - set(THRESHOLD_ROLES), key=str)
    if bad:
        raise ConfigError(source, "classifier", f"'thresholds': unknown role {bad[0]!r} "
                                                f"(one of {', '.join(THRESHOLD_ROLES)})")
    return ClassifierConfig(enabled, threshold, tuple(
        (role, _probability(source, f"'thresholds.{role}'", per_role[role]))
        for role in THRESHOLD_ROLES if role in per_role))


def _guard(value: Any, source: str | Path) -> GuardSection:
    if value is None:
        return GuardSection()
    if not isinstance(value, dict):
        raise ConfigError(source, "guard", "must be a mapping (enabled, spans, gate, "
                                           "thresholds)")
    unknown = sorted(set(value) - {"enabled", "spans", "gate", "thresholds"})
    if unknown:
        raise ConfigError(source, "guard", f"unknown field {unknown[0]!r}")
    as_classifier = _classifier({k: v for k, v in value.items() if k not in ("gate", "spans")},
                                source)
    gate, spans = value.get("gate"), value.get("spans", False)
    if gate is not None:
        gate = _probability(source, "'gate'", gate)
    if not isinstance(spans, bool):
        raise ConfigError(source, "guard", "'spans' must be true or false")
    return GuardSection(as_classifier.enabled, gate, as_classifier.thresholds, spans)


THRESHOLD_ROLES = ("user", "tool")  # the untrusted roles (unknown text reads as user)


def _probability(source: str | Path, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise ConfigError(source, "classifier",
                          f"{name} must be a probability between 0 and 1, not {value!r}")
    return float(value)


def _parse_entry(source: str | Path, index: int, item: Any) -> PatternEntry:
    if not isinstance(item, dict):
        raise ConfigError(source, f"entry {index}", "must be a mapping")
    name = item.get("name")
    label = f"entry {index} ({name})" if isinstance(name, str) else f"entry {index}"

    def fail(message: str) -> ConfigError:
        return ConfigError(source, label, message)

    unknown = sorted(set(item) - _FIELDS)
    if unknown:
        raise fail(f"unknown field {unknown[0]!r}")
    if name is None:
        raise fail("missing field 'name'")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise fail("'name' must match [a-z][a-z0-9_]* (at most 64 characters)")
    kind = item.get("kind")
    if kind is None:
        raise fail("missing field 'kind'")
    if kind not in KINDS:
        raise fail(f"'kind' must be one of {', '.join(KINDS)}, not {kind!r}")
    kind_t: FindingType = PII if kind == PII else INJECTION
    severity = item.get("severity", "medium")
    if severity not in SEVERITIES:
        raise fail(f"'severity' must be one of {', '.join(SEVERITIES)}, not {severity!r}")
    description = item.get("description", "")
    if not isinstance(description, str):
        raise fail("'description' must be a string")
    has_phrases, has_regex = "phrases" in item, "regex" in item
    if has_phrases == has_regex:
        raise fail("needs exactly one of 'phrases' or 'regex'")
    if has_phrases:
        extra = sorted({"validator", "triggers", "min_digits"} & set(item))
        if extra:
            raise fail(f"{extra[0]!r} applies to regex entries only")
        return PatternEntry(name, kind_t, phrases=_phrases(item["phrases"], fail),
                            severity=severity, description=description)
    validator = item.get("validator")
    if validator is not None and validator not in VALIDATORS:
        raise fail(f"unknown validator {validator!r} (known: {', '.join(sorted(VALIDATORS))})")
    min_digits = item.get("min_digits")
    if min_digits is not None and (isinstance(min_digits, bool) or not isinstance(
            min_digits, int) or min_digits < 1):
        raise fail("'min_digits' must be a positive integer")
    return PatternEntry(name, kind_t, regex=_regex(item["regex"], fail), validator=validator,
                        triggers=_triggers(item.get("triggers", []), fail),
                        min_digits=min_digits, severity=severity, description=description)


def _phrases(value: Any, fail: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise fail("'phrases' must be a non-empty list")
    out: list[str] = []
    for i, phrase in enumerate(value):
        if not isinstance(phrase, str):
            raise fail(f"phrase {i} must be a string")
        folded = fold(phrase).text.strip()
        if not folded:
            raise fail(f"phrase {i} is empty")
        if folded not in out:
            out.append(folded)
    return tuple(out)


def _regex(value: Any, fail: Any) -> re.Pattern[str]:
    if not isinstance(value, str) or not value:
        raise fail("'regex' must be a non-empty string")
    try:
        compiled = re.compile(value)
    except re.error as exc:
        raise fail(f"bad regex: {exc}") from None
    if compiled.search("") is not None:
        # It would report an empty finding at every offset of every text.
        raise fail("regex matches the empty string")
    return compiled


def _triggers(value: Any, fail: Any) -> tuple[str, ...]:
    # Not stripped: a trailing space is how a trigger asks for a word end ("dan ").
    if not isinstance(value, list) or not all(isinstance(t, str) and fold(t).text.strip()
                                              for t in value):
        raise fail("'triggers' must be a list of non-empty strings")
    return tuple(dict.fromkeys(fold(t).text for t in value))
