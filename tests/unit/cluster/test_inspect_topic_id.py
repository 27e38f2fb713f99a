"""ClusterInspector.topic_id waits out a broker that does not know a new topic yet (seen in CI: DescribeTopics
answered UNKNOWN_TOPIC_OR_PART for a topic another broker had just shown led), and raises anything else."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException

from harness.cluster.inspect import ClusterInspector


def _inspector(answers: list) -> ClusterInspector:
    inspector = ClusterInspector.__new__(ClusterInspector)
    inspector.timeout, inspector._topic_ids = 5.0, {}

    def describe_topics(collection, request_timeout):
        future: Future = Future()
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            future.set_exception(answer)
        else:
            future.set_result(SimpleNamespace(topic_id=answer))
        return {"t": future}
    inspector.admin = SimpleNamespace(describe_topics=describe_topics)
    return inspector


def test_an_unknown_topic_is_asked_again_until_the_broker_knows_it():
    unknown = KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))
    answers = [unknown, unknown, "id-1"]
    assert _inspector(answers).topic_id("t") == "id-1" and answers == []


def test_another_error_is_raised_at_once():
    answers = [KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)), "id-1"]
    with pytest.raises(KafkaException):
        _inspector(answers).topic_id("t")
    assert answers == ["id-1"]
