"""Fault injection into synclog writers: the driver shared by `integration/test_faults.py` and
`bench/faults.py`.

A trial gives a fresh target (a DuckDB file, a PostgreSQL database, an S3 prefix; the cloud
warehouses' in `harness.cloud_faults`) and a fresh storage folder (or object-store prefix),
has a writer process (`fault_worker.py`, a Spark session of its own) log one run, and injects
one fault into it:

    kill@POINT  SIGKILL of the writer's whole process group (its Python driver, JVM and Python
                workers) when the write reaches a named point of the write path (see
                `fault_worker.POINTS`), at a random one of the times it reaches it
    kill@random SIGKILL of the process group at a random time into the write
    behind@POINT, behind@random   the same, while the writer logs through a `BackgroundLog`
                (`synclog.background`): batches queued, loads on the log's own thread, the log
                closed once they end
    loader@POINT, loader@random   the same, to a loader (`synclog.loading`) while an engine
                process it serves (`fault_engine.py`) queues the run's batches and goes on
                queueing; recovery is then two flushes at once, each a loader for a while (one
                holds the lease, the other must load nothing), and no write again
    cut         the connection to the target is cut mid-write (the loopback forwarder in front
                of PostgreSQL or S3 closes: open connections reset, new ones refused) and comes
                back up to 3 s later; the writer keeps running
    outage      the target is unreachable for the whole write (forwarder closed; for DuckDB,
                another process holds the database file's lock), back afterwards

Then it recovers as an operator would: a second writer process runs `flush`, and, after a kill,
writes the run again. And it checks: every table (every file, on the lake) holds exactly the
rows a write without a fault leaves (lost = reference rows missing, duplicated = rows beyond
the reference), no staging relation or scratch file is left in the target, and nothing is left
under storage (the spool is empty; no staging, export or run-store file).

Columns whose values differ between two clean writes of the same run (load times) are left
out of the comparison; the two clean writes are the reference.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from synclog_testing.network import forward

from .fault_worker import POINTS, WARM_UP_ENV
from .processes import free_port

WORKER = Path(__file__).with_name("fault_worker.py")
ENGINE = Path(__file__).with_name("fault_engine.py")
KILLS = ("kill", "behind")
"""Faults that kill the writer: in a log that loads in place, or behind the engine."""
ENGINE_PAUSE_S = 0.3
"""How long the engine a loader serves waits between its batches (it is still queueing when
the loader is killed)."""
READY_TIMEOUT_S = 240.0
OP_TIMEOUT_S = 600.0

Rows = Counter[tuple[tuple[str, str], ...]]
Contents = dict[str, list[dict[str, Any]]]


# -- worker processes ---------------------------------------------------------------------------


class Worker:
    """A `fault_worker.py` process: its own session (process group), one Spark session."""

    def __init__(self, env: Mapping[str, str], log: Path) -> None:
        self.log = log
        with log.open("ab") as err:
            self.proc = subprocess.Popen(
                [sys.executable, str(WORKER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env={**os.environ, **env},
                cwd=log.parent,
                text=True,
                bufsize=1,
                start_new_session=True,
            )
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.ready = False

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                self.events.put(json.loads(line))
        self.events.put(None)

    def next(self, timeout: float) -> dict[str, Any] | None:
        """The next event, or None when the process ended or `timeout` passed."""
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            return None

    def wait_ready(self) -> None:
        if self.ready:
            return
        event = self.next(READY_TIMEOUT_S)
        if not event or event.get("event") != "ready":
            self.kill()
            raise RuntimeError(f"the fault worker did not start: {event}; see {self.log}")
        self.ready = True

    def send(self, request: Mapping[str, Any]) -> None:
        self.wait_ready()
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        started = self.next(OP_TIMEOUT_S)
        if not started or started.get("event") != "started":
            raise RuntimeError(f"the fault worker did not start the request: {started}; see {self.log}")

    def call(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Run a request to its end; its last event."""
        self.send(request)
        event = self.next(OP_TIMEOUT_S)
        if event is None:
            self.kill()  # a hung worker is no one's to close later
            raise RuntimeError(f"the fault worker died or hung; see {self.log}")
        return event

    def kill(self) -> None:
        """SIGKILL the worker's process group: the Python driver, its JVM and the JVM's Python workers."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.alive:
            self.kill()


class Workers:
    """The writer processes of a series of trials: one that recovers and checks (it stays up), and
    the next writers to fault, started ahead and warmed up (a Spark session takes a while to
    start, and its first write far longer than the next ones): `spares` of them, so that the
    next victim is ready while a killed one's replacement is still starting. `env`: variables
    every writer gets besides (moto's AWS_* keys, for storage on S3)."""

    def __init__(self, logs: Path, spares: int = 2, env: Mapping[str, str] | None = None) -> None:
        self.logs = logs
        logs.mkdir(parents=True, exist_ok=True)
        self.env = {
            **(env or {}),
            "SYNCLOG_SHUFFLE_PARTITIONS": "2",
            "SYNCLOG_DRIVER_MEMORY": "1g",
            # Short-lived JVMs: the client compiler only, and the serial collector, start a
            # third faster on 2 cores; what a kill does to the writer is the same.
            "JDK_JAVA_OPTIONS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        }
        self.depth = spares
        self.started = 0
        """Writer processes started (each a Spark session of its own)."""
        self.recovery = self._start("recovery", warm=False)
        self.spares: list[Worker] = []
        self.prewarm()

    def _start(self, name: str, *, warm: bool = True) -> Worker:
        self.started += 1
        return Worker({**self.env, WARM_UP_ENV: "1" if warm else ""}, self.logs / f"{name}.log")

    def victim(self) -> Worker:
        """A ready writer to inject a fault into."""
        victim = self.spares.pop(0) if self.spares else self._start("writers")
        victim.wait_ready()
        return victim

    def prewarm(self) -> None:
        while len(self.spares) < self.depth:
            self.spares.append(self._start("writers"))

    def give_back(self, worker: Worker) -> None:
        """A writer the fault missed (its write ended first): it serves the next trial."""
        if worker.alive:
            self.spares.insert(0, worker)
        else:
            worker.close()
            self.prewarm()

    def close(self) -> None:
        for worker in (self.recovery, *self.spares):
            worker.close()


class Switch:
    """A forwarder on a fixed loopback port that can be taken down (cutting its connections) and up."""

    def __init__(self, to_host: str, to_port: int) -> None:
        self.port = free_port()
        self.to = (to_host, to_port)
        self._stack: contextlib.ExitStack | None = None
        self._lock = threading.Lock()

    def up(self) -> None:
        with self._lock:
            if self._stack is None:
                stack = contextlib.ExitStack()
                for attempt in range(50):
                    try:
                        stack.enter_context(forward(self.port, *self.to))
                        break
                    except OSError:
                        if attempt == 49:
                            raise
                        time.sleep(0.1)
                self._stack = stack

    def down(self) -> None:
        with self._lock:
            if self._stack is not None:
                self._stack.close()
                self._stack = None


# -- targets ------------------------------------------------------------------------------------


@dataclass
class TrialTarget:
    """One trial's fresh target and storage."""

    name: str
    url: str
    folder: Path
    config: Path
    storage: str
    """A local folder, or an `s3://` or `gs://` URL (`Scenario.storage_options` reach it)."""
    extra: dict[str, Any] = field(default_factory=dict)


class Scenario(ABC):
    """A kind of target: how to make a fresh one, read everything it holds, and find leftovers."""

    name: str
    layouts: tuple[str, ...]
    faults: tuple[str, ...]
    switch: Switch | None = None
    options: Mapping[str, str] = {}
    """The target's `options` in synclog.toml."""
    storage_options: Mapping[str, str] = {}
    """`[storage]` keys beside its url (an endpoint) where storage is an object store."""
    worker_env: Mapping[str, str] = {}
    """Variables its writers need besides the shared ones (a `SPARK_REMOTE`): they get writer
    processes of their own."""

    def __init__(self, root: Path, layouts: tuple[str, ...] | None = None) -> None:
        self.root = root
        if layouts:
            self.layouts = layouts

    def fresh(self, trial: str) -> TrialTarget:
        folder = self.root / self.name / trial
        folder.mkdir(parents=True)
        storage = self.storage_of(trial, folder)
        url = self.make_target(trial, folder)
        config = folder / "synclog.toml"
        layouts = ", ".join(f'"{name}"' for name in self.layouts)
        options = ", ".join(f'{key} = "{value}"' for key, value in self.options.items())
        schemas = ", ".join(f'{key} = "{value}"' for key, value in self.schemas_of(trial).items())
        stored = ", ".join(f'{key} = "{value}"' for key, value in self.storage_options.items())
        config.write_text(
            (f'storage = {{ url = "{storage}", {stored} }}' if stored else f'storage = "{storage}"')
            + f"\n\n[defaults]\nlayouts = [{layouts}]\n\n"
            f'[targets.default]\nurl = "{url}"\noptions = {{ {options} }}\nschemas = {{ {schemas} }}\n'
        )
        return TrialTarget(trial, url, folder, config, storage)

    def schemas_of(self, trial: str) -> dict[str, str]:
        """The target's `schemas` (layout = schema): none, each layout's own by default."""
        return {}

    def storage_of(self, trial: str, folder: Path) -> str:
        """The trial's `storage`: a folder beside its target (object-store scenarios override)."""
        return str(folder / "storage")

    def storage_files(self, target: TrialTarget) -> list[str]:
        """Every file under the trial's storage (empty folders do not count)."""
        from synclog.storage.location import Location

        location = Location.parse(target.storage, dict(self.storage_options))
        selector = pafs.FileSelector(location.path(""), recursive=True, allow_not_found=True)
        found = location.filesystem().get_file_info(selector)
        files = (location.relative(i.path) for i in found if i.type == pafs.FileType.File)
        return sorted(
            f for f in files if not (f.startswith("loaders/") and f.endswith(".lock"))
        )  # a lease's lock

    @abstractmethod
    def make_target(self, trial: str, folder: Path) -> str:
        """A fresh, empty target for `trial`; its URL as writers use it."""

    @abstractmethod
    def contents(self, target: TrialTarget) -> Contents:
        """Every row the target holds, per table (or file)."""

    @abstractmethod
    def leftovers(self, target: TrialTarget) -> list[str]:
        """Staging relations or scratch files left in the target."""

    def outage(self) -> contextlib.AbstractContextManager[None]:
        """The target unreachable while the block runs."""
        assert self.switch is not None
        return _switched_off(self.switch)

    def discard(self, target: TrialTarget) -> None:
        """Free what a checked trial's target holds."""
        shutil.rmtree(target.folder, ignore_errors=True)

    def close(self) -> None:
        if self.switch is not None:
            self.switch.down()


@contextlib.contextmanager
def _switched_off(switch: Switch) -> Iterator[None]:
    switch.down()
    try:
        yield
    finally:
        switch.up()


class DuckDBScenario(Scenario):
    name = "duckdb"
    layouts = ("census", "hightouch")
    faults = (
        "kill@point",
        "kill@random",
        "outage",
        "behind@point",
        "behind@random",
        "loader@point",
        "loader@random",
    )

    def make_target(self, trial: str, folder: Path) -> str:
        return f"duckdb:///{folder / 'logs.duckdb'}"

    def _path(self, target: TrialTarget) -> str:
        return target.url.removeprefix("duckdb:///")

    def contents(self, target: TrialTarget) -> Contents:
        import duckdb

        if not Path(self._path(target)).exists():
            return {}
        with duckdb.connect(self._path(target), read_only=True) as conn:
            tables = conn.execute(
                "SELECT schema_name, table_name FROM duckdb_tables() WHERE NOT temporary "
                "AND table_name <> 'synclog_versions' ORDER BY 1, 2"
            ).fetchall()
            found: Contents = {}
            for schema, table in tables:
                cursor = conn.execute(f'SELECT * FROM "{schema}"."{table}"')
                names = [d[0] for d in cursor.description]
                found[f"{schema}.{table}"] = [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
            return found

    def leftovers(self, target: TrialTarget) -> list[str]:
        import duckdb

        if not Path(self._path(target)).exists():
            return []
        with duckdb.connect(self._path(target), read_only=True) as conn:
            rows = conn.execute(
                "SELECT schema_name || '.' || table_name FROM duckdb_tables() "
                "WHERE table_name LIKE '\\_synclog\\_stage\\_%' ESCAPE '\\'"
            ).fetchall()
        return [r[0] for r in rows]

    @contextlib.contextmanager
    def _held(self, path: str) -> Iterator[None]:
        """Another process holds the database file open (DuckDB lets one process write a file)."""
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); "
                "sys.stdin.read()",
                path,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert holder.stdout is not None and holder.stdin is not None
        holder.stdout.readline()
        try:
            yield
        finally:
            holder.stdin.close()
            holder.wait(timeout=60)

    def outage_for(self, target: TrialTarget) -> contextlib.AbstractContextManager[None]:
        return self._held(self._path(target))


class PostgresScenario(Scenario):
    name = "postgres"
    layouts = ("census", "hightouch")
    faults = (
        "kill@point",
        "kill@random",
        "cut",
        "outage",
        "behind@point",
        "behind@random",
        "loader@point",
        "loader@random",
    )

    def __init__(
        self,
        root: Path,
        host: str,
        port: int,
        user: str,
        database: str,
        layouts: tuple[str, ...] | None = None,
    ) -> None:
        super().__init__(root, layouts)
        self.server = (host, port, user, database)
        self.switch = Switch(host, port)
        self.switch.up()

    def _admin(self, database: str | None = None) -> Any:
        import psycopg

        host, port, user, default = self.server
        return psycopg.connect(host=host, port=port, user=user, dbname=database or default, autocommit=True)

    def make_target(self, trial: str, folder: Path) -> str:
        _, _, user, _ = self.server
        return f"postgresql://{user}@127.0.0.1:{self.switch.port}/{self.new_database(trial)}"  # type: ignore[union-attr]

    def new_database(self, trial: str) -> str:
        """A fresh database of the server for `trial`; its name."""
        name = f"f_{trial}".replace("-", "_")
        with self._admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    def _database(self, target: TrialTarget) -> str:
        return target.url.rsplit("/", 1)[1].split("?")[0]

    def contents(self, target: TrialTarget) -> Contents:
        found: Contents = {}
        with self._admin(self._database(target)) as conn:
            tables = conn.execute(
                "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition "
                "AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
                "AND c.relname <> 'synclog_versions' AND c.relname NOT LIKE '\\_synclog\\_stage\\_%' "
                "ORDER BY 1, 2"
            ).fetchall()
            for schema, table in tables:
                cursor = conn.execute(f'SELECT * FROM "{schema}"."{table}"')
                names = [d.name for d in cursor.description or ()]
                found[f"{schema}.{table}"] = [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
        return found

    def leftovers(self, target: TrialTarget) -> list[str]:
        with self._admin(self._database(target)) as conn:
            rows = conn.execute(
                "SELECT n.nspname || '.' || c.relname FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname LIKE '\\_synclog\\_stage\\_%'"
            ).fetchall()
        return [r[0] for r in rows]

    def discard(self, target: TrialTarget) -> None:
        with self._admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self._database(target)}" WITH (FORCE)')
        super().discard(target)

    def outage_for(self, target: TrialTarget) -> contextlib.AbstractContextManager[None]:
        return self.outage()


class LakeScenario(Scenario):
    name = "lake"
    layouts = ("lake",)
    faults = ("kill@point", "kill@random", "cut", "outage")

    def __init__(self, root: Path, endpoint: str, s3_env: Mapping[str, str], bucket: str) -> None:
        super().__init__(root)
        host, port = endpoint.removeprefix("http://").split(":")
        self.switch = Switch(host, int(port))
        self.switch.up()
        self.bucket = bucket
        self.direct = dict(s3_env)
        self.options = {
            "endpoint_url": f"http://127.0.0.1:{self.switch.port}",
            "access_key_id": s3_env["AWS_ACCESS_KEY_ID"],
            "secret_access_key": s3_env["AWS_SECRET_ACCESS_KEY"],
            "region": s3_env["AWS_REGION"],
        }

    def _fs(self) -> pafs.S3FileSystem:
        return pafs.S3FileSystem(
            endpoint_override=self.direct["AWS_ENDPOINT_URL"],
            access_key=self.direct["AWS_ACCESS_KEY_ID"],
            secret_key=self.direct["AWS_SECRET_ACCESS_KEY"],
            region=self.direct["AWS_REGION"],
        )

    def make_target(self, trial: str, folder: Path) -> str:
        return f"lake+s3://{self.bucket}/{trial}"

    def _files(self, target: TrialTarget) -> list[str]:
        fs = self._fs()
        prefix = f"{self.bucket}/{target.name}"
        selector = pafs.FileSelector(prefix, recursive=True, allow_not_found=True)
        return sorted(i.path for i in fs.get_file_info(selector) if i.is_file)

    def contents(self, target: TrialTarget) -> Contents:
        fs = self._fs()
        found: Contents = {}
        prefix = f"{self.bucket}/{target.name}/"
        for path in self._files(target):
            name = path.removeprefix(prefix)
            if name.rsplit("/", 1)[-1].startswith("."):
                continue  # scratch files: `leftovers`
            if path.endswith(".parquet"):
                found[name] = pq.read_table(path, filesystem=fs).to_pylist()
            elif path.endswith(".json"):
                with fs.open_input_stream(path) as stream:
                    found[name] = [json.loads(stream.read())]
            else:
                found[name] = [{"unexpected file": name}]
        return found

    def leftovers(self, target: TrialTarget) -> list[str]:
        return [p for p in self._files(target) if p.rsplit("/", 1)[-1].startswith(".")]

    def discard(self, target: TrialTarget) -> None:
        fs = self._fs()
        with contextlib.suppress(OSError):
            fs.delete_dir(f"{self.bucket}/{target.name}")
        super().discard(target)

    def outage_for(self, target: TrialTarget) -> contextlib.AbstractContextManager[None]:
        return self.outage()


# -- trials -------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one injected fault did and what was found after recovery."""

    target: str
    fault: str
    landed: bool
    """The fault struck while the write was under way (a kill before it ended, a cut mid-write)."""
    where: str = ""
    lost: int = 0
    duplicated: int = 0
    leftovers: list[str] = field(default_factory=list)
    storage_files: list[str] = field(default_factory=list)
    writer: str = ""
    """How the faulted write ended: killed, done, pending (kept for flush), error: …"""
    recovery: str = ""
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds spent making the target, injecting the fault, recovering, checking."""

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.leftovers or self.storage_files)


def run_of(sync_id: int, sync_run_id: int, started: datetime | None = None) -> dict[str, Any]:
    from synclog_testing.factories import make_run

    started = started or datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    return make_run(sync_id=sync_id, sync_run_id=sync_run_id, started_at=started).to_dict()


def _project(contents: Contents, volatile: Mapping[str, set[str]]) -> dict[str, Rows]:
    projected: dict[str, Rows] = {}
    for table, rows in contents.items():
        skip = volatile.get(table, set())
        projected[table] = Counter(
            tuple(sorted((k, _text(v)) for k, v in row.items() if k not in skip)) for row in rows
        )
    return projected


def _text(value: Any) -> str:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, str) and value[:1] in "{[":
        with contextlib.suppress(ValueError):
            return json.dumps(json.loads(value), sort_keys=True)
    return str(value)


def _volatile(a: Contents, b: Contents) -> dict[str, set[str]]:
    """Per table, the columns whose values differ between two clean writes of the same run."""
    volatile: dict[str, set[str]] = {}
    for table in set(a) | set(b):
        rows_a, rows_b = a.get(table, []), b.get(table, [])
        columns = {k for r in [*rows_a, *rows_b] for k in r}
        volatile[table] = {
            c
            for c in columns
            if sorted(_text(r.get(c)) for r in rows_a) != sorted(_text(r.get(c)) for r in rows_b)
        }
    return volatile


class Driver:
    """Runs trials against one scenario: a recovery worker stays up; writers are killed and replaced."""

    def __init__(
        self,
        scenario: Scenario,
        workers: Workers,
        *,
        count: int = 40,
        batches: int = 2,
        seed: int = 14,
    ) -> None:
        self.scenario = scenario
        self.workers = workers
        self.recovery = workers.recovery
        self.count, self.batches = count, batches
        self.random = random.Random(seed)
        self.reference: dict[str, Rows] = {}
        self.volatile: dict[str, set[str]] = {}
        self.reached: dict[str, int] = {}
        self.write_seconds = 10.0
        self.reached_behind: dict[str, int] = {}
        self.behind_seconds = 10.0
        self.reached_loader: dict[str, int] = {}
        self.loader_seconds = 10.0
        self._trials = 0
        self._point_turn = 0
        self.run = run_of(7000, 1000)
        """The run every trial writes, into a fresh target each time."""

    def _write(
        self,
        target: TrialTarget,
        run: dict[str, Any],
        kill_at: tuple[str, int] | None = None,
        *,
        background: bool = False,
    ) -> dict:
        return {
            "op": "write",
            "target": None,
            "config": str(target.config),
            "run": run,
            "count": self.count,
            "batches": self.batches,
            "kill_at": list(kill_at) if kill_at else None,
            "background": background,
            "cwd": str(target.folder),
        }

    def _flush(self, target: TrialTarget) -> dict[str, Any]:
        return {"op": "flush", "target": None, "config": str(target.config), "cwd": str(target.folder)}

    def _serve(
        self, victim: Worker, target: TrialTarget, run: dict[str, Any], kill_at: tuple[str, int] | None
    ) -> subprocess.Popen[str]:
        """`victim` loads the run's items as a loader; an engine process it serves queues them."""
        items = self.batches + 1
        victim.send(
            {
                "op": "load",
                "target": None,
                "config": str(target.config),
                "items": items,
                "kill_at": list(kill_at) if kill_at else None,
                "cwd": str(target.folder),
            }
        )
        serving = victim.next(OP_TIMEOUT_S)
        if not serving or serving.get("event") != "serving":
            raise RuntimeError(f"the loader did not start: {serving}; see {victim.log}")
        command = [sys.executable, str(ENGINE), str(target.config), json.dumps(run)]
        command += [str(self.count), str(self.batches), str(ENGINE_PAUSE_S)]
        engine = subprocess.Popen(
            command,
            cwd=target.folder,
            env={**os.environ, **self.workers.env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert engine.stdout is not None
        if engine.stdout.readline().strip() != "served":  # it queues from now on
            _, err = engine.communicate(timeout=OP_TIMEOUT_S)
            raise RuntimeError(f"the engine did not start: {err.strip()[-2000:]}")
        return engine

    def _prepare_loader(self) -> None:
        """Before the first fault of a loader: a clean run through one, for the points it reaches
        and its time, which must leave the reference's rows."""
        target = self.scenario.fresh("reference-loader")
        victim = self.workers.victim()
        started = time.perf_counter()
        engine = self._serve(victim, target, self.run, None)
        done = victim.next(OP_TIMEOUT_S)
        _, err = engine.communicate(timeout=OP_TIMEOUT_S)
        if engine.returncode or not done or done.get("event") != "done" or done.get("pending"):
            raise RuntimeError(f"the reference load failed: {done}; engine: {err[-2000:]}")
        self.reached_loader, self.loader_seconds = done["reached"], time.perf_counter() - started
        if _project(self.scenario.contents(target), self.volatile) != self.reference:
            raise RuntimeError("a loader left other rows than a write in place")
        self.workers.give_back(victim)
        self.scenario.discard(target)

    def prepare(self) -> None:
        """Two clean writes of one run: the reference rows, the columns that vary, the points' counts."""
        dumps = []
        for name in ("reference-a", "reference-b"):
            target = self.scenario.fresh(name)
            done = self.recovery.call(self._write(target, self.run))
            if done.get("event") != "done" or done.get("pending"):
                raise RuntimeError(f"the reference write failed: {done}")
            self.reached = done["reached"]
            self.write_seconds = float(done["seconds"])
            dumps.append(self.scenario.contents(target))
            self.scenario.discard(target)
        if not any(dumps[0].values()):
            raise RuntimeError(f"the reference write left no rows to check: {sorted(dumps[0])}")
        self.volatile = _volatile(*dumps)
        self.reference = _project(dumps[0], self.volatile)

    def _prepare_behind(self) -> None:
        """Before the first fault behind the engine: a clean write through a log that loads behind
        it, for the points it reaches and its time, which must leave the reference's rows."""
        target = self.scenario.fresh("reference-behind")
        done = self.recovery.call(self._write(target, self.run, background=True))
        if done.get("event") != "done" or done.get("pending"):
            raise RuntimeError(f"the reference write behind the engine failed: {done}")
        self.reached_behind, self.behind_seconds = done["reached"], float(done["seconds"])
        if _project(self.scenario.contents(target), self.volatile) != self.reference:
            raise RuntimeError("a write behind the engine left other rows than a write in place")
        self.scenario.discard(target)

    def trial(self, fault: str, point: str | None = None) -> Outcome:
        """One fault, the recovery, and the checks (`point`: where a `kill@point` strikes, else random)."""
        started = time.perf_counter()
        self._trials += 1
        name = f"t{self._trials:04d}-{uuid.uuid4().hex[:6]}"
        target = self.scenario.fresh(name)
        run = self.run
        outcome = Outcome(self.scenario.name, fault, landed=False)
        clock = _Clock(outcome.phases, started)
        clock.lap("target")
        killed = False
        if fault.startswith("loader"):
            self._kill_loader(fault, target, run, outcome, point)
        elif fault.startswith(KILLS):
            killed = self._kill(fault, target, run, outcome, point)
        elif fault == "cut":
            self._cut(target, run, outcome)
        elif fault == "outage":
            victim = self.workers.victim()
            with self.scenario.outage_for(target):  # type: ignore[attr-defined]
                event = victim.call(self._write(target, run))
            outcome.landed = True
            outcome.writer = _ending(event)
            self.workers.give_back(victim)
        clock.lap("fault")
        if fault.startswith("loader"):  # the engine queued it all: loaded once a loader runs again
            self._recover_twice(target, outcome)
        else:
            self._recover(target, run, outcome, rewrite=killed or outcome.writer.startswith("error"))
        clock.lap("recovery")
        self._check(target, outcome)
        clock.lap("check")
        outcome.seconds = time.perf_counter() - started
        if outcome.ok:
            self.scenario.discard(target)
        return outcome

    def _kill(
        self, fault: str, target: TrialTarget, run: dict[str, Any], outcome: Outcome, point: str | None
    ) -> bool:
        behind = fault.startswith("behind")
        if behind and not self.reached_behind:
            self._prepare_behind()
        victim = self.workers.victim()
        reached = self.reached_behind if behind else self.reached
        if fault.endswith("@point"):
            if point is None:  # every point in turn, so that each is struck as often
                offered = [p for p in POINTS if reached.get(p)]
                point = offered[self._point_turn % len(offered)]
                self._point_turn += 1
            nth = self.random.randint(1, reached[point])
            outcome.where = f"{point} #{nth}"
            victim.send(self._write(target, run, (point, nth), background=behind))
            event = victim.next(OP_TIMEOUT_S)
            landed = bool(event and event.get("event") == "at")
        else:
            delay = self.random.uniform(0.0, self.behind_seconds if behind else self.write_seconds)
            outcome.where = f"{delay:.2f}s in"
            victim.send(self._write(target, run, background=behind))
            event = victim.next(delay)
            landed = event is None
        if landed:
            victim.kill()
            self.workers.prewarm()  # its replacement starts while the recovery runs
            outcome.landed, outcome.writer = True, "killed"
            return True
        # The write ended first: no fault; the writer serves the next trial.
        if event and event.get("event") != "done":
            event = victim.next(OP_TIMEOUT_S) if event.get("event") == "at" else event
        outcome.writer = _ending(event)
        self.workers.give_back(victim)
        return False

    def _kill_loader(
        self, fault: str, target: TrialTarget, run: dict[str, Any], outcome: Outcome, point: str | None
    ) -> None:
        """Kill a loader while it loads, its engine still queueing; the engine must end well."""
        if not self.reached_loader:
            self._prepare_loader()
        victim = self.workers.victim()
        kill_at: tuple[str, int] | None = None
        delay = 0.0
        if fault.endswith("@point"):
            if point is None:
                offered = [p for p in POINTS if self.reached_loader.get(p)]
                point = offered[self._point_turn % len(offered)]
                self._point_turn += 1
            kill_at = (point, self.random.randint(1, self.reached_loader[point]))
            outcome.where = f"{point} #{kill_at[1]}"
        else:
            delay = self.random.uniform(0.0, self.loader_seconds)
            outcome.where = f"{delay:.2f}s in"
        engine = self._serve(victim, target, run, kill_at)
        event = victim.next(OP_TIMEOUT_S if kill_at else delay)
        landed = bool(event and event.get("event") == "at") if kill_at else event is None
        if landed:
            victim.kill()
            self.workers.prewarm()
            outcome.landed, outcome.writer = True, "killed"
        else:
            if event and event.get("event") == "at":
                event = victim.next(OP_TIMEOUT_S)
            outcome.writer = _ending(event)
            self.workers.give_back(victim)
        _, err = engine.communicate(timeout=OP_TIMEOUT_S)
        if engine.returncode:
            outcome.writer += (
                f"; engine: {err.strip().splitlines()[-1] if err.strip() else engine.returncode}"
            )

    def _recover_twice(self, target: TrialTarget, outcome: Outcome) -> None:
        """Two flushes at once (the recovery worker's and another's): one loader at a time."""
        other = self.workers.victim()
        self.recovery.send(self._flush(target))
        other.send(self._flush(target))
        ended = [self.recovery.next(OP_TIMEOUT_S), other.next(OP_TIMEOUT_S)]
        self.workers.give_back(other)
        outcome.recovery = ", ".join("lease held" if e and e.get("lease_held") else _ending(e) for e in ended)

    def _cut(self, target: TrialTarget, run: dict[str, Any], outcome: Outcome) -> None:
        switch = self.scenario.switch
        assert switch is not None
        victim = self.workers.victim()
        delay = self.random.uniform(0.0, self.write_seconds)
        down_for = self.random.uniform(0.2, 3.0)
        outcome.where = f"{delay:.2f}s in, down {down_for:.1f}s"
        victim.send(self._write(target, run))
        event = victim.next(delay)
        if event is None:
            outcome.landed = True
            switch.down()
            time.sleep(down_for)
            switch.up()
            event = victim.next(OP_TIMEOUT_S)
        outcome.writer = _ending(event)
        self.workers.give_back(victim)

    def _recover(self, target: TrialTarget, run: dict[str, Any], outcome: Outcome, *, rewrite: bool) -> None:
        steps = [_ending(self.recovery.call(self._flush(target)))]
        if rewrite:
            steps.append(_ending(self.recovery.call(self._write(target, run))))
        outcome.recovery = ", ".join(steps)

    def _check(self, target: TrialTarget, outcome: Outcome) -> None:
        got = _project(self.scenario.contents(target), self.volatile)
        for table in set(got) | set(self.reference):
            want, have = self.reference.get(table, Counter()), got.get(table, Counter())
            outcome.lost += sum((want - have).values())
            outcome.duplicated += sum((have - want).values())
        outcome.leftovers = self.scenario.leftovers(target)
        outcome.storage_files = self.scenario.storage_files(target)


class _Clock:
    """Laps of a trial, in seconds, into `phases`."""

    def __init__(self, phases: dict[str, float], started: float) -> None:
        self.phases, self.last = phases, started

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.phases[name] = round(now - self.last, 2)
        self.last = now


def _ending(event: dict[str, Any] | None) -> str:
    if event is None:
        return "error: no answer"
    if event.get("event") == "done":
        if event.get("still_pending"):
            return f"still pending ({event['still_pending']})"
        return "pending" if event.get("pending") else "done"
    return f"error: {event.get('error', event)}"


def outcome_row(outcome: Outcome) -> dict[str, Any]:
    return {**asdict(outcome), "ok": outcome.ok}
