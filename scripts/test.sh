#!/usr/bin/env bash
# The test command: lint, type-check, then the whole suite (real Prometheus,
# Redis and gRPC servers are started by the tests on loopback).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
"$PYTHON" -m ruff check llm_observe tests bench scripts
"$PYTHON" -m mypy
"$PYTHON" -m pytest -q -p no:cacheprovider "$@"
