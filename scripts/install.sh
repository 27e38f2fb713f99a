#!/usr/bin/env bash
# Install the harness from its tested set, idempotently, reusing caches (issue 73):
# - the Python packages from the lock, harness/lock/requirements.txt (every pin with its hashes; pip's
#   --require-hashes), then the harness itself (editable, no dependency resolved again);
# - `share-harness setup`: the default Kafka release's jars (Maven -> ~/.cache/kafka-share-harness), its Java
#   driver and admin tools, the brokers' class-data archives, Toxiproxy (go install -> the same cache).
# What the main job does not need on every run (other Kafka releases, the franz-go and Spring drivers, the kfake
# launcher, Debian's chromium for the pages' tests) is fetched on first use, each with a progress line. `--all`
# installs it all now: CI (scripts/test.sh) does.
# Needs python3 (3.10+), Java 17+, Maven, Go. Every failure is one line naming the fix (exit 2).
set -euo pipefail
cd "$(dirname "$0")/.."
all=0
for arg in "$@"; do
  case "$arg" in
    --all) all=1 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: error: unknown option $arg: use --all (everything, as CI) or nothing (the main job's set)" >&2; exit 2 ;;
  esac
done
need() { command -v "$1" >/dev/null 2>&1 || { echo "install.sh: error: \`$1\` not found: $2" >&2; exit 2; }; }
need python3 "install Python 3.10+"
need java "install a Java 17+ JDK (apt-get install openjdk-17-jdk-headless)"
need mvn "install Maven 3.8+ (apt-get install maven)"
need go "install Go 1.26+ (it builds Toxiproxy and the franz-go driver; https://go.dev/dl)"
python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
  || { echo "install.sh: error: $(python3 -V 2>&1) is too old: install Python 3.10+" >&2; exit 2; }
lock=harness/lock/requirements.txt
[ -s "$lock" ] || { echo "install.sh: error: $lock is missing: restore it (git checkout -- $lock)" >&2; exit 2; }
log=$(mktemp "${TMPDIR:-/tmp}/ksh-pip.XXXXXX")
setup_log=$(mktemp "${TMPDIR:-/tmp}/ksh-setup.XXXXXX")
setup_pid=
# (a failure below stops the setup running beside it: its entries appear atomically, none is left half written)
trap 'if [ -n "$setup_pid" ]; then kill "$setup_pid" 2>/dev/null || true; fi; rm -f "$log" "$setup_log"' EXIT
# The main job's cache (the default release's jars, its Java driver and tools, the archives, Toxiproxy) is
# filled while pip works: that part of the harness needs only Python's standard library, run from this clone.
python3 -m harness.cli setup >"$setup_log" 2>&1 &
setup_pid=$!
# pip <code> <what failed>: one line from pip's log, with the fix
pip_failed() {
  local first
  first=$(grep -m1 -E "^ERROR|error:|THESE PACKAGES DO NOT MATCH|No matching distribution|Could not" "$log" | sed 's/^ERROR: //' | cut -c1-300)
  if grep -qE "NewConnectionError|Name or service not known|Temporary failure in name resolution|Network is unreachable|Max retries exceeded|timed out" "$log"; then
    echo "install.sh: error: the package index cannot be reached ($first): check the network, or set PIP_INDEX_URL to a reachable mirror" >&2
  elif grep -q "DO NOT MATCH THE HASHES" "$log"; then
    echo "install.sh: error: a download does not match the lock's hash ($first): the index served another file; regenerate the lock as harness/tested_set.py says, or use the index it was made from" >&2
  elif grep -qE "No matching distribution|Could not find a version" "$log"; then
    echo "install.sh: error: the lock cannot be satisfied here ($first): use a Python the lock covers (3.10-3.13) or regenerate it as harness/tested_set.py says" >&2
  else
    [ -n "$first" ] || first=$(tail -n1 "$log")
    echo "install.sh: error: $2: $first" >&2
  fi
  exit 2
}
# every pin from the lock, hashes checked; then the harness itself without resolving anything again (the lock
# holds its build requirements, so no isolated build fetches an unlocked setuptools)
echo "install.sh: the Python packages from $lock (hashes checked), and beside them the main job's cache"
python3 -m pip install --disable-pip-version-check --no-input --timeout 30 --require-hashes \
  --no-deps -r "$lock" >"$log" 2>&1 || pip_failed $? "pip could not install the locked packages"
python3 -m pip install --disable-pip-version-check --no-input --no-deps --no-build-isolation -e . \
  >"$log" 2>&1 || pip_failed $? "pip could not install the harness itself"
python3 -c "import harness, confluent_kafka, pytest, testcontainers, docker, plotly, jinja2, playwright, yaml, pyspark" 2>"$log" \
  || { echo "install.sh: error: the Python packages installed but do not import ($(tail -n1 "$log")): run again; if it persists, report it" >&2; exit 2; }
# the set installed is the lock's, or this install did not do what it says (a package pip kept at another version)
python3 -m harness.tested_set --check || exit 2
echo "install.sh: Python packages installed in $SECONDS s"
wait "$setup_pid" && setup_rc=0 || setup_rc=$?
setup_pid=
cat "$setup_log"
[ "$setup_rc" -eq 0 ] || exit 2  # (its last line said what failed and the fix)
if [ "$all" -eq 1 ]; then
  # Debian's chromium: the pages' browser tests (Playwright drives it; no browser download). The main job
  # fetches it on first use (harness.report.browser).
  python3 -c 'from harness.report.browser import ensure_chromium; ensure_chromium()' || exit 2
  share-harness setup --all
fi
echo "install.sh: done in $SECONDS s"
