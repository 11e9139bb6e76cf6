"""A Redshift stand-in for tests: the real ``redshift_connector`` -> this loopback proxy -> a real PostgreSQL.

Usage::

    with postgres_server() as pg, s3_server() as s3, redshift_stand_in(pg, s3) as rs:
        conn = redshift_connector.connect(**rs.connect_kwargs())
        conn.cursor().execute(f"COPY t FROM 's3://b/m' IAM_ROLE '{rs.iam_role}' FORMAT AS PARQUET MANIFEST")

The proxy runs as ``python -m harness.redshift_proxy`` in a subprocess on 127.0.0.1 and a free port
(a killed client or proxy behaves like a dropped network connection, as it would against Redshift).
It filters the driver's startup parameters, reports Redshift's ``server_version``, translates
Redshift SQL (:mod:`.redshift_sql`), carries out ``COPY … FROM 's3://…' FORMAT AS PARQUET`` and
``UNLOAD … FORMAT AS PARQUET`` against the S3 endpoint (:mod:`.redshift_session`), and returns jsonb as
SUPER (:mod:`.result_rows`). What it does and does not mirror: ``REDSHIFT_STAND_IN_NOTES.md``.

Connect with ``ssl=False``: the proxy answers SSL requests with "no" (redshift_connector's default
``ssl=True`` then fails with "Server refuses SSL"). Postgres trusts loopback, so any password works.

Missing Python packages (sqlglot, boto3, pyarrow) raise :class:`ServerUnavailable`; a proxy that does
not come up raises :class:`ServerStartError` with its log tail.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ServerStartError, ServerUnavailable
from .postgres_server import PostgresServer
from .processes import stop_process
from .s3_server import S3Server

__all__ = ["IAM_ROLE", "RedshiftStandIn", "ServerStartError", "ServerUnavailable", "redshift_stand_in"]

HOST = "127.0.0.1"
#: A well-formed role ARN for COPY/UNLOAD; the proxy acts with its own S3 keys for any role.
IAM_ROLE = "arn:aws:iam::123456789012:role/synclog-stand-in"
_KEY_ENV = "SYNCLOG_RS_PROXY_S3_ACCESS_KEY"
_SECRET_ENV = "SYNCLOG_RS_PROXY_S3_SECRET_KEY"
_READY = "LISTENING "
_START_TIMEOUT_S = 30.0
_STOP_TIMEOUT_S = 10.0
_LOG_TAIL_LINES = 40


@dataclass(frozen=True)
class RedshiftStandIn:
    """A running proxy; valid only inside :func:`redshift_stand_in`."""

    host: str
    port: int
    user: str
    database: str
    s3: S3Server
    log_file: Path
    iam_role: str = IAM_ROLE

    def connect_kwargs(self, **overrides: Any) -> dict[str, Any]:
        """Keyword arguments for ``redshift_connector.connect``."""
        kwargs: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "database": self.database,
            "user": self.user,
            "password": "unused",  # the test cluster trusts loopback
            "ssl": False,
            "timeout": 60,
        }
        return {**kwargs, **overrides}

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        try:
            text = self.log_file.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            return f"(no proxy log at {self.log_file}: {exc})"
        return "\n".join(text.splitlines()[-lines:]) or "(proxy log is empty)"


def require_proxy_dependencies() -> None:
    for module in ("sqlglot", "boto3", "pyarrow"):
        if importlib.util.find_spec(module) is None:
            raise ServerUnavailable(f"{module} is not installed (the Redshift stand-in proxy needs it)")


@contextmanager
def redshift_stand_in(
    postgres: PostgresServer, s3: S3Server, *, startup_timeout: float = _START_TIMEOUT_S
) -> Iterator[RedshiftStandIn]:
    """Run the proxy in front of `postgres`, with `s3` as the S3 that COPY and UNLOAD reach."""
    require_proxy_dependencies()
    base_dir = Path(tempfile.mkdtemp(prefix="synclog-rs-"))
    log_file = base_dir / "proxy.log"
    package_root = Path(__file__).resolve().parents[str(__package__).count(".") + 1]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(package_root), os.environ.get("PYTHONPATH")])),
        _KEY_ENV: s3.access_key,
        _SECRET_ENV: s3.secret_key,
    }
    command = [
        sys.executable, "-m", f"{__package__}.redshift_proxy",
        "--upstream", f"{postgres.host}:{postgres.port}",
        "--s3-endpoint", s3.endpoint_url,
        "--s3-region", s3.region,
    ]  # fmt: skip
    with log_file.open("wb") as log:
        proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, env=env
        )
    try:
        port = _wait_for_port(proc, log_file, startup_timeout)
        yield RedshiftStandIn(HOST, port, postgres.user, postgres.database, s3, log_file)
    finally:
        try:
            stop_process(proc, _STOP_TIMEOUT_S)
            if proc.stdout is not None:
                proc.stdout.close()
        finally:
            shutil.rmtree(base_dir, ignore_errors=True)


def _wait_for_port(proc: subprocess.Popen[bytes], log_file: Path, timeout: float) -> int:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            line = proc.stdout.readline().decode(errors="replace")
            if line.startswith(_READY):
                return int(line[len(_READY) :])
        if proc.poll() is not None:
            break
    tail = log_file.read_text(encoding="utf-8", errors="replace")[-4000:] if log_file.exists() else ""
    state = (
        f"exited with {proc.returncode}" if proc.poll() is not None else f"not ready within {timeout:.0f}s"
    )
    raise ServerStartError(f"Redshift stand-in proxy {state}; log tail:\n{tail}")


# --------------------------------------------------------------------------- the proxy process


def serve(listener: socket.socket, upstream: tuple[str, int], s3: Any) -> None:
    """Accept connections forever, one :class:`Session` (two threads) each."""
    from .redshift_session import Session

    while True:
        client, _ = listener.accept()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        session = Session(client, upstream, s3)
        threading.Thread(target=session.run, name="redshift-proxy-client", daemon=True).start()


def main(argv: Sequence[str] | None = None) -> None:
    from .redshift_s3 import S3Settings

    parser = argparse.ArgumentParser(
        description="Redshift stand-in: a proxy to PostgreSQL, with S3 COPY/UNLOAD"
    )
    parser.add_argument("--listen", default=f"{HOST}:0", help="host:port to listen on (port 0: any free one)")
    parser.add_argument("--upstream", required=True, help="PostgreSQL host:port")
    parser.add_argument("--s3-endpoint", required=True)
    parser.add_argument("--s3-region", default="us-east-1")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(threadName)s %(levelname)s %(message)s")
    settings = S3Settings(
        endpoint_url=args.s3_endpoint,
        access_key=os.environ.get(_KEY_ENV, ""),
        secret_key=os.environ.get(_SECRET_ENV, ""),
        region=args.s3_region,
    )
    host, _, port = args.listen.rpartition(":")
    up_host, _, up_port = args.upstream.rpartition(":")
    listener = socket.create_server((host, int(port)))
    print(f"{_READY}{listener.getsockname()[1]}", flush=True)
    serve(listener, (up_host, int(up_port)), settings)


if __name__ == "__main__":
    main()
