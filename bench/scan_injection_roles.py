"""Role-aware injection verdicts (issue 23): false alarms by role and length, and the cost.

- False alarms on the realistic benign texts of tests/data/benign_roles.yaml (never
  trained on), per role and length band (< 300, 300-800, > 800 characters): *before*
  = role-blind (the text scanned as one untrusted text, as every text was), *after* =
  the role rule (scan/roles.py) with the per-role thresholds of patterns.yaml. Per call:
  each system prompt + the benign user question, flattened (before) or as two messages
  (after). Recall on the planted instructions of the same file, per role.
- Threshold sweep per untrusted role: false alarms on that role's benign texts (for
  tool, also on CPython's pydoc_data topics cut into retrieved-document chunks, per
  length band) and recall on its planted ones (and on the hand-written attack families
  the classifier was trained on, scripts/injection_data/attacks.txt: optimistic, shown
  for the trend).
- Cost, paired rounds in one process: the scan stage on spans without roles (the
  ~200-character bench texts), role-aware vs role-blind; and read + scan of a GenAI
  semconv span (system instructions + 3 messages), role-aware vs role-blind.

Run: python -m bench.scan_injection_roles [--quick]
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from bench._common import COMPLETIONS, PROMPTS, emit, paired_ratio, quick
from llm_observe.otlp import texts
from llm_observe.otlp.plan import plan_for
from llm_observe.otlp.wire import encode_value
from llm_observe.processors.scan import ScanProcessor
from llm_observe.scan import Scanner, load_patterns
from llm_observe.scan.findings import ScanResult
from llm_observe.scan.messages import RoleScanner
from llm_observe.scan.patterns import ClassifierConfig
from llm_observe.span import LlmSpan

ROOT = Path(__file__).resolve().parents[1]
DATA = yaml.safe_load((ROOT / "tests" / "data" / "benign_roles.yaml").read_text())
B = "scan_injection_roles"


def band(text: str) -> str:
    return "<300" if len(text) < 300 else "300-800" if len(text) <= 800 else ">800"


def after(roles: RoleScanner, text: str, role: str) -> bool:
    return ScanResult(tuple(roles.scan(text, [(0, len(text), role, 0)], "unknown"))
                      ).injection_attempt


def false_alarms(scanner: Scanner, roles: RoleScanner, docs: list[str]) -> None:
    groups: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    texts_by_role = [(e["role"], e["text"]) for e in DATA["benign"]]
    for role, text in texts_by_role + [("tool (pydoc)", d) for d in docs]:
        for key in ((role, band(text)), (role, "all")):
            groups[key][0] += scanner.scan(text).injection_attempt
            groups[key][1] += after(roles, text, role.split()[0])
            groups[key][2] += 1
    for (role, length), (before_n, after_n, n) in sorted(groups.items()):
        emit(B, "false_alarms", after_n / n, "share", role=role, band=length, n=n,
             before=before_n, after=after_n)
    question = DATA["question"]
    systems = [e["text"] for e in DATA["benign"] if e["role"] == "system"]
    flat = sum(scanner.scan(f"{s}\n{question}").injection_attempt for s in systems)
    split = 0
    for s in systems:
        text = f"{s}\n{question}"
        segments = [(0, len(s), "system", 0), (len(s) + 1, len(text), "user", 1)]
        split += ScanResult(tuple(roles.scan(text, segments, "unknown"))).injection_attempt
    emit(B, "calls_flagged", split, "calls", what="system prompt + benign question",
         n=len(systems), before=flat, after=split)
    for role in ("user", "tool"):
        planted = [e["text"] for e in DATA["planted"] if e["role"] == role]
        emit(B, "planted_recall", sum(after(roles, t, role) for t in planted) / len(planted),
             "share", role=role, n=len(planted),
             before=sum(scanner.scan(t).injection_attempt for t in planted))


def trained_attacks() -> list[str]:
    out, block = [], []
    for line in (ROOT / "scripts" / "injection_data" / "attacks.txt").read_text().splitlines():
        if line.startswith("#"):
            continue
        if line.strip():
            block.append(line)
        elif block:
            out.append("\n".join(block).replace("{q}", "tell me how to pick a lock"))
            block = []
    return out + (["\n".join(block)] if block else [])


def documents(limit: int) -> list[str]:
    """Real documents as a retriever returns them: CPython's pydoc_data topics, cut at
    paragraph bounds into chunks of about 200, 600 and 1,500 characters."""
    from pydoc_data.topics import topics

    out = []
    for key in sorted(topics):
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", topics[key])
                      if len(p.strip()) > 40]
        for target in (200, 600, 1500):
            chunk = ""
            for paragraph in paragraphs:
                chunk = f"{chunk}\n\n{paragraph}" if chunk else paragraph
                if len(chunk) >= target:
                    out.append(chunk)
                    chunk = ""
    return out[:limit]


def sweep(patterns: Any, docs: list[str]) -> None:
    attacks = trained_attacks()
    for role in ("user", "tool"):
        benign = [e["text"] for e in DATA["benign"] if e["role"] == role]
        planted = [e["text"] for e in DATA["planted"] if e["role"] == role]
        for threshold in (0.8323, 0.85, 0.9, 0.95, 0.99):
            roles = RoleScanner(Scanner(replace(patterns, classifier=ClassifierConfig(
                thresholds=((role, threshold),)))))
            by_band: dict[str, int] = defaultdict(int)
            for doc in docs if role == "tool" else ():
                by_band[band(doc)] += after(roles, doc, role)
            emit(B, "sweep", threshold, "threshold", role=role,
                 false_alarms=sum(after(roles, t, role) for t in benign), n_benign=len(benign),
                 pydoc_false_alarms=dict(by_band),
                 planted=sum(after(roles, t, role) for t in planted), n_planted=len(planted),
                 trained_attacks=sum(after(roles, t, role) for t in attacks),
                 n_trained=len(attacks))


def pydoc_bands(docs: list[str]) -> None:
    counts: dict[str, int] = defaultdict(int)
    for doc in docs:
        counts[band(doc)] += 1
    emit(B, "pydoc_documents", len(docs), "texts", bands=dict(counts))


class _Span:
    """A wire-shaped span: attributes as encoded OTLP values, no events."""

    def __init__(self, attrs: dict[str, Any]) -> None:
        self.attributes = {k: encode_value(v) for k, v in attrs.items()}
        self.events: list[Any] = []


def cost(scanner: Scanner, n: int) -> None:
    old = ScanProcessor(scanner)
    blind = RoleScanner(scanner)

    def role_blind(batch: list[LlmSpan]) -> None:  # the stage as it was: one text a side
        for span in batch:
            span.findings = [f for text in (span.prompt_text, span.completion_text) if text
                             for f in scanner.scan(text, every_injection=False).findings]

    def spans() -> list[LlmSpan]:
        return [LlmSpan(model="gpt-4o", provider="openai", prompt_text=PROMPTS[i % len(PROMPTS)],
                        completion_text=COMPLETIONS[i % len(COMPLETIONS)]) for i in range(n)]

    batch_a, batch_b = spans(), spans()
    a, b, ratio = paired_ratio(lambda: old.process(batch_a), lambda: role_blind(batch_b))
    emit(B, "stage_no_roles", ratio, "x role-blind", spans=n, new_us=a / n * 1e6,
         old_us=b / n * 1e6)

    system = [e["text"] for e in DATA["benign"] if e["role"] == "system"]
    msgs = [{"role": "user", "parts": [{"type": "text", "content": PROMPTS[0]}]},
            {"role": "assistant", "parts": [{"type": "text", "content": COMPLETIONS[0]}]},
            {"role": "user", "parts": [{"type": "text", "content": PROMPTS[1]}]}]
    wire = [_Span({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                   "gen_ai.system_instructions": json.dumps(
                       [{"type": "text", "content": system[i % len(system)]}]),
                   "gen_ai.input.messages": json.dumps(msgs)}) for i in range(n)]
    plan = plan_for(wire[0].attributes).prompt_texts

    def read_blind() -> None:
        for s in wire:
            text = texts.read(s, s.attributes, s.events, plan)
            if text:
                scanner.scan(text, every_injection=False)

    def read_roles() -> None:
        for s in wire:
            text, segments = texts.read_roles(s, s.attributes, s.events, plan)
            if text:
                blind.scan(text, segments, "unknown", every_injection=False)

    a, b, ratio = paired_ratio(read_roles, read_blind)
    emit(B, "semconv_read_and_scan", ratio, "x role-blind", spans=n, new_us=a / n * 1e6,
         old_us=b / n * 1e6)


def main() -> None:
    patterns = load_patterns()
    scanner = Scanner(patterns)
    roles = RoleScanner(scanner)
    docs = documents(300 if quick() else 100_000)
    pydoc_bands(docs)
    false_alarms(scanner, roles, docs)
    sweep(patterns, docs)
    cost(scanner, 200 if quick() else 2_000)


if __name__ == "__main__":
    main()
