# The harness in one image: Python, a JDK, Maven, Go, and everything `scripts/install.sh` installs
# (the Python package, Kafka's jars, Toxiproxy, the Java and franz-go drivers, the brokers'
# class-data archives). `python3 scripts/docker_run.py` builds it and runs the harness from it with
# the host's Docker socket, so a machine with only Docker and Python runs the docker backend.
#
# BASE is any Debian bookworm image with apt (debian:bookworm-slim where images can be pulled; the
# harness's debootstrapped ksh/debian-jre:bookworm-17 where none can). Build with the host network
# (docker build --network host): apt, PyPI, Maven Central and the Go module proxy are fetched.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
ARG GO_VERSION=1.26.8
# certificate authorities the build's HTTPS needs beyond Debian's (a TLS-inspecting proxy's): each
# certificate's PEM in base64, comma-separated; scripts/docker_run.py passes the host's
# /usr/local/share/ca-certificates
ARG EXTRA_CA=
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 \
    PATH=/opt/venv/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    KSH_CACHE_DIR=/opt/ksh-cache GOPATH=/tmp/go GOCACHE=/tmp/go-build HOME=/tmp \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv openjdk-17-jdk-headless maven ca-certificates \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \
 && i=0 && for pem in $(echo "$EXTRA_CA" | tr ',' ' '); do i=$((i + 1)); \
      echo "$pem" | base64 -d > "/usr/local/share/ca-certificates/ksh-extra-$i.crt"; done \
 && update-ca-certificates
# Go from the Go module proxy (the toolchain module `go` itself downloads), not Debian's older Go;
# then the Python dependencies from the lock, hashes checked (layers that outlive changes to the harness's own
# files; scripts/install.sh below installs the same lock again, finding it satisfied)
COPY compose/harness_image.py harness/lock/requirements.txt /opt/build/
RUN python3 /opt/build/harness_image.py go ${GO_VERSION} && go version \
 && python3 -m venv /opt/venv \
 && pip install --no-cache-dir -q --require-hashes --no-deps -r /opt/build/requirements.txt
COPY . /opt/kafka-share-harness
WORKDIR /opt/kafka-share-harness
# everything else, as on any machine; then the default release's jars where apache/kafka keeps them,
# so this image can stand in for apache/kafka:<default> where that image cannot be pulled
RUN bash scripts/install.sh --all \
 && mkdir -p /opt/kafka \
 && ln -s "$(python3 -c 'from harness.kafka.jars import resolve; from harness.sys.paths import cache_dir; from harness.kafka.versions import DEFAULT_VERSION; print(resolve(DEFAULT_VERSION, cache_dir()).libs)')" /opt/kafka/libs \
 && rm -rf /tmp/go /tmp/go-build /tmp/.m2 /tmp/.cache \
 && chmod -R a+rwX /opt/ksh-cache /opt/kafka-share-harness
LABEL org.kafka-share-harness.image=harness
