"""The Spark harnesses start a real standalone cluster / Connect server and clean up after themselves.

Drivers and Connect clients run in subprocesses: a test process may already hold a local
SparkContext, and a Connect client marks its whole process as Connect.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from .errors import ServerStartError, ServerUnavailable
from .spark_cluster import spark_connect_server, spark_standalone, subprocess_env

_DRIVER_TIMEOUT_S = 300

#: A driver of the standalone cluster: argv[1] is its Spark conf as JSON. Executors write a file
#: under /tmp and report what they see; the driver reports what it sees of theirs.
_ISOLATION_DRIVER = """
import json, os, socket, sys, tempfile
from pyspark.sql import SparkSession

builder = SparkSession.builder.appName("harness-isolation")
for key, value in json.loads(sys.argv[1]).items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
fd, driver_file = tempfile.mkstemp(prefix="synclog-driver-", dir="/tmp")
os.close(fd)

def probe(batches):
    import os, socket, tempfile
    import pyarrow as pa
    for _ in batches:
        fd, path = tempfile.mkstemp(prefix="synclog-executor-", dir="/tmp")
        os.close(fd)
        yield pa.RecordBatch.from_pylist([{
            "path": path,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "mount_ns": os.readlink("/proc/self/ns/mnt"),
            "sees_own_file": os.path.exists(path),
            "sees_driver_file": os.path.exists(driver_file),
        }])

schema = (
    "path string, pid long, host string, mount_ns string, sees_own_file boolean, sees_driver_file boolean"
)
rows = spark.range(2, numPartitions=2).mapInArrow(probe, schema).collect()
print(json.dumps({
    "master": spark.conf.get("spark.master"),
    "driver_pid": os.getpid(),
    "driver_host": socket.gethostname(),
    "driver_mount_ns": os.readlink("/proc/self/ns/mnt"),
    "driver_sees_own_file": os.path.exists(driver_file),
    "executors": [dict(row.asDict(), seen_by_driver=os.path.exists(row.path)) for row in rows],
}))
os.unlink(driver_file)
spark.stop()
"""

#: A driver that runs one Python job, says "ready" and keeps its executor until stdin closes.
_HOLDING_DRIVER = """
import json, sys
from pyspark.sql import SparkSession

builder = SparkSession.builder.appName("harness-holding")
for key, value in json.loads(sys.argv[1]).items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()

def same(batches):
    yield from batches

assert spark.range(4, numPartitions=2).mapInArrow(same, "id long").count() == 4
print("ready", flush=True)
sys.stdin.read()
"""

#: A Spark Connect client: argv[1] is the remote URL.
_CONNECT_CLIENT = """
import json, os, sys
from pyspark.sql import SparkSession, functions as F

spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()

def double(batches):
    import os
    import pyarrow as pa, pyarrow.compute as pc
    for batch in batches:
        yield pa.RecordBatch.from_arrays(
            [pc.multiply(batch.column(0), 2), pa.array([os.getpid()] * batch.num_rows, pa.int64())],
            names=["id", "pid"],
        )

def summarise(table):
    import pyarrow as pa, pyarrow.compute as pc
    return pa.table({"k": [table.column("k")[0].as_py()], "total": [pc.sum(table.column("id")).as_py()],
                     "n": [table.num_rows]})

doubled = spark.range(10).mapInArrow(double, "id long, pid long").collect()
groups = (spark.range(10).withColumn("k", F.col("id") % 3).groupBy("k")
          .applyInArrow(summarise, "k long, total long, n long").orderBy("k").collect())
print(json.dumps({
    "session": type(spark).__module__,
    "client_pid": os.getpid(),
    "ids": sorted(row.id for row in doubled),
    "udf_pids": sorted({row.pid for row in doubled}),
    "groups": [row.asDict() for row in groups],
    "master": spark.conf.get("spark.master"),
    "time_zone": spark.conf.get("spark.sql.session.timeZone"),
}))
spark.stop()
"""

#: A Spark Connect client whose UDF writes a file under /tmp on an executor and reports it.
_CONNECT_FILE_CLIENT = """
import json, os, sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()

def probe(batches):
    import os, tempfile
    import pyarrow as pa
    for _ in batches:
        fd, path = tempfile.mkstemp(prefix="synclog-executor-", dir="/tmp")
        os.close(fd)
        yield pa.RecordBatch.from_pylist([{"path": path, "mount_ns": os.readlink("/proc/self/ns/mnt")}])

rows = spark.range(1).mapInArrow(probe, "path string, mount_ns string").collect()
print(json.dumps({
    "master": spark.conf.get("spark.master"),
    "client_mount_ns": os.readlink("/proc/self/ns/mnt"),
    "executors": [dict(row.asDict(), seen_by_client=os.path.exists(row.path)) for row in rows],
}))
spark.stop()
"""


@pytest.fixture(autouse=True)
def _no_spark_remote(monkeypatch: pytest.MonkeyPatch) -> None:
    """Clients find their server through ``remote(url)`` alone, never through the environment."""
    monkeypatch.delenv("SPARK_REMOTE", raising=False)


def _run_python(script: str, *args: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Run ``script`` in a fresh interpreter; its last stdout line is JSON."""
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=subprocess_env(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=_DRIVER_TIMEOUT_S,
        check=False,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}; stderr tail:\n{proc.stderr[-4000:]}"
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def _refuses(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return False
    except OSError:
        return True


def _private_tmp_leaked() -> bool:
    """Whether the worker's tmpfs shows up in this process's mount namespace."""
    return "synclog-private-tmp" in Path("/proc/self/mountinfo").read_text(encoding="utf-8")


# --------------------------------------------------------------------------- standalone


def test_executors_do_not_share_the_drivers_tmp() -> None:
    try:
        with spark_standalone() as cluster:
            assert cluster.master_url.startswith("spark://127.0.0.1:")
            workers = cluster.status()["workers"]
            assert [(w["state"], w["cores"]) for w in workers] == [("ALIVE", cluster.cores)]
            assert not _private_tmp_leaked()

            result = _run_python(_ISOLATION_DRIVER, json.dumps(cluster.driver_conf), env=cluster.driver_env)
            executor_logs = sorted(cluster.work_dir.glob("app-*/*/stderr"))
            base_dir = cluster.base_dir
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)

    assert result["master"] == cluster.master_url
    assert result["driver_sees_own_file"] is True
    executors = result["executors"]
    assert len(executors) == 2
    for executor in executors:
        assert executor["mount_ns"] != result["driver_mount_ns"]
        assert executor["pid"] != result["driver_pid"]
        assert executor["sees_own_file"] is True
        assert executor["sees_driver_file"] is False, executor
        assert executor["seen_by_driver"] is False, executor
        assert executor["path"].startswith("/tmp/")
    assert executor_logs, "executors' logs should be readable in the harness's work dir"
    assert not base_dir.exists()
    assert cluster.worker_processes() == {}


def test_standalone_stops_executors_when_body_raises(tmp_path: Path) -> None:
    driver: subprocess.Popen[str] | None = None
    driver_log = tmp_path / "driver.log"
    try:
        with (
            pytest.raises(RuntimeError, match="boom"),
            spark_standalone() as cluster,
            driver_log.open("w") as stderr,
        ):
            driver = subprocess.Popen(
                [sys.executable, "-c", _HOLDING_DRIVER, json.dumps(cluster.driver_conf)],
                env=subprocess_env(cluster.driver_env),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
            ready = _read_line(driver, _DRIVER_TIMEOUT_S)
            assert ready == "ready", driver_log.read_text()[-4000:]
            running = cluster.worker_processes()
            master_port = int(cluster.master_url.rsplit(":", 1)[1])
            raise RuntimeError("boom")
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)
    finally:
        if driver is not None:
            driver.kill()
            driver.wait(timeout=30)

    commands = list(running.values())
    assert any("CoarseGrainedExecutorBackend" in cmd for cmd in commands), commands
    assert any("pyspark.daemon" in cmd for cmd in commands), commands
    assert cluster.worker_processes() == {}
    assert [pid for pid, cmd in running.items() if cmd and _same_process(pid, cmd)] == []
    assert not cluster.base_dir.exists()
    assert _refuses(master_port)


def test_standalone_is_unavailable_without_cap_sys_admin() -> None:
    setpriv = shutil.which("setpriv")
    if setpriv is None or os.geteuid() != 0:
        pytest.skip("needs root and setpriv to drop CAP_SYS_ADMIN")
    script = (
        "from harness.errors import ServerUnavailable\n"
        "from harness.spark_cluster import spark_standalone\n"
        "try:\n"
        "    with spark_standalone():\n"
        "        raise SystemExit('started without CAP_SYS_ADMIN')\n"
        "except ServerUnavailable as exc:\n"
        "    print(exc.reason)\n"
    )
    before = set(Path(tempfile.gettempdir()).glob("synclog-spark-*"))
    proc = subprocess.run(
        [setpriv, "--bounding-set", "-sys_admin", sys.executable, "-c", script],
        cwd=Path(__file__).resolve().parents[1],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "CAP_SYS_ADMIN" in proc.stdout
    assert "Operation not permitted" in proc.stdout
    assert set(Path(tempfile.gettempdir()).glob("synclog-spark-*")) == before


def _read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    """The next stdout line of ``proc``, or "" if none came within ``timeout``."""
    stdout = proc.stdout
    assert stdout is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return lines[0].strip() if lines else ""


def _same_process(pid: int, cmdline: str) -> bool:
    """Whether ``pid`` still runs ``cmdline`` (and is not a reused pid)."""
    try:
        now = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return now.strip() == cmdline


# --------------------------------------------------------------------------- Spark Connect


def test_connect_client_runs_arrow_udfs_and_the_server_goes_when_the_body_raises() -> None:
    """One server start for both: a client's Arrow UDFs run, then the body raises and the server
    is stopped and its folder removed all the same."""
    try:
        with pytest.raises(RuntimeError, match="boom"), spark_connect_server() as srv:
            assert srv.remote == f"sc://127.0.0.1:{srv.port}"
            result = _run_python(_CONNECT_CLIENT, srv.remote)
            port, base_dir = srv.port, srv.base_dir
            raise RuntimeError("boom")
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)

    assert result["session"] == "pyspark.sql.connect.session"
    assert result["ids"] == [2 * i for i in range(10)]
    assert result["client_pid"] not in result["udf_pids"]
    assert result["groups"] == [
        {"k": 0, "total": 0 + 3 + 6 + 9, "n": 4},
        {"k": 1, "total": 1 + 4 + 7, "n": 3},
        {"k": 2, "total": 2 + 5 + 8, "n": 3},
    ]
    assert result["master"] == "local[2]"
    assert result["time_zone"] == "UTC"
    assert not base_dir.exists()
    assert _refuses(port)


def test_connect_server_in_front_of_the_cluster() -> None:
    try:
        with spark_standalone() as cluster, spark_connect_server(conf=cluster.driver_conf) as srv:
            assert srv.master == cluster.master_url
            result = _run_python(_CONNECT_FILE_CLIENT, srv.remote)
            seen_here = [os.path.exists(e["path"]) for e in result["executors"]]
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)

    assert result["master"] == cluster.master_url
    [executor] = result["executors"]
    assert executor["mount_ns"] != result["client_mount_ns"]
    assert executor["seen_by_client"] is False
    assert seen_here == [False]  # nor by the Connect server (the driver), which shares this /tmp


def test_connect_is_unavailable_without_a_client_package() -> None:
    script = (
        "import sys\n"
        "sys.modules['zstandard'] = None  # as if it were not installed\n"
        "from harness.errors import ServerUnavailable\n"
        "from harness.spark_cluster import spark_connect_server\n"
        "try:\n"
        "    with spark_connect_server():\n"
        "        raise SystemExit('started without zstandard')\n"
        "except ServerUnavailable as exc:\n"
        "    print(exc.reason)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).resolve().parents[1],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "needs zstandard" in proc.stdout


def test_connect_start_error_carries_the_log_tail() -> None:
    before = set(Path(tempfile.gettempdir()).glob("synclog-connect-*"))
    try:
        with (
            pytest.raises(ServerStartError, match="Insufficient driver memory"),
            spark_connect_server(conf={"spark.driver.memory": "128m"}),
        ):
            pytest.fail("a server with 128m of driver memory should not start")
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)
    assert set(Path(tempfile.gettempdir()).glob("synclog-connect-*")) == before
