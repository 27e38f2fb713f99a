"""The checking part of a run's spec (`harness.spec.RunSpec.checking`): which engine checks the history and
the tolerances the oracle grants; validated here, by the room that checks.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.cluster.plan import is_int
from harness.errors import HarnessError

CHECK_ENGINES = ("auto", "inprocess", "spark")
#: Events above which the `auto` engine checks a history on Spark rather than in-process.
SPARK_THRESHOLD = 5_000_000


@dataclass(frozen=True)
class CheckPlan:
    check_engine: str = "auto"  # inprocess, spark, or auto: spark above `spark_threshold` events
    spark_threshold: int = SPARK_THRESHOLD
    lock_tolerance_ms: int = 2000  # how early before its deadline a lock may end unseen (client-side prefetch)
    settle_ms: int = 10000  # how long after a fault heals its allowances still apply

    def validate(self) -> "CheckPlan":
        if self.lock_tolerance_ms < 0 or self.settle_ms < 0:
            raise HarnessError("invalid lock-tolerance-ms/settle-ms: use 0 or more milliseconds")
        if self.check_engine not in CHECK_ENGINES:
            raise HarnessError(f"invalid check engine {self.check_engine!r}: use one of {', '.join(CHECK_ENGINES)}")
        if not is_int(self.spark_threshold) or self.spark_threshold < 0:
            raise HarnessError(f"invalid spark-threshold {self.spark_threshold!r}: use a number of events, 0 or more")
        return self
