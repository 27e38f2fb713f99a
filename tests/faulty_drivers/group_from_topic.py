"""Faulty driver: the consumer joins the group named after its first topic (`<topic>-group`), whatever group it was
given (a framework that derives the group id from the listener's topic). Within one group nothing shows; a second
group on the topic is served as the first. Certification must fail rule `groups-independent`."""

import sys

from _wrap import run


def change_config(config, explicit):
    return ({**config, "group": f"{config['topics'][0]}-group"} if config["topics"] else config), explicit


sys.exit(run(change_config=change_config))
