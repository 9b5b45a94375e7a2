"""ScanProcessor: PII and injection flags for each span's prompt and completion text.

A text longer than ``max_text_chars`` is scanned on its first ``max_text_chars``
characters (PII-dense text scans at ~0.4 µs a character); the span's ``notes`` say
so, and the forwarder redacts what was not scanned rather than send it raw.
"""

from __future__ import annotations

from llm_observe.scan import Finding, Scanner
from llm_observe.scan.cache import ScanCache
from llm_observe.scan.messages import RoleScanner
from llm_observe.scan.roles import ASSISTANT, UNKNOWN
from llm_observe.span import LlmSpan

DEFAULT_MAX_TEXT_CHARS = 100_000


class ScanProcessor:
    """Scans ``prompt_text`` and ``completion_text``, each part under its role's rule
    (``span.text_roles``; scan/roles.py); ORs the verdicts into the span.

    ``injection_attempt`` means an injection finding in *untrusted* text: a user turn, a
    tool result or retrieved document, or text of unknown role (a prompt without roles).
    The app's own instructions and the model's completion are scanned for PII only.
    A flag the caller already set to True stays True (a client may know more than our
    patterns). ``span.findings`` is *set* to this scan's findings, each labelled
    ``field="prompt"`` or ``"completion"`` and with its role and message index, so
    running the stage twice is harmless: every PII finding, and at least one injection
    finding when the text is an injection attempt (the API's scan endpoint lists every
    injection occurrence). Spans without text keep their flags and get no findings.
    Pure CPU, no I/O.

    ``cache``: results of message runs of at least ``cache.min_chars`` characters, by
    exact text (scan/cache.py: the system prompt and history a conversation repeats on
    every call are scanned once): ``True`` (the default) a :class:`ScanCache` of this
    stage's own, ``False`` none (everything scanned afresh). Same findings either way.
    """

    name = "scan"
    blocking = False

    def __init__(self, scanner: Scanner, max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
                 cache: ScanCache | bool = True) -> None:
        self.scanner = scanner
        self.cache = cache if isinstance(cache, ScanCache) else ScanCache() if cache else None
        self.roles = RoleScanner(scanner, self.cache)
        self.max_text_chars = max_text_chars

    def process(self, batch: list[LlmSpan]) -> None:
        scan = self._scan
        for span in batch:
            findings: list[Finding] = []
            if span.scanned_chars:  # idempotent: a re-run sets it afresh
                span.scanned_chars.clear()
            if span.prompt_text:
                findings.extend(scan(span, span.prompt_text, "prompt", UNKNOWN))
            if span.completion_text:
                findings.extend(scan(span, span.completion_text, "completion", ASSISTANT))
            span.findings = findings
            if findings:
                span.pii_detected = span.pii_detected or any(f.type == "pii" for f in findings)
                span.injection_attempt = span.injection_attempt or any(
                    f.type == "injection" for f in findings)

    def _scan(self, span: LlmSpan, text: str, which: str, default: str) -> list[Finding]:
        # Flags and redaction need the injection verdict and every PII occurrence,
        # not each further injection occurrence: skip the regexes that cannot add one.
        limit = self.max_text_chars
        if len(text) > limit:
            note = f"{which} scan: scanned {limit} of {len(text)} characters"
            if note not in span.notes:
                span.notes.append(note)
            span.scanned_chars[which] = limit
            text = text[:limit]
        segments = span.text_roles.get(which) if span.text_roles else None
        return self.roles.scan(text, segments, default, which, every_injection=False)
