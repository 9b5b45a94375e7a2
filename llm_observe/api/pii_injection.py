"""``POST /v1/pii-injection/scan``: PII and prompt-injection scan (spec 4.6).

Request ``{text, redact?}``; answer ``{pii_detected, injection_attempt, findings, redacted?}``.
Findings carry offsets into ``text``, never the matched text (see ``scan.findings``):
the answer of a scan must not become a second copy of the secret it found.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from llm_observe.api.keys import AppKeys
from llm_observe.api.request import json_object, off_loop
from llm_observe.scan import Scanner, redact
from llm_observe.span import MAX_TEXT_CHARS


def _scan(scanner: Scanner, text: str, want_redacted: bool) -> dict[str, Any]:
    result = scanner.scan(text)
    body = result.as_dict()
    if want_redacted:
        body["redacted"] = redact(text, result.findings)
    return body


async def scan_handler(request: web.Request) -> web.Response:
    """Scan ``text``; with ``redact: true`` also answer the text with PII replaced."""
    fields = await json_object(request)
    text = fields.string("text", required=True, max_len=MAX_TEXT_CHARS, non_empty=False)
    want_redacted = fields.boolean("redact")
    fields.check()
    assert text is not None
    scanner = request.app[AppKeys.collector].scanner
    return web.json_response(await off_loop(request, _scan, scanner, text, want_redacted))
