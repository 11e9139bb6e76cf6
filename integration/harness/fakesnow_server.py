"""Run the real ``snowflake-connector-python`` against fakesnow (Snowflake on DuckDB).

Two modes; see ``FAKESNOW_NOTES.md`` beside this file for what each supports.

In-process (the default for the Snowflake target's tests)::

    with fakesnow_patched() as kwargs:             # or fakesnow_patched(db_path=some_dir)
        conn = snowflake.connector.connect(**kwargs, database="CENSUS", schema="CENSUS")

``fakesnow.patch()`` replaces ``snowflake.connector.connect`` and
``snowflake.connector.pandas_tools.write_pandas`` in *this* process only: code
that looks them up at call time (``snowflake.connector.connect(...)``) is
patched; a module that did ``from snowflake.connector import connect`` before
the patch must be named in ``extra_targets``. Spark's Python workers are other
processes and are never patched, so they only write Parquet files locally; the
driver does ``PUT`` (one file per statement here) and ``COPY INTO``.

Server (any process can connect, e.g. a Spark worker or a CLI subprocess)::

    with fakesnow_server() as srv:
        conn = snowflake.connector.connect(**srv.connect_kwargs(database="CENSUS", schema="CENSUS"))

The server is ``python -m fakesnow -s`` in a subprocess on 127.0.0.1 and a free
port, with its own TMPDIR (where fakesnow keeps internal-stage files), all
removed on exit. Every session shares one in-memory DuckDB. Over the server,
``PUT`` (including globs) and ``COPY INTO`` work, ``write_pandas`` does not,
and a NULL ``TIMESTAMP_*`` value is *returned* as 1970-01-01 (it is stored as
NULL: ``IS NULL`` and ``::VARCHAR`` see it), so assert on timestamps in-process.

A missing fakesnow (or a connector it cannot import, e.g. 5.x) raises
:class:`ServerUnavailable` so tests can skip with the reason; a server that is
installed but does not start raises :class:`ServerStartError` with its log tail.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ServerStartError, ServerUnavailable
from .processes import free_port, stop_process
from .s3_server import S3Server

__all__ = [
    "HOST",
    "FakesnowServer",
    "ServerStartError",
    "ServerUnavailable",
    "fakesnow_patched",
    "fakesnow_server",
    "require_fakesnow",
]

HOST = "127.0.0.1"

#: Credentials are not checked by fakesnow; the connector only needs them present.
_CREDENTIALS: dict[str, str] = {"user": "fake", "password": "snow", "account": "fakesnow"}
_START_TIMEOUT_S = 60.0
_STOP_TIMEOUT_S = 15.0
_LOG_TAIL_LINES = 40


def require_fakesnow(*, server: bool = False) -> None:
    """Raise :class:`ServerUnavailable` unless fakesnow (and, for ``server``, uvicorn/starlette) imports."""
    try:
        importlib.import_module("fakesnow")
    except Exception as exc:  # ImportError, or the connector failing inside fakesnow's own imports
        raise ServerUnavailable(f"fakesnow is not importable here: {type(exc).__name__}: {exc}") from exc
    if server:
        missing = [m for m in ("uvicorn", "starlette") if importlib.util.find_spec(m) is None]
        if missing:
            raise ServerUnavailable(
                f"fakesnow server mode needs {', '.join(missing)} (pip install 'fakesnow[server]')"
            )


def _clear_dir(path: Path) -> None:
    if not path.is_dir():
        return
    for child in path.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


@contextmanager
def fakesnow_patched(
    db_path: str | os.PathLike[str] | None = None,
    *,
    bootstrap: Sequence[tuple[str, str]] = (),
    extra_targets: Sequence[str] = (),
) -> Iterator[dict[str, str]]:
    """Patch the Snowflake connector in this process and yield ``connect()`` kwargs.

    ``db_path``: a directory for one DuckDB file per database (kept after exit;
    created if missing); None keeps everything in memory. With ``db_path``, a
    database is attached only when a connection names it in ``connect()``, so
    list the ``(database, schema)`` pairs the test reads or writes in
    ``bootstrap``: each is created (or re-attached) on entry by connecting with
    it. This is also the reliable way to create e.g. ``CENSUS.CENSUS``: with
    fakesnow 0.12.1, ``CREATE DATABASE IF NOT EXISTS X`` fails ("Ambiguous
    reference") once a schema ``X.X`` exists.

    The yielded kwargs hold only credentials: add ``database``/``schema`` (and
    e.g. ``paramstyle``) per connection. Files that fakesnow copied into its
    internal stages are removed on exit.
    """
    require_fakesnow()
    import fakesnow
    import fakesnow.transforms.stage as fs_stage
    import snowflake.connector

    if db_path is not None:
        Path(db_path).mkdir(parents=True, exist_ok=True)
    bucket = Path(fs_stage.LOCAL_BUCKET_PATH)
    with fakesnow.patch(extra_targets=list(extra_targets), db_path=db_path):
        try:
            for database, schema in bootstrap:
                snowflake.connector.connect(**_CREDENTIALS, database=database, schema=schema).close()
            yield dict(_CREDENTIALS)
        finally:
            _clear_dir(bucket)


@dataclass(frozen=True)
class FakesnowServer:
    """A running ``fakesnow -s`` subprocess."""

    host: str
    port: int
    pid: int
    log_path: Path
    #: Seconds the connector keeps retrying a failed request (HTTP 500s are retried).
    network_timeout: int = 5
    session_parameters: dict[str, Any] = field(
        default_factory=lambda: {"CLIENT_OUT_OF_BAND_TELEMETRY_ENABLED": False}
    )

    def connect_kwargs(
        self, database: str | None = None, schema: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        """Keyword arguments for ``snowflake.connector.connect()`` against this server."""
        kwargs: dict[str, Any] = {
            **_CREDENTIALS,
            "host": self.host,
            "port": self.port,
            "protocol": "http",
            "session_parameters": dict(self.session_parameters),
            "network_timeout": self.network_timeout,
        }
        if database is not None:
            kwargs["database"] = database
        if schema is not None:
            kwargs["schema"] = schema
        kwargs.update(extra)
        return kwargs

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


@contextmanager
def fakesnow_server(
    *,
    python: str | None = None,
    port: int | None = None,
    start_timeout: float = _START_TIMEOUT_S,
    s3: S3Server | None = None,
) -> Iterator[FakesnowServer]:
    """Start fakesnow's server (``fakesnow_serve.py``) on 127.0.0.1 and yield a :class:`FakesnowServer`.

    ``python`` is the interpreter to run it with (default: this one; it needs
    ``fakesnow[server]``). With ``s3``, the server's DuckDB reads ``s3://`` stage files
    from that endpoint, so external stages work. The server and its
    temp dir are gone on exit, also when the body raises.
    """
    if python is None:
        python = sys.executable
        require_fakesnow(server=True)
    base_dir = Path(tempfile.mkdtemp(prefix="synclog-fakesnow-"))
    tmp_dir = base_dir / "tmp"
    tmp_dir.mkdir()
    log_path = base_dir / "server.log"
    env = {**os.environ, "TMPDIR": str(tmp_dir), "PYTHONUNBUFFERED": "1", **(s3.environment if s3 else {})}
    try:
        port = port or free_port(HOST)
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [python, str(Path(__file__).with_name("fakesnow_serve.py")), HOST, str(port)]
                + (["s3"] if s3 else []),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=base_dir,
            )
        server = FakesnowServer(host=HOST, port=port, pid=proc.pid, log_path=log_path)
        try:
            deadline = time.monotonic() + start_timeout
            while not _accepts(HOST, port):
                if proc.poll() is not None:
                    tail = server.log_tail()
                    if "ModuleNotFoundError" in tail or "ImportError" in tail:
                        raise ServerUnavailable(f"fakesnow server cannot start with {python}:\n{tail}")
                    raise ServerStartError(f"fakesnow server exited with {proc.returncode}:\n{tail}")
                if time.monotonic() > deadline:
                    raise ServerStartError(
                        f"fakesnow server not listening on {HOST}:{port} after {start_timeout}s:\n"
                        f"{server.log_tail()}"
                    )
                time.sleep(0.1)
            yield server
        finally:
            stop_process(proc, _STOP_TIMEOUT_S, signal.SIGINT)  # fakesnow stops its server on SIGINT
    finally:
        shutil.rmtree(base_dir, ignore_errors=True)
