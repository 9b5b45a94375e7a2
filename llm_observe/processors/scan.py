"""ScanProcessor: PII and injection flags for each span's prompt and completion text."""

from __future__ import annotations

from llm_observe.scan import Finding, Scanner
from llm_observe.span import LlmSpan


class ScanProcessor:
    """Scans ``prompt_text`` and ``completion_text``; ORs the verdicts into the span.

    A flag the caller already set to True stays True (a client may know more than our
    patterns). ``span.findings`` is *set* to this scan's findings, each labelled
    ``field="prompt"`` or ``"completion"``, so running the stage twice is harmless: every
    PII finding, and at least one injection finding when the text is an injection attempt
    (the API's scan endpoint lists every injection occurrence).
    Spans without text keep their flags and get no findings. Pure CPU, no I/O.
    """

    name = "scan"
    blocking = False

    def __init__(self, scanner: Scanner) -> None:
        self.scanner = scanner

    def process(self, batch: list[LlmSpan]) -> None:
        scan = self.scanner.scan
        for span in batch:
            findings: list[Finding] = []
            # Flags and redaction need the injection verdict and every PII occurrence,
            # not each further injection occurrence: skip the regexes that cannot add one.
            if span.prompt_text:
                findings.extend(scan(span.prompt_text, "prompt", every_injection=False).findings)
            if span.completion_text:
                findings.extend(
                    scan(span.completion_text, "completion", every_injection=False).findings)
            span.findings = findings
            if findings:
                span.pii_detected = span.pii_detected or any(f.type == "pii" for f in findings)
                span.injection_attempt = span.injection_attempt or any(
                    f.type == "injection" for f in findings)
