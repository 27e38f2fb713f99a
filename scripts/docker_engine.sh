#!/usr/bin/env bash
# A Docker engine for the docker backend, on machines that have none running (as on our CI machines).
#   start: install docker-compose and debootstrap from Debian when missing (root only); if no engine
#          answers, install docker.io the same way, start `dockerd --bridge=none --iptables=false`
#          (no networks: the harness's containers use the host network and loopback listeners only)
#          and wait until it answers. An engine that already answers (Docker Desktop, a system
#          service) is used as it is and never stopped by this script.
#   stop:  stop the engine `start` started (nothing otherwise).
set -euo pipefail
state="${XDG_RUNTIME_DIR:-/tmp}/ksh-dockerd"
die() { echo "docker_engine.sh: error: $*" >&2; exit 2; }

# install_missing PACKAGE:COMMAND... : install from Debian the packages whose command is missing
# (root only; otherwise say which install command would, and return 1).
install_missing() {
  local missing=() spec
  for spec in "$@"; do
    command -v "${spec#*:}" >/dev/null 2>&1 || missing+=("${spec%%:*}")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "docker_engine.sh: missing ${missing[*]}: install them (sudo apt-get install ${missing[*]})" >&2
    return 1
  fi
  echo "docker_engine.sh: installing ${missing[*]} from Debian"
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null \
    || die "apt-get install ${missing[*]} failed"
}

case "${1:-}" in
  start)
    # what the harness's docker tests use beside the engine: docker-compose (the compose smoke) and
    # debootstrap (scripts/docker_images.sh, where no image can be pulled)
    install_missing docker-compose:docker-compose debootstrap:debootstrap || true  # their users name them again
    if docker info >/dev/null 2>&1; then
      echo "docker_engine.sh: an engine answers already; using it"
      exit 0
    fi
    install_missing docker.io:dockerd || die "no Docker engine answers and dockerd is not installed"
    mkdir -p "$state"
    nohup dockerd --bridge=none --iptables=false --ip6tables=false --pidfile "$state/dockerd.pid" \
      > "$state/dockerd.log" 2>&1 &
    echo $! > "$state/started.pid"
    for _ in $(seq 600); do  # up to 60 s, on the engine's own answer
      docker info >/dev/null 2>&1 && { echo "docker_engine.sh: dockerd started (log: $state/dockerd.log)"; exit 0; }
      kill -0 "$(cat "$state/started.pid")" 2>/dev/null || { tail -5 "$state/dockerd.log" >&2; die "dockerd exited (log above)"; }
      sleep 0.1
    done
    tail -5 "$state/dockerd.log" >&2
    die "dockerd did not answer within 60 s (log above)"
    ;;
  stop)
    [ -s "$state/started.pid" ] || exit 0
    pid=$(cat "$state/started.pid")
    rm -f "$state/started.pid"
    kill "$pid" 2>/dev/null || exit 0
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || { echo "docker_engine.sh: dockerd stopped"; exit 0; }; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    echo "docker_engine.sh: dockerd killed after 30 s" >&2
    ;;
  *)
    die "usage: bash scripts/docker_engine.sh start|stop"
    ;;
esac
