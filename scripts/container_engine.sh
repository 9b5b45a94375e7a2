#!/usr/bin/env bash
# Set up a container engine on a Debian/Ubuntu host and build the all-in-one image's
# `local` target (docker/Dockerfile) from a Debian base made here with debootstrap,
# so nothing is pulled from a registry.
#
#   bash scripts/container_engine.sh                  # podman preferred, else docker
#   bash scripts/container_engine.sh --engine docker  # or LLM_OBSERVE_CONTAINER_ENGINE
#   bash scripts/container_engine.sh --no-build       # engine + base image only
#
# Steps, each skipped when already done (a second run takes seconds):
#   1. an engine: the one asked for, else podman, else a docker with a daemon; none at all:
#      `apt-get install podman` (or docker.io). No apt, no root: exit 0 with one line.
#   2. the base image localhost/llm-observe-base:bookworm: debootstrap --variant=minbase
#      plus ca-certificates and this host's own CA certificates (a proxy that intercepts
#      TLS then works inside builds too).
#   3. podman only: run the base once; if it fails, find which of runtime=runc and
#      default_ulimits (at this host's hard limits) makes it run and add just those keys
#      to containers.conf -- a key the user already set is never touched.
#   +  docker-compose from Debian when no compose is installed (the compose files' check);
#   4. build --target local, tagged llmobserve/llm-observe:local (skipped when the
#      image's source label matches the checkout's files).
# Prints the engine's name as its last line on stdout (the tests read it).
set -euo pipefail
cd "$(dirname "$0")/.."

BASE=localhost/llm-observe-base:bookworm
IMAGE=${LLM_OBSERVE_LOCAL_IMAGE:-llmobserve/llm-observe:local}
SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
engine=${LLM_OBSERVE_CONTAINER_ENGINE:-}
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --engine) engine=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    *) echo "usage: $0 [--engine podman|docker] [--no-build]" >&2; exit 2 ;;
  esac
done

say() { echo "container_engine.sh: $*" >&2; }
t0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - t0 )) s"; }
sudo_=""
[ "$(id -u)" = 0 ] || sudo_="sudo -n"
apt_install() {  # apt-get install "$@", or return 1 when this host cannot
  command -v apt-get >/dev/null 2>&1 || return 1
  [ -z "$sudo_" ] || $sudo_ true 2>/dev/null || return 1
  $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" \
    >/dev/null 2>&1 && return 0
  $sudo_ apt-get update -q >/dev/null 2>&1 || return 1
  $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" \
    >/dev/null 2>&1
}

# --- 1. the engine -------------------------------------------------------------------
docker_up() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
start_dockerd() {  # no systemd here (containers, CI VMs): run the daemon ourselves
  docker_up && return 0
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    $sudo_ systemctl start docker || true
  elif command -v dockerd >/dev/null 2>&1; then
    $sudo_ sh -c 'nohup dockerd >/var/log/llm-observe-dockerd.log 2>&1 &'
  fi
  for _ in $(seq 1 30); do docker_up && return 0; sleep 1; done
  return 1
}
if [ -z "$engine" ]; then
  if command -v podman >/dev/null 2>&1; then engine=podman
  elif command -v docker >/dev/null 2>&1 && docker_up; then engine=docker
  else engine=podman
  fi
fi
# what later steps need from apt, installed with the engine in one apt-get run: the base
# image's debootstrap, and a compose that has `config` (Debian's docker-compose; Debian's
# podman-compose 1.0.3 has none) for the compose files' check -- that one is optional
extra=()
command -v debootstrap >/dev/null 2>&1 || extra+=(debootstrap)
compose=()
docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null 2>&1 \
  || compose=(docker-compose)
install_with_extras() {  # install_with_extras PKG...: with the extras; without compose if need be
  apt_install "$@" "${extra[@]}" "${compose[@]}" \
    || { [ ${#compose[@]} = 0 ] || apt_install "$@" "${extra[@]}"; } || return 1
  extra=()
  command -v docker-compose >/dev/null 2>&1 && compose=()
  return 0
}
case "$engine" in
  podman)
    if ! command -v podman >/dev/null 2>&1; then
      say "installing podman from the distribution (apt-get)"
      # runc as well as crun: crun fails on hosts with hybrid cgroups (step 3)
      install_with_extras podman runc uidmap slirp4netns fuse-overlayfs \
        || { echo "container_engine.sh: no container engine: podman is not installed and apt-get cannot install it here (needs Debian/Ubuntu and root)"; exit 0; }
    fi ;;
  docker)
    if ! command -v dockerd >/dev/null 2>&1 && ! docker_up; then
      say "installing docker.io from the distribution (apt-get)"
      install_with_extras docker.io \
        || { echo "container_engine.sh: no container engine: docker.io is not installed and apt-get cannot install it here (needs Debian/Ubuntu and root)"; exit 0; }
    fi
    start_dockerd || { echo "container_engine.sh: no container engine: the docker daemon does not start (see /var/log/llm-observe-dockerd.log)"; exit 0; }
    export DOCKER_BUILDKIT=0 ;;  # the legacy builder: BuildKit's frontend comes from Docker Hub
  *) say "--engine must be podman or docker, got '$engine'"; exit 2 ;;
esac
say "engine: $engine ($(elapsed))"

# --- 2. the base image ---------------------------------------------------------------
if ! $engine image inspect "$BASE" >/dev/null 2>&1; then
  [ ${#extra[@]} = 0 ] || apt_install "${extra[@]}" || { say "cannot install debootstrap"; exit 1; }
  root=$(mktemp -d /var/tmp/llm-observe-base.XXXXXX)
  trap '$sudo_ rm -rf "$root"' EXIT
  say "debootstrap $SUITE (minbase) into $root"
  $sudo_ debootstrap --variant=minbase --include=ca-certificates "$SUITE" "$root" "$MIRROR" \
    >"$root.log" 2>&1 || { tail -5 "$root.log" >&2; say "debootstrap failed (log: $root.log)"; exit 1; }
  rm -f "$root.log"
  # trust what this host trusts: a TLS-intercepting proxy's CA must work inside builds
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    $sudo_ cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
    $sudo_ chroot "$root" update-ca-certificates >/dev/null 2>&1
  fi
  $sudo_ rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
  $sudo_ tar -C "$root" -c . | $engine import --change 'CMD ["/bin/bash"]' - "$BASE" \
    >/dev/null 2>"$root.log" || { cat "$root.log" >&2; exit 1; }
  rm -f "$root.log"
  $sudo_ rm -rf "$root"
  trap - EXIT
  say "base image $BASE imported ($(elapsed))"
fi

# --- 3. podman: the settings this host needs, and only those ---------------------------
conf_has() {  # conf_has FILE KEY: KEY is set (uncommented) in FILE
  [ -f "$1" ] && grep -Eq "^[[:space:]]*$2[[:space:]]*=" "$1"
}
conf_add() {  # conf_add FILE SECTION LINE: add LINE under [SECTION], creating either
  local file=$1 section=$2 line=$3
  $sudo_ mkdir -p "$(dirname "$file")"
  if [ -f "$file" ] && grep -Eq "^[[:space:]]*\[$section\]" "$file"; then
    $sudo_ sed -i -E "0,/^[[:space:]]*\[$section\]/s//[$section]\n$line/" "$file"
  else
    printf '\n[%s]\n%s\n' "$section" "$line" | $sudo_ tee -a "$file" >/dev/null
  fi
  say "added to $file [$section]: $line"
}
if [ "$engine" = podman ]; then
  # the file podman reads: $CONTAINERS_CONF when set (podman's own override), else the
  # system one for root, the user's one otherwise
  conf=/etc/containers/containers.conf
  [ "$(id -u)" = 0 ] || conf=${XDG_CONFIG_HOME:-$HOME/.config}/containers/containers.conf
  conf=${CONTAINERS_CONF:-$conf}
  runs() { podman run --rm --network none "$@" "$BASE" true >/dev/null 2>&1; }
  if ! runs; then
    nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
    [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ] && nproc=32768
    [ "$nofile" = unlimited ] && nofile=1048576
    ulimits=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")
    if runs --runtime runc; then need=(runtime)
    elif runs "${ulimits[@]}"; then need=(ulimits)
    elif runs --runtime runc "${ulimits[@]}"; then need=(runtime ulimits)
    else
      podman run --rm --network none "$BASE" true 2>&1 | tail -3 >&2 || true
      echo "container_engine.sh: no container engine: podman is installed but cannot run a container here (above: its error)"
      exit 0
    fi
    for key in "${need[@]}"; do
      case $key in
        runtime) conf_has "$conf" runtime && say "$conf sets runtime already: left as is" \
                   || conf_add "$conf" engine 'runtime = "runc"' ;;
        ulimits) conf_has "$conf" default_ulimits && say "$conf sets default_ulimits already: left as is" \
                   || conf_add "$conf" containers "default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=$nproc:$nproc\"]" ;;
      esac
    done
    runs || { echo "container_engine.sh: no container engine: podman still cannot run a container with $conf"; exit 0; }
  fi
fi

# --- the compose check's tool (tests/container/test_compose.py), if not installed above
if [ ${#compose[@]} != 0 ]; then
  apt_install docker-compose && say "installed docker-compose (to check the compose files)" \
    || say "docker-compose not installable: the compose files' check will skip"
fi

# --- 4. the local image ----------------------------------------------------------------
if [ "$build" = 1 ]; then
  # The build context is exactly what docker/Dockerfile.dockerignore lets in (its !lines),
  # copied to a scratch directory: the legacy builder and podman 4.3 read only a root
  # .dockerignore, and a checkout's .venv would otherwise be sent too.
  paths=$(sed -n 's/^!\(.*\)$/\1/p' docker/Dockerfile.dockerignore | sed 's#/\*\*$##')
  # shellcheck disable=SC2086
  source_id=$(find docker/Dockerfile $paths -type f ! -name '*.pyc' -print0 | sort -z | xargs -0 sha256sum \
              | sha256sum | cut -c1-16)
  have=$($engine image inspect --format '{{index .Config.Labels "io.llm-observe.source"}}' \
         "$IMAGE" 2>/dev/null || true)
  have_id=$($engine image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
  if [ "$have" = "$source_id" ]; then
    say "image $IMAGE is up to date with the checkout ($(elapsed))"
  else
    ctx=$(mktemp -d)
    trap 'rm -rf "$ctx"' EXIT
    # shellcheck disable=SC2086
    tar -c --exclude=__pycache__ --exclude='*.pyc' $paths | tar -x -C "$ctx"
    cp docker/Dockerfile "$ctx/docker/Dockerfile"
    cp docker/Dockerfile.dockerignore "$ctx/.dockerignore"
    say "building $IMAGE (target local)"
    fmt=()  # podman's default OCI format drops HEALTHCHECK
    [ "$engine" = podman ] && fmt=(--format docker)
    log=$ctx.log  # the build's chatter, shown only when it fails
    trap 'rm -rf "$ctx" "$log"' EXIT
    $engine build "${fmt[@]}" --target local --build-arg "BASE_IMAGE=$BASE" \
      --build-arg "LLM_OBSERVE_SOURCE=$source_id" -t "$IMAGE" -f "$ctx/docker/Dockerfile" "$ctx" \
      >"$log" 2>&1 || { tail -40 "$log" >&2; say "build failed (above: the last 40 lines)"; exit 1; }
    say "built $IMAGE ($(elapsed))"
    # the image this build replaced keeps its own layers (the dependencies' ~700 MB)
    [ -z "$have_id" ] || [ "$have_id" = "$($engine image inspect --format '{{.Id}}' "$IMAGE")" ] \
      || $engine rmi "$have_id" >/dev/null 2>&1 || true
  fi
fi
echo "$engine"
