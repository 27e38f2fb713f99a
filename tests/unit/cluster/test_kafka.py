"""Fast unit tests of harness.kafka: version profiles, the Maven POM, KAFKA_HOME and server.properties."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.kafka import config as kconfig
from harness.kafka.config import NodeConfig, NodePorts
from harness.kafka.jars import from_kafka_home, render_pom
from harness.kafka.versions import (BROKER_CONFIGS, DEFAULT_VERSION, RELEASE_LINES, SUPPORTED_LINES, check_supported,
                                    parse_version, release_line)
from harness.spec import RunSpec

# ------------------------------------------------------------------ versions


@pytest.mark.parametrize("version, line", [("4.2.1", "4.2"), ("4.3.1", "4.3"), ("4.4.0", "4.4"),
                                           ("4.0.0", "4.0"), ("4.1.2", "4.1"), (" 4.3.1 ", "4.3")])
def test_profile_for_known_lines(version, line):
    assert release_line(version).line == line


def test_default_version_is_supported():
    assert check_supported(DEFAULT_VERSION).line in SUPPORTED_LINES


@pytest.mark.parametrize("version", ["9.9.9", "3.9.0", "4.5.0"])
def test_unknown_line_is_one_line_error(version):
    with pytest.raises(HarnessError) as exc:
        release_line(version)
    message = str(exc.value)
    assert "\n" not in message
    assert version in message
    for line in SUPPORTED_LINES:
        assert line in message


@pytest.mark.parametrize("version", ["abc", "4.3", "4.3.1.0", "4.3.x", "", "v4.3.1", "4.3.1-rc1"])
def test_malformed_version_is_one_line_error(version):
    for fn in (release_line, parse_version):
        with pytest.raises(HarnessError) as exc:
            fn(version)
        message = str(exc.value)
        assert "\n" not in message
        assert repr(version) in message
        assert DEFAULT_VERSION in message  # names an example of the right form


def test_check_supported_rejects_the_early_access_line_with_its_reason():
    with pytest.raises(HarnessError) as exc:
        check_supported("4.0.2")
    assert "\n" not in str(exc.value) and "early access" in str(exc.value) and "4.1/4.2/4.3/4.4" in str(exc.value)
    assert check_supported("4.1.2").line == "4.1"  # the preview line is supported (the java and franz clients)


def test_confluent_is_not_supported_before_4_2_and_says_why():
    from harness.clients.registry import unsupported_release
    why = unsupported_release("confluent", "4.1.2")
    assert why.startswith("not supported on 4.1: ") and "base64" in why and "--client java" in why
    assert unsupported_release("java", "4.1.2") == unsupported_release("franz", "4.1.2") == ""
    assert unsupported_release("confluent", "4.2.2") == ""


def test_4_0_profile_enables_share_groups_with_broker_configs():
    p = release_line("4.0.2")
    assert p.broker_share_config() == {"group.coordinator.rebalance.protocols": "classic,consumer,share",
                                       "unstable.api.versions.enable": "true"}
    assert p.format_features() == []
    assert p.python_share_consumer is False


def test_4_1_profile_uses_share_version_feature():
    p = release_line("4.1.0")
    assert p.format_features() == ["share.version=1"]
    assert p.broker_share_config() == {}
    assert p.group_config("isolation_level") == "share.isolation.level"


@pytest.mark.parametrize("version", ["4.2.1", "4.3.1", "4.4.0"])
def test_default_enabled_lines_need_nothing(version):
    p = release_line(version)
    assert p.broker_share_config() == {}
    assert p.format_features() == []
    assert p.python_share_consumer is True


def test_delivery_count_limit_group_config_only_from_4_3():
    assert release_line("4.2.1").group_config("delivery_count_limit") is None
    assert release_line("4.3.1").group_config("delivery_count_limit") == "share.delivery.count.limit"
    assert release_line("4.4.0").group_config("delivery_count_limit") == "share.delivery.count.limit"
    assert release_line("4.0.0").group_config("isolation_level") is None
    for line in RELEASE_LINES:
        assert RELEASE_LINES[line].group_config("lock_duration") == "share.record.lock.duration.ms"


# ----------------------------------------------------------------------- pom


def test_render_pom_4_4_excludes_nothing_now_that_it_is_complete():
    """4.4.0's kafka-tools-api is on Maven Central since November 2026: nothing is excluded."""
    pom = render_pom("4.4.0", release_line("4.4.0"))
    assert "<exclusion>" not in pom
    assert "<artifactId>kafka_2.13</artifactId><version>4.4.0</version>" in pom


def test_render_pom_4_3_has_no_exclusions():
    pom = render_pom("4.3.1", release_line("4.3.1"))
    assert "kafka-tools-api" not in pom
    assert "<exclusion" not in pom
    assert "<artifactId>kafka_2.13</artifactId><version>4.3.1</version>" in pom


@pytest.mark.parametrize("version", ["4.2.1", "4.3.1", "4.4.0"])
def test_render_pom_always_has_log4j(version):
    pom = render_pom(version, release_line(version))
    for artifact in ("log4j-api", "log4j-core", "log4j-slf4j-impl"):
        assert f"<groupId>org.apache.logging.log4j</groupId><artifactId>{artifact}</artifactId>" in pom
    assert pom.count("<scope>runtime</scope>") == 4
    import xml.etree.ElementTree as ET
    ET.fromstring(pom)  # well-formed XML


# ---------------------------------------------------------------- KAFKA_HOME


def test_from_kafka_home_reads_version_from_core_jar(tmp_path):
    libs = tmp_path / "libs"
    libs.mkdir()
    for name in ("kafka_2.13-4.3.1.jar", "kafka_2.13-4.3.1-test.jar", "kafka_2.13-4.3.1-sources.jar",
                 "kafka-clients-4.3.1.jar"):
        (libs / name).write_bytes(b"")
    dist = from_kafka_home(tmp_path)
    assert dist.version == "4.3.1"
    assert dist.libs == libs
    assert dist.source == "KAFKA_HOME"
    assert dist.release_line.line == "4.3"
    assert str(libs / "kafka-clients-4.3.1.jar") in dist.classpath


def test_from_kafka_home_empty_dir_is_one_line_error(tmp_path):
    with pytest.raises(HarnessError) as exc:
        from_kafka_home(tmp_path)
    assert "\n" not in str(exc.value)
    assert str(tmp_path) in str(exc.value)
    (tmp_path / "libs").mkdir()
    with pytest.raises(HarnessError):
        from_kafka_home(tmp_path)


# -------------------------------------------------------------------- config

CLIENT_REAL = {1: 20001, 2: 20002, 3: 20003}
PEER_REAL = {1: {1: 21011, 2: 21012, 3: 21013}, 2: {1: 21021, 2: 21022, 3: 21023},
             3: {1: 21031, 2: 21032, 3: 21033}}  # node -> peer k -> port of B<k>
CONTROLLER_REAL = {1: 22001, 2: 22002, 3: 22003}
CLIENT_PROXY = {1: 30001, 2: 30002, 3: 30003}


def _proxy_peer(k: int, node: int) -> int:  # proxy n<k>->n<node>
    return 31000 + 10 * k + node


def _proxy_voter(node: int, c: int) -> int:  # proxy n<node>->c<c>
    return 32000 + 10 * node + c


def _node(node_id: int, rf: int = 3, isr: int = 2, parts: int = 7, overrides=None) -> NodeConfig:
    return NodeConfig(
        node_id=node_id,
        roles=("broker", "controller"),
        ports=NodePorts(client=CLIENT_REAL[node_id], peers=PEER_REAL[node_id], controller=CONTROLLER_REAL[node_id]),
        advertised_client=CLIENT_PROXY[node_id],
        advertised_peers={k: (PEER_REAL[node_id][k] if k == node_id else _proxy_peer(k, node_id)) for k in (1, 2, 3)},
        voters={c: (CONTROLLER_REAL[c] if c == node_id else _proxy_voter(node_id, c)) for c in (1, 2, 3)},
        data_dir=Path(f"/tmp/ksh-unit/n{node_id}"),
        replication_factor=rf, min_insync_replicas=isr, internal_partitions=parts,
        overrides=overrides or {},
    )


def _props(text: str) -> dict[str, str]:
    lines = text.splitlines()
    assert all("=" in line for line in lines)
    keys = [line.split("=", 1)[0] for line in lines]
    assert len(keys) == len(set(keys)), "duplicate keys"
    return dict(line.split("=", 1) for line in lines)


def test_render_keys_are_sorted():
    text = kconfig.render(_node(1), release_line("4.3.1"))
    keys = [line.split("=", 1)[0] for line in text.splitlines()]
    assert keys == sorted(keys)
    assert text.endswith("\n")


@pytest.mark.parametrize("node_id", [1, 2, 3])
def test_render_listeners_and_advertised(node_id):
    props = _props(kconfig.render(_node(node_id), release_line("4.3.1")))
    listeners = dict(entry.split("://", 1) for entry in props["listeners"].split(","))
    assert set(listeners) == {"CLIENT", "B1", "B2", "B3", "CONTROLLER"}
    assert listeners["CLIENT"] == f"127.0.0.1:{CLIENT_REAL[node_id]}"
    assert listeners["CONTROLLER"] == f"127.0.0.1:{CONTROLLER_REAL[node_id]}"
    for k in (1, 2, 3):
        assert listeners[f"B{k}"] == f"127.0.0.1:{PEER_REAL[node_id][k]}"

    advertised = dict(entry.split("://", 1) for entry in props["advertised.listeners"].split(","))
    assert set(advertised) == {"CLIENT", "B1", "B2", "B3"}  # CONTROLLER is never advertised
    assert advertised["CLIENT"] == f"127.0.0.1:{CLIENT_PROXY[node_id]}"
    for k in (1, 2, 3):
        expected = PEER_REAL[node_id][k] if k == node_id else _proxy_peer(k, node_id)
        assert advertised[f"B{k}"] == f"127.0.0.1:{expected}"

    assert props["inter.broker.listener.name"] == f"B{node_id}"
    assert props["controller.listener.names"] == "CONTROLLER"
    assert props["node.id"] == str(node_id)
    assert props["process.roles"] == "broker,controller"
    protocols = dict(entry.split(":") for entry in props["listener.security.protocol.map"].split(","))
    assert protocols == {name: "PLAINTEXT" for name in ("CLIENT", "B1", "B2", "B3", "CONTROLLER")}


@pytest.mark.parametrize("node_id", [1, 2, 3])
def test_render_quorum_voters(node_id):
    props = _props(kconfig.render(_node(node_id), release_line("4.3.1")))
    voters = props["controller.quorum.voters"].split(",")
    assert len(voters) == 3
    expected = [f"{c}@127.0.0.1:{CONTROLLER_REAL[c] if c == node_id else _proxy_voter(node_id, c)}"
                for c in (1, 2, 3)]
    assert voters == expected


@pytest.mark.parametrize("rf, isr", [(3, 2), (1, 1), (2, 1)])
def test_render_internal_topic_replication(rf, isr):
    props = _props(kconfig.render(_node(1, rf=rf, isr=isr, parts=7), release_line("4.3.1")))
    for key in ("default.replication.factor", "offsets.topic.replication.factor",
                "transaction.state.log.replication.factor", "share.coordinator.state.topic.replication.factor"):
        assert props[key] == str(rf), key
    for key in ("min.insync.replicas", "transaction.state.log.min.isr", "share.coordinator.state.topic.min.isr"):
        assert props[key] == str(isr), key
    for key in ("offsets.topic.num.partitions", "transaction.state.log.num.partitions",
                "share.coordinator.state.topic.num.partitions"):
        assert props[key] == "7", key
    assert BROKER_CONFIGS["state_rf"] == "share.coordinator.state.topic.replication.factor"


def test_render_includes_test_defaults_and_overrides_win():
    some_default = sorted(kconfig.TEST_DEFAULTS)[0]
    overrides = {some_default: "override-me", "default.replication.factor": "1", "custom.key": "x",
                 "inter.broker.listener.name": "B9"}
    props = _props(kconfig.render(_node(2, overrides=overrides), release_line("4.3.1")))
    for key, value in kconfig.TEST_DEFAULTS.items():
        if key not in overrides:
            assert props[key] == value, key
    for key, value in overrides.items():
        assert props[key] == value, key


def test_render_4_0_adds_share_enablement_and_overrides_still_win():
    props = _props(kconfig.render(_node(1), release_line("4.0.0")))
    assert props["group.coordinator.rebalance.protocols"] == "classic,consumer,share"
    assert props["unstable.api.versions.enable"] == "true"
    props = _props(kconfig.render(_node(1, overrides={"unstable.api.versions.enable": "false"}),
                                  release_line("4.0.0")))
    assert props["unstable.api.versions.enable"] == "false"
    assert "unstable.api.versions.enable" not in _props(kconfig.render(_node(1), release_line("4.3.1")))


def test_render_controller_only_node_has_no_broker_listeners():
    node = NodeConfig(node_id=4, roles=("controller",), ports=NodePorts(client=None, peers={}, controller=22004),
                      advertised_client=None, advertised_peers={}, voters={4: 22004},
                      data_dir=Path("/tmp/ksh-unit/c4"))
    props = _props(kconfig.render(node, release_line("4.3.1")))
    assert props["listeners"] == "CONTROLLER://127.0.0.1:22004"
    assert "advertised.listeners" not in props
    assert "inter.broker.listener.name" not in props
    assert props["controller.quorum.voters"] == "4@127.0.0.1:22004"


def test_render_with_sasl_users_adds_a_sasl_listener_and_the_authorizer():
    from dataclasses import replace
    plain = _props(kconfig.render(_node(1), release_line("4.3.1")))
    assert "authorizer.class.name" not in plain and "SASL" not in plain["listeners"]
    node = replace(_node(1), ports=replace(_node(1).ports, sasl=19999), sasl_users={"alice": "a-pw", "bob": "b-pw"})
    props = _props(kconfig.render(node, release_line("4.3.1")))
    assert "SASL://127.0.0.1:19999" in props["listeners"].split(",")
    assert "SASL://127.0.0.1:19999" in props["advertised.listeners"].split(",")  # direct, not proxied
    assert "SASL:SASL_PLAINTEXT" in props["listener.security.protocol.map"].split(",")
    assert "CLIENT:PLAINTEXT" in props["listener.security.protocol.map"].split(",")  # the harness's own stays
    assert props["listener.name.sasl.sasl.enabled.mechanisms"] == "PLAIN"
    assert props["listener.name.sasl.plain.sasl.jaas.config"] == (
        'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a-pw" user_bob="b-pw";')
    assert props["authorizer.class.name"] == kconfig.AUTHORIZER
    assert props["super.users"] == "User:ANONYMOUS" and props["allow.everyone.if.no.acl.found"] == "false"


def test_invalid_sasl_user_is_rejected_in_one_line():
    from harness.cluster.local import LocalClusterSpec
    with pytest.raises(HarnessError, match=r"invalid SASL user 'al ice'"):
        LocalClusterSpec(version="4.3.1", sasl_users={"al ice": "pw"}).validate()


def test_class_data_archive_flags_only_when_setup_built_it(tmp_path, monkeypatch):
    from harness.kafka import cds
    from harness.kafka.jars import KafkaDistribution
    monkeypatch.setenv("KSH_CACHE_DIR", str(tmp_path / "cache"))
    dist = KafkaDistribution("4.4.0", tmp_path / "libs", "maven")
    assert cds.flags(dist, "broker") == [] and cds.flags(dist, "storage") == []  # no archive: only slower
    archive = cds.archive(dist, "broker")
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"archive")
    assert cds.flags(dist, "broker") == [f"-XX:SharedArchiveFile={archive}"]
    assert cds.flags(dist, "storage") == []
    other = KafkaDistribution("4.4.0", tmp_path / "other-libs", "KAFKA_HOME")
    assert cds.flags(other, "broker") == []  # another set of jars never meets this archive
    with pytest.raises(ValueError):
        cds.archive(dist, "kafka.Kafka")


def test_render_jbod_node_has_its_disks_and_the_metadata_log_apart():
    """Two or more log directories (JBOD): `log.dirs` lists them and the metadata log gets a directory of
    its own, so a failed disk takes only its partitions offline (a failed metadata log dir halts the broker)."""
    from dataclasses import replace

    from harness.cluster.local.files import log_dirs
    data = Path("/tmp/ksh-unit/n1")
    props = _props(kconfig.render(replace(_node(1), log_dirs=log_dirs(data, 2)), release_line("4.4.0")))
    assert props["log.dirs"] == f"{data}/disk0,{data}/disk1" and props["metadata.log.dir"] == f"{data}/meta"
    single = _props(kconfig.render(replace(_node(1), log_dirs=log_dirs(data, 1)), release_line("4.4.0")))
    assert single["log.dirs"] == str(data) and "metadata.log.dir" not in single


def test_cluster_id_of_a_formatted_node_and_one_clear_error_without(tmp_path):
    from harness.cluster.local.files import cluster_id_of
    with pytest.raises(HarnessError, match="no formatted meta.properties"):
        cluster_id_of(tmp_path)
    (tmp_path / "meta").mkdir()
    (tmp_path / "meta" / "meta.properties").write_text("#\nnode.id=1\ncluster.id=abc-DEF_1\nversion=1\n")
    assert cluster_id_of(tmp_path) == "abc-DEF_1"


def test_log_dirs_count_is_validated():
    from harness.cluster.local import LocalClusterSpec
    with pytest.raises(HarnessError, match=r"invalid log directory count 0: use 1\.\.4"):
        LocalClusterSpec(version="4.4.0", log_dirs=0).validate()
    with pytest.raises(HarnessError, match=r"invalid log-dirs 5: use 1\.\.4"):
        RunSpec(log_dirs=5).validate()
