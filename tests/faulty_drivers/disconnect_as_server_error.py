"""Faulty driver: an acknowledgement whose connection dropped is reported to the callback as an unexpected server error
(a library that maps a client-side disconnection through the broker's error table, as kafka-clients does: note 11 of
docs/client-contract.md). Certification must fail rule `callback-disconnect`."""

import sys

from harness.clients import confluent_share_driver as d

_on_commit = d._on_commit


def on_commit(offsets, exc):
    if exc is not None and "_TRANSPORT" in d._error_text(exc):
        d.emit("ok", "callback", {"partitions": [{"topic": tp.topic, "partition": tp.partition, "offsets": sorted(offs)}
                                                 for tp, offs in offsets.items()],
                                  "error": "UnknownServerException: The server experienced an unexpected error when "
                                           "processing the request."})
        return
    _on_commit(offsets, exc)


d._on_commit = on_commit
sys.exit(d.main(sys.argv))
