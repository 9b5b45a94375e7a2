#!/usr/bin/env bash
# The README's install command as a stock Debian/Ubuntu user runs it: with the system
# Python (externally managed, PEP 668), in a throwaway copy of the checkout, then once
# more (a no-op). Skipped (exit 0) when there is no system Python >= 3.11.
set -euo pipefail
cd "$(dirname "$0")/.."
stock_python=/usr/bin/python3
if ! [ -x "$stock_python" ] || ! "$stock_python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "ci: no system Python >= 3.11 at $stock_python: stock-Python install check skipped"
  exit 0
fi
work=$(cd "$(mktemp -d)" && pwd -P)
trap 'rm -rf "$work"' EXIT
# The checkout as it is on disk (tracked and new files; no .venv, no caches).
git ls-files -coz --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null \
  | tar -xf - -C "$work"
cd "$work"
install() {
  env -u VIRTUAL_ENV LLM_OBSERVE_SKIP_CONTAINER=1 LLM_OBSERVE_SKIP_BACKENDS=1 \
    PYTHON="$stock_python" bash scripts/install.sh "$@"
}
t0=$(date +%s)
install
t1=$(date +%s)
prefix() { "$1" -c 'import sys; print(sys.base_prefix)'; }
[ "$(prefix .venv/bin/python)" = "$(prefix "$stock_python")" ] \
  || { echo "ci: .venv was not made from $stock_python:"; cat .venv/pyvenv.cfg; exit 1; }
(cd / && "$work/.venv/bin/python" -c '
import sys, llm_observe
assert llm_observe.__file__.startswith(sys.argv[1]), llm_observe.__file__
' "$work/")
.venv/bin/llm-observe --help >/dev/null
# The README's test command finds .venv by itself; a second install is a no-op.
[ "$(env -u VIRTUAL_ENV bash scripts/install.sh --python)" = "$work/.venv/bin/python" ]
again=$(install 2>&1)
t2=$(date +%s)
grep -q 'already installed' <<<"$again" || { echo "$again"; exit 1; }
echo "ci: stock-Python install check passed (install $((t1 - t0)) s, again $((t2 - t1)) s)"
