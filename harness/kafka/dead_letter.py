"""The share-group dead-letter queue (KIP-1191), as Kafka 4.4.0 ships it.

Every name and string here is taken from the 4.4.0 jars (Maven Central has no 4.4.0 source jars: the
classes were read decompiled):
- group configs (kafka-group-coordinator `GroupConfig`): `errors.deadletterqueue.topic.name` (blank: no
  DLQ) and `errors.deadletterqueue.copy.record.enable` (default false: the DLQ record carries the
  context headers only, key and value null);
- topic config (kafka-storage `LogConfig`): `errors.deadletterqueue.group.enable`, which an existing DLQ
  topic must have set to true;
- broker configs (`GroupCoordinatorConfig`): `errors.deadletterqueue.topic.name.prefix` (default
  `dlq.`: a DLQ topic's name must start with it) and `errors.deadletterqueue.auto.create.topics.enable`
  (default false: the harness creates the DLQ topic itself);
- the feature (`ShareVersion.SV_2`, `supportsShareGroupDLQ`): share.version 2, the default of a cluster
  formatted by 4.4.0;
- what goes there (kafka_2.13 `SharePartition`, `InFlightState.tryUpdateState`): a record REJECTed by a
  client (`CLIENT_REJECT`), and a record archived because its delivery count reached the limit
  (`DELIVERY_COUNT_EXCEEDED`: a RELEASE, a lock timeout or a session end at the limit); not an
  ACCEPTed record, a gap, or a record archived below the start offset;
- what a DLQ record carries (`ShareGroupDLQStateManager`): one record per archived offset, in the
  DLQ partition `source partition % DLQ partitions`, with the headers below (UTF-8 strings).
The write happens after the ARCHIVING state is persisted and before ARCHIVED; a write that fails
after its retries is logged and the record archived anyway ("Failed to write to DLQ, proceeding to
ARCHIVED regardless"): exactly the loss the no-loss checker's DLQ accounting looks for.
"""

from __future__ import annotations

from harness.errors import HarnessError
from harness.kafka.versions import release_line
from harness.model.share_partition import ARCHIVING, STATE_IDS

#: group configs, by role (`harness.kafka.versions.ReleaseLine.group_config`)
TOPIC_NAME_CONFIG = "errors.deadletterqueue.topic.name"
COPY_RECORD_CONFIG = "errors.deadletterqueue.copy.record.enable"
#: the topic config a DLQ topic must carry
TOPIC_ENABLE_CONFIG = "errors.deadletterqueue.group.enable"
#: the broker's default `errors.deadletterqueue.topic.name.prefix`
DEFAULT_PREFIX = "dlq."

#: the context headers of a DLQ record
HEADER_TOPIC = "__dlq.errors.topic"
HEADER_PARTITION = "__dlq.errors.partition"
HEADER_OFFSET = "__dlq.errors.offset"
HEADER_GROUP = "__dlq.errors.group"
HEADER_DELIVERY_COUNT = "__dlq.errors.delivery.count"
HEADER_MESSAGE = "__dlq.errors.message"
HEADERS = (HEADER_TOPIC, HEADER_PARTITION, HEADER_OFFSET, HEADER_GROUP, HEADER_DELIVERY_COUNT, HEADER_MESSAGE)
#: `__dlq.errors.message` by cause (`ShareGroupDLQManager.CLIENT_REJECT`, `DELIVERY_COUNT_EXCEEDED`)
MESSAGE_REJECTED = "Offset rejected by client."
MESSAGE_LIMIT = "Offset delivery count exceeded the threshold."

#: `RunSpec.dead_letter`: off, on with the context headers only, on with the record copied
MODES = ("off", "headers", "copy")


def group_config_names(version: str, mode: str) -> tuple[str, str]:
    """The group configs (topic name, copy) that give a group a DLQ on Kafka `version`; a release without
    DLQs is one line naming the release that has them."""
    line = release_line(version)
    names = line.group_config("dead_letter_topic"), line.group_config("dead_letter_copy")
    if None in names:
        raise HarnessError(f"dead-letter {mode} needs Kafka 4.4.0 or newer (KIP-1191: the share-group dead-letter "
                           f"queue); {version} has none: use --kafka-version 4.4.0 or dead-letter off")
    return names


def dead_letter_topic(topic: str) -> str:
    """The DLQ topic of a run's `topic`: the broker's default prefix, then the topic's name (a topic name
    is at most 249 characters: the run's topics are far shorter)."""
    return DEFAULT_PREFIX + topic


def parse_dead_letter(record: dict) -> dict:
    """One DLQ record as `harness/java/DeadLetters.java` prints it (headers, key, value, its own partition
    and offset) as the history's `dead-letters` entry: the source record's topic, partition, offset,
    group, delivery count and message from its headers (None where a header is missing or not a number),
    and the DLQ record's key and value."""
    headers = record.get("headers") or {}

    def number(name: str) -> int | None:
        text = headers.get(name)
        try:
            return int(text) if text is not None else None
        except ValueError:
            return None
    return {"topic": headers.get(HEADER_TOPIC), "partition": number(HEADER_PARTITION),
            "offset": number(HEADER_OFFSET), "group": headers.get(HEADER_GROUP),
            "delivery_count": number(HEADER_DELIVERY_COUNT), "message": headers.get(HEADER_MESSAGE),
            "key": record.get("key"), "value": record.get("value"),
            "dlq_partition": record.get("partition"), "dlq_offset": record.get("offset")}


#: `RecordState.ARCHIVING` (4.4.0, kafka-server `o/a/k/server/share/fetch/RecordState`: 3): a record whose
#: DLQ write is under way; it becomes ARCHIVED (4) once the write is done or has failed.
STATE_ARCHIVING = STATE_IDS[ARCHIVING]


def writes_pending(state: list[dict]) -> bool:
    """Whether a `share-state` read (`harness.cluster.java_admin.read_share_state`'s partitions) shows a
    record ARCHIVING: its DLQ write is not done yet."""
    return any(batch[2] == STATE_ARCHIVING for p in state for batch in p.get("batches", ()))


def archiving_ranges(state: list[dict]) -> list[list]:
    """[topic, partition, first, last] of every batch a `share-state` read shows ARCHIVING."""
    return [[p["topic"], p["partition"], batch[0], batch[1]] for p in state for batch in p.get("batches", ())
            if batch[2] == STATE_ARCHIVING]
