#!/usr/bin/env bash
# The test command: lint, type-check, then the whole suite (real Prometheus,
# Redis and gRPC servers are started by the tests on loopback). It runs in the
# environment scripts/install.sh installed into: the active venv, else ./.venv
# (PYTHON=... chooses the interpreter, as for install.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(bash scripts/install.sh --python)
"$PY" -m ruff check llm_observe tests bench scripts
"$PY" -m mypy
"$PY" -m pytest -q -p no:cacheprovider "$@"
