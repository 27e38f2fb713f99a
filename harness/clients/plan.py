"""The client part of a run's spec (`harness.spec.RunSpec.library`): the share-consumer library the consumers
run and the properties a user of it would set; validated here, by the room that drives the clients.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.clients.options import check_options
from harness.clients.registry import driver_info


@dataclass(frozen=True)
class ClientPlan:
    """`client`: confluent, java, franz, spring, or a driver manifest's path; `client_options`: properties
    every consumer gets (`harness.clients.options`)."""

    client: str = "confluent"
    client_options: dict[str, str] = field(default_factory=dict)

    def validate(self) -> "ClientPlan":
        driver_info(self.client)  # a bad name or manifest is a one-line error naming the valid ones
        check_options(self.client_options)
        return self
