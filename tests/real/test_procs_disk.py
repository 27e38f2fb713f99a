"""Disk left behind: collect_logs copies only what is new, node logs roll, the port count is known early."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.cluster.local import LocalCluster, LocalClusterSpec, copy_new_log_bytes
from harness.cluster.local.node import LocalNode as _Node
from harness.errors import HarnessError
from harness.kafka import config as kconfig
from harness.kafka.versions import DEFAULT_VERSION


def _roll(log: Path, keep: int = 3) -> None:
    """What log4j2's DefaultRolloverStrategy (fileIndex=min) does: .1 -> .2 ..., server.log -> .1, new file."""
    for i in range(keep, 0, -1):
        older = log.with_name(f"{log.name}.{i}")
        if older.exists():
            if i == keep:
                older.unlink()
            else:
                older.rename(log.with_name(f"{log.name}.{i + 1}"))
    log.rename(log.with_name(log.name + ".1"))
    log.write_bytes(b"")


_clock = [1_700_000_000 * 10**9]


def _append(log: Path, text: str) -> None:
    """Append, and move the file's mtime on by a second (the file clock is coarser than these writes)."""
    with open(log, "ab") as f:
        f.write(text.encode())
    _clock[0] += 10**9
    os.utime(log, ns=(_clock[0], _clock[0]))


def test_copies_only_the_bytes_written_since_the_last_copy(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("a1\na2\n")
    mark = copy_new_log_bytes(log, None, tmp_path / "run1.log")
    assert (tmp_path / "run1.log").read_text() == "a1\na2\n"
    _append(log, "b1\n")
    mark = copy_new_log_bytes(log, mark, tmp_path / "run2.log")
    assert (tmp_path / "run2.log").read_text() == "b1\n"
    mark = copy_new_log_bytes(log, mark, tmp_path / "run3.log")
    assert (tmp_path / "run3.log").read_text() == ""  # nothing new: nothing copied


def test_a_rolled_log_is_followed_by_inode(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("old\n")
    mark = copy_new_log_bytes(log, None, tmp_path / "r1.log")
    _append(log, "before-roll\n")
    _roll(log)
    _append(log, "after-roll\n")
    mark = copy_new_log_bytes(log, mark, tmp_path / "r2.log")
    assert (tmp_path / "r2.log").read_text() == "before-roll\nafter-roll\n"
    # Two rolls between copies: the rest of the file read last, the whole middle one, then the new log.
    _append(log, "x\n")
    _roll(log)
    _append(log, "y\n")
    _roll(log)
    _append(log, "z\n")
    mark = copy_new_log_bytes(log, mark, tmp_path / "r3.log")
    assert (tmp_path / "r3.log").read_text() == "x\ny\nz\n"


def test_a_log_whose_last_read_file_was_deleted_or_truncated(tmp_path):
    log = tmp_path / "server.log"
    _append(log, "first\n")
    mark = copy_new_log_bytes(log, None, tmp_path / "r1.log")
    for i in range(4):  # rolled past the kept files: the file last read is gone
        _roll(log, keep=2)
        _append(log, f"g{i}\n")
    mark = copy_new_log_bytes(log, mark, tmp_path / "r2.log")
    assert (tmp_path / "r2.log").read_text() == "g1\ng2\ng3\n"  # all that is left
    log.write_text("")  # truncated in place (same inode, smaller)
    _append(log, "t\n")
    copy_new_log_bytes(log, mark, tmp_path / "r3.log")
    assert (tmp_path / "r3.log").read_text() == "t\n"


def test_first_copy_includes_files_rolled_before_it(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("one\n")
    _roll(log)
    _append(log, "two\n")
    copy_new_log_bytes(log, None, tmp_path / "r.log")
    assert (tmp_path / "r.log").read_text() == "one\ntwo\n"


def test_cluster_collect_logs_is_incremental_per_node(tmp_path):
    cluster = LocalCluster(LocalClusterSpec(version=DEFAULT_VERSION, brokers=2, replication_factor=2,
                                            min_insync_replicas=1), tmp_path / "cluster")
    for i in (1, 2):
        home = tmp_path / "cluster" / "nodes" / f"n{i}"
        (home / "logs").mkdir(parents=True)
        (home / "logs" / "server.log").write_text(f"n{i} start\n")
        cluster._nodes[i] = _Node(i, ("broker", "controller"), home, home / "server.properties",
                                  kconfig.NodePorts(client=None, peers={}, controller=None))
    first = cluster.collect_logs(tmp_path / "run1")
    assert sorted(p.name for p in first) == ["n1-server.log", "n2-server.log"]
    assert (tmp_path / "run1" / "n1-server.log").read_text() == "n1 start\n"
    _append(tmp_path / "cluster" / "nodes" / "n1" / "logs" / "server.log", "n1 run2\n")
    cluster.collect_logs(tmp_path / "run2")
    assert (tmp_path / "run2" / "n1-server.log").read_text() == "n1 run2\n"
    assert (tmp_path / "run2" / "n2-server.log").read_text() == ""
    assert (tmp_path / "run1" / "n1-server.log").read_text() == "n1 start\n"  # earlier runs untouched


def test_node_log4j2_config_rolls_by_size(tmp_path):
    text = kconfig.render_log4j2(tmp_path)
    props = dict(line.split(" = ", 1) for line in text.splitlines() if " = " in line)
    assert props["appender.file.type"] == "RollingFile"
    assert props["appender.file.fileName"] == f"{tmp_path}/server.log"
    assert props["appender.file.filePattern"] == f"{tmp_path}/server.log.%i"
    assert props["appender.file.policies.size.type"] == "SizeBasedTriggeringPolicy"
    assert props["appender.file.policies.size.size"] == "50MB"
    assert props["appender.file.strategy.fileIndex"] == "min"  # server.log.1 is the newest, as collect expects
    assert int(props["appender.file.strategy.max"]) >= 1


def test_base_port_range_is_checked_before_anything_starts(tmp_path):
    spec = LocalClusterSpec(version=DEFAULT_VERSION, base_port=65500)
    with pytest.raises(HarnessError) as exc:
        LocalCluster(spec, tmp_path)
    assert "invalid base port 65500" in str(exc.value) and "\n" not in str(exc.value)
    # The count matches what start() allocates: 3 brokers, 3 lanes, combined mode.
    assert LocalClusterSpec(version=DEFAULT_VERSION).port_count() == 1 + 3 * (1 + 3 + 3) + 3 + 3 * 4 + 6 + 3 * 2
