"""Build the realistic benign corpus for the injection detectors (issue 23 item 2).

    python scripts/benign_corpus.py [--wheels DIR] [--out DIR] [--check]

Reads (scripts/benign_sources.py): prompt templates and agent system prompts shipped in
pinned wheels of LangChain, LlamaIndex, CrewAI, AutoGen, DSPy, Haystack, Semantic Kernel,
smolagents and CAMEL (string literals and prompt files; docstrings and code as documents);
CPython's ``pydoc_data`` topics; Debian's common licences; man pages in 10 languages;
generated CI/web/application logs (benign_data/logs.py); short tool/function results and
retrieved snippets (benign_data/tool_results.py); the hand-written hard negatives
(benign_data/hard_negatives.yaml). Template placeholders are filled with ordinary values
(a benign question, a pydoc paragraph as context, a name).

Split by family (one module, one man page, one licence, one log kind, one hand-written
group): a family goes to validation when SHA-256("benign|" + family) is 0 mod 4, so no
text of a validation family is ever trained on. ``tests/data/benign_roles.yaml`` (written
independently, earlier) is added to validation whole.

Writes ``corpus.jsonl.gz`` (one JSON object a line: text, role, source, family, split)
and ``corpus.json`` (sources with versions and hashes, counts per split/role/length band,
the corpus file's SHA-256). Deterministic: ``--check`` rebuilds in memory and fails unless
the rows are identical to the committed file.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benign_sources as src  # noqa: E402
from benign_data import logs, tool_results  # noqa: E402

ROOT = HERE.parent
OUT = HERE / "benign_data"
PER_FAMILY = 6            # at most this many texts of one family (one module, one page)
PER_SOURCE = 700          # and of one source, so no package drowns the rest
MAN_LANGS = ("en", "de", "fr", "es", "it", "pl", "ru", "ja", "pt_BR", "nl", "sv", "zh_CN")
MAN_PER_LANG = 40
QUESTIONS = [
    "Can I change the billing e-mail on my account?", "How do I reset my password?",
    "What is the difference between a list and a tuple in Python?",
    "Which plan includes priority support?", "When does the store open on Sundays?",
    "Summarise the main points in two sentences.", "How long does a refund take?",
    "What does the error 'connection reset by peer' mean?",
    "Which documents do I need to renew my passport?", "Is the museum accessible by wheelchair?",
]
VALUES = ["Alice", "the quarterly report", "Paris", "3", "English", "order 10492",
          "a short poem about autumn", "JSON", "the attached invoice", "customer support"]


def band(n: int) -> str:
    return "<300" if n < 300 else "300-800" if n <= 800 else ">800"


def held_out(family: str) -> bool:
    return int(hashlib.sha256(f"benign|{family}".encode()).hexdigest(), 16) % 4 == 0


def fill(text: str, family: str, contexts: list[str]) -> str:
    """Placeholders ({question}, {{context}}, {{$input}} ...) filled with ordinary values."""
    rng = random.Random(family + text[:40])

    def value(m: re.Match[str]) -> str:
        name = m.group(1).lower()
        if any(k in name for k in ("question", "query", "input", "task", "request")):
            return rng.choice(QUESTIONS)
        if any(k in name for k in ("context", "document", "text", "content", "chunk", "data")):
            return rng.choice(contexts)
        return rng.choice(VALUES)

    return src._PLACEHOLDER.sub(value, text)


def man_pages() -> list[Path]:
    pages = []
    for lang in MAN_LANGS:
        folder = Path("/usr/share/man") if lang == "en" else Path("/usr/share/man") / lang
        found = sorted((folder / "man1").glob("*.1*")) + sorted((folder / "man8").glob("*.8*"))
        found.sort(key=lambda p: hashlib.sha256(p.name.encode()).hexdigest())
        pages.extend(found[:MAN_PER_LANG])
    return pages


def hand_written() -> list[src.Row]:
    items = yaml.safe_load((OUT / "hard_negatives.yaml").read_text(encoding="utf-8"))
    return [("hand-written", i["family"], i["role"], i["text"]) for i in items]


def rows(wheels: dict[str, Path]) -> tuple[list[dict[str, str]], dict[str, object]]:
    pydoc = src.pydoc_rows()
    contexts = [t for _, _, _, t in pydoc if 200 <= len(t) <= 900][::7]
    pages = man_pages()
    raw: list[src.Row] = []
    for name in sorted(wheels):
        raw += src.package_rows(name, wheels[name])
    raw += pydoc + src.licence_rows() + src.man_rows(pages) + hand_written()
    raw += [("generated-logs", f"log/{k}", "tool", logs.log(k, n))
            for k in logs.KINDS for n in range(PER_FAMILY)]
    raw += tool_results.rows()
    seen: set[str] = set()
    per_family: Counter[str] = Counter()
    per_source: Counter[str] = Counter()
    out = []
    for source, family, role, text in raw:
        text = fill(text, family, contexts).strip() if role != "tool" else text.strip()
        key = re.sub(r"\s+", " ", text.lower())
        if len(text) < 40 or key in seen:
            continue
        if per_family[family] >= PER_FAMILY or per_source[source] >= PER_SOURCE:
            continue
        seen.add(key)
        per_family[family] += 1
        per_source[source] += 1
        out.append({"text": text, "role": role, "source": source, "family": family,
                    "split": "validation" if held_out(family) else "train"})
    roles_file = ROOT / "tests" / "data" / "benign_roles.yaml"
    for item in yaml.safe_load(roles_file.read_text(encoding="utf-8"))["benign"]:
        out.append({"text": item["text"], "role": item["role"], "source": "benign_roles.yaml",
                    "family": f"benign_roles/{item['family']}", "split": "validation"})
    sources = {
        "wheels": {n: {"version": src.PROMPT_WHEELS[n][0], "sha256": src.PROMPT_WHEELS[n][1]}
                   for n in sorted(wheels)},
        "cpython_pydoc_data": sys.version.split()[0],
        "debian_common_licenses": "/usr/share/common-licenses (base-files)",
        "man_pages": {"languages": list(MAN_LANGS), "per_language": MAN_PER_LANG,
                      "sha256_of_files": hashlib.sha256(b"".join(
                          hashlib.sha256(p.read_bytes()).digest() for p in pages)).hexdigest()},
        "hand_written": ["scripts/benign_data/hard_negatives.yaml",
                         "tests/data/benign_roles.yaml (validation only)"],
        "generated": "scripts/benign_data/logs.py",
        "tool_results": "scripts/benign_data/tool_results.py (CPython "
                        f"{sys.version.split()[0]} stdlib docstrings in tool-result shapes)",
    }
    return out, sources


def serialise(data: list[dict[str, str]]) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz:
        for row in data:
            gz.write((json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode())
    return buf.getvalue()


def load(path: Path = OUT / "corpus.jsonl.gz") -> list[dict[str, str]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def counts(data: list[dict[str, str]]) -> dict[str, dict[str, int]]:
    table: dict[str, Counter[str]] = {}
    for r in data:
        table.setdefault(r["split"], Counter())[f"{r['role']} {band(len(r['text']))}"] += 1
    return {k: dict(sorted(v.items())) for k, v in sorted(table.items())}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheels", type=Path, default=Path("/tmp/benign-wheels"))
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    data, sources = rows(src.fetch(args.wheels))
    blob = serialise(data)
    if args.check:
        if load(args.out / "corpus.jsonl.gz") != data:
            raise SystemExit("benign corpus differs from the committed one")
        print("benign corpus reproduced")
        return
    (args.out / "corpus.jsonl.gz").write_bytes(blob)
    manifest = {"sha256": hashlib.sha256(blob).hexdigest(), "rows": len(data),
                "sources": sources, "counts": counts(data),
                "per_source": dict(sorted(Counter(f"{r['split']} {r['source']}"
                                                  for r in data).items()))}
    (args.out / "corpus.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(json.dumps(manifest["counts"], indent=1))


if __name__ == "__main__":
    main()
