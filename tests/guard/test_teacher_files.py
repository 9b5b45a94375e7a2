"""The teacher the student is distilled from (scripts/guard_teacher.py): by default the
earlier 6-layer encoder read from git (the ``--legacy-apps`` recipe), or a retrained
top layer + head from a file (the clean recipe, scripts/guard_teacher_torch.py's
output). Either way the lower five layers are the base model's and the head is the
file's own: a file that is read must be the one that teaches."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
pytest.importorskip("safetensors")
pytest.importorskip("onnxruntime")

import guard_teacher  # noqa: E402

from llm_observe.embedding import weights  # noqa: E402


def _git_has_teacher() -> bool:
    return subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e",
                           f"{guard_teacher.TEACHER_COMMIT}:{guard_teacher.TEACHER_WEIGHTS}"],
                          capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def base() -> weights.ModelFiles:
    try:
        return weights.locate()
    except Exception as exc:  # the [embeddings] extra's base model is not installed
        pytest.skip(f"base model missing: {exc}")


@pytest.mark.skipif(not _git_has_teacher(), reason="a clone without the teacher's commit")
def test_a_teacher_file_is_read_instead_of_git(base: weights.ModelFiles, tmp_path: Path) -> None:
    from safetensors.numpy import load, save_file

    old = guard_teacher.teacher_files(base)
    assert old.layers == 6
    tensors = load(io.BytesIO(guard_teacher._git(guard_teacher.TEACHER_WEIGHTS)).read())
    tensors["head.bias"] = tensors["head.bias"] + np.float32(1.5)  # a different teacher
    path = tmp_path / "top_layers.safetensors"
    save_file(tensors, str(path))

    new = guard_teacher.teacher_files(base, path)
    assert new.layers == 6
    assert new.sha256 != old.sha256
    assert new.head[1] == pytest.approx(old.head[1] + 1.5)
    for name in ("encoder.layer.0.attention.self.query.weight",
                 "encoder.layer.5.output.dense.weight"):
        np.testing.assert_array_equal(new.tensors[name], old.tensors[name])
