#!/bin/sh
# One KRaft node (broker and controller) of the compose clusters, configured from its environment:
# NODE_ID, HOST (the address it binds), PORT (clients), CONTROLLER_PORT, VOTERS, INTER_BROKER
# (PLAINTEXT, or INTERNAL with INTERNAL_LISTENER/INTERNAL_ADVERTISED on a bridge network).
# Writes the config, formats the storage once, and starts Kafka with the command the harness's
# backends use. Runs in any image with `sh`, `java` and Kafka's jars in /opt/kafka/libs.
set -eu
extra_listener="" extra_advertised=""
if [ "${INTER_BROKER:-PLAINTEXT}" = INTERNAL ]; then
  extra_listener=",INTERNAL://${INTERNAL_LISTENER}" extra_advertised=",INTERNAL://${INTERNAL_ADVERTISED}"
fi
cat > /tmp/server.properties <<CONFIG
node.id=${NODE_ID}
process.roles=broker,controller
listeners=PLAINTEXT://${HOST}:${PORT},CONTROLLER://${HOST}:${CONTROLLER_PORT}${extra_listener}
advertised.listeners=PLAINTEXT://127.0.0.1:${PORT}${extra_advertised}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=${INTER_BROKER:-PLAINTEXT}
controller.quorum.voters=${VOTERS}
log.dirs=/tmp/kraft-logs
auto.create.topics.enable=false
offsets.topic.replication.factor=3
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
share.coordinator.state.topic.replication.factor=3
share.coordinator.state.topic.min.isr=2
min.insync.replicas=2
group.initial.rebalance.delay.ms=0
# the share-group bounds the harness's local clusters have, so its conformance tests (short locks,
# quick sessions) run here too; Kafka 4.3's names (a release that lacks one warns and ignores it)
group.share.min.record.lock.duration.ms=1000
group.share.min.session.timeout.ms=6000
group.share.session.timeout.ms=10000
group.share.min.heartbeat.interval.ms=200
group.share.heartbeat.interval.ms=500
CONFIG
# C1 only (-XX:TieredStopAtLevel=1): a test cluster never runs long enough for C2's compiling to repay it
# (benchmarks/broker_cpu.py: about 0.6 of the CPU to start, 0.7 idle)
java -Xmx256m -XX:TieredStopAtLevel=1 -cp '/opt/kafka/libs/*' kafka.tools.StorageTool format --ignore-formatted \
  --cluster-id a3NoLWNvbXBvc2UtY2x1c3Rlcg -c /tmp/server.properties
exec java -Xms512m -Xmx512m -XX:TieredStopAtLevel=1 -XX:+UseG1GC -cp '/opt/kafka/libs/*' kafka.Kafka /tmp/server.properties
