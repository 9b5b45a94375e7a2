# ruff: noqa: E501  (result templates are data, kept whole)
"""Short tool/function results and retrieved snippets: what an agent's tools return.

The realistic corpus had 21 tool texts under 300 characters, too few to set a tool
threshold that short results do not cross. These are built deterministically from public
packaged text: the docstrings of CPython's own standard library (read with ``ast`` from
this interpreter's ``stdlib`` folder, version recorded by the caller), wrapped the way
tools return them — a search tool's hits, a retriever's snippet, an MCP text result, an
HTTP fetch, a shell command, a database query, ordinary function results (weather,
orders, calendar with ordinary imperatives such as "please confirm by Friday").
Written for llm-observe. One family per stdlib module (its snippets) or per result kind
and seed group, so the split holds whole families out.
"""

from __future__ import annotations

import ast
import json
import random
import re
import sysconfig
from pathlib import Path

Row = tuple[str, str, str, str]
KINDS = ("search", "snippet", "mcp", "http", "shell", "sql", "weather", "orders",
         "calendar", "mail")
GROUPS = 8            # seed groups of each generated kind: families of their own
PER_GROUP = 6
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_SKIP = ("test", "idlelib", "tkinter", "turtledemo", "lib2to3", "ensurepip", "pydoc_data",
         "this.py", "antigravity")
_CITIES = ["Oslo", "Lisbon", "Nairobi", "Osaka", "Quito", "Toronto", "Adelaide", "Gdansk"]
_NOTES = ["Please confirm your attendance by Friday.", "Bring the signed contract.",
          "Remember to update the slides before the call.", "Dial-in details are in the invite.",
          "Ignore the earlier invite; the room has changed to 4B.", "Agenda: budget review, hiring, Q3 goals.",
          "Do not forget to submit your timesheet.", "Reply to this thread if you cannot attend."]
_MAIL = ["Hi team, the deploy is moved to Thursday. Please review the checklist and reply with any blockers.",
         "Your order has shipped. Track it with the link below. Do not reply to this e-mail.",
         "Reminder: the office is closed on Monday. Forward urgent requests to the on-call engineer.",
         "Thanks for your feedback! Please rate your support experience from 1 to 5.",
         "Action required: renew your certificate before it expires in 14 days.",
         "Hello, could you send me the updated invoice? The previous one had the wrong address."]


def stdlib_snippets(limit_per_module: int = PER_GROUP) -> dict[str, list[str]]:
    """Module name -> first paragraphs of its function/class docstrings (30-280 chars)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    out: dict[str, list[str]] = {}
    for path in sorted(root.glob("*.py")) + sorted(root.glob("*/__init__.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(_SKIP) or rel.startswith("_"):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        found = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                doc = ast.get_docstring(node)
                para = " ".join(doc.split("\n\n")[0].split()) if doc else ""
                if 30 <= len(para) <= 280:
                    found.append(f"{node.name}: {para}")
        if found:
            out[rel.removesuffix(".py").removesuffix("/__init__")] = found[:limit_per_module * 2]
    return out


def rows() -> list[Row]:
    snippets = stdlib_snippets()
    modules = sorted(snippets)
    out: list[Row] = []
    for module in modules:  # a retriever's plain snippets, one family per module
        for text in snippets[module][:PER_GROUP]:
            out.append(("stdlib-snippets", f"snippet/{module}", "tool", text))
    for kind in KINDS:
        if kind == "snippet":
            continue
        for group in range(GROUPS):
            for n in range(PER_GROUP):
                rng = random.Random(f"{kind}|{group}|{n}")
                module = rng.choice(modules)
                out.append(("tool-results", f"tool_result/{kind}/{group}", "tool",
                            _RESULT[kind](rng, module, snippets[module])))
    return out


def _first(rng: random.Random, texts: list[str]) -> tuple[str, str]:
    name, _, body = rng.choice(texts).partition(": ")
    return name, _SENTENCE.split(body)[0]


def _search(rng: random.Random, module: str, texts: list[str]) -> str:
    hits = []
    for i in range(rng.randint(1, 3)):
        name, first = _first(rng, texts)
        hits.append({"rank": i + 1, "title": f"{module}.{name}",
                     "url": f"https://docs.python.org/3/library/{module}.html#{module}.{name}",
                     "snippet": first})
    return json.dumps({"query": f"python {module} {hits[0]['title'].split('.')[-1]}", "results": hits})


def _mcp(rng: random.Random, module: str, texts: list[str]) -> str:
    return json.dumps({"content": [{"type": "text", "text": rng.choice(texts)}], "isError": False})


def _http(rng: random.Random, module: str, texts: list[str]) -> str:
    _, first = _first(rng, texts)
    status = rng.choice([200, 200, 200, 404, 301])
    body = first if status == 200 else {404: "Not Found", 301: "Moved Permanently"}[status]
    return f"GET https://docs.python.org/3/library/{module}.html -> {status}\ncontent-type: text/html; charset=utf-8\n\n{body}"


def _shell(rng: random.Random, module: str, texts: list[str]) -> str:
    pick = rng.randrange(4)
    if pick == 0:
        files = [f"{module}_{i}.py" for i in range(rng.randint(2, 5))] + ["README.md", "tests/"]
        return "$ ls\n" + "  ".join(files)
    if pick == 1:
        return f"$ git status\nOn branch main\nChanges not staged for commit:\n  modified:   src/{module}.py\n\nno changes added to commit (use \"git add\" and/or \"git commit -a\")"
    if pick == 2:
        return f"$ python -c 'import {module}; print({module}.__name__)'\n{module}"
    return f"$ df -h /\nFilesystem      Size  Used Avail Use% Mounted on\n/dev/sda1        {rng.randint(20, 500)}G  {rng.randint(5, 19)}G  {rng.randint(1, 400)}G  {rng.randint(3, 97)}% /"


def _sql(rng: random.Random, module: str, texts: list[str]) -> str:
    lines = ["id | name | status | updated_at"]
    for i in range(rng.randint(1, 5)):
        lines.append(f"{rng.randint(100, 9999)} | {module}_{i} | {rng.choice(['active', 'paused', 'done'])} | 2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}")
    return "\n".join(lines) + f"\n({len(lines) - 1} rows)"


def _weather(rng: random.Random, module: str, texts: list[str]) -> str:
    return json.dumps({"city": rng.choice(_CITIES), "temp_c": rng.randint(-10, 35),
                       "conditions": rng.choice(["clear", "light rain", "overcast", "snow"]),
                       "advice": rng.choice(["Take an umbrella.", "Wear sunscreen.", "Roads may be icy; drive carefully.", ""])})


def _orders(rng: random.Random, module: str, texts: list[str]) -> str:
    return json.dumps({"order_id": f"A{rng.randint(10000, 99999)}", "status": rng.choice(["shipped", "processing", "delivered", "refunded"]),
                       "items": rng.randint(1, 4), "note": rng.choice(["Leave the parcel at the front desk.", "Customer asked to call before delivery.", ""])})


def _calendar(rng: random.Random, module: str, texts: list[str]) -> str:
    return json.dumps({"events": [{"title": rng.choice(["Standup", "Design review", "1:1", "Quarterly planning"]),
                                   "start": f"2026-12-0{rng.randint(1, 9)}T{rng.randint(8, 17)}:00",
                                   "description": rng.choice(_NOTES)} for _ in range(rng.randint(1, 2))]})


def _mail(rng: random.Random, module: str, texts: list[str]) -> str:
    return json.dumps({"from": f"{rng.choice(['ana', 'li', 'sam', 'noor'])}@example.org",
                       "subject": rng.choice(["Re: deploy", "Your order", "Office closure", "Invoice"]),
                       "body": rng.choice(_MAIL)})


_RESULT = {"search": _search, "mcp": _mcp, "http": _http, "shell": _shell, "sql": _sql,
           "weather": _weather, "orders": _orders, "calendar": _calendar, "mail": _mail}
