"""The text of a span that is no LLM call: what the scan reads and the forwarder redacts.

Tool arguments and results, retrieved documents, MCP tool responses and the conversations
agent and chain spans repeat (Pydantic AI's ``pydantic_ai.all_messages``, OpenInference's
``input.value``/``output.value``, OpenLLMetry's ``traceloop.entity.input``/``output``) are
text like a prompt: the walk reads them into an :class:`OtherText` (otlp/othertexts.py), the
scan stage scans them under their roles (processors/untrusted.py) and the forwarder redacts
them before they leave (otlp/otherredact.py).

Fail closed: a record starts with ``errors = ["scan"]``, which the scan stage clears once it
has scanned it. A record nobody scanned (the stage failed, or a pipeline without it) is
forwarded with every text replaced by ``[REDACTED:UNSCANNED]``, never raw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

UNSCANNED_MARK = "scan"  # otlp.redact.SCAN_STAGE: the forwarder replaces every text whole


def _unscanned() -> list[str]:
    return [UNSCANNED_MARK]


@dataclass(slots=True, eq=False)
class OtherText:
    """One non-LLM span's texts (the scan fields of ``LlmSpan``, by the same names)."""

    position: tuple[int, int, int]  # (resource, scope, span) index in the request
    trace_id: bytes
    span_id: bytes
    parent_id: bytes
    tool_like: bool  # a tool, retriever or MCP span: its output is a tool's
    start_ns: int = 0
    end_ns: int = 0
    prompt_text: str | None = None
    completion_text: str | None = None
    text_roles: dict[str, list[Any]] | None = None
    findings: list[Any] = field(default_factory=list)
    scanned_chars: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=_unscanned)
    pii_detected: bool = False
    injection_attempt: bool = False

    @property
    def chars(self) -> int:
        return len(self.prompt_text or "") + len(self.completion_text or "")
