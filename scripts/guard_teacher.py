"""Teacher pass of scripts/train_guard.py: a 6-layer encoder's sentence vectors and logits
for the student's training windows (scripts/guard_windows.py).

    python scripts/guard_teacher.py DATA.json OUT.npz [TOP_LAYERS.safetensors]

The teacher is all-MiniLM-L6-v2 with its top layer fine-tuned, + head. With a third
argument it is that file (scripts/guard_teacher_torch.py's ``top_layers.safetensors``,
trained by train_guard.py on the same rows: the clean recipe); without it, the encoder
shipped before the student, read from git at TEACHER_COMMIT and checked against its
manifest's SHA-256 (trained on the rows of the app-prompt leak: train_guard.py
--legacy-apps). Run as the int8 graph the runtime builds (llm_observe.guard.model), one
window at a time, so its vectors do not depend on batching.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import guard_windows  # noqa: E402

from llm_observe.embedding import batching, graph, weights  # noqa: E402
from llm_observe.embedding.model import session_options  # noqa: E402
from llm_observe.guard.files import GuardFiles  # noqa: E402
from llm_observe.guard.model import build_graph  # noqa: E402

TEACHER_COMMIT = "f83aec450a5f638eb0c7136bd3c77c1bc22f93c6"
TEACHER_WEIGHTS = "llm_observe/guard/model/guard_top_layers.safetensors"
TEACHER_MANIFEST = "llm_observe/guard/model/guard_model.json"


def _git(path: str) -> bytes:
    return subprocess.run(["git", "-C", str(HERE.parent), "show", f"{TEACHER_COMMIT}:{path}"],
                          check=True, capture_output=True).stdout


def teacher_files(base: weights.ModelFiles, top: Path | None = None) -> GuardFiles:
    """The 6-layer teacher as GuardFiles: base layers 0-4, the fine-tuned layer 5, head;
    the file ``top`` (a clean retrain) or, without it, git's TEACHER_COMMIT."""
    from safetensors.numpy import load

    if top is not None:
        blob = top.read_bytes()
        digest = hashlib.sha256(blob).hexdigest()
        manifest: dict[str, object] = {"sha256": digest, "thresholds": {}}
    else:
        blob = _git(TEACHER_WEIGHTS)
        manifest = json.loads(_git(TEACHER_MANIFEST))
        digest = hashlib.sha256(blob).hexdigest()
        if digest != manifest["sha256"]:
            raise SystemExit(f"teacher weights {digest[:12]} do not match their manifest")
    tensors = {k: v.astype(np.float32) for k, v in graph.load_weights(base).items()
               if k.startswith("encoder.layer.")}
    tensors.update({k: v.astype(np.float32) for k, v in load(io.BytesIO(blob).read()).items()})
    return GuardFiles(tensors, {**manifest, "layers": 6}, digest)


def main() -> None:
    data, out = Path(sys.argv[1]), Path(sys.argv[2])
    base = weights.locate()
    files = teacher_files(base, Path(sys.argv[3]) if len(sys.argv) > 3 else None)
    session = ort.InferenceSession(build_graph(files, base), session_options(1),
                                   providers=["CPUExecutionProvider"])
    seqs, _, _ = guard_windows.training_windows(data, base.tokenizer)
    emb = np.zeros((len(seqs), 384), np.float32)
    for i, win in enumerate(seqs):
        (emb[i],) = session.run(None, batching.pack([win]))[0]
        if i % 1000 == 0:
            print(f"  teacher: {i}/{len(seqs)} windows", flush=True)
    w, b = files.head
    np.savez(out, emb=emb.astype(np.float16), logit=(emb @ w + b).astype(np.float32),
             head_weight=w, head_bias=np.array([b], np.float32))
    print(f"teacher vectors of {len(seqs)} windows -> {out}")


if __name__ == "__main__":
    main()
