"""What the main job's install leaves out is fetched on first use, with one line saying so, once (issue 73)."""

from __future__ import annotations

import threading

import pytest

from harness.kafka import jars
from harness.sys import progress


@pytest.fixture(autouse=True)
def _no_sink():
    progress.set_sink(None)
    yield
    progress.set_sink(None)


def test_a_progress_line_goes_to_stderr_or_the_sink(capsys):
    progress.progress("fetching X (first use)")
    assert capsys.readouterr().err == "share-harness: fetching X (first use)\n"
    said = []
    progress.set_sink(said.append)
    progress.progress("building Y")
    assert said == ["share-harness: building Y"] and capsys.readouterr().err == ""


def test_a_sink_that_fails_falls_back_to_stderr(capsys):
    def broken(_text):
        raise OSError("closed")
    progress.set_sink(broken)
    progress.progress("fetching Z")
    assert "share-harness: fetching Z" in capsys.readouterr().err


def test_a_release_is_fetched_once_with_one_line_however_many_ask_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(jars, "require_tool", lambda name, fix: name)
    fetched, said = [], []

    def download(version, target):
        fetched.append(version)
        (target / "libs").mkdir()
        (target / jars.COMPLETE).write_text(version)
    monkeypatch.setattr(jars, "_download", download)
    progress.set_sink(said.append)
    threads = [threading.Thread(target=jars.resolve, args=("4.3.1", tmp_path)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fetched == ["4.3.1"]
    assert len(said) == 1 and "fetching Kafka 4.3.1's jars from Maven Central" in said[0] and "first use" in said[0]
    jars.resolve("4.3.1", tmp_path)  # cached: nothing fetched, nothing said
    assert fetched == ["4.3.1"] and len(said) == 1


def test_the_main_jobs_setup_leaves_the_rest_to_first_use(monkeypatch, capsys):
    """`share-harness setup` without --all fills only the default release and Toxiproxy, and says what it left."""
    from harness.cli import main
    from harness.cluster import java_admin
    from harness.kafka import cds
    from harness.proxy import server
    asked = []
    monkeypatch.setattr(jars, "resolve", lambda v, cache: asked.append(("kafka", v)) or
                        jars.KafkaDistribution(v, cache / "libs", "maven"))
    monkeypatch.setattr(java_admin, "compiled", lambda dist, cache, program="": asked.append(("javac", program)) or cache)
    monkeypatch.setattr(java_admin, "compiled_tools", lambda dist, cache: asked.append(("tools", dist.version)) or "")
    monkeypatch.setattr(cds, "ensure", lambda dist: asked.append(("cds", dist.version)) or "archives")
    monkeypatch.setattr(server, "find_or_build_toxiproxy", lambda cache: asked.append(("toxiproxy",)) or "bin")
    assert main(["setup"]) == 0
    from harness.kafka.versions import DEFAULT_VERSION
    assert sorted(asked) == sorted([("kafka", DEFAULT_VERSION), ("javac", "ShareDriver"), ("tools", DEFAULT_VERSION),
                                    ("cds", DEFAULT_VERSION), ("toxiproxy",)])
    assert "fetched on first use" in capsys.readouterr().out


def test_kfake_version_without_all_is_refused_in_one_line(capsys):
    from harness.cli import main
    from harness.kafka.implementations import KFAKE_VERSION
    assert main(["setup", "--kfake-version", KFAKE_VERSION]) == 2
    assert "only --all does" in capsys.readouterr().err
