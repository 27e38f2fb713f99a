"""The driver contract's version (docs/driver.md), on its own so that the harness's side of a driver
(`harness.clients.driver`) and the registry of drivers (`harness.clients.registry`) both read it without
importing each other."""

from __future__ import annotations

#: The driver contract this harness speaks (docs/driver.md). A driver that prints another
#: `contract` in its `start` event is refused with a message naming both.
CONTRACT_VERSION = 1
