"""Rendering `server.properties` for one node of a local cluster, with a listener per link.

Listeners of a node:
- `CLIENT`: where clients connect; advertised at the Toxiproxy proxy `client->n<id>`.
- `B<k>` for every broker k: where broker k connects for replication and
  coordinator RPCs. Broker k's `inter.broker.listener.name` is `B<k>`, so every
  peer advertises `B<k>` at the proxy `n<k>->n<id>`; a node's own `B<id>` is
  advertised directly (nothing dials it through a proxy).
- `LANE<k>` for every consumer lane k: where consumer drivers on lane k
  connect; advertised at the proxy `lane<k>->n<id>`, so one consumer (or the
  consumers sharing its lane) can be cut from one broker while the producer
  and the other consumers still reach it.
- `CONTROLLER` on controller nodes. Each node lists the voters at the proxies
  `n<id>->c<voter>` (its own voter entry is direct), so node -> controller
  links can be cut one by one.
Keys are rendered sorted so two runs' configs can be diffed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.kafka.versions import BROKER_CONFIGS, ReleaseLine

HOST = "127.0.0.1"


@dataclass(frozen=True)
class NodePorts:
    """The real (non-proxied) ports a node binds."""

    client: int | None
    peers: dict[int, int]  # broker k -> port of listener B<k>
    controller: int | None
    lanes: dict[int, int] = field(default_factory=dict)  # consumer lane k -> port of listener LANE<k>
    sasl: int | None = None  # port of listener SASL (SASL_PLAINTEXT, PLAIN), direct; only with users


@dataclass(frozen=True)
class NodeConfig:
    """Everything needed to render one node's server.properties."""

    node_id: int
    roles: tuple[str, ...]  # ("broker",), ("controller",) or both
    ports: NodePorts
    advertised_client: int | None  # proxy port client->n<id>
    advertised_peers: dict[int, int]  # broker k -> proxy port n<k>->n<id> (own id: real port)
    voters: dict[int, int]  # controller id -> port this node dials (proxy, or real for itself)
    data_dir: Path
    #: more than one: the node's log directories (JBOD: a disk can fail without the broker halting),
    #: the metadata log in `data_dir/meta` apart from them (its failure halts the broker)
    log_dirs: tuple[Path, ...] = ()
    advertised_lanes: dict[int, int] = field(default_factory=dict)  # lane k -> proxy port lane<k>->n<id>
    replication_factor: int = 3
    min_insync_replicas: int = 2
    internal_partitions: int = 5
    overrides: dict[str, str] = field(default_factory=dict)
    sasl_users: dict[str, str] = field(default_factory=dict)  # user -> password on the SASL listener


#: The authorizer a cluster with SASL users runs. The harness's own clients (PLAINTEXT listeners)
#: are the principal ANONYMOUS, a super user; the SASL users get only the ACLs a test grants them.
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def _jaas(users: dict[str, str]) -> str:
    entries = " ".join(f'user_{u}="{p}"' for u, p in sorted(users.items()))
    return f"org.apache.kafka.common.security.plain.PlainLoginModule required {entries};"


#: Broker settings the harness always uses, chosen so that faults and limits
#: are reached in seconds; a spec's overrides win over these.
TEST_DEFAULTS = {
    "group.initial.rebalance.delay.ms": "0",
    BROKER_CONFIGS["min_session_timeout"]: "6000",
    BROKER_CONFIGS["session_timeout"]: "10000",
    BROKER_CONFIGS["min_heartbeat_interval"]: "200",
    BROKER_CONFIGS["heartbeat_interval"]: "500",
    "group.share.assignment.interval.ms": "0",  # assign new members at once (default batches for 1 s)
    BROKER_CONFIGS["min_lock_duration"]: "1000",
    "auto.create.topics.enable": "false",
    "replica.lag.time.max.ms": "6000",  # a cut follower leaves the ISR in seconds, not 30 s
    # A killed, paused or cut-off broker is fenced (and its partitions' leadership moved) after the
    # controller has missed its heartbeats for this long; a restarted broker cannot register again
    # before its old registration expires (DUPLICATE_BROKER_REGISTRATION). Kafka's defaults (9 s,
    # heartbeat 2 s) make every kill, pause and cold restart wait 9 s; 4 s keeps eight heartbeats in
    # the window, so a busy machine's scheduling hiccups do not fence a healthy broker.
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    # Idle timers (issue 53: CI's two cores are busy all along, two thirds of it the brokers): a follower's fetch
    # with nothing to return waits 2 s instead of 0.5 (it returns at once when records arrive, so no produce or
    # state write waits for it), and the active controller appends a NoOpRecord to an idle metadata log every
    # 5 s instead of every 0.5 s (each one fetched and applied by every node). `python benchmarks/broker_cpu.py`:
    # about 0.8 of the CPU of Kafka's defaults for both, with consumers polling and idle.
    "replica.fetch.wait.max.ms": "2000",
    "metadata.max.idle.interval.ms": "5000",
    "num.network.threads": "2",
    "num.io.threads": "4",
    "log.flush.interval.messages": "9223372036854775807",
    "log.cleaner.backoff.ms": "1000",  # a compacted test topic is cleaned within a second of a roll, not 15 s
    # Leadership moves only when a fault moves it (and its heal moves it back), so every leader
    # change falls inside a fault window of the history; never on a background timer.
    "auto.leader.rebalance.enable": "false",
}


def render(node: NodeConfig, line: ReleaseLine) -> str:
    """server.properties text for `node` (sorted keys)."""
    props: dict[str, str] = {
        "node.id": str(node.node_id),
        "process.roles": ",".join(node.roles),
        "log.dirs": ",".join(map(str, node.log_dirs)) if node.log_dirs else str(node.data_dir),
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": ",".join(f"{cid}@{HOST}:{port}" for cid, port in sorted(node.voters.items())),
    }
    if node.log_dirs:
        props["metadata.log.dir"] = str(node.data_dir / "meta")
    listeners, advertised, protocols = [], [], {"CONTROLLER": "PLAINTEXT"}
    if "broker" in node.roles:
        assert node.ports.client is not None and node.advertised_client is not None
        listeners.append(f"CLIENT://{HOST}:{node.ports.client}")
        advertised.append(f"CLIENT://{HOST}:{node.advertised_client}")
        protocols["CLIENT"] = "PLAINTEXT"
        for peer, port in sorted(node.ports.peers.items()):
            listeners.append(f"B{peer}://{HOST}:{port}")
            advertised.append(f"B{peer}://{HOST}:{node.advertised_peers[peer]}")
            protocols[f"B{peer}"] = "PLAINTEXT"
        for lane, port in sorted(node.ports.lanes.items()):
            listeners.append(f"LANE{lane}://{HOST}:{port}")
            advertised.append(f"LANE{lane}://{HOST}:{node.advertised_lanes[lane]}")
            protocols[f"LANE{lane}"] = "PLAINTEXT"
        if node.sasl_users:
            assert node.ports.sasl is not None
            listeners.append(f"SASL://{HOST}:{node.ports.sasl}")
            advertised.append(f"SASL://{HOST}:{node.ports.sasl}")
            protocols["SASL"] = "SASL_PLAINTEXT"
            props["listener.name.sasl.sasl.enabled.mechanisms"] = "PLAIN"
            props["listener.name.sasl.plain.sasl.jaas.config"] = _jaas(node.sasl_users)
        props["inter.broker.listener.name"] = f"B{node.node_id}"
    if node.sasl_users:  # every node, controllers too: the metadata log carries the ACLs
        props["authorizer.class.name"] = AUTHORIZER
        props["super.users"] = "User:ANONYMOUS"
        props["allow.everyone.if.no.acl.found"] = "false"
    if "controller" in node.roles:
        assert node.ports.controller is not None
        listeners.append(f"CONTROLLER://{HOST}:{node.ports.controller}")
    props["listeners"] = ",".join(listeners)
    if advertised:
        props["advertised.listeners"] = ",".join(advertised)
    props["listener.security.protocol.map"] = ",".join(f"{k}:{v}" for k, v in sorted(protocols.items()))
    rf, isr, parts = str(node.replication_factor), str(node.min_insync_replicas), str(node.internal_partitions)
    props.update({
        "default.replication.factor": rf,
        "min.insync.replicas": isr,
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": parts,
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": isr,
        "transaction.state.log.num.partitions": parts,
        BROKER_CONFIGS["state_rf"]: rf,
        BROKER_CONFIGS["state_min_isr"]: isr,
        BROKER_CONFIGS["state_partitions"]: parts,
    })
    props.update(TEST_DEFAULTS)
    props.update(line.broker_share_config())
    props.update(node.overrides)
    return "".join(f"{key}={props[key]}\n" for key in sorted(props))


#: When a node's server.log rolls, and how many rolled files (server.log.1 newest .. .N) it keeps.
LOG_ROLL_SIZE = "50MB"
LOG_ROLL_KEEP = 3


def render_log4j2(log_dir: Path) -> str:
    """A log4j2 properties config: INFO to `<log_dir>/server.log`, noisy loggers at WARN.

    The log rolls by size (`LOG_ROLL_SIZE`, keeping `LOG_ROLL_KEEP` files, `server.log.1` the
    newest): a session cluster that lives for hundreds of runs must not fill the disk."""
    return f"""status = error
appender.file.type = RollingFile
appender.file.name = file
appender.file.fileName = {log_dir}/server.log
appender.file.filePattern = {log_dir}/server.log.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = {LOG_ROLL_SIZE}
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.fileIndex = min
appender.file.strategy.max = {LOG_ROLL_KEEP}
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""
