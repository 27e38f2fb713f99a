"""The driver contract's version (docs/driver.md), on its own so that the harness's side of a driver
(`harness.clients.driver`) and the registry of drivers (`harness.clients.registry`) both read it without
importing each other."""

from __future__ import annotations

#: The newest driver contract this harness speaks (docs/driver.md). A driver that prints a `contract` not in
#: `CONTRACT_VERSIONS` in its `start` event is refused with a message naming both.
CONTRACT_VERSION = 4
#: Every contract version the harness still runs: a driver of an older one is run on the rules its version
#: serves; a rule that needs a newer one is "not run (older contract)", never passed and never failed.
CONTRACT_VERSIONS = (1, 2, 3, 4)
#: What each version added, for the messages and docs/driver.md (a feature word needing a newer contract
#: than the driver's is refused in its manifest: FEATURE_SINCE).
CONTRACT_ADDED = {1: "start, poll, ack, commit_sync, commit_async, close",
                  2: "the `unsubscribe` command (feature `unsubscribe`)",
                  3: "the `subscribe` and `subscription` commands (feature `subscribe`), an `ack` record without `type` "
                     "(feature `ack_default`), `ack` `\"by\": \"offset\"` (feature `ack_by_offset`) and the start config's "
                     "`mode: \"default\"` (feature `mode_default`), the `lock_timeout` command (feature `lock_timeout`), "
                     "`commit_sync`'s and `close`'s `timeout` (feature `default_timeouts`: null calls the overload without one; "
                     "feature `negative_timeout_refused`), the `poll_once` command (feature `poll_once`), the `wakeup` command (feature `wakeup`)",
                  4: "a `start` `fail` event when the library refuses to construct the consumer (feature `config_refusal`), "
                     "the `client_instance_id` command (feature `client_instance_id`), `poll_once`'s `wakeup_after` (feature "
                     "`wakeup_thread`: wakeup() from a second thread while the poll blocks), `close`'s `timeout` passed to "
                     "the library and a close that ran out its timeout printed as `info` (feature `close_timeout`), `poll_once`'s "
                     "`interrupt_after` (feature `interrupt_thread`), the `poll_concurrent` command (feature `thread_guard`)"}
#: feature -> the contract version that brought it (features not named here: version 1)
FEATURE_SINCE = {"unsubscribe": 2, "subscribe": 3, "ack_default": 3, "ack_by_offset": 3, "mode_default": 3,
                 "lock_timeout": 3, "default_timeouts": 3, "poll_once": 3, "negative_timeout_refused": 3, "wakeup": 3,
                 "config_refusal": 4, "client_instance_id": 4, "wakeup_thread": 4,
                 "close_timeout": 4, "interrupt_thread": 4, "thread_guard": 4}


def speaks(value: object) -> bool:
    """Whether `value` (a manifest's or a start event's `contract`) names a contract this harness speaks: an int
    of `CONTRACT_VERSIONS`, not a bool (`True == 1` in Python) nor a float or a string that looks like one."""
    return isinstance(value, int) and not isinstance(value, bool) and value in CONTRACT_VERSIONS


def older_contract(feature: str, contract: int) -> str | None:
    """Why a driver speaking `contract` cannot serve `feature` (a skip reason certification reads as "not run:
    older contract"), or None if its contract has the feature."""
    since = FEATURE_SINCE.get(feature, 1)
    if contract >= since:
        return None
    return (f"older contract: the driver speaks contract {contract}; {feature} came with contract {since} "
            f"({CONTRACT_ADDED[since]})")
