"""Which interpreter scripts/install.sh installs into, and so test.sh runs.

`install.sh --python` prints the choice without installing anything; each test
runs it from a copy of scripts/ in a scratch tree, with throwaway venvs made
--without-pip (a venv is recognised by its interpreter, pip or not).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")


def _base_python() -> str:
    """An interpreter that is not a venv's: the one this venv was made from."""
    if sys.prefix == sys.base_prefix:
        return sys.executable
    for name in (f"python{sys.version_info[0]}.{sys.version_info[1]}", "python3"):
        p = Path(sys.base_prefix) / "bin" / name
        if p.exists():
            return str(p)
    pytest.skip("no base interpreter found")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "install.sh", tmp_path / "scripts" / "install.sh")
    return tmp_path


def _make_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=False, symlinks=True).create(path)
    return path / "bin" / "python"


def _chosen(tree: Path, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "VIRTUAL_ENV")}
    # python3 on PATH is a base interpreter, as on a machine with no venv active.
    base_dir = str(Path(_base_python()).parent)
    clean["PATH"] = base_dir + os.pathsep + clean.get("PATH", "")
    clean.update(env)
    out = subprocess.run([BASH or "bash", "scripts/install.sh", "--python"], cwd=tree, env=clean,
                         capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.strip()


def test_no_venv_anywhere_means_the_plain_interpreter(tree: Path) -> None:
    # Nothing installed yet (or an install from before .venv): python3 as before.
    assert _chosen(tree) == "python3"
    assert _chosen(tree, PYTHON=_base_python()) == _base_python()


def test_the_project_venv_once_it_exists(tree: Path) -> None:
    _make_venv(tree / ".venv")
    expected = str(tree.resolve() / ".venv" / "bin" / "python")
    assert _chosen(tree) == expected
    assert _chosen(tree, PYTHON=_base_python()) == expected


def test_an_active_venv_wins_over_the_project_venv(tree: Path, tmp_path: Path) -> None:
    _make_venv(tree / ".venv")
    mine = tmp_path / "mine"
    py = _make_venv(mine)
    assert _chosen(tree, VIRTUAL_ENV=str(mine)) == str(py)
    # PYTHON naming a venv's interpreter means that venv, as before.
    assert _chosen(tree, PYTHON=str(py)) == str(py)


def test_python_on_path_being_a_venv_counts_as_active(tree: Path, tmp_path: Path) -> None:
    _make_venv(tree / ".venv")
    py = _make_venv(tmp_path / "onpath")
    path = f"{py.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    assert _chosen(tree, PATH=path) == "python3"  # python3 is the venv's: install there


def test_scripts_parse() -> None:
    for name in ("install.sh", "test.sh", "wheel_smoke.sh"):
        subprocess.run([BASH or "bash", "-n", str(ROOT / "scripts" / name)], check=True)
    subprocess.run([BASH or "bash", "-n", str(ROOT / ".ci" / "run")], check=True)
