#!/usr/bin/env bash
# Build the docker backend's images on this engine, idempotently and without an image registry:
#   ksh/debian-jre:bookworm-17  a Debian root filesystem with a Java 17 runtime (debootstrap from
#                               Debian's packages, `docker import`; the tarball is cached in the
#                               harness cache, so a new engine imports it in seconds)
#   apache/kafka:<version>      that runtime plus the Kafka jars the harness resolves, laid out like
#                               the Apache Kafka image (/opt/kafka/libs), for each version given
#                               (default: the harness's default version)
# An image already on the engine (pulled from Docker Hub, or built before) is kept as it is.
# Usage: bash scripts/docker_images.sh [VERSION...]
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "docker_images.sh: error: $*" >&2; exit 2; }
command -v docker >/dev/null 2>&1 || die "no docker CLI: apt-get install docker.io"
docker info >/dev/null 2>&1 || die "no Docker engine answers: start one (bash scripts/docker_engine.sh start)"
cache="$(python3 -c 'from harness.sys.paths import cache_dir; print(cache_dir())')/docker"
mkdir -p "$cache"
base=ksh/debian-jre:bookworm-17
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! docker image inspect "$base" >/dev/null 2>&1; then
  tarball="$cache/debian-bookworm-jre17.tar"
  if [ ! -s "$tarball" ]; then
    command -v debootstrap >/dev/null 2>&1 || die "no debootstrap to build $base: apt-get install debootstrap"
    echo "docker_images.sh: debootstrap of Debian bookworm with a Java 17 runtime (about 2 min)"
    debootstrap --variant=minbase --include=openjdk-17-jre-headless bookworm "$work/rootfs" \
      http://deb.debian.org/debian > "$work/debootstrap.log" 2>&1 \
      || { tail -5 "$work/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
    rm -rf "$work/rootfs"/var/cache/apt/archives/*.deb "$work/rootfs"/var/lib/apt/lists/* \
      "$work/rootfs"/usr/share/doc "$work/rootfs"/usr/share/man "$work/rootfs"/usr/share/locale
    tar -C "$work/rootfs" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$work/rootfs"
  fi
  docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' "$tarball" "$base" >/dev/null
  echo "docker_images.sh: $base imported"
fi

versions=("$@")
if [ ${#versions[@]} -eq 0 ]; then
  versions=("$(python3 -c 'from harness.kafka.versions import DEFAULT_VERSION; print(DEFAULT_VERSION)')")
fi
for version in "${versions[@]}"; do
  image="apache/kafka:$version"
  if docker image inspect "$image" >/dev/null 2>&1; then
    echo "docker_images.sh: $image present"
    continue
  fi
  libs=$(python3 -c 'import sys; from harness.kafka.jars import resolve; from harness.sys.paths import cache_dir
print(resolve(sys.argv[1], cache_dir()).libs)' "$version") || die "Kafka $version's jars did not resolve (above)"
  mkdir -p "$work/$version"
  cp -r "$libs" "$work/$version/libs"
  printf 'FROM %s\nCOPY libs /opt/kafka/libs\nLABEL org.kafka-share-harness.built="%s"\nWORKDIR /opt/kafka\n' \
    "$base" "$version" > "$work/$version/Dockerfile"
  docker build -q -t "$image" "$work/$version" > "$work/build.log" 2>&1 \
    || { tail -5 "$work/build.log" >&2; die "docker build of $image failed (log above)"; }
  echo "docker_images.sh: $image built from $libs"
done
