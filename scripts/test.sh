#!/usr/bin/env bash
# The test command: lint, type-check, then the whole suite (real Prometheus,
# Redis and gRPC servers are started by the tests on loopback). It runs in the
# environment scripts/install.sh installed into: the active venv, else ./.venv
# (PYTHON=... chooses the interpreter, as for install.sh).
#
# The suite spends about half its time waiting on the servers it starts, so it runs
# as two pytest sessions side by side (mypy, ~40 s on a fresh clone, beside them):
# the end-to-end directories (SERVER_DIRS: real servers, SDKs, backends, containers)
# and the rest. The split is fixed, not scheduled (pytest-xdist hands files out in a
# different order each run): each session runs its files in the order the whole suite
# would, so a run is reproducible. Arguments (`test.sh tests/scan -k gate`) run one
# session with them. The 10 slowest tests of each session are listed, so a CI log
# says where the time goes. Any part failing fails the command.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(bash scripts/install.sh --python)
"$PY" -m ruff check llm_observe tests bench scripts
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PY" -m mypy >"$work/mypy" 2>&1 & mypy_pid=$!
pytest_args=(-q -p no:cacheprovider)

rc=0
if [ "$#" -gt 0 ]; then
  "$PY" -m pytest "${pytest_args[@]}" --durations=20 "$@" || rc=$?
else
  SERVER_DIRS=(tests/receiver tests/cli tests/backends tests/container)
  ignore=()
  for d in "${SERVER_DIRS[@]}"; do ignore+=("--ignore=$d"); done
  "$PY" -m pytest "${pytest_args[@]}" --durations=10 --basetemp="$work/servers" \
    "${SERVER_DIRS[@]}" >"$work/servers.log" 2>&1 & servers_pid=$!
  echo "test.sh: the rest of the suite (${SERVER_DIRS[*]} run beside it; its report follows)"
  "$PY" -m pytest "${pytest_args[@]}" --durations=10 --basetemp="$work/rest" \
    tests "${ignore[@]}" || rc=$?
  servers_rc=0
  wait "$servers_pid" || servers_rc=$?
  echo "test.sh: ${SERVER_DIRS[*]}:"
  cat "$work/servers.log"
  [ "$servers_rc" = 0 ] || { echo "test.sh: pytest over ${SERVER_DIRS[*]} failed"; rc=$servers_rc; }
fi
mypy_rc=0
wait "$mypy_pid" || mypy_rc=$?
cat "$work/mypy"
[ "$mypy_rc" = 0 ] || { echo "test.sh: mypy failed"; exit "$mypy_rc"; }
exit "$rc"
