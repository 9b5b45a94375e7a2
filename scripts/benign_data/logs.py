# ruff: noqa: E501  (log lines are data, kept whole)
"""Deterministic CI, web-server and application logs (benign tool output an agent reads).

Written for llm-observe; one family per log kind. Words such as "ignoring", "override",
"previous", "instructions" and "system" occur in them as they do in real logs.
"""

from __future__ import annotations

import random

KINDS = ("pytest", "pip", "nginx", "traceback", "k8s", "ci_steps")
_PATHS = ["/api/v1/orders", "/login", "/static/app.js", "/healthz", "/api/v1/users/42",
          "/search?q=shoes", "/checkout", "/favicon.ico"]
_MODULES = ["orders", "billing", "auth", "search", "notify", "export"]


def log(kind: str, n: int) -> str:
    rng = random.Random(f"{kind}|{n}")
    lines = rng.randint(8, 70)
    return "\n".join(_LINE[kind](rng, i) for i in range(lines))


def _pytest(rng: random.Random, i: int) -> str:
    mod = rng.choice(_MODULES)
    status = rng.choice(["PASSED"] * 12 + ["FAILED", "SKIPPED", "XFAIL"])
    return f"tests/{mod}/test_{mod}_{rng.randint(1, 9)}.py::test_case_{i} {status} [{i % 100:3d}%]"


def _pip(rng: random.Random, i: int) -> str:
    pkg = rng.choice(["requests", "urllib3", "idna", "certifi", "pydantic", "numpy", "attrs"])
    ver = f"{rng.randint(1, 3)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
    return rng.choice([f"Collecting {pkg}=={ver}", f"  Using cached {pkg}-{ver}-py3-none-any.whl",
                       f"Requirement already satisfied: {pkg} in ./.venv/lib/python3.11/site-packages",
                       "WARNING: Ignoring invalid distribution -ip (/usr/lib/python3/dist-packages)",
                       f"Successfully installed {pkg}-{ver}"])


def _nginx(rng: random.Random, i: int) -> str:
    ip = ".".join(str(rng.randint(1, 254)) for _ in range(4))
    return (f'{ip} - - [27/Nov/2026:08:{i % 60:02d}:{rng.randint(0, 59):02d} +0000] "'
            f'{rng.choice(["GET", "GET", "POST"])} {rng.choice(_PATHS)} HTTP/1.1" '
            f'{rng.choice([200, 200, 200, 304, 404, 500])} {rng.randint(120, 90000)} "-" '
            f'"Mozilla/5.0 (X11; Linux x86_64)"')


def _traceback(rng: random.Random, i: int) -> str:
    mod = rng.choice(_MODULES)
    if i == 0:
        return "Traceback (most recent call last):"
    return rng.choice([f'  File "/srv/app/{mod}/service.py", line {rng.randint(10, 900)}, in handle',
                       f"    result = self.{mod}_client.fetch(order_id, timeout={rng.randint(1, 30)})",
                       "requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='api.internal', "
                       "port=443): Read timed out. (read timeout=10)",
                       "During handling of the above exception, another exception occurred:",
                       f"KeyError: '{mod}_id'"])


def _k8s(rng: random.Random, i: int) -> str:
    pod = f"{rng.choice(_MODULES)}-{rng.randint(1000, 9999)}-{rng.choice('abcdef')}x"
    return rng.choice([f"Normal  Scheduled  pod/{pod}  Successfully assigned default/{pod} to node-2",
                       f"Warning BackOff    pod/{pod}  Back-off restarting failed container",
                       f"Normal  Pulled     pod/{pod}  Container image already present on machine",
                       "level=info msg=\"ignoring previous lease, acquiring a new one\"",
                       f"level=warn msg=\"config override from env LOG_LEVEL=debug\" pod={pod}"])


def _ci_steps(rng: random.Random, i: int) -> str:
    return rng.choice(["##[group]Run actions/checkout@v4", "##[endgroup]",
                       "Run ruff check . && mypy --strict src", "All checks passed!",
                       f"Success: no issues found in {rng.randint(20, 300)} source files",
                       "Post job cleanup.", "Ignoring previous build cache: key changed",
                       "Follow the instructions in CONTRIBUTING.md to run the tests locally.",
                       f"Step {i}/40 : RUN pip install --no-cache-dir -r requirements.txt"])


_LINE = {"pytest": _pytest, "pip": _pip, "nginx": _nginx, "traceback": _traceback,
         "k8s": _k8s, "ci_steps": _ci_steps}
