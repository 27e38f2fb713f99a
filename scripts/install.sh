#!/usr/bin/env bash
# Install everything the harness needs, idempotently, reusing caches:
# Python package + deps (pip cache), Kafka jars (Maven -> ~/.cache/kafka-share-harness),
# Toxiproxy (go install -> the same cache), the Java and franz-go drivers (javac, go build). Needs python3 (3.10+), Java 17+, Maven, Go.
set -euo pipefail
cd "$(dirname "$0")/.."
need() { command -v "$1" >/dev/null 2>&1 || { echo "install.sh: error: \`$1\` not found: $2" >&2; exit 2; }; }
need python3 "install Python 3.10+"
need java "install a Java 17+ JDK (apt-get install openjdk-17-jdk-headless)"
need mvn "install Maven 3.8+ (apt-get install maven)"
need go "install Go 1.26+ (it builds Toxiproxy and the franz-go driver; https://go.dev/dl)"
python3 -m pip install --quiet --disable-pip-version-check -e '.[docker,browser,test]' 2>&1 | grep -v "Running pip as the 'root' user" || true
python3 -c "import harness, confluent_kafka, pytest, testcontainers, docker, plotly, jinja2, playwright, yaml" || { echo "install.sh: error: Python dependencies did not install" >&2; exit 2; }
# Debian's chromium: the pages' browser tests (Playwright drives it; no browser download)
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "install.sh: installing chromium from Debian"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null \
      || { echo "install.sh: error: apt-get install chromium failed" >&2; exit 2; }
  else
    echo "install.sh: error: \`chromium\` not found: install it (sudo apt-get install chromium), the pages' tests open it" >&2
    exit 2
  fi
fi
share-harness setup
