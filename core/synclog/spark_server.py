"""A warm Spark for sync engines: one local Spark Connect server that synclog starts and watches.

`synclog spark start` runs the Spark Connect server that the installed pyspark ships
(`bin/spark-submit --class …SparkConnectServer`, same version as the client), listening on
127.0.0.1, in a session of its own so it outlives the command. Its address and pid go to a
state file, `spark-server.json`, in `$SYNCLOG_SPARK_DIR` (default `~/.cache/synclog`), next to
its log and its scratch folder. While it runs, every synclog process whose `SPARK_REMOTE` is
unset connects to it (`synclog.spark.spark_session`), so a sync engine's process starts no JVM.

Every such process joins one Connect session, named in the state file (`ServerState.session`)
and kept by the server for as long as it runs. The server gives each Connect session Python
workers of its own (their environment carries the session's artifact id), which start and
import pyspark, pyarrow and synclog on the session's first job: in a session of its own, each
new process would pay that again (about a second on 2 cores), and each would leave its workers'
memory behind. In the shared session, a new process's first write costs what its later ones do.

`start` is idempotent (a running server is kept) and takes a lock, so two starts at once make
one server. A state file whose process is gone, or is another process by now, counts as no
server and is replaced. `stop` ends the server's whole process group.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from importlib.util import find_spec
from pathlib import Path

from synclog.errors import ConfigError, TargetError
from synclog.java import ensure_java

DIR_ENV = "SYNCLOG_SPARK_DIR"
HOST = "127.0.0.1"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 30.0
_STARTED = re.compile(r"Spark Connect server started at: \S+:(\d+)")
_CLIENT_MODULES = {"grpc": "grpcio", "grpc_status": "grpcio-status", "google.rpc": "googleapis-common-protos"}
"""The Spark Connect client's packages beyond pyspark, pyarrow and pandas (`synclog[connect]`)."""


@dataclass(frozen=True)
class ServerState:
    """A server `start` launched: what `spark-server.json` holds."""

    remote: str
    """`sc://127.0.0.1:PORT`, what `SPARK_REMOTE` or `SparkSession.builder.remote` take."""
    pid: int
    started_at: str
    """ISO-8601, UTC."""
    log: str
    session: str = ""
    """The Connect session every synclog process joins (a UUID; empty: each its own)."""

    @property
    def session_url(self) -> str:
        """`remote` with the shared session's id: what `SparkSession.builder.remote` takes."""
        return f"{self.remote}/;session_id={self.session}" if self.session else self.remote

    def uptime(self, now: datetime | None = None) -> float:
        """Seconds since the server started."""
        return ((now or datetime.now(UTC)) - datetime.fromisoformat(self.started_at)).total_seconds()


def state_dir() -> Path:
    """Where the state file, the log and the scratch folder of the server live."""
    return Path(os.environ.get(DIR_ENV) or Path.home() / ".cache" / "synclog").expanduser()


def running() -> ServerState | None:
    """The server `start` launched, if it still runs and takes connections; else None."""
    try:
        data = json.loads((state_dir() / "spark-server.json").read_text(encoding="utf-8"))
        state = ServerState(**data)
        port = int(state.remote.rsplit(":", 1)[1])
    except (OSError, ValueError, TypeError, IndexError):
        return None
    return state if _is_server(state.pid) and _accepts(port) else None


def start(
    master: str | None = None, port: int = 0, driver_memory: str | None = None
) -> tuple[ServerState, bool]:
    """Start the server unless one runs; return it and whether this call started it.

    `master` defaults to `$SYNCLOG_SPARK_MASTER` or `local[*]`, `port` to one the kernel picks,
    `driver_memory` to `$SYNCLOG_DRIVER_MEMORY` or 2g. Raises ConfigError when Spark cannot run
    here (no Java, no Connect client) and TargetError when the server does not come up.
    """
    require_client()
    with _locked():
        current = running()
        if current is not None:
            return current, False
        return _launch(master, port, driver_memory), True


def stop() -> ServerState | None:
    """Stop the running server (its whole process group); return what was stopped, or None."""
    with _locked():
        current = running()
        if current is not None:
            _end_group(current.pid)
        (state_dir() / "spark-server.json").unlink(missing_ok=True)
        return current


def require_client() -> None:
    """Raise ConfigError unless this Python has the Spark Connect client's packages."""
    for module, package in _CLIENT_MODULES.items():
        if find_spec(module.split(".")[0]) is None or find_spec(module) is None:
            raise ConfigError(f"the Spark Connect client needs {package}: pip install 'synclog[connect]'")


def _launch(master: str | None, port: int, driver_memory: str | None) -> ServerState:
    ensure_java()
    folder = state_dir()
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "spark-server.log"
    conf = {
        "spark.master": master or os.environ.get("SYNCLOG_SPARK_MASTER", "local[*]"),
        "spark.app.name": "synclog-spark-server",
        "spark.driver.memory": driver_memory or os.environ.get("SYNCLOG_DRIVER_MEMORY", "2g"),
        "spark.driver.host": HOST,
        "spark.driver.bindAddress": HOST,
        "spark.connect.grpc.binding.address": HOST,
        "spark.connect.grpc.binding.port": str(port),
        "spark.local.dir": str(folder / "spark-local"),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": os.environ.get("SYNCLOG_SHUFFLE_PARTITIONS", "8"),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # No capture of each client call's Python call site (a stack walk per DataFrame call);
        # synclog reports failures in its own words (as `synclog.spark` does for its own JVM).
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        # The shared session (`ServerState.session`) lives as long as the server, idle or not.
        "spark.connect.session.manager.defaultSessionTimeout": "-1",
    }
    home = spark_home()
    cmd = [str(home / "bin" / "spark-submit"), "--class", SERVER_CLASS]
    for key, value in conf.items():
        cmd += ["--conf", f"{key}={value}"]
    cmd.append("spark-internal")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    # The server's Python workers run this interpreter: the one that has synclog and pyarrow.
    env.update({"SPARK_HOME": str(home), "SPARK_LOCAL_IP": HOST, "PYSPARK_PYTHON": sys.executable})
    started_at = datetime.now(UTC)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        bound = _wait_for_port(proc, log)
    except TargetError:
        _end_group(proc.pid)
        raise
    state = ServerState(f"sc://{HOST}:{bound}", proc.pid, started_at.isoformat(), str(log), str(uuid.uuid4()))
    _save(state)
    return state


def _save(state: ServerState) -> None:
    saved = state_dir() / "spark-server.json"
    saved.with_suffix(".tmp").write_text(json.dumps(asdict(state)), encoding="utf-8")
    saved.with_suffix(".tmp").replace(saved)


def spark_home() -> Path:
    """The Spark that the installed pyspark ships (`bin/spark-submit`, `jars/`): the client's own version."""
    spec = find_spec("pyspark")
    home = Path(next(iter(spec.submodule_search_locations or ()))) if spec else None
    if home is None or not (home / "bin" / "spark-submit").exists() or not (home / "jars").is_dir():
        raise ConfigError(
            "the installed pyspark has no bin/spark-submit and jars/ (not a pip-installed pyspark)"
        )
    return home


def _wait_for_port(proc: subprocess.Popen[bytes], log: Path) -> int:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise TargetError(f"the Spark Connect server exited with {proc.returncode}: {_last_line(log)}")
        found = _STARTED.search(log.read_text(encoding="utf-8", errors="replace"))
        if found and _accepts(int(found.group(1))):
            return int(found.group(1))
        time.sleep(0.2)
    raise TargetError(f"the Spark Connect server did not start in {START_TIMEOUT_S:.0f} s (see {log})")


def _last_line(log: Path) -> str:
    lines = [line for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else f"(nothing in {log})"


def _is_server(pid: int) -> bool:
    """Whether `pid` is alive and is a Spark Connect server (not a process that reused the pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        try:
            os.kill(pid, 0)  # no /proc (macOS): alive is the best we know
        except OSError:
            return False
        return True
    return SERVER_CLASS.encode() in cmdline


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=2):
            return True
    except OSError:
        return False


def _end_group(pid: int) -> None:
    """SIGTERM to the server's process group (JVM and Python workers), SIGKILL after a while."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with suppress(ProcessLookupError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while time.monotonic() < deadline:
            with suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # reap it when this process started it
            if not _is_server(pid):
                return
            time.sleep(0.2)


@contextmanager
def _locked() -> Iterator[None]:
    folder = state_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "spark-server.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
