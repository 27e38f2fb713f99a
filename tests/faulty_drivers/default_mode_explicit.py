"""Faulty driver: a consumer whose acknowledgement mode is not set acknowledges explicitly (a library whose default is
explicit, where KafkaShareConsumer's is implicit). Certification must fail rule `default-ack-mode`."""

import sys

from _wrap import run


def change_config(config, explicit):
    if config.get("mode") == "default":
        return {**config, "mode": "explicit"}, True
    return config, explicit


sys.exit(run(change_config=change_config))
