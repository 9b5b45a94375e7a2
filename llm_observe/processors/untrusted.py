"""UntrustedTextProcessor: the texts of agent, tool and chain spans scanned like a call's.

A tool result, a retrieved document or an MCP tool response is input the app did not
write: it can carry PII (a customer record) and an indirect injection (a planted "ignore
all previous instructions"). The walk reads every non-LLM span's texts with their roles
(otlp/othertexts.py); this stage scans each under the same rules and bound as an LLM
call's text (:class:`~processors.scan.ScanProcessor`, scan/roles.py: a tool's output is
untrusted, at the tool threshold) and marks the agent span that consumed a flagged output
(agents/consumers.py). The forwarder then redacts them (otlp/otherredact.py).

Fail closed: a record this stage could not scan keeps its unscanned mark, so the forwarder
replaces its texts whole. Never raises; pure CPU, no I/O, except with Redis-shared consumer
marks (agents/consumerstore.py): then it is ``blocking`` (the pipeline's worker thread).
"""

from __future__ import annotations

import logging
from typing import Any, cast

from llm_observe.agents.consumers import Consumers
from llm_observe.agents.untrusted import UNSCANNED_MARK, OtherText
from llm_observe.processors.scan import DEFAULT_MAX_TEXT_CHARS, ScanProcessor
from llm_observe.scan import Scanner
from llm_observe.span import LlmSpan

log = logging.getLogger(__name__)


class UntrustedTextProcessor:
    """Scans ``batch.origin.texts`` (an OTLP batch's non-LLM spans) and sets
    ``batch.origin.marked``; a batch without origin (the REST doors) has none."""

    name = "untrusted_scan"

    def __init__(self, scanner: Scanner, max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
                 consumers: Consumers | None = None) -> None:
        self.scan = ScanProcessor(scanner, max_text_chars)
        self.consumers = consumers or Consumers()
        self.blocking = self.consumers.blocking
        self.failed = 0  # records left unscanned (their texts are replaced, not sent)

    def process(self, batch: list[LlmSpan]) -> None:
        origin: Any = getattr(batch, "origin", None)
        others: list[OtherText] | None = getattr(origin, "texts", None)
        if others is None:
            return
        for other in others:
            if other.prompt_text is None and other.completion_text is None:
                continue  # the reader failed on it: stays unscanned (replaced whole)
            try:  # OtherText has the scan fields of LlmSpan, by the same names
                self.scan.process(cast(list[LlmSpan], [other]))
            except Exception:
                self.failed += 1
                log.exception("scan failed on a non-LLM span's text; it is not forwarded")
                continue
            if UNSCANNED_MARK in other.errors:
                other.errors.remove(UNSCANNED_MARK)
        try:
            origin.marked[:] = self.consumers.marks(
                origin.request, origin.agents,
                [(o.trace_id, o.parent_id, o.start_ns, o.end_ns) for o in others
                 if o.tool_like and o.injection_attempt])
        except Exception:  # a mark is information, never a reason to lose the batch
            log.exception("could not mark the agent spans that consumed flagged tool output")
