"""One text, or a list of messages, scanned as ``POST /v1/pii-injection/scan`` answers it.

Shared by the API (api/pii_injection.py) and the in-process library
(:func:`llm_observe.guard.guarded_scanner`). Contract:

- :meth:`RequestScanner.text`: one text of unknown role (untrusted); findings index it.
- :meth:`RequestScanner.messages`: ``(role, content)`` pairs joined by newlines, each part
  scanned under its role's rule (docs/scanning.md, "Roles"); findings name their message
  and index that message's own ``content``.
- With an ``encoder`` (the [guard] extra's stage, processors/guard.py), its ``verdict``
  decides the injection findings of untrusted parts from the cheap tiers' findings and
  the encoder's reading (the stacked verdict, synchronously; a hit the cheap tiers did not
  have is one ``injection_encoder`` finding, ``detector="encoder"``). Without one: the
  cheap tiers only, as before.
- Never raises for a text's content; thread-safe when the encoder is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from llm_observe.scan.findings import Finding, ScanResult
from llm_observe.scan.messages import RoleScanner
from llm_observe.scan.roles import UNKNOWN, Segment
from llm_observe.scan.scanner import Scanner


class Encoder(Protocol):
    """processors.guard.GuardProcessor as used here."""

    def verdict(self, found: list[Finding], text: str, segments: Sequence[Segment] | None,
                location: str) -> list[Finding]: ...


class RequestScanner:
    """See the module docstring."""

    def __init__(self, scanner: Scanner, encoder: Encoder | None = None) -> None:
        self.roles = RoleScanner(scanner)
        self.encoder = encoder

    def text(self, text: str) -> ScanResult:
        found = self.roles.scan(text, None, UNKNOWN)
        return ScanResult(tuple(self._with_encoder(found, text, None, "text")))

    def messages(self, messages: Sequence[tuple[str, str]]) -> ScanResult:
        segments: list[Segment] = []
        at = 0
        for index, (role, content) in enumerate(messages):
            segments.append((at, at + len(content), role, index))
            at += len(content) + 1
        text = "\n".join(content for _, content in messages)
        found = self._with_encoder(self.roles.scan(text, segments, UNKNOWN, "messages"),
                                   text, segments, "messages")
        local = []  # offsets into each message's own content
        for f in found:
            start = segments[f.message][0] if f.message is not None and f.message >= 0 else 0
            local.append(replace(f, start=f.start - start, end=f.end - start))
        return ScanResult(tuple(local))

    def _with_encoder(self, found: list[Finding], text: str,
                      segments: Sequence[Segment] | None, field: str) -> list[Finding]:
        if self.encoder is None or not text:
            return found
        return self.encoder.verdict(found, text, segments, field)
