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
import sys
import tempfile
import warnings
from pathlib import Path

from harness.errors import HarnessError

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
        from harness.procs import REAPER
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
    builder = (SparkSession.builder.master(master).appName("share-harness-check")
               .config("spark.driver.memory", memory)
               .config("spark.ui.enabled", "false")
               .config("spark.local.dir", str(_local_dir))
               .config("spark.sql.shuffle.partitions", str(max(2, 2 * (os.cpu_count() or 1))))
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", "200000")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log_config}"))
    if master.startswith("local"):
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # the JVM did not start: one line, not a Py4J traceback
        raise HarnessError(f"Spark did not start ({master}): {str(exc).strip().splitlines()[-1]}") from None
    session.sparkContext.setLogLevel("WARN")
    global _registered
    if not _registered:
        import atexit
        atexit.register(stop)
        _registered = True
    return session


def stop() -> None:
    """Stop the session and remove its scratch space (idempotent)."""
    global _local_dir
    try:
        from pyspark.sql import SparkSession
        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
    except Exception:  # stopping is best effort at exit
        pass
    if _local_dir is not None:
        from harness.procs import REAPER
        shutil.rmtree(_local_dir, ignore_errors=True)
        REAPER.forget_dir(_local_dir)
        _local_dir = None
