"""Run a local Databricks SQL warehouse stand-in for tests of the real ``databricks-sql-connector``.

Usage::

    with databricks_sql_server(["census"]) as dbx:
        conn = databricks.sql.connect(**dbx.connect_kwargs(staging_allowed_local_path=str(tmp_path)))
        cur = conn.cursor()
        cur.execute("CREATE SCHEMA IF NOT EXISTS census.census")

The server (``databricks_sql_app.py``) speaks the Statement Execution API that the connector
uses with ``use_sea=True``, and runs each statement on Spark SQL in a process of its own, with
the catalogs named here as aliases of the session catalog (``spark_catalogs.py``), so
``census.census.sync_log`` resolves. Volume files (``PUT '<local>' INTO '/Volumes/c/s/v/…'``)
land under :attr:`DatabricksSqlServer.volume_root`, where the server's ``COPY INTO … FROM
'/Volumes/…'`` reads them. ``DATABRICKS_NOTES.md`` lists the SQL it takes.

Missing pieces (pyspark, starlette, uvicorn, Java, a JDK's ``javac``) raise
:class:`ServerUnavailable` so tests skip; a server that does not answer raises
:class:`ServerStartError` with the tail of its log. Process and temp dir are gone on exit.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ServerStartError, ServerUnavailable
from .processes import PortTaken, free_port, log_tail, lost_port_race, spawn, start_on_free_port, stop_process
from .spark_catalogs import unity_catalog_confs

__all__ = [
    "HOST",
    "WAREHOUSE_ID",
    "DatabricksSqlServer",
    "ServerStartError",
    "ServerUnavailable",
    "databricks_sql_server",
]

HOST = "127.0.0.1"
WAREHOUSE_ID = "synclog-local"  # must match databricks_sql_app.WAREHOUSE_ID
APP = Path(__file__).resolve().with_name("databricks_sql_app.py")
#: The connector only needs a token to be present; the server accepts any non-empty one.
_TOKEN = "dapi-synclog-local-stand-in"
_STOP_TIMEOUT_S = 20.0
_PORT_ATTEMPTS = 3


@dataclass(frozen=True)
class DatabricksSqlServer:
    """A running stand-in; valid only inside :func:`databricks_sql_server`."""

    host: str
    port: int
    http_path: str
    token: str = field(repr=False)
    base_dir: Path
    """Temp dir holding ``volumes/``, ``warehouse/`` and ``server.log``; deleted on exit."""
    catalogs: tuple[str, ...]

    @property
    def server_hostname(self) -> str:
        """What to pass as ``server_hostname``: with ``http://``, since the server has no TLS."""
        return f"http://{self.host}"

    @property
    def volume_root(self) -> Path:
        """``/Volumes/<catalog>/<schema>/<volume>/<path>`` is ``volume_root/catalog/schema/volume/path``."""
        return self.base_dir / "volumes"

    @property
    def log_path(self) -> Path:
        return self.base_dir / "server.log"

    def volume_dir(self, catalog: str, schema: str, volume: str) -> Path:
        """The local folder of a volume (names fold to lower case, as the server does)."""
        return self.volume_root / catalog.lower() / schema.lower() / volume.lower()

    def connect_kwargs(self, **extra: Any) -> dict[str, Any]:
        """Keyword arguments for ``databricks.sql.connect()``; ``extra`` (catalog, schema, …) wins."""
        kwargs: dict[str, Any] = {
            "server_hostname": self.server_hostname,
            "_port": self.port,
            "http_path": self.http_path,
            "access_token": self.token,
            "use_sea": True,
            "enable_telemetry": False,
            "_retry_stop_after_attempts_count": 2,
        }
        kwargs.update(extra)
        return kwargs

    def log_tail(self) -> str:
        return log_tail(self.log_path)


def require_server() -> None:
    """Raise :class:`ServerUnavailable` unless the server's imports and Java are here."""
    missing = [
        m for m in ("pyspark", "pyarrow", "starlette", "uvicorn") if importlib.util.find_spec(m) is None
    ]
    if missing:
        raise ServerUnavailable(f"the Databricks SQL stand-in needs {', '.join(missing)} (pip install them)")
    java_home = os.environ.get("JAVA_HOME")
    if not (java_home and os.access(Path(java_home) / "bin" / "java", os.X_OK)) and not shutil.which("java"):
        raise ServerUnavailable(
            "the Databricks SQL stand-in runs Spark: it needs Java 17 or 21 (java on PATH)"
        )


@contextmanager
def databricks_sql_server(
    catalogs: Iterable[str] = ("census",),
    *,
    parent_dir: Path | None = None,
    startup_timeout: float = 180.0,
    cache_dir: Path | None = None,
    environment: Mapping[str, str] | None = None,
) -> Iterator[DatabricksSqlServer]:
    """Start the stand-in on a free loopback port with ``catalogs`` resolvable; yield it.

    More catalogs can be added while it runs with ``CREATE CATALOG``. ``cache_dir`` is where
    the catalog alias jar is kept (see :func:`spark_catalogs.ensure_catalog_jar`).
    ``environment`` is added to the server's (e.g. an S3 endpoint's ``AWS_*``, which its
    ``COPY INTO … FROM 's3://…'`` reads from).
    """
    names = tuple(catalogs)
    require_server()
    confs = unity_catalog_confs(names, cache_dir=cache_dir)
    base_dir = Path(tempfile.mkdtemp(prefix="synclog-databricks-", dir=parent_dir))
    proc: subprocess.Popen[bytes] | None = None
    try:
        proc, server = _start(base_dir, names, confs, dict(environment or {}), timeout=startup_timeout)
        yield server
    finally:
        try:
            if proc is not None:
                _stop(proc)
        finally:
            shutil.rmtree(base_dir, ignore_errors=True)


# --------------------------------------------------------------------------- internals


def _start(
    base_dir: Path,
    catalogs: tuple[str, ...],
    confs: dict[str, str],
    environment: dict[str, str],
    *,
    timeout: float,
) -> tuple[subprocess.Popen[bytes], DatabricksSqlServer]:
    """Start the app on a free port (retrying a lost port race) and wait until it answers."""
    log_path = base_dir / "server.log"
    env = {**os.environ, **environment, "PYTHONUNBUFFERED": "1", "SPARK_LOCAL_IP": HOST}
    env["PYSPARK_PYTHON"] = sys.executable

    def launch() -> tuple[subprocess.Popen[bytes], DatabricksSqlServer]:
        port = free_port(HOST)
        server = DatabricksSqlServer(
            host=HOST,
            port=port,
            http_path=f"/sql/1.0/warehouses/{WAREHOUSE_ID}",
            token=_TOKEN,
            base_dir=base_dir,
            catalogs=catalogs,
        )
        cmd = [
            sys.executable, str(APP), "--host", HOST, "--port", str(port),
            "--volume-root", str(server.volume_root), "--warehouse-dir", str(base_dir / "warehouse"),
        ]  # fmt: skip
        cmd += [arg for name in catalogs for arg in ("--catalog", name)]
        cmd += [arg for key, value in confs.items() for arg in ("--conf", f"{key}={value}")]
        return spawn(cmd, cwd=base_dir, env=env, log_path=log_path), server

    return start_on_free_port(
        launch,
        lambda proc, server: _wait_until_ready(proc, server, timeout=timeout),
        _stop,
        what="the Databricks SQL stand-in",
        log_path=log_path,
        attempts=_PORT_ATTEMPTS,
    )


def _wait_until_ready(proc: subprocess.Popen[bytes], server: DatabricksSqlServer, *, timeout: float) -> None:
    url = f"http://{server.host}:{server.port}/healthz"
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            tail = log_tail(server.log_path)
            if lost_port_race(tail):
                raise PortTaken
            raise ServerStartError(f"the Databricks SQL stand-in exited with code {code}:\n{tail}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200 and json.load(response).get("ok"):
                    return
                last = f"HTTP {response.status}"
        except (urllib.error.URLError, OSError, ValueError) as error:
            last = str(getattr(error, "reason", error))
        time.sleep(0.2)
    raise ServerStartError(
        f"the Databricks SQL stand-in did not answer at {url} within {timeout:.0f}s (last: {last}):\n"
        f"{log_tail(server.log_path)}"
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server (its Spark JVM exits with it), then kill what is left of its own group."""
    stop_process(proc, _STOP_TIMEOUT_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # the group is the server's own (start_new_session)
