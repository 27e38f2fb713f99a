"""Admin operations the harness performs on any cluster: topics and share-group configs.

Kept apart from `Cluster` (lifecycle) and `ClusterInspector` (read-only queries).
"""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewTopic,
                                   ResourceType)

from harness.sys.wait import wait_until


def create_topic(admin: AdminClient, name: str, partitions: int, replication_factor: int,
                 configs: dict[str, str] | None = None, timeout: float = 30.0) -> None:
    """Create `name`; an existing topic is an error (tests need a fresh one)."""
    futures = admin.create_topics([NewTopic(name, partitions, replication_factor, config=configs or {})],
                                  request_timeout=timeout, operation_timeout=timeout)
    futures[name].result()


def ensure_topic(admin: AdminClient, name: str, partitions: int, replication_factor: int,
                 timeout: float = 30.0) -> None:
    """Create `name` unless it exists already."""
    try:
        create_topic(admin, name, partitions, replication_factor, timeout=timeout)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def set_group_configs(admin: AdminClient, group_id: str, configs: dict[str, str],
                      timeout: float = 30.0) -> None:
    """Set dynamic group configs (e.g. share.auto.offset.reset) on share group `group_id`."""
    _alter(admin, ResourceType.GROUP, group_id, configs, timeout)


def group_configs_shown(admin: AdminClient, group_id: str, configs: dict[str, str], timeout: float = 30.0) -> bool:
    """Whether a describe of the group (answered by whichever broker the client asks) shows `configs`."""
    (future,) = admin.describe_configs([ConfigResource(ResourceType.GROUP, group_id)], request_timeout=timeout).values()
    shown = {k: e.value for k, e in future.result().items()}
    return all(shown.get(k) == v for k, v in configs.items())


def set_topic_configs(admin: AdminClient, topic: str, configs: dict[str, str | None], timeout: float = 30.0) -> None:
    """Set (or, for a None value, delete) dynamic configs of `topic`."""
    _alter(admin, ResourceType.TOPIC, topic, configs, timeout)


def topic_configs(admin: AdminClient, topic: str, timeout: float = 30.0) -> dict[str, str]:
    """The topic's configs that are set on the topic itself (not inherited defaults)."""
    (future,) = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)], request_timeout=timeout).values()
    return {k: e.value for k, e in future.result().items()
            if e.value is not None and e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}


def _alter(admin: AdminClient, rtype, name: str, configs: dict[str, str | None], timeout: float) -> None:
    entries = [ConfigEntry(k, v or "", incremental_operation=AlterConfigOpType.SET if v is not None
                           else AlterConfigOpType.DELETE) for k, v in configs.items()]
    resource = ConfigResource(rtype, name, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource], request_timeout=timeout).values():
        future.result()


#: (history config key, broker config, group config) for the limits the model needs.
LIMITS = (("delivery_count_limit", "group.share.delivery.count.limit", "share.delivery.count.limit"),
          ("lock_duration_ms", "group.share.record.lock.duration.ms", "share.record.lock.duration.ms"),
          ("max_record_locks", "group.share.partition.max.record.locks", "share.partition.max.record.locks"),
          ("session_timeout_ms", "group.share.session.timeout.ms", "share.session.timeout.ms"))


def limits_in_force(admin: AdminClient, group_id: str, broker_id: int, timeout: float = 30.0) -> dict[str, int]:
    """The share-group limits the broker applies to `group_id`: its group config where set, else the broker's."""
    def describe(rtype, name) -> dict[str, str]:
        (future,) = admin.describe_configs([ConfigResource(rtype, name)], request_timeout=timeout).values()
        return {k: e.value for k, e in future.result().items() if e.value is not None}

    broker = describe(ResourceType.BROKER, str(broker_id))
    group = describe(ResourceType.GROUP, group_id)
    limits = {}
    for key, broker_name, group_name in LIMITS:
        value = group.get(group_name) or broker.get(broker_name)
        if value is not None:
            limits[key] = int(value)
    return limits


def grant(admin: AdminClient, principal: str, resource: str, name: str, operation: str,
          timeout: float = 30.0) -> None:
    """Allow `principal` (e.g. "User:alice") `operation` (READ, DESCRIBE, DELETE, ...) on the literal
    `resource` (topic or group) `name`, and wait until the cluster lists the ACL."""
    from confluent_kafka.admin import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType

    rtype = {"topic": ResourceType.TOPIC, "group": ResourceType.GROUP}[resource]
    op = getattr(AclOperation, operation)
    binding = AclBinding(rtype, name, ResourcePatternType.LITERAL, principal, "*", op, AclPermissionType.ALLOW)
    for future in admin.create_acls([binding], request_timeout=timeout).values():
        future.result()
    wanted = AclBindingFilter(rtype, name, ResourcePatternType.LITERAL, principal, "*", op, AclPermissionType.ALLOW)
    wait_until(lambda: admin.describe_acls(wanted, request_timeout=timeout).result(), timeout=timeout,
               what=f"the ACL {principal} {operation} on {resource} {name} to be listed")


def revoke(admin: AdminClient, principal: str, resource: str, name: str, operation: str,
           timeout: float = 30.0) -> None:
    """Take back what `grant` allowed, and wait until the cluster no longer lists the ACL."""
    from confluent_kafka.admin import AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType

    rtype = {"topic": ResourceType.TOPIC, "group": ResourceType.GROUP}[resource]
    wanted = AclBindingFilter(rtype, name, ResourcePatternType.LITERAL, principal, "*", getattr(AclOperation, operation),
                              AclPermissionType.ALLOW)
    for future in admin.delete_acls([wanted], request_timeout=timeout).values():
        future.result()
    wait_until(lambda: not admin.describe_acls(wanted, request_timeout=timeout).result(), timeout=timeout,
               what=f"the ACL {principal} {operation} on {resource} {name} to be gone")


def broker_configs(admin: AdminClient, broker_id: int, timeout: float = 30.0) -> dict[str, str]:
    """Every config of broker `broker_id` as it reports it (its own values and defaults)."""
    (future,) = admin.describe_configs([ConfigResource(ResourceType.BROKER, str(broker_id))],
                                       request_timeout=timeout).values()
    return {k: e.value for k, e in future.result().items() if e.value is not None}


def group_config_refusal(admin: AdminClient, group_id: str, configs: dict[str, str],
                         timeout: float = 30.0) -> str | None:
    """Try to set `configs` on group `group_id`: None if the cluster accepted them, else the name of
    the Kafka error it refused them with (e.g. INVALID_CONFIG)."""
    try:
        set_group_configs(admin, group_id, configs, timeout)
    except KafkaException as exc:
        err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        return err.name() if err is not None else str(exc)
    return None
