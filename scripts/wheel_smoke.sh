#!/usr/bin/env bash
# Builds the wheel, installs it in a fresh venv outside the source tree and,
# from there, counts tokens and prices a span with the packaged config files.
# With a C compiler and the Python headers the wheel is a platform wheel holding the word
# model's compiled scorer (setup.py), which the installed package must then use.
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
# ABI and platform tags: cp311-linux_x86_64 when the word model's C scorer was built
# (setup.py), none-any without a compiler
whl=$(basename "$(ls "$work"/dist/*.whl)" .whl)
WHEEL_TAG=${whl#*-*-*-}
SCORER_SHA256=$(sha256sum llm_observe/scan/native/_wordmodel.c | cut -d' ' -f1)
export WHEEL_TAG SCORER_SHA256
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
import hashlib
import importlib.machinery
import importlib.util
import os
from pathlib import Path

import llm_observe

# The scorer is loaded from its file: llm_observe.scan needs the [collector] extra, which
# this smoke test does not install (tests/scan/test_wordmodel_native.py checks its use).
native = Path(llm_observe.__file__).parent / "scan" / "native"
built = [p for s in importlib.machinery.EXTENSION_SUFFIXES for p in native.glob(f"_wordmodel{s}")]
if os.environ["WHEEL_TAG"] != "none-any":
    spec = importlib.util.spec_from_file_location("_wordmodel", built[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.SOURCE_SHA256 == os.environ["SCORER_SHA256"], module.SOURCE_SHA256
    print(f"wheel smoke: {os.environ['WHEEL_TAG']} wheel, word model compiled ({built[0].name})")
else:
    assert not built, built
    print("wheel smoke: pure wheel (no C compiler): the word model in pure Python")
print(f"wheel smoke: {c.tokens} tokens ({c.method}); 1000+500 gpt-4o tokens = "
      f"{span.cost_usd_micro} micro-USD (price {span.price_version})")
PY
