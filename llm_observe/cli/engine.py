"""The container engine the launcher drives: podman or docker, found automatically.

Both CLIs take the same arguments for what the launcher does (run, container inspect,
exec, stop, rm, version), so one small wrapper serves both. :func:`find_engine` picks
the engine asked for (``--engine`` or ``LLM_OBSERVE_CONTAINER_ENGINE``), else the first
of podman and docker that answers, and when none does, says why in one line: not
installed, or installed with no daemon/service answering.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

ENGINE_ENV = "LLM_OBSERVE_CONTAINER_ENGINE"
ENGINES = ("podman", "docker")  # podman first: daemonless, so it answers once installed
SETUP_HINT = "bash scripts/container_engine.sh installs and sets up one"


class Engine:
    """Runs the container CLI; every call returns (exit code, stdout, stderr), never raises."""

    def __init__(self, executable: str) -> None:
        self.executable = executable

    @property
    def name(self) -> str:
        """podman or docker (the executable's base name)."""
        return os.path.basename(self.executable)

    def __call__(self, *args: str, timeout: float = 60.0) -> tuple[int, str, str]:
        try:
            done = subprocess.run([self.executable, *args], capture_output=True, text=True,
                                  timeout=timeout, check=False)
        except FileNotFoundError:
            return 127, "", f"{self.executable}: command not found"
        except subprocess.TimeoutExpired:
            return 124, "", f"{self.executable} {args[0]}: timed out after {timeout:.0f} s"
        return done.returncode, done.stdout.strip(), done.stderr.strip()

    def answers(self) -> tuple[bool, str]:
        """(True, "") when the engine (docker's daemon, podman itself) answers, else
        (False, its last error line)."""
        rc, out, err = self("version", "--format", "{{.Server.Version}}", timeout=20.0)
        if rc == 0 and out:
            return True, ""
        return False, (err.splitlines() or [f"exit status {rc}"])[-1]

    def state(self, name: str) -> tuple[str, str] | None:
        """(status, image) of the named container, or None when there is none."""
        rc, out, _ = self("container", "inspect", "--format",
                          "{{.State.Status}} {{.Config.Image}}", name)
        if rc != 0 or not out:
            return None
        status, _, image = out.partition(" ")
        return status, image

    def label(self, image: str, key: str) -> str:
        """The value of label ``key`` of ``image`` ("" when absent or not inspectable)."""
        rc, out, _ = self("image", "inspect", "--format",
                          f'{{{{index .Config.Labels "{key}"}}}}', image)
        return out if rc == 0 and out != "<no value>" else ""

    def read_file(self, name: str, path: str, wait_s: float) -> str | None:
        """The content of ``path`` in the running container, polled until ``wait_s``."""
        deadline = time.monotonic() + wait_s
        while True:
            rc, out, _ = self("exec", name, "cat", path, timeout=15.0)
            if rc == 0 and out:
                return out
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.5)


def find_engine(requested: str | None = None) -> tuple[Engine | None, str]:
    """The engine to use, or (None, one line saying why there is none).

    ``requested`` (or ``LLM_OBSERVE_CONTAINER_ENGINE``) limits the choice to that one
    engine; otherwise podman, then docker, the first that answers.
    """
    wanted = requested or os.environ.get(ENGINE_ENV) or ""
    names = (wanted,) if wanted else ENGINES
    installed = [path for path in (shutil.which(n) for n in names) if path]
    if not installed:
        return None, (f"{' or '.join(names)} not installed ({SETUP_HINT})")
    reasons = []
    for path in installed:
        engine = Engine(path)
        ok, why = engine.answers()
        if ok:
            return engine, ""
        what = "its daemon does not answer" if engine.name == "docker" else "it does not answer"
        reasons.append(f"{engine.name} is installed but {what}: {why}")
    return None, "; ".join(reasons)
