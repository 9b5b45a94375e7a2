"""The redactor's fast path (one plain-string key a side, no layout built) writes the same
bytes as its general path (the side's full layout), for every shape of span and findings.

Each case is a wire span with random text keys (plain, JSON messages, both, content events,
values that are no plain string), random PII findings (several, overlapping, at either end,
past it, on astral characters), and random scan outcomes (the bound cut a side, the scan
stage failed, PII flagged by the sender, a text that differs from the one scanned). It is
redacted twice, with and without the fast path, and the two serialized spans compared.
"""

from __future__ import annotations

import json
import random
from types import SimpleNamespace
from typing import Any

import pytest

from llm_observe.otlp import redact, texts
from llm_observe.otlp.redact import MARGIN, redact_span
from llm_observe.otlp.wire import Span, encode_value
from llm_observe.scan import INJECTION, PII, Finding

WORDS = ["mail", "pat.leak@example.org", "é", "日本", "😀", "\U0001f600x", "a b",
         "[REDACTED:EMAIL]", "\n", "card 4539 1488 0343 6467", " "]


def random_text(rng: random.Random) -> str:
    if rng.random() < 0.15:  # longer than the scanned bound's margin
        return "".join(rng.choice(WORDS) for _ in range(rng.randint(300, 900)))
    return "".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))


def random_attrs(rng: random.Random) -> dict[str, Any]:
    attrs: dict[str, Any] = {"gen_ai.request.model": "gpt-4o"}
    shape = rng.choice(["ours", "ours", "openlit", "json", "ours+json", "indexed", "odd"])
    if shape in ("ours", "ours+json"):
        attrs["llm_observe.prompt"] = random_text(rng)
        if rng.random() < 0.8:
            attrs["llm_observe.completion"] = random_text(rng)
    if shape == "openlit":
        attrs["gen_ai.prompt"] = random_text(rng)
        attrs["gen_ai.completion"] = random_text(rng)
    if shape in ("json", "ours+json"):
        attrs["gen_ai.input.messages"] = json.dumps([{"role": "user", "parts": [
            {"type": "text", "content": random_text(rng)} for _ in range(rng.randint(1, 3))]}])
    if shape == "indexed":
        for i in range(rng.randint(1, 3)):
            attrs[f"gen_ai.prompt.{i}.content"] = random_text(rng)
    if shape == "odd":  # a plain key whose value is no plain string
        attrs["llm_observe.prompt"] = rng.choice([12345678901, "", b"\xff\xfe", 2.5])
        attrs["llm_observe.completion"] = random_text(rng)
    return attrs


def wire_span(attrs: dict[str, Any], events: list[tuple[str, dict[str, str]]]) -> Any:
    span = Span()
    for key, value in attrs.items():
        span.attributes[key] = (b"\x0a\x02\xff\xfe" if isinstance(value, bytes)
                                else encode_value(value))
    for name, event_attrs in events:
        event = span.events.add()
        event.name = name
        for key, value in event_attrs.items():
            event.attributes[key] = encode_value(value)
    return span


def side_text(span: Any, which: str) -> str:
    found_in = texts.candidates(span.attributes, which)  # type: ignore[arg-type]
    return texts.layout(span, found_in, with_paths=True).text() or ""


def random_findings(rng: random.Random, which: str, length: int, cut: int | None
                    ) -> list[Finding]:
    """Findings anywhere, at either end and across the redactor's cut (a twin with the
    same start and a longer end is the same once both are cut: which label wins?)."""
    found = []
    ends = [0, length - 1] + ([cut - MARGIN - 3] if cut is not None else [])
    for _ in range(rng.choice([0, 1, 1, 1, 2, 3])):
        start = rng.choice([*ends, rng.randint(-2, length + 2)])
        end = start + rng.choice([1, 5, 20, rng.randint(-1, length + 3)])
        names = ["email", "phone", "credit_card"]
        found.append(Finding(rng.choice([PII, PII, PII, INJECTION]), rng.choice(names), start,
                             end, field=rng.choice([which, which, "text"])))
        if rng.random() < 0.3:
            found.insert(rng.randint(0, len(found)), Finding(
                PII, rng.choice(names), start, end + rng.randint(1, 9), field=which))
    return found


def random_case(rng: random.Random) -> tuple[Any, Any]:
    events = []
    if rng.random() < 0.15:
        events.append(("gen_ai.content.prompt", {"gen_ai.prompt": random_text(rng)}))
    if rng.random() < 0.1:
        events.append(("gen_ai.content.completion", {"gen_ai.completion": random_text(rng)}))
    if rng.random() < 0.1:
        events.append(("exception", {"exception.message": "boom"}))
    message = wire_span(random_attrs(rng), events)
    prompt, completion = side_text(message, "prompt"), side_text(message, "completion")
    if rng.random() < 0.1:
        prompt += "x"  # not the text that was scanned
    scanned = {}
    for which, text in (("prompt", prompt), ("completion", completion)):
        if text and rng.random() < 0.2:
            scanned[which] = rng.choice([rng.randint(0, len(text)), len(text) - MARGIN // 2,
                                         len(text) + 1])
    findings = (random_findings(rng, "prompt", len(prompt), scanned.get("prompt"))
                + random_findings(rng, "completion", len(completion),
                                  scanned.get("completion")))
    span = SimpleNamespace(
        findings=findings, scanned_chars=scanned, prompt_text=prompt or None,
        completion_text=completion or None,
        pii_detected=any(f.type == PII for f in findings) or rng.random() < 0.1,
        errors={"scan": "boom"} if rng.random() < 0.05 else {})
    return message, span


def redacted(message: Any, span: Any, monkeypatch: pytest.MonkeyPatch, fast: bool) -> bytes:
    copy = Span()
    copy.CopyFrom(message)
    with monkeypatch.context() as patch:
        if not fast:
            patch.setattr(redact, "_plain_piece", lambda *_: None)
        redact_span(copy, span)
    return bytes(copy.SerializeToString())


def test_the_fast_path_writes_what_the_general_path_writes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(24)
    taken = 0
    plain_piece = redact._plain_piece
    for case in range(4000):
        message, span = random_case(rng)
        taken += any(plain_piece(message, message.attributes, message.events, found_in)
                     is not None for found_in in texts.both_sides(message.attributes).values())
        fast = redacted(message, span, monkeypatch, fast=True)
        assert fast == redacted(message, span, monkeypatch, fast=False), (case, span)
    assert taken > 1500  # the fast path is what most cases took


def test_a_plain_key_is_redacted_in_place() -> None:
    message = wire_span({"llm_observe.prompt": "😀 mail pat.leak@example.org"}, [])
    span = SimpleNamespace(
        findings=[Finding(PII, "email", 7, 27, field="prompt")], scanned_chars={},
        prompt_text="😀 mail pat.leak@example.org", completion_text=None,
        pii_detected=True, errors={})
    redact_span(message, span)
    assert message.attributes["llm_observe.prompt"] == encode_value("😀 mail [REDACTED:EMAIL]")
