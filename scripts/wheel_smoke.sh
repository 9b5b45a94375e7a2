#!/usr/bin/env bash
# Builds the wheel, installs it in a fresh venv outside the source tree and,
# from there, counts tokens and prices a span with the packaged config files.
# Builds with the interpreter scripts/install.sh installed into (it has `build`).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=$(bash scripts/install.sh --python)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PYTHON" -m build --wheel --outdir "$work/dist" . >/dev/null
"$PYTHON" -m venv "$work/venv"
# The wheel's own ranges, held to the versions CI tested (the lock, as constraints).
grep -E '^[A-Za-z0-9][^ ]*==' requirements/dev.lock | sed 's/ *\\$//' >"$work/constraints.txt"
"$work/venv/bin/pip" install -q -c "$work/constraints.txt" "$(ls "$work"/dist/*.whl)[tokens]"
cd "$work"
"$work/venv/bin/python" - <<'PY'
from llm_observe import count_tokens
from llm_observe.pricing import load_price_table
from llm_observe.processors.cost import CostProcessor
from llm_observe.span import LlmSpan

c = count_tokens("Hello, world! How are you today?", "gpt-4o")
assert c.method == "exact", c
span = LlmSpan(model="gpt-4o", provider="openai", prompt_tokens=1000, completion_tokens=500)
CostProcessor(load_price_table()).process([span])
assert span.cost_usd_micro and span.cost_usd_micro > 0, span
print(f"wheel smoke: {c.tokens} tokens ({c.method}); 1000+500 gpt-4o tokens = "
      f"{span.cost_usd_micro} micro-USD (price {span.price_version})")
PY
