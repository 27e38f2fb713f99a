"""A SparkSession for the history pipeline.

Embedded local Spark by default (`local[*]`, driver memory bounded by `KSH_SPARK_MEMORY`, default
2g, so it fits beside a 3-node cluster and its clients); `master` (the `--spark-master` option)
or `SPARK_MASTER` sends the job to an existing cluster. The JVM exits when this process does
(PySpark's gateway watches our pipe); its scratch dir is removed by `stop()` at exit, or by the
harness reaper if this process is killed. The workers run this interpreter, so they
import the same `harness` package (a cluster's workers need it installed: `pip install
kafka-share-harness`).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import warnings
from contextlib import contextmanager
from pathlib import Path

from harness.errors import HarnessError
from harness.sys.procs import REAPER

#: The embedded Spark's driver heap, unless KSH_SPARK_MEMORY says otherwise.
DEFAULT_MEMORY = "2g"

_local_dir: Path | None = None
_registered = False


def spark_session(master: str | None = None, memory: str | None = None):
    """The active session, or a new one for `master` (default: $SPARK_MASTER, else local[*])."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise HarnessError("pyspark is not installed: pip install 'pyspark>=4.0'") from None
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise HarnessError("Spark needs Java 17+: install a JDK (e.g. apt-get install openjdk-17-jdk-headless)")
    active = SparkSession.getActiveSession()
    if active is not None and (master is None or active.sparkContext.master == master):
        return active  # no master asked for: whichever session the caller (or a test) started
    master = master or os.environ.get("SPARK_MASTER") or "local[*]"
    memory = memory or os.environ.get("KSH_SPARK_MEMORY", DEFAULT_MEMORY)
    if active is not None:
        active.stop()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    global _local_dir
    if _local_dir is None:  # scratch space of this process: removed by stop(), or by the reaper if we die
        _local_dir = Path(tempfile.mkdtemp(prefix="ksh-spark-"))
        REAPER.register_dir(_local_dir)
    log_config = _local_dir / "log4j2.properties"  # errors only: no start-up chatter on the user's terminal
    log_config.write_text("rootLogger.level = error\nrootLogger.appenderRef.stderr.ref = console\n"
                          "appender.console.type = Console\nappender.console.name = console\n"
                          "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
                          "appender.console.layout.pattern = spark: %p %c{1}: %m%n\n")
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # test traffic stays on loopback
    logging.getLogger("DataFrameQueryContextLogger").setLevel(logging.CRITICAL)  # errors reach the user as one line
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    # The embedded engine's JVM compiles with C1 only: its jobs are seconds long, too short for C2's compiling to
    # repay (tests/real/test_spark_engine.py's layout comparison: 30 s instead of 40 on an idle host); a cluster's
    # driver, fed the histories one machine could not check, keeps the JVM's default.
    jit = "-XX:TieredStopAtLevel=1 " if master.startswith("local") else ""
    builder = (SparkSession.builder.master(master).appName("share-harness-check")
               .config("spark.driver.memory", memory)
               .config("spark.ui.enabled", "false")
               .config("spark.local.dir", str(_local_dir))
               .config("spark.sql.shuffle.partitions", str(max(2, 2 * (os.cpu_count() or 1))))
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", "200000")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.extraJavaOptions", f"{jit}-Dlog4j2.configurationFile={log_config}"))
    if master.startswith("local"):
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
    with interruptible() as interrupted:  # Ctrl-C while the JVM starts: it starts, then it is stopped
        try:
            session = builder.getOrCreate()
            session.sparkContext.setLogLevel("WARN")
        except Exception as exc:  # the JVM did not start: one line, not a Py4J traceback
            if interrupted.is_set():
                raise KeyboardInterrupt("interrupted while Spark started") from None
            raise HarnessError(f"Spark did not start ({master}): {str(exc).strip().splitlines()[-1]}") from None
    global _registered
    if not _registered:
        import atexit
        atexit.register(stop)
        _registered = True
    return session


def stop(jvm: bool = False) -> None:
    """Stop the session and remove its scratch space (idempotent); `jvm`: the JVM too (PySpark keeps it
    for a next session otherwise), waited for."""
    global _local_dir
    with _deferred_signals():  # Ctrl-C now (at exit, say) must not break the Py4J calls that stop Spark
        try:
            from pyspark.sql import SparkSession
            active = SparkSession.getActiveSession()
            if active is not None:
                active.stop()
        except Exception:  # stopping is best effort at exit
            pass
        if jvm:
            _stop_jvm()
    if _local_dir is not None:
        shutil.rmtree(_local_dir, ignore_errors=True)
        REAPER.forget_dir(_local_dir)
        _local_dir = None


def _stop_jvm(timeout_s: float = 15.0) -> None:
    """End PySpark's JVM (its gateway process): it exits when its stdin closes; killed if it does not."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    SparkContext._gateway = None  # a later session starts a JVM of its own
    SparkContext._jvm = None
    if proc is None:
        return
    try:
        gateway.close()
    except Exception:  # the JVM may be gone already
        pass
    try:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.terminate()  # its context stopped: nothing of it is left to lose
        proc.wait(timeout_s)
    except Exception:  # noqa: BLE001 - whatever went wrong, the JVM must not outlive the command
        proc.kill()
        proc.wait()


@contextmanager
def interruptible(spark=None, signals=(signal.SIGINT, signal.SIGTERM)):
    """While Spark works for this process: Ctrl-C (or SIGTERM) is not raised inside a Py4J call (PySpark's own
    handler cancels the jobs from inside the call it interrupts: the Py4J connection breaks and Py4J logs
    tracebacks of 45 lines). It sets the yielded Event instead and cancels `spark`'s jobs from a thread of
    its own; the job's failure (or, once the body ends, the body's end) is raised as KeyboardInterrupt, the
    session and its JVM stopped. A second Ctrl-C is raised at once. Only in the main thread (signals)."""
    interrupted = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield interrupted
        return

    def handler(signum, frame):
        if interrupted.is_set():
            raise KeyboardInterrupt
        interrupted.set()
        if spark is not None:
            threading.Thread(target=_cancel, args=(spark,), name="ksh-spark-cancel", daemon=True).start()

    old = {sig: signal.signal(sig, handler) for sig in signals}
    try:
        yield interrupted
    except BaseException:
        if interrupted.is_set():
            stop(jvm=True)
            raise KeyboardInterrupt("interrupted while Spark worked") from None
        raise
    finally:
        for sig, previous in old.items():
            signal.signal(sig, previous)  # PySpark's handler, installed by a session's start, is gone too
    if interrupted.is_set():  # the body ended before the cancel reached it
        stop(jvm=True)
        raise KeyboardInterrupt("interrupted while Spark worked")


@contextmanager
def _deferred_signals(signals=(signal.SIGINT, signal.SIGTERM)):
    """While Spark stops: a first Ctrl-C (SIGTERM) lets the stop end (raised inside a Py4J call it would break
    the connection and print tracebacks of both sides, at exit after the command's last line); a second is
    raised at once. Stopping is what an interrupt asks for anyway: `interruptible` raises its own after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    seen: list[int] = []

    def handler(signum, frame):
        if seen:
            raise KeyboardInterrupt
        seen.append(signum)

    old = {sig: signal.signal(sig, handler) for sig in signals}
    try:
        yield
    finally:
        for sig, previous in old.items():
            signal.signal(sig, previous)


def _cancel(spark) -> None:
    try:  # the tasks' failures as they are cancelled and the JVM stops are not news: not logged
        spark.sparkContext.setLogLevel("OFF")
        spark.sparkContext.cancelAllJobs()
    except Exception:  # noqa: BLE001 - the job may be over, the JVM gone: the interrupt is raised anyway
        pass
