"""Start and stop a throwaway, real PostgreSQL cluster for integration tests.

Usage::

    with postgres_server() as pg:
        conn = psycopg.connect(pg.dsn)   # or pg.url

The cluster lives in a fresh temp dir (data dir, unix socket dir, server log),
listens only on 127.0.0.1 on a free port, trusts every local/loopback
connection, and is tuned for speed, not durability (fsync=off, ...). It is
stopped with ``pg_ctl stop -m immediate`` and its temp dir deleted on exit,
also when the body raises.

``initdb`` refuses to run as root, so when running as root the server
binaries run as the ``postgres`` user (``runuser -u postgres -- ...``) on a
temp dir that user owns.

Missing binaries (or, as root, a missing ``postgres`` user / ``runuser``)
raise :class:`ServerUnavailable` so tests can skip with the reason; a server
that is installed but fails to start raises :class:`ServerStartError` with
the tail of the server log.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from .errors import ServerStartError, ServerUnavailable
from .processes import free_port

__all__ = [
    "DEFAULT_DATABASE",
    "DEFAULT_USER",
    "PostgresServer",
    "ServerStartError",
    "ServerUnavailable",
    "find_bindir",
    "postgres_server",
]

DEFAULT_USER = "synclog"
DEFAULT_DATABASE = "synclog"
HOST = "127.0.0.1"

#: Environment variable naming a directory holding initdb/pg_ctl (overrides the search).
BINDIR_ENV = "SYNCLOG_PG_BINDIR"

_SERVICE_USER = "postgres"
_REQUIRED_BINARIES = ("initdb", "pg_ctl", "postgres", "createdb")
_DEBIAN_ROOT = Path("/usr/lib/postgresql")
_STOP_TIMEOUT_S = 30
_PORT_ATTEMPTS = 3
_LOG_TAIL_LINES = 40

#: Settings appended to postgresql.conf: fast and non-durable, loopback only.
_FAST_SETTINGS: Mapping[str, str | int] = {
    "listen_addresses": HOST,
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "wal_level": "minimal",  # lets COPY into a table created in the same txn skip WAL
    "max_wal_senders": 0,
    "max_wal_size": "1GB",
    "checkpoint_timeout": "1h",
    "shared_buffers": "32MB",
    "max_connections": 50,
    "autovacuum": "off",
    "jit": "off",  # JIT compilation only slows down small test queries
    "timezone": "UTC",
    "log_timezone": "UTC",
    "logging_collector": "off",
    "log_min_messages": "warning",
    "log_line_prefix": "%m [%p] ",
}


class _ClusterFiles:
    """Where a cluster keeps its files, under `base_dir`."""

    base_dir: Path

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    @property
    def socket_dir(self) -> Path:
        return self.base_dir / "sock"

    @property
    def log_file(self) -> Path:
        return self.base_dir / "server.log"


@dataclass(frozen=True)
class PostgresServer(_ClusterFiles):
    """A running throwaway cluster; valid only inside :func:`postgres_server`."""

    host: str
    port: int
    user: str
    database: str
    base_dir: Path
    """Temp dir holding the data dir, socket dir and log; deleted on exit."""

    @property
    def url(self) -> str:
        """``postgresql://user@127.0.0.1:PORT/db`` (no password: trust auth)."""
        return (
            f"postgresql://{quote(self.user, safe='')}@{self.host}:{self.port}"
            f"/{quote(self.database, safe='')}"
        )

    @property
    def dsn(self) -> str:
        """libpq keyword/value connection string."""
        parts = {
            "host": self.host,
            "port": str(self.port),
            "user": self.user,
            "dbname": self.database,
        }
        return " ".join(f"{key}={_conninfo_value(value)}" for key, value in parts.items())

    @property
    def jdbc_url(self) -> str:
        """``jdbc:postgresql://127.0.0.1:PORT/db`` (pass ``user`` as a property)."""
        return f"jdbc:postgresql://{self.host}:{self.port}/{quote(self.database, safe='')}"


def find_bindir() -> Path:
    """Directory holding initdb/pg_ctl/postgres/createdb; highest version wins.

    Looks at ``$SYNCLOG_PG_BINDIR``, ``/usr/lib/postgresql/*/bin``,
    ``pg_config --bindir`` and ``initdb`` on ``PATH``, in that order.
    """
    candidates: list[Path] = []
    override = os.environ.get(BINDIR_ENV)
    if override:
        candidates.append(Path(override))
    candidates.extend(
        sorted(_DEBIAN_ROOT.glob("*/bin"), key=lambda p: _version_key(p.parent.name), reverse=True)
    )
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            out = ""
        if out:
            candidates.append(Path(out))
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).parent)

    for candidate in candidates:
        if all(os.access(candidate / name, os.X_OK) for name in _REQUIRED_BINARIES):
            return candidate
    looked = ", ".join(str(c) for c in candidates) or "nothing found"
    raise ServerUnavailable(
        f"PostgreSQL server binaries ({', '.join(_REQUIRED_BINARIES)}) not found "
        f"(looked in: {looked}; set ${BINDIR_ENV} to override)"
    )


@contextmanager
def postgres_server(
    *,
    user: str = DEFAULT_USER,
    database: str = DEFAULT_DATABASE,
    startup_timeout: float = 60.0,
    settings: Mapping[str, str | int] | None = None,
    bindir: Path | None = None,
    parent_dir: Path | None = None,
) -> Iterator[PostgresServer]:
    """Run a fresh PostgreSQL cluster for the duration of the ``with`` block.

    ``user`` is the cluster's bootstrap superuser and ``database`` is created
    for it. ``settings`` are extra/overriding ``postgresql.conf`` entries.
    ``parent_dir`` is where the temp dir is made (default: the system temp dir;
    as root it must be traversable by the ``postgres`` user).

    Raises :class:`ServerUnavailable` if no server can be run here and
    :class:`ServerStartError` if the server fails to start in time.
    """
    cluster = _Cluster(
        bin_dir=bindir if bindir is not None else find_bindir(),
        run_as=_run_as_prefix(),
        base_dir=Path(tempfile.mkdtemp(prefix="synclog-pg-", dir=parent_dir)),
    )
    try:
        cluster.prepare_dirs()
        cluster.initdb(user, timeout=startup_timeout)
        cluster.configure({**_FAST_SETTINGS, **(settings or {})})
        port = cluster.start(timeout=startup_timeout)
        server = PostgresServer(host=HOST, port=port, user=user, database=database, base_dir=cluster.base_dir)
        if database not in ("postgres", "template1"):
            cluster.createdb(server, timeout=startup_timeout)
        yield server
    finally:
        try:
            cluster.stop()
        finally:
            shutil.rmtree(cluster.base_dir, ignore_errors=True)


# --------------------------------------------------------------------------- internals


def _run_as_prefix() -> tuple[str, ...]:
    """Command prefix to run server binaries as the service user (empty if not root)."""
    if os.geteuid() != 0:
        return ()
    try:
        pwd.getpwnam(_SERVICE_USER)
    except KeyError:
        raise ServerUnavailable(
            f"running as root and there is no {_SERVICE_USER!r} user to run initdb as"
        ) from None
    runuser = shutil.which("runuser")
    if runuser is None:
        raise ServerUnavailable("running as root and `runuser` is not installed")
    return (runuser, "-u", _SERVICE_USER, "--")


@dataclass(frozen=True)
class _Cluster(_ClusterFiles):
    """One cluster's files and the commands that manage it."""

    bin_dir: Path
    run_as: tuple[str, ...]  # () or ("runuser", "-u", "postgres", "--")
    base_dir: Path

    def prepare_dirs(self) -> None:
        self.socket_dir.mkdir(mode=0o700)
        if self.run_as:  # root: hand the whole temp dir to the service user
            owner = pwd.getpwnam(_SERVICE_USER)
            for path in (self.base_dir, self.socket_dir):
                os.chown(path, owner.pw_uid, owner.pw_gid)

    def initdb(self, user: str, *, timeout: float) -> None:
        proc = self._server_cmd(
            "initdb",
            "--pgdata", str(self.data_dir),
            "--username", user,
            "--auth", "trust",
            "--encoding", "UTF8",
            "--locale", "C",
            "--no-sync",
            timeout=timeout,
        )  # fmt: skip
        if proc.returncode != 0:
            raise ServerStartError(
                f"initdb failed (exit {proc.returncode}) in {self.data_dir}:\n{proc.stdout}{proc.stderr}"
            )

    def configure(self, settings: Mapping[str, str | int]) -> None:
        conf = {"unix_socket_directories": str(self.socket_dir), **settings}
        # Appending keeps the file's owner (the service user when running as root).
        with (self.data_dir / "postgresql.conf").open("a", encoding="utf-8") as fh:
            fh.write("\n# synclog test harness\n")
            fh.writelines(f"{key} = {_conf_value(value)}\n" for key, value in conf.items())

    def start(self, *, timeout: float) -> int:
        """Start on a free port (retrying if another process grabs it); return the port."""
        wait_s = max(1, int(timeout))
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            port = free_port()
            started = time.monotonic()
            try:
                proc = self._server_cmd(
                    "pg_ctl",
                    "--pgdata", str(self.data_dir),
                    "--log", str(self.log_file),
                    "--options", f"-p {port}",
                    "--wait", "--timeout", str(wait_s),
                    "--silent",
                    "start",
                    timeout=wait_s + 15,
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                raise ServerStartError(
                    f"pg_ctl start hung for more than {wait_s + 15}s (port {port}); "
                    f"server log tail:\n{_log_tail(self.log_file)}"
                ) from None
            if proc.returncode == 0:
                return port
            tail = _log_tail(self.log_file)
            if attempt < _PORT_ATTEMPTS and "could not bind" in tail:
                self.log_file.unlink(missing_ok=True)  # lost the port race
                continue
            raise ServerStartError(
                f"PostgreSQL did not start on {HOST}:{port} within {wait_s}s "
                f"(pg_ctl exit {proc.returncode} after {time.monotonic() - started:.1f}s: "
                f"{(proc.stdout + proc.stderr).strip()}); server log tail:\n{tail}"
            )
        raise AssertionError("unreachable")

    def createdb(self, server: PostgresServer, *, timeout: float) -> None:
        # A client: runs as the current user, over TCP with trust auth.
        proc = _run(
            [
                str(self.bin_dir / "createdb"),
                "--host", server.host,
                "--port", str(server.port),
                "--username", server.user,
                "--no-password",
                server.database,
            ],
            cwd=self.base_dir,
            timeout=timeout,
        )  # fmt: skip
        if proc.returncode != 0:
            raise ServerStartError(
                f"createdb {server.database!r} failed (exit {proc.returncode}): "
                f"{(proc.stdout + proc.stderr).strip()}; server log tail:\n"
                f"{_log_tail(self.log_file)}"
            )

    def stop(self) -> None:
        """Stop the server if it runs; SIGKILL the postmaster if pg_ctl cannot."""
        pid_file = self.data_dir / "postmaster.pid"
        if not pid_file.exists():
            return
        try:
            proc = self._server_cmd(
                "pg_ctl",
                "--pgdata", str(self.data_dir),
                "--mode", "immediate",
                "--wait", "--timeout", str(_STOP_TIMEOUT_S),
                "--silent",
                "stop",
                timeout=_STOP_TIMEOUT_S + 15,
            )  # fmt: skip
            if proc.returncode == 0:
                return
        except subprocess.TimeoutExpired:
            pass
        # Last resort: the postmaster we started is the first line of postmaster.pid.
        try:
            pid = int(pid_file.read_text(encoding="utf-8").splitlines()[0])
            os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            pass

    def _server_cmd(self, binary: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        cmd = [*self.run_as, str(self.bin_dir / binary), *args]
        return _run(cmd, cwd=self.base_dir, timeout=timeout)


def _run(cmd: Sequence[str], *, cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    # Drop PG* variables (PGHOST, PGSSLMODE, ...) so only our arguments count,
    # and force the C locale so server messages are predictable.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = "C"
    return subprocess.run(
        list(cmd),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _log_tail(log_file: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        text = log_file.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"(no server log at {log_file}: {exc})"
    return "\n".join(text.splitlines()[-lines:]) or "(server log is empty)"


def _version_key(name: str) -> tuple[int, ...]:
    numbers = re.findall(r"\d+", name)
    return tuple(int(n) for n in numbers) if numbers else (-1,)


def _conf_value(value: str | int) -> str:
    if isinstance(value, bool):  # bool is an int: render it as on/off
        return "on" if value else "off"
    if isinstance(value, int):
        return str(value)
    return "'" + value.replace("'", "''") + "'"


def _conninfo_value(value: str) -> str:
    if value and not re.search(r"[\s'\\]", value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
