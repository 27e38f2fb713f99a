"""Faulty driver: takes the consumer setting auto.offset.reset, which KIP-932 leaves to the group configuration
(share.auto.offset.reset), and applies it by setting the group's configuration itself (a library being helpful). The
other settings a share group does not take are refused by librdkafka as before. Certification must fail rule
`config-refused-or-inert`."""

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from _wrap import run


def apply_reset(config, explicit):
    settings = dict(config.get("client_config", {}))
    reset = settings.pop("auto.offset.reset", None)
    if reset is not None:
        admin = AdminClient({"bootstrap.servers": config["bootstrap"]})
        group = ConfigResource(ResourceType.GROUP, config["group"], incremental_configs=[
            ConfigEntry("share.auto.offset.reset", reset, incremental_operation=AlterConfigOpType.SET)])
        for future in admin.incremental_alter_configs([group]).values():
            future.result(30)
    return {**config, "client_config": settings}, explicit


raise SystemExit(run(change_config=apply_reset))
