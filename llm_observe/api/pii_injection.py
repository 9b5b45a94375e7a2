"""``POST /v1/pii-injection/scan``: PII and prompt-injection scan (spec 4.6).

Request ``{text, redact?}`` or ``{messages: [{role?, content}], redact?}``; answer
``{pii_detected, injection_attempt, findings, redacted? | redacted_messages?}``.
``text`` is one text of unknown role (untrusted, as it always was); ``messages`` are
scanned each under its role's rule (docs/scanning.md, "Roles": a system message is
scanned for PII only), and each finding names its ``message`` index and ``role``, its
offsets index that message's ``content`` (scan/requests.py). With the encoder tier on
(the [guard] extra, ``guard.enabled``: on by default), untrusted texts are also read by
it, and it decides the injection verdict of untrusted parts with the cheap tiers' scores (the
stacked verdict, processors/guard.py ``verdict``): then the scan always runs in a worker
thread behind the ``scan`` gate (a model run takes milliseconds; api/offload.py: at most
``api_scan_running`` at once and ``api_scan_waiting`` queued, past them 503 ``busy``).
Findings never carry the matched text (see ``scan.findings``): the answer of a scan
must not become a second copy of the secret.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from llm_observe.api.keys import AppKeys
from llm_observe.api.request import Fields, json_object, off_loop
from llm_observe.scan import redact
from llm_observe.scan.requests import RequestScanner
from llm_observe.scan.roles import role_of
from llm_observe.span import MAX_TEXT_CHARS

MAX_MESSAGES = 100_000
MAX_ROLE_CHARS = 64


def _scan(scan: RequestScanner, text: str, want_redacted: bool) -> dict[str, Any]:
    result = scan.text(text)
    body = result.as_dict()
    if want_redacted:
        body["redacted"] = redact(text, result.findings)
    return body


def _scan_messages(scan: RequestScanner, messages: list[tuple[str, str]],
                   want_redacted: bool) -> dict[str, Any]:
    result = scan.messages(messages)
    body = result.as_dict()
    if want_redacted:
        body["redacted_messages"] = [
            redact(content, [f for f in result.findings if f.message == index])
            for index, (_, content) in enumerate(messages)]
    return body


def _messages(fields: Fields) -> list[tuple[str, str]] | None:
    """``messages`` as (role, content) pairs; failures recorded on ``fields``."""
    value = fields.raw("messages")
    if value is None:
        return None
    if not isinstance(value, list):
        fields.fail("messages", "must be a list of {role, content} objects")
        return None
    if len(value) > MAX_MESSAGES:
        fields.fail("messages", f"must have at most {MAX_MESSAGES} items")
        return None
    out, total = [], 0
    for i, item in enumerate(value):
        where = f"messages[{i}]"
        if not isinstance(item, dict):
            fields.fail(where, "must be an object {role, content}")
            return None
        role, content = item.get("role"), item.get("content")
        if role is not None and (not isinstance(role, str) or len(role) > MAX_ROLE_CHARS):
            fields.fail(f"{where}.role", f"must be a string of at most {MAX_ROLE_CHARS} "
                                         "characters")
            return None
        if not isinstance(content, str):
            fields.fail(f"{where}.content", "must be a string")
            return None
        total += len(content)
        if total > MAX_TEXT_CHARS:
            fields.fail("messages", f"contents must total at most {MAX_TEXT_CHARS} characters")
            return None
        out.append((role_of(role), content))  # a missing or unknown role: untrusted
    return out


async def scan_handler(request: web.Request) -> web.Response:
    """Scan ``text`` or ``messages``; with ``redact: true`` also answer them with PII
    replaced."""
    collector = request.app[AppKeys.collector]
    gate = request.app[AppKeys.offload].scan
    if collector.guard is not None:
        gate.check()  # full: answer before reading and parsing the body
    fields = await json_object(request)
    messages = _messages(fields)
    text = fields.string("text", required=fields.data.get("messages") is None,
                         max_len=MAX_TEXT_CHARS, non_empty=False)
    if text is not None and messages is not None:
        fields.fail("text", "give text or messages, not both")
    want_redacted = fields.boolean("redact")
    fields.check()
    scan = RequestScanner(collector.scanner, collector.guard)
    run = off_loop if collector.guard is None else gate.run
    if messages is not None:
        return web.json_response(await run(request, _scan_messages, scan, messages,
                                           want_redacted))
    assert text is not None
    return web.json_response(await run(request, _scan, scan, text, want_redacted))

