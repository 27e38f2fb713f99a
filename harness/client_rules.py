"""The client rules a share-consumer library is certified against (`share-harness certify`).

Each conformance test that decides a rule carries `pytest.mark.rule(id)`; a spec's `rules` names a
subset to run. Kept apart from `harness.certify` so the spec can validate rule ids without it.
"""

#: The client rules, in certificate order: id -> what a conforming client does (KIP-932's words
#: where the KIP states it; KIP-1222 for RENEW, KIP-1206 for the acquire mode, KIP-1227 for the rack id).
RULES: dict[str, str] = {
    "ack-accept": "ACCEPT, once committed, is final: the record is never delivered again",
    "ack-release": "RELEASE makes the record available again, delivered with the next delivery count",
    "ack-reject": "REJECT archives the record: it is never delivered again",
    "ack-renew": "RENEW extends the acquisition lock: the record stays with its holder past its lock",
    "implicit-mode": "In implicit mode the next poll or commit accepts the whole previous batch",
    "no-mixing": "Implicit and explicit acknowledgement do not mix: an implicit-mode consumer refuses acknowledge()",
    "ack-order": "Acknowledgements are made in the order the records were returned",
    "ack-only-given": "A client acknowledges only records it handed to the application",
    "every-record-handed": "Every record the client acquires is handed to the application",
    "commit-sync-results": "commitSync returns a result per share-partition",
    "commit-async-callback": "commitAsync's results arrive through the acknowledgement commit callback",
    "delivery-count": "The delivery count is exposed: 1, 2, ... per acquisition, up to the limit",
    "batch-order": "A batch holds a share-partition's records in increasing offset order",
    "close-releases": "close() releases the records the consumer still holds",
    "ack-expired-fails": "Acknowledging a record whose lock expired fails (invalid record state)",
    "lock-expiry": "A record held past its lock goes to another consumer",
    "shared-partition": "Several consumers of one partition all make progress",
    "session-timeout": "A member that stops heartbeating is removed and its records move",
    "acquire-mode": "share.acquire.mode=record_limit caps each poll at max.poll.records",
    "rack-id": "client.rack reaches the group: the member's description carries it (KIP-1227)",
    "chaos-at-least-once": "At-least-once delivery through leader failover and share-coordinator loss",
}
