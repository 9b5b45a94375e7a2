#!/usr/bin/env bash
# The trace backends the forwarding tests send to (tests/backends/), each in a virtual
# environment of its own so that none of their dependencies enters ours:
#   phoenix  arize-phoenix   (OTLP gRPC and HTTP/protobuf)
#   mlflow   mlflow          (`mlflow server`, OTLP/HTTP protobuf at /v1/traces)
#   openai-agents  the OpenAI Agents SDK traced by OpenInference or OpenLLMetry, exporting OTLP: a
#            producer, not a backend (tests/receiver/test_openai_agents_e2e.py runs an agent
#            script in it); its websockets pin would downgrade ours
# Pinned versions; a venv is kept under $LLM_OBSERVE_BACKENDS_DIR (default
# ~/.cache/llm-observe/backends) with a stamp of its pin, so a second run is a no-op.
# One that cannot be installed (no network, no wheel for this Python) is said in one line
# and skipped; its tests skip with one line too. Never fails the caller.
#
#   bash scripts/install_backends.sh          # install what is missing, wait for it
#   bash scripts/install_backends.sh --bg     # the same in the background (install.sh):
#                                             # the tests wait for the "done" file
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${LLM_OBSERVE_BACKENDS_DIR:-$HOME/.cache/llm-observe/backends}
mkdir -p "$dir"

if [ "${1:-}" = "--bg" ]; then
  rm -f "$dir/done"
  nohup bash "$0" >"$dir/install.log" 2>&1 </dev/null &
  echo "install_backends.sh: installing the trace backends in the background (log: $dir/install.log)" >&2
  exit 0
fi

say() { echo "install_backends.sh: $*" >&2; }
PY=$(bash scripts/install.sh --python)
# name|requirement(s)|interpreter inside the venv must import this module
backends=(
  "phoenix|arize-phoenix==20.26.1|phoenix"
  "mlflow|mlflow==3.17.2|mlflow"
  "openai-agents|openai-agents==0.24.0 openinference-instrumentation-openai-agents==2.6.0 openinference-instrumentation-openai==0.1.66 opentelemetry-instrumentation-openai-agents==0.62.4 opentelemetry-instrumentation-openai==0.62.4 opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp==1.45.2|agents"
)
# Only one installer at a time per directory (install.sh may start one while a test waits).
exec 9>"$dir/.lock"
flock 9
for entry in "${backends[@]}"; do
  IFS='|' read -r name reqs module <<<"$entry"
  venv=$dir/$name
  stamp="$reqs"  # the backend runs as a program of its own: any Python 3.10+ venv will do
  if [ -f "$venv/.stamp" ] && [ "$(cat "$venv/.stamp")" = "$stamp" ] \
     && "$venv/bin/python" -c pass >/dev/null 2>&1; then  # (importing them takes seconds)
    say "$name already installed ($reqs)"
    continue
  fi
  rm -rf "$venv"
  t0=$(date +%s)
  # uv (pinned in requirements/dev.lock) installs a backend in seconds where pip takes minutes
  # shellcheck disable=SC2086
  if "$PY" -m uv venv -q --python "$PY" "$venv" >"$venv.log" 2>&1 \
     && "$PY" -m uv pip install -q --python "$venv/bin/python" $reqs >>"$venv.log" 2>&1 \
     && "$venv/bin/python" -c "import $module" >>"$venv.log" 2>&1; then
    echo "$stamp" >"$venv/.stamp"
    say "$name installed ($reqs) in $(( $(date +%s) - t0 )) s"
  else
    say "$name cannot be installed ($reqs: $(tail -n 1 "$venv.log" 2>/dev/null)); its tests will skip"
    rm -rf "$venv"
  fi
done
touch "$dir/done"
