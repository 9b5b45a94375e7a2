"""Fourth-pass raw material (issue 15): planted-instruction attacks from two more
independent public collections, read from pinned wheels (``TRIED_WHEELS`` in
injection_sources), and the benign requests and documents shipped beside them.
Measured with scripts/injection_oof.py and not used by the shipped model: at equal
false alarms they did not raise out-of-fold recall (docs/scanning.md, fourth pass).

- **spikee** (WithSecure Labs, Apache-2.0): the jailbreak templates of its seed
  folders (short override/"new instructions"/debug/test/developer-mode framings with an
  ``<INSTRUCTION>`` slot, several also in Zulu, Albanian, Irish and Scottish Gaelic),
  one family per ``jailbreak_type``; the slot is filled with the seed folders' own
  injected instructions (data exfiltration, XSS, system-prompt leaks...). Written by
  WithSecure for the tool. Not read: ``seeds-in-the-wild-jailbreak-prompts``,
  ``seeds-simsonsun-*``, ``seeds-toxic-chat``, ``seeds-wildguardmix-*`` (fetchers of
  third-party sets, the first one the TrustAIRLab "in the wild" collection itself; in
  the wheel they are empty anyway). Negatives: the questions of the
  investment-advice seeds (ordinary finance questions) and the host documents of
  ``base_user_inputs`` (mail, news, notes) with the injection slot removed.
- **agentdojo** (ETH Zurich SPyLab, MIT; Debenedetti et al., NeurIPS 2024
  Datasets & Benchmarks): its attack templates (``important_instructions``,
  ``tool_knowledge``, InjecAgent's string, "ignore previous", "TODO:", DoS...), one
  family per attack, each filled with the benchmark's injection-task goals (send
  money / mail / files to an attacker). Written by the authors (InjecAgent's one
  string is quoted from Zhan et al., 2024). Negatives: the user-task requests of its
  four suites (ordinary agent requests: "pay the bill in this file", "do the actions
  in the email from ..."), one family per suite.

Neither collection copies the TrustAIRLab jailbreak set.
"""

from __future__ import annotations

import ast
import json
import re
import zipfile
from pathlib import Path

import yaml

Pairs = list[tuple[str, str]]
_SPIKEE = "spikee/data/workspace/datasets/"
# Seed folders that only download third-party data (see the module docstring).
_SPIKEE_SKIP = ("seeds-in-the-wild", "seeds-simsonsun", "seeds-toxic-chat", "seeds-wildguardmix")
FILLS_PER_TEMPLATE = 3  # goals per template: more only merges families (measured)


def _jsonl(wheel: zipfile.ZipFile, name: str) -> list[dict[str, str]]:
    return [json.loads(line) for line in wheel.read(name).decode("utf-8").splitlines()
            if line.strip()]


def _seed_files(wheel: zipfile.ZipFile, stem: str) -> list[str]:
    return sorted(n for n in wheel.namelist() if n.startswith(_SPIKEE)
                  and n.endswith(f"/{stem}.jsonl")
                  and not n.removeprefix(_SPIKEE).startswith(_SPIKEE_SKIP))


def spikee_attacks(path: Path) -> Pairs:
    """spikee jailbreak templates (family = jailbreak_type), slots filled with its instructions."""
    with zipfile.ZipFile(path) as wheel:
        goals = sorted({d["instruction"] for n in _seed_files(wheel, "instructions")
                        for d in _jsonl(wheel, n) if d.get("instruction")})
        templates = sorted({(d["jailbreak_type"], d["text"])
                            for n in _seed_files(wheel, "jailbreaks") for d in _jsonl(wheel, n)
                            if d.get("jailbreak_type") != "no-jailbreak"})
    out: Pairs = []
    for i, (kind, text) in enumerate(templates):
        for j in range(FILLS_PER_TEMPLATE):
            goal = goals[(i * FILLS_PER_TEMPLATE + j) % len(goals)].rstrip(".")
            out.append((f"spikee/{kind}", text.replace("<INSTRUCTION>", goal)))
    return out


def spikee_benign(path: Path) -> Pairs:
    """Ordinary finance questions and host documents (injection slot blanked)."""
    out: Pairs = []
    with zipfile.ZipFile(path) as wheel:
        for name in _seed_files(wheel, "standalone_user_inputs"):
            if "investment-advice" in name:
                out.extend(("spikee/finance_questions", d["text"]) for d in _jsonl(wheel, name))
        docs = sorted({d["document"].replace(d.get("placeholder") or "\x00", " ").strip()
                       for n in _seed_files(wheel, "base_user_inputs")
                       for d in _jsonl(wheel, n)})
    out.extend(("spikee/documents", d) for d in docs if len(d) > 40)
    return out


def agentdojo_attacks(path: Path) -> Pairs:
    """AgentDojo attack templates (family = attack name) filled with its injection goals."""
    with zipfile.ZipFile(path) as wheel:
        goals = sorted({g for n in _modules(wheel, "injection_tasks.py")
                        for g in _class_strings(wheel.read(n).decode(), "GOAL")})
        templates: dict[str, str] = {}
        for name in _modules(wheel, "_attacks.py"):
            for attack, text in _attack_templates(wheel.read(name).decode()):
                templates.setdefault(attack, text)
    out: Pairs = []
    for i, (attack, text) in enumerate(sorted(templates.items())):
        for j in range(FILLS_PER_TEMPLATE if "{goal}" in text else 1):
            goal = goals[(i * FILLS_PER_TEMPLATE + j) % len(goals)].rstrip(".")
            filled = text.replace("{goal}", goal).replace("{user}", "Emma Johnson")
            filled = filled.replace("{model}", "the AI assistant").replace("{tools}", "")
            out.append((f"agentdojo/{attack}", filled.strip()))
    return out


def agentdojo_benign(path: Path) -> Pairs:
    """The user-task requests of AgentDojo's suites and the documents of its environments
    (mail, files, calendar, reviews; injection slots blanked), one family each per suite."""
    with zipfile.ZipFile(path) as wheel:
        out = {(f"agentdojo/user_tasks_{n.split('/')[-2]}", p)
               for n in _modules(wheel, "user_tasks.py")
               for p in _class_strings(wheel.read(n).decode(), "PROMPT")}
        for name in sorted(n for n in wheel.namelist() if n.startswith(_SUITES)
                           and n.endswith(".yaml") and "injection_vectors" not in n):
            suite = name.removeprefix(_SUITES).split("/")[0]
            text = _SLOT.sub(" ", wheel.read(name).decode("utf-8"))
            doc = yaml.load(text, Loader=_Loader)  # SafeLoader plus a no-op !include
            out.update((f"agentdojo/documents_{suite}", s.strip()) for s in _leaves(doc)
                       if len(s) > 80)
    return sorted(out)


class _Loader(yaml.SafeLoader):
    """SafeLoader that leaves AgentDojo's ``!include`` tags as plain strings."""


_Loader.add_constructor("!include", lambda loader, node: "")
_SUITES = "agentdojo/data/suites/"
_SLOT = re.compile(r"\{[a-z_]*injection[a-z_]*\}")


def _leaves(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    items = node.values() if isinstance(node, dict) else node if isinstance(node, list) else []
    return [s for item in items for s in _leaves(item)]


def _modules(wheel: zipfile.ZipFile, suffix: str) -> list[str]:
    return sorted(n for n in wheel.namelist() if n.startswith("agentdojo/")
                  and n.endswith(suffix))


def _class_strings(source: str, attr: str) -> list[str]:
    """``attr`` of every class, f-strings rendered from the class's own string constants."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        env: dict[str, str] = {}
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
                text = _eval(stmt.value, env)
                if text is not None:
                    env[stmt.targets[0].id] = text
        if attr in env:
            out.append(env[attr])
    return out


def _attack_templates(source: str) -> list[tuple[str, str]]:
    """(attack name, template) of attack classes: a ``_JB_STRING`` or a string literal
    holding ``{goal}`` passed to the base class."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        env = {s.targets[0].id: t for s in node.body if isinstance(s, ast.Assign)
               and isinstance(s.targets[0], ast.Name)
               and (t := _eval(s.value, {})) is not None}
        # A template passed to the base class (not the docstring quoting it).
        literals = [a.value for c in ast.walk(node) if isinstance(c, ast.Call) for a in c.args
                    if isinstance(a, ast.Constant) and isinstance(a.value, str)
                    and "{goal}" in a.value]
        strings = [t for k, t in env.items() if k.startswith("_") and "{user}" in t]
        text = (strings or literals or [None])[0]
        if "name" in env and text:
            out.append((env["name"], text))
    return out


def _eval(node: ast.expr, env: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.JoinedStr):
        parts = [_eval(v.value if isinstance(v, ast.FormattedValue) else v, env)
                 for v in node.values]
        return None if None in parts else "".join(p or "" for p in parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _eval(node.left, env), _eval(node.right, env)
        return None if left is None or right is None else left + right
    return None
