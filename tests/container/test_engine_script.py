"""scripts/container_engine.sh where no engine can be had, and its containers.conf merge,
run for real against stand-ins (no engine needed): it must never break or overwrite a
user's configuration, and must exit 0 with one line when there is nothing to set up."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts/container_engine.sh"
# what the script needs from a host besides an engine and apt
TOOLS = ("bash", "id", "date", "dirname", "sed", "grep", "cat", "tail", "mkdir", "tee", "cut",
         "find", "sort", "xargs", "sha256sum", "mktemp", "rm", "tar", "cp", "sleep", "seq")

# A podman that runs the base only with a nofile ulimit: from --ulimit, or from the
# default_ulimits of the containers.conf it reads ($CONTAINERS_CONF), like this VM's.
FAKE_PODMAN = """#!{python}
import os, sys
args = sys.argv[1:]
if args[0] == "version":
    print("4.3.1")
elif args[:2] == ["image", "inspect"]:
    pass  # the base image exists
elif args[0] == "run":
    conf = open(os.environ["CONTAINERS_CONF"]).read()
    if "--ulimit" not in args and "default_ulimits" not in conf:
        print("Error: OCI runtime error: setrlimit RLIMIT_NOFILE: operation not permitted",
              file=sys.stderr)
        sys.exit(126)
else:
    sys.exit(2)
"""


def _bin(tmp_path: Path, *extra: str) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in (*TOOLS, *extra):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    return bin_dir


def _run(bin_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / "bash"), str(SCRIPT), *args],
                          env={"PATH": str(bin_dir), "HOME": os.environ.get("HOME", "/root"),
                               **env},
                          capture_output=True, text=True, timeout=60, check=False)


def test_no_engine_and_no_apt_exits_0_with_one_line(tmp_path: Path) -> None:
    done = _run(_bin(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "container_engine.sh: no container engine: podman is not installed and apt-get "
        "cannot install it here (needs Debian/Ubuntu and root)"]


def test_only_the_missing_key_is_added_and_the_users_own_file_is_kept(tmp_path: Path) -> None:
    bin_dir = _bin(tmp_path)
    podman = bin_dir / "podman"
    podman.write_text(FAKE_PODMAN.format(python=sys.executable))
    podman.chmod(0o755)
    conf = tmp_path / "containers.conf"
    mine = ('# my settings\n[containers]\nlog_size_max = 1048576\n\n'
            '[engine]\nruntime = "crun"   # mine, kept\n')
    conf.write_text(mine)
    done = _run(bin_dir, "--engine", "podman", "--no-build", CONTAINERS_CONF=str(conf))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "podman\n"
    nofile = subprocess.run(["bash", "-c", "ulimit -Hn"], capture_output=True, text=True,
                            check=True).stdout.strip().replace("unlimited", "1048576")
    added = conf.read_text()
    assert added.startswith("# my settings\n[containers]\ndefault_ulimits = [\"nofile=")
    assert f'"nofile={nofile}:{nofile}"' in added
    assert added.replace(added.splitlines()[2] + "\n", "", 1) == mine  # all else as it was
    # a second run finds nothing to do and leaves the file alone
    again = _run(bin_dir, "--engine", "podman", "--no-build", CONTAINERS_CONF=str(conf))
    assert again.returncode == 0 and "added" not in again.stderr
    assert conf.read_text() == added
