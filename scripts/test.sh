#!/usr/bin/env bash
# The test command: lint, type-check, then the whole suite (real Prometheus,
# Redis and gRPC servers are started by the tests on loopback). It runs in the
# environment scripts/install.sh installed into: the active venv, else ./.venv
# (PYTHON=... chooses the interpreter, as for install.sh). mypy (~40 s on a fresh
# clone) runs beside the suite, which mostly waits on its servers; its report is
# printed after the suite, and either failing fails the command. The slowest tests
# are listed at the end, so a CI log says where the suite's time goes.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(bash scripts/install.sh --python)
"$PY" -m ruff check llm_observe tests bench scripts
mypy_log=$(mktemp)
trap 'rm -f "$mypy_log"' EXIT
"$PY" -m mypy >"$mypy_log" 2>&1 & mypy_pid=$!
rc=0
"$PY" -m pytest -q -p no:cacheprovider --durations=20 "$@" || rc=$?
mypy_rc=0
wait "$mypy_pid" || mypy_rc=$?
cat "$mypy_log"
[ "$mypy_rc" = 0 ] || { echo "test.sh: mypy failed"; exit "$mypy_rc"; }
exit "$rc"
