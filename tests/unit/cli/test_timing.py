"""harness/timing.py: a test's seconds per kind, each second counted once, by its innermost span."""

from __future__ import annotations

import threading

import pytest

from harness import timing


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(timing.time, "monotonic", c)
    timing.take()
    yield c
    timing.take()


def test_nested_spans_count_each_second_once_by_the_innermost(clock):
    with timing.spent("wait"):
        clock.now += 2
        with timing.spent("client"):
            clock.now += 3
        clock.now += 1
    clock.now += 10  # outside every span: the rest
    assert timing.take() == {"cluster": 0.0, "client": 3.0, "workload": 0.0, "wait": 3.0, "check": 0.0}
    assert timing.take() == {"cluster": 0.0, "client": 0.0, "workload": 0.0, "wait": 0.0, "check": 0.0}  # taken: zero again


def test_a_wait_inside_a_cluster_start_is_the_clusters(clock):
    @timing.timed("cluster")
    def start():
        clock.now += 1
        with timing.spent("wait", unless_in=("cluster",)):  # the node's readiness
            clock.now += 4
    start()
    assert timing.take()["cluster"] == 5.0


def test_an_open_span_counts_up_to_the_take(clock):
    with timing.spent("check"):
        clock.now += 2
        assert timing.take()["check"] == 2.0
        clock.now += 1
    assert timing.take()["check"] == 1.0


def test_other_threads_do_not_count(clock):
    def work():
        with timing.spent("client"):
            clock.now += 5
    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert timing.take()["client"] == 0.0


def test_a_childs_junit_adds_its_kinds(clock, tmp_path):
    xml = tmp_path / "junit.xml"
    xml.write_text('<testsuites><testsuite><testcase name="a"><properties><property name="time_wait" value="2.5"/>'
                   '<property name="time_client" value="1"/><property name="other" value="x"/></properties>'
                   '</testcase></testsuite></testsuites>')
    timing.add_junit(xml)
    timing.add_junit(tmp_path / "missing.xml")  # no report: nothing added, nothing raised
    assert timing.take() == {"cluster": 0.0, "client": 1.0, "workload": 0.0, "wait": 2.5, "check": 0.0}


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown kind"):
        with timing.spent("sleep"):
            pass
