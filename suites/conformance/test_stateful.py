"""Model-based: random programs of produce / poll / acknowledge / commit / close-and-restart steps
run against a live share group, checked against the reference model after every step.

A hypothesis `RuleBasedStateMachine` applies each step to the real group (consumers in step mode)
and replays the history so far with the checkers' reference model: after every step the
properties that hold at any moment (delivery counts, batch order, exclusive acquisition, no
redelivery after acknowledgement) must show no anomaly, and each
delivered record must be one the model has as deliverable. At the end every consumer closes, a
fresh one drains the group, and the whole history must conform (no loss and durable state too).
A failure prints the program that failed; the nightly profile also shrinks it to a short one
(shrinking on a live cluster takes minutes). Examples: ci 2, nightly 10 (up to 15 steps each).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, initialize, invariant, precondition, rule,
                                 run_state_machine_as_test)

pytestmark = [pytest.mark.real, pytest.mark.cluster, pytest.mark.kip("model")]

CONSUMERS = 2
#: Properties that hold at any moment; no loss, a result for every acknowledgement and the durable
#: state can only be judged once everything is settled (at the end).
ANY_MOMENT = ("delivery-count", "batch-order", "exclusive-acquisition", "no-redelivery-after-ack")


def _anomalies_so_far(session) -> list[str]:
    from harness.checkers import check_safe
    from harness.checkers.registry import CHECKERS
    ops = session.history.ops()
    out = []
    for name in ANY_MOMENT:
        result = check_safe(name, CHECKERS[name], ops)
        if result.valid is False or (result.valid != True and "nothing to check" not in result.reason):  # noqa: E712
            out.append(f"{name}: {result.reason} " + "; ".join(a.message for a in result.anomalies[:3]))
    return out


def _machine(open_session):
    class ShareGroupMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.s = open_session()
            self.consumers = [self.s.consumer() for _ in range(CONSUMERS)]
            self.held: list[list] = [[] for _ in range(CONSUMERS)]  # records given, not yet acknowledged
            self.acked: list[list] = [[] for _ in range(CONSUMERS)]  # acknowledged, not yet committed
            self.final: set = set()  # accepted or rejected and committed without error
            self.produced = 0

        @initialize(count=st.integers(1, 8))
        def first_records(self, count):
            self.produce(count)

        @rule(count=st.integers(1, 8))
        def produce(self, count):
            self.s.produce(count)
            self.produced += count

        @precondition(lambda self: self.produced > 0 and not all(self.held))
        @rule(data=st.data())
        def poll(self, data):
            """A consumer that acknowledged all it was given polls (explicit mode forbids polling
            with records unacknowledged); acknowledgements not yet committed go with the poll."""
            who = data.draw(st.sampled_from([i for i in range(CONSUMERS) if not self.held[i]]), "consumer")
            self.acked[who] = []  # sent with this poll: their results come through the callback
            got = self.consumers[who].poll(2.0)
            for r in got:
                assert r.key not in self.final, f"{r.key} was delivered after its ACCEPT/REJECT was committed"
            self.held[who].extend(got)

        @precondition(lambda self: any(self.held))
        @rule(who=st.integers(0, CONSUMERS - 1), type_=st.sampled_from(["ACCEPT", "RELEASE", "REJECT"]),
              data=st.data())
        def acknowledge(self, who, type_, data):
            if not self.held[who]:
                return
            chosen = data.draw(st.lists(st.sampled_from(self.held[who]), min_size=1, unique=True), "records")
            error = self.consumers[who].ack(chosen, type_)
            assert error is None, f"the client refused to acknowledge records it returned: {error}"
            self.held[who] = [r for r in self.held[who] if r not in chosen]
            self.acked[who].extend((r, type_) for r in chosen)

        @precondition(lambda self: any(self.acked))
        @rule(who=st.integers(0, CONSUMERS - 1))
        def commit(self, who):
            if not self.acked[who]:
                return
            results = {(r["topic"], r["partition"]): r["error"] for r in self.consumers[who].commit_sync()}
            for record, type_ in self.acked[who]:
                assert (record.topic, record.partition) in results, f"no commit result for {record.key}"
                if results[(record.topic, record.partition)] is None and type_ != "RELEASE":
                    self.final.add(record.key)
            self.acked[who] = []

        @precondition(lambda self: any(self.held))
        @rule(who=st.integers(0, CONSUMERS - 1))
        def restart(self, who):
            """Close a consumer (it releases what it holds) and start a new one in its place."""
            self.consumers[who].close()
            self.held[who], self.acked[who] = [], []
            self.consumers[who] = self.s.consumer()

        @invariant()
        def agrees_with_the_model(self):
            problems = _anomalies_so_far(self.s)
            assert not problems, "\n".join(problems)

        def teardown(self):
            for c in self.consumers:
                c.close()
            drain = self.s.consumer()
            while got := drain.poll(3.0):
                drain.ack(got, "ACCEPT")
                drain.commit_sync()
            self.s.assert_conforms()

    return ShareGroupMachine


def test_share_group_agrees_with_the_model_step_by_step(share_session, ksh_spec):
    """Random step programs on a live share group agree with the reference model after every step."""
    nightly = ksh_spec.profile == "nightly"
    phases = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if nightly else [])
    machine = _machine(lambda: share_session(topic_partitions=1, lock_duration_ms=60000, max_poll_records=5))
    run_state_machine_as_test(machine, settings=settings(
        max_examples=10 if nightly else 2, stateful_step_count=15, phases=phases, deadline=None, database=None,
        derandomize=True, suppress_health_check=list(HealthCheck)))
