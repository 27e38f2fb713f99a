"""Fast unit tests of the pure partition formulas in harness.cluster.inspect (no cluster needed)."""

from __future__ import annotations

import ctypes

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cluster.inspect import group_partition, java_string_hash, kafka_abs, share_state_partition

INT_MIN = -(2 ** 31)
INT_MAX = 2 ** 31 - 1


def reference_hash(text: str) -> int:
    """Independent String.hashCode: int32 arithmetic over UTF-16 code units (surrogate pairs split by hand)."""
    units: list[int] = []
    for ch in text:
        cp = ord(ch)
        if cp >= 0x10000:
            cp -= 0x10000
            units += [0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)]
        else:
            units.append(cp)
    h = ctypes.c_int32(0)
    for unit in units:
        h = ctypes.c_int32(ctypes.c_int32(31 * h.value).value + unit)
    return h.value


# Values printed by OpenJDK 17 (`"...".hashCode()`), so both implementations are checked against Java itself.
JAVA_VALUES = {
    "": 0,
    "hello": 99162322,
    "Aa": 2112,
    "BB": 2112,
    "kafka-share-harness": 12810779,
    "\U0001F600": 1772899,                    # 😀: two UTF-16 code units (a surrogate pair)
    "a\U0001F600b\u00e9\u4e2d": -240991678,   # mixes ASCII, non-BMP, Latin-1 and CJK
    "ksh-share-basic-s1-abcdef-group": -1984756598,
    "polygenelubricants": INT_MIN,           # hashes to Integer.MIN_VALUE
    "my-group:AAAAAAAAAAAAAAAAAAAAAA:0": -211207822,
}


@pytest.mark.parametrize("text, expected", sorted(JAVA_VALUES.items()))
def test_java_string_hash_matches_java(text, expected):
    assert reference_hash(text) == expected  # the reference itself agrees with Java
    assert java_string_hash(text) == expected


def test_collision_pair():
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112


def test_non_bmp_counts_two_code_units():
    assert len("😀".encode("utf-16-be")) == 4
    assert java_string_hash("😀") == 31 * 0xD83D + 0xDE00


def test_long_string_overflows_into_int32():
    text = "kafka-share-harness" * 20
    value = java_string_hash(text)
    assert INT_MIN <= value <= INT_MAX
    assert value == reference_hash(text)


@settings(max_examples=300, deadline=None, database=None)
@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=60))
def test_java_string_hash_matches_reference_on_random_text(text):
    value = java_string_hash(text)
    assert value == reference_hash(text)
    assert INT_MIN <= value <= INT_MAX


def test_kafka_abs():
    assert kafka_abs(INT_MIN) == 0
    assert kafka_abs(-5) == 5
    assert kafka_abs(7) == 7
    assert kafka_abs(0) == 0
    assert kafka_abs(INT_MAX) == INT_MAX
    assert kafka_abs(-INT_MAX) == INT_MAX


def test_group_partition_of_min_value_hash_is_zero():
    for n in (1, 3, 7, 50):
        assert group_partition("polygenelubricants", n) == 0


def test_group_partition_known_value():
    # Utils.abs(-1984756598) % 50 computed by hand
    assert group_partition("ksh-share-basic-s1-abcdef-group", 50) == 1984756598 % 50


@settings(max_examples=200, deadline=None, database=None)
@given(group=st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40),
       topic_id=st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
                        min_size=22, max_size=22),
       partition=st.integers(0, 10_000), n=st.integers(1, 200))
def test_partitions_are_in_range(group, topic_id, partition, n):
    gp = group_partition(group, n)
    sp = share_state_partition(group, topic_id, partition, n)
    assert 0 <= gp < n
    assert 0 <= sp < n
    assert sp == kafka_abs(reference_hash(f"{group}:{topic_id}:{partition}")) % n


def test_share_state_partition_uses_group_topic_id_partition_key():
    # SharePartitionKey.asCoordinatorKey: "%s:%s:%d"
    assert share_state_partition("my-group", "AAAAAAAAAAAAAAAAAAAAAA", 0, 50) == 211207822 % 50
