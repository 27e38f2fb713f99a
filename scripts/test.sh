#!/usr/bin/env bash
# Install everything and run the tests: the README's second command, and what `.ci/run` calls.
# pytest's "no tests ran" (exit 5) is a failure here. Extra arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
bash scripts/install.sh --all || exit $?
echo "test.sh: installation took $((SECONDS - start)) s"
# The docker backend's tests need an engine and the harness's images: a dockerd of our own (no
# bridge, no iptables) when none answers, stopped again however this script ends; images built
# locally (no registry here), cached.
docker_start=$SECONDS
# stopped at the end only if this run started it: an engine that answered before (a system service, or
# a dockerd another `docker_engine.sh start` left running for its own user) is not ours to stop
if docker info >/dev/null 2>&1; then ours=0; else ours=1; fi
bash scripts/docker_engine.sh start || exit $?
[ "$ours" -eq 1 ] && trap 'bash scripts/docker_engine.sh stop' EXIT
bash scripts/docker_images.sh || exit $?
echo "test.sh: Docker engine and images took $((SECONDS - docker_start)) s"
# Three pytest-xdist workers (KSH_CI_WORKERS), a test file each at a time (each worker starts its own session
# cluster; the real tests mostly wait on Kafka's clocks, and the other workers use the cores meanwhile). Measured
# on two cores (docs/ci.md): with the brokers' JIT and idle timers cut down (issue 53), two workers left half
# the cores' time unused and three took a clean-clone run from 1070 s to 773 s; before those cuts three were slower
# (the cores saturated). Handing the files out longest first instead of xdist's order by number of tests was
# slower too (the long real files then ran against each other, the pure tests left for the end). JUnit XML and
# the slowest tests: where the time goes (benchmarks/ci_times.py reads the XML).
# A worker that crashes (a native abort in a client library) fails the run at once: xdist's
# replacement worker under --dist loadfile can wait forever for work that never comes
# (pytest-xdist#1378), which once spent CI's whole 90 minutes. And the whole pytest session has a
# deadline well inside CI's limit (SIGINT first: pytest's own teardown stops clusters), so a hang
# fails with one line naming it instead of timing CI out.
# --capture=sys: Python's output is captured per test as usual, but what native code writes to fd 2
# reaches this log. A native abort (librdkafka's `*** file:line: assert ***`) is printed just before
# the process dies, which fd-level capture would swallow with it.
limit=${KSH_CI_PYTEST_LIMIT_S:-3000}
timeout --signal=INT --kill-after=120 "$limit" \
  python3 -m pytest tests suites -q -rfEsx --ksh-profile ci -n "${KSH_CI_WORKERS:-3}" --dist loadfile --max-worker-restart=0 \
  --capture=sys --junitxml=reports/ci/junit.xml --durations=25 "$@"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "test.sh: pytest did not finish within ${limit} s (KSH_CI_PYTEST_LIMIT_S): failing; see the last test above" >&2
  exit 1
fi
if [ "$rc" -eq 5 ]; then
  echo "test.sh: pytest collected no tests: failing, a run that checks nothing must not pass" >&2
  exit 1
fi
echo "test.sh: $((SECONDS - start)) s in all"
exit "$rc"
