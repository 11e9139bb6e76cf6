"""The Spark session synclog uses when the caller does not bring one, and what its executors see.

`SPARK_REMOTE=sc://host:port` (Spark Connect, as Databricks Connect and serverless use) gives
a Connect session; without it, the server `synclog spark start` runs (`synclog.spark_server`)
gives its shared one; otherwise `SYNCLOG_SPARK_MASTER` (default `local[*]`) names the master
of a session in this process.
Spark's start-up lines stay out of sight and its log level is FATAL, unless
`SYNCLOG_LOG_LEVEL` (e.g. ERROR, WARN, INFO) asks for Spark's own logging (FATAL by default:
synclog reports failures itself, in one line).
"""

from __future__ import annotations

import atexit
import contextlib
import ipaddress
import os
import re
import socket
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pyspark.sql import SparkSession

from synclog.errors import ConfigError
from synclog.java import ensure_java
from synclog.storage.location import Location

if TYPE_CHECKING:
    from synclog.spark_server import ServerState

_SESSION_CONFS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}
"""Settings a Connect session accepts too (runtime SQL confs)."""


def spark_session(app_name: str = "synclog") -> SparkSession:
    """The active session, or a new one set up for synclog (UTC, Arrow, quiet logs)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    remote = os.environ.get("SPARK_REMOTE")
    if remote:
        return _connect(app_name, remote)
    warm = _warm_server()
    if warm is not None:
        return _warm_session(app_name, warm)
    ensure_java()
    # Executors' Python workers must run the interpreter that has synclog and pyarrow.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.appName(app_name)
        .master(os.environ.get("SYNCLOG_SPARK_MASTER", "local[*]"))
        .config("spark.sql.shuffle.partitions", os.environ.get("SYNCLOG_SHUFFLE_PARTITIONS", "8"))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", os.environ.get("SYNCLOG_DRIVER_MEMORY", "2g"))
        # PySpark's per-call capture of the Python call site (a stack walk and JVM round trips
        # for every DataFrame call) costs about a tenth of a second per write; synclog reports
        # failures in its own words, so it does not use the call site.
        .config("spark.python.sql.dataFrameDebugging.enabled", "false")
    )
    for key, value in _SESSION_CONFS.items():
        builder = builder.config(key, value)
    level = os.environ.get(LOG_LEVEL_ENV)
    with contextlib.nullcontext() if level else _without_startup_noise():
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel(level or QUIET_LEVEL)
    return session


LOG_LEVEL_ENV = "SYNCLOG_LOG_LEVEL"
QUIET_LEVEL = "FATAL"
"""Spark's log level unless `SYNCLOG_LOG_LEVEL` says otherwise: a failed task's ERROR lines (a JVM
stack trace) stay out, since synclog reports every failure itself, in one line."""
_STARTUP_NOISE = re.compile(
    rb"^(WARNING: Using incubator modules"
    rb"|Using Spark's default log4j profile"
    rb"|Setting default log level to"
    rb"|To adjust logging level use"
    rb"|\S+ \S+ WARN NativeCodeLoader: Unable to load native-hadoop)"
)
"""What the JVM and Spark print on every start, before synclog can lower the log level."""


@contextlib.contextmanager
def _without_startup_noise() -> Iterator[None]:
    """Start the JVM with its standard error going through a filter that drops the start-up lines.

    The JVM inherits the filter's pipe for good: later lines (errors) still reach our standard
    error, forwarded by a daemon thread until the JVM exits.
    """
    try:
        original = os.dup(2)
    except OSError:  # no standard error to speak of
        yield
        return
    reader, writer = os.pipe()
    forward_to = os.fdopen(os.dup(original), "wb", buffering=0)

    def forward() -> None:
        with os.fdopen(reader, "rb") as pipe:
            for line in pipe:
                if not _STARTUP_NOISE.match(line):
                    forward_to.write(line)

    threading.Thread(target=forward, name="synclog-jvm-stderr", daemon=True).start()
    sys.stderr.flush()
    os.dup2(writer, 2)
    os.close(writer)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(original, 2)
        os.close(original)


def remote_url(spark: SparkSession) -> str | None:
    """The Spark Connect URL the session talks to, or None for a classic session."""
    if not type(spark).__module__.startswith("pyspark.sql.connect"):
        return None
    client = spark.client
    return f"sc://{client.host}"


def executors_are_local(spark: SparkSession) -> bool:
    """Whether every executor runs on this machine, so that it sees this machine's files.

    True for a `local[…]` master, reached directly or through a Spark Connect server on this
    machine (a loopback address); false for any cluster manager or a remote Connect server.
    """
    master = spark.conf.get("spark.master", "local") or "local"
    if not master.startswith("local"):
        return False
    remote = remote_url(spark)
    return remote is None or _is_loopback(urlsplit(remote).hostname or "")


def require_reachable(location: Location, spark: SparkSession, setting: str) -> None:
    """Raise ConfigError, naming `setting`, when executors elsewhere cannot see `location`."""
    if location.reaches_every_node or executors_are_local(spark):
        return
    raise ConfigError(
        f"{setting} is {location.uri()}, a folder only this machine sees, but Spark runs executors "
        f"elsewhere ({spark.conf.get('spark.master', '?')}): set {setting} to s3://…, gs://… or "
        "a folder every node mounts (with shared = true)"
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
        except (OSError, ValueError):
            return False


def _connect(app_name: str, remote: str) -> SparkSession:
    """A Spark Connect session on `remote`, with synclog's settings."""
    builder = SparkSession.builder.appName(app_name).remote(remote)
    for key, value in _SESSION_CONFS.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _warm_server() -> ServerState | None:
    """The server `synclog spark start` runs, if one does."""
    from synclog import spark_server

    server = spark_server.running()
    if server is None:
        return None
    spark_server.require_client()
    return server


def _warm_session(app_name: str, server: ServerState) -> SparkSession:
    """The server's shared session. Its `stop` closes this process's connection only: released,
    a Connect session is gone for good, for every process that joins it later."""
    session = _connect(app_name, server.session_url)
    session.release_session_on_close = False  # type: ignore[attr-defined]  # a Connect session's
    atexit.register(_close_at_exit, session)
    return session


def _close_at_exit(session: SparkSession) -> None:
    """Close this process's connection to the shared session as the process exits, before
    pyspark's own exit hook (hooks run last registered first): that hook sends cleanup calls to
    the server, and retries them for minutes once the server is gone (`synclog spark stop` while
    an engine's process still runs)."""
    client = session.client  # a Connect session's
    if not client.is_closed:
        client.close()
