"""Benchmark sections run by `postgres_bench.py`: write_run on DuckDB and the lake, driver memory
(batch latency is `engine_bench.py`'s, through the warm server an engine uses).

- DuckDB: `SyncLog.write_run` from record results against DuckDB inserting the same census rows
  from their Parquet files itself (`INSERT … SELECT … FROM read_parquet`), same DDL;
- the lake: `SyncLog.write_run` against a plain `df.write.parquet` of the same lake-layout rows;
- driver memory: `write_run` of ROWS and of SYNCLOG_BENCH_MEMORY_ROWS (default 10 times ROWS) into
  DuckDB, the Python driver's RSS sampled apart from the JVM's (which in local mode also runs
  the executors) and the Python workers'.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa
from bench_kit import (
    ROWS,
    Method,
    Summary,
    frame_keys,
    goal_line,
    method_table,
    pass_lines,
    records_frame,
    rounds,
    table_lines,
)
from pyspark.sql import DataFrame, SparkSession

from synclog.canonical import canonical_frame
from synclog.config import Config
from synclog.layouts.base import LayoutContext
from synclog.layouts.census import SYNC_LOG
from synclog.layouts.lake import LAKE_FILES, RECORDS, LakeLayout
from synclog.records import VIOLATION
from synclog.storage.location import Location
from synclog.targets import lake
from synclog.targets.base import Target, TargetSettings
from synclog.targets.duckdb import CAPABILITIES as DUCKDB
from synclog.targets.duckdb import DuckDBTarget
from synclog.targets.lake import LakeTarget
from synclog.targets.rows import Rows
from synclog.targets.tables import ColumnType
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_testing.factories import make_run

MEMORY_ROWS = int(os.environ.get("SYNCLOG_BENCH_MEMORY_ROWS", str(10 * ROWS)))


def config(folder: Path) -> Config:
    """synclog's defaults, with the run store under `folder`."""
    return replace(Config(), storage=Location.parse(str(folder / "storage")))


def duckdb_target(path: Path) -> DuckDBTarget:
    return DuckDBTarget(TargetURL.parse(f"duckdb:///{path}"), TargetSettings(), DUCKDB)


def lake_target(path: Path) -> LakeTarget:
    return LakeTarget(TargetURL.parse(f"lake:///{path}"), TargetSettings(), lake.CAPABILITIES, LAKE_FILES)


def write_run(target: Target, folder: Path, records: DataFrame) -> dict[str, float]:
    """`SyncLog.write_run` of `records` as one run; returns the seconds of each pass."""
    shutil.rmtree(folder / "storage", ignore_errors=True)
    with SyncLog(target, config(folder), records.sparkSession) as log:
        return log.write_run(make_run(), records).passes


# -- DuckDB and the lake: write_run against each target's own bulk path -----------------------


def duckdb_methods(spark: SparkSession, folder: Path, records_dir: Path, sync_log_dir: Path) -> list[Method]:
    """DuckDB reading the census rows' Parquet itself, synclog's load of them, and write_run."""
    path = folder / "bench.duckdb"
    relation = str(duckdb_target(path).relation(SYNC_LOG))
    casts = {ColumnType.JSON: "JSON", ColumnType.TIMESTAMP: "TIMESTAMPTZ"}
    picked = ", ".join(
        f'CAST("{c.name}" AS {casts[c.type]})' if c.type in casts else f'"{c.name}"' for c in SYNC_LOG.columns
    )
    columns = ", ".join(f'"{c}"' for c in SYNC_LOG.column_names())

    def fresh() -> None:
        path.unlink(missing_ok=True)
        target = duckdb_target(path)
        target.ensure([SYNC_LOG])
        target.close()

    def plain_insert() -> None:
        with duckdb.connect(str(path)) as conn:
            files = f"read_parquet('{sync_log_dir}/*.parquet')"
            conn.execute(f"INSERT INTO {relation} ({columns}) SELECT {picked} FROM {files}")

    keys = frame_keys(SYNC_LOG, spark.read.parquet(str(sync_log_dir)))

    def load() -> None:
        with duckdb_target(path) as target:
            target.replace_rows(SYNC_LOG, Rows.of(spark.read.parquet(str(sync_log_dir))), keys)

    def pipeline() -> dict[str, float]:
        with duckdb_target(path) as target:
            return write_run(target, folder, spark.read.parquet(str(records_dir)))

    def count() -> int:
        with duckdb.connect(str(path), read_only=True) as conn:
            found = conn.execute(f"SELECT count(*) FROM {relation}").fetchone()
        return int(found[0]) if found else 0

    return [
        Method("DuckDB INSERT from Parquet", fresh, plain_insert, count),
        Method("synclog load", fresh, load, count),
        Method("synclog write_run", fresh, pipeline, count),
    ]


def lake_methods(spark: SparkSession, folder: Path, records_dir: Path) -> list[Method]:
    """A plain `df.write.parquet` of the lake layout's rows, synclog's load of them, and write_run."""
    rows_dir, out = folder / "lake_rows", folder / "lake"
    run = make_run()
    canonical = canonical_frame(run, spark.read.parquet(str(records_dir)), datetime.now(UTC)).drop(VIOLATION)
    ctx = LayoutContext(run, canonical, lake.CAPABILITIES)
    table, rows = next((load.table, load.rows) for load in LakeLayout().batch_rows(ctx))
    assert table == RECORDS
    rows.frame().write.parquet(str(rows_dir))

    def fresh() -> None:
        shutil.rmtree(out, ignore_errors=True)

    def files() -> int:
        return int(spark.read.parquet(str(out)).count()) if out.exists() else 0

    def lake_files() -> int:
        files = f"read_parquet('{out}/sync_tracking_datasets/**/*.parquet')"
        with duckdb.connect() as conn:
            found = conn.execute(f"SELECT count(*) FROM {files}").fetchone()
        return int(found[0]) if found else 0

    keys = frame_keys(RECORDS, spark.read.parquet(str(rows_dir)))

    def load() -> None:
        lake_target(out).replace_rows(RECORDS, Rows.of(spark.read.parquet(str(rows_dir))), keys)

    return [
        Method(
            "plain df.write.parquet",
            fresh,
            lambda: spark.read.parquet(str(rows_dir)).write.parquet(str(out)),
            files,
        ),
        Method("synclog load", fresh, load, lake_files),
        Method(
            "synclog write_run",
            fresh,
            lambda: write_run(lake_target(out), folder, spark.read.parquet(str(records_dir))),
            lake_files,
        ),
    ]


# -- the floor: what Spark's validating pass alone costs here ----------------------------------


def floor_methods(spark: SparkSession, folder: Path, records_dir: Path) -> list[Method]:
    """The parts of write_run's one job, each alone and sinking nothing: reading the records, the
    canonical frame (value checks, JSON validity, the identifier window), and that frame handed
    to Python tasks as Arrow (what every task of the job receives)."""
    run = make_run()

    def records() -> DataFrame:
        return spark.read.parquet(str(records_dir))

    def canonical() -> DataFrame:
        return canonical_frame(run, records(), datetime.now(UTC))

    def swallow(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _ in batches:
            pass
        return iter(())

    def noop(frame: DataFrame) -> None:
        frame.write.format("noop").mode("overwrite").save()

    def rows() -> int:
        return records().count()

    return [
        Method("read the records", lambda: None, lambda: noop(records()), rows),
        Method("the canonical frame", lambda: None, lambda: noop(canonical()), rows),
        Method(
            "the canonical frame handed to Python",
            lambda: None,
            lambda: noop(canonical().mapInArrow(swallow, "n int")),
            rows,
        ),
    ]


def floor_section(found: list[Summary], baselines: list[Summary]) -> list[str]:
    """The floor's table, and the best ratio each baseline allows a write_run validating in Spark."""
    handed = found[-1]
    rows = [[s.method, f"{s.seconds:.1f}", " / ".join(f"{r.seconds:.1f}" for r in s.rounds)] for s in found]
    ceilings = "; ".join(f"{b.method} {b.seconds / handed.seconds:.2f}x" for b in baselines)
    return [
        "## The floor: Spark's validating pass alone",
        "",
        f"The parts of write_run's one job on the same {ROWS:,} records, each writing nothing (Spark's "
        "`noop` sink); the rounds as above. A write_run can be no faster than the last row, so "
        f"against each baseline it can reach at most: {ceilings}.",
        "",
        *table_lines(["pass alone", "seconds (median)", "seconds per round"], rows),
        "",
    ]


# -- driver memory ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Memory:
    """Peak RSS (bytes) while `write_run` ran: the Python driver, the JVM, the Python workers."""

    rows: int
    seconds: float
    driver: int
    jvm: int
    workers: int


class ProcessPeaks(threading.Thread):
    """Samples, every 0.2 s, the RSS of this Python process, of its JVM child, and of the rest below."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.driver = self.jvm = self.workers = 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.sample()
            self._done.wait(0.2)

    def sample(self) -> None:
        me = os.getpid()
        tree = descendants(me)
        jvms = [p for p in tree if comm(p) == "java"]
        self.driver = max(self.driver, rss(me))
        self.jvm = max(self.jvm, sum(map(rss, jvms)))
        self.workers = max(self.workers, sum(rss(p) for p in tree if p not in jvms))

    def stop(self) -> None:
        self._done.set()
        self.join()
        self.sample()


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def rss(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def descendants(root: int) -> set[int]:
    """Every process below `root` (not `root` itself)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    found: set[int] = set()
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in found]
        found.update(children)
        frontier.extend(children)
    return found


def driver_memory(spark: SparkSession, folder: Path) -> list[Memory]:
    """`write_run` of ROWS, then of MEMORY_ROWS, into a fresh DuckDB file each."""
    found = []
    for rows in (ROWS, MEMORY_ROWS):
        source = folder / f"memory_records_{rows}"
        records_frame(spark, rows).write.parquet(str(source))
        path = folder / "memory.duckdb"
        path.unlink(missing_ok=True)
        peaks = ProcessPeaks()
        peaks.start()
        started = time.perf_counter()
        with duckdb_target(path) as target:
            write_run(target, folder, spark.read.parquet(str(source)))
        seconds = time.perf_counter() - started
        peaks.stop()
        shutil.rmtree(source)
        path.unlink()
        found.append(Memory(rows, seconds, peaks.driver, peaks.jvm, peaks.workers))
        print(
            f"  write_run of {rows:,} rows into DuckDB: driver peak {peaks.driver / 2**20:,.0f} MiB",
            flush=True,
        )
    return found


# -- report -------------------------------------------------------------------------------------


def mib(n: int) -> str:
    return f"{n / 2**20:,.0f}"


def target_section(title: str, baseline: str, summaries: list[Summary], goal: float) -> list[str]:
    """A method table like PostgreSQL's, the goal line, and write_run's passes."""
    by = {s.method: s for s in summaries}
    return [
        f"## {title}",
        "",
        *method_table(summaries, baseline),
        "",
        goal_line(by[baseline], by["synclog write_run"], goal),
        "",
        *pass_lines(by["synclog write_run"]),
        "",
    ]


def memory_section(found: list[Memory]) -> list[str]:
    small, large = found
    rows = [[f"{m.rows:,}", f"{m.seconds:.1f}", mib(m.driver), mib(m.jvm), mib(m.workers)] for m in found]
    growth = large.driver / small.driver - 1
    return [
        "## Driver memory: write_run into DuckDB",
        "",
        "Peak resident size while `write_run` ran, sampled every 0.2 s, per process: the Python "
        "driver (this process, with DuckDB in it), its JVM (in local mode the Spark driver and the "
        "executors share it, so it is shown apart) and the Python workers.",
        "",
        *table_lines(
            ["rows", "seconds", "Python driver peak MiB", "JVM peak MiB", "Python workers peak MiB"], rows
        ),
        "",
        f"Goal: the Python driver's peak at {large.rows:,} rows within 10% of its peak at "
        f"{small.rows:,} — measured {growth:+.1%} ({'met' if growth <= 0.10 else 'missed'}).",
        "",
    ]


def sections(
    spark: SparkSession,
    folder: Path,
    records_dir: Path,
    sync_log_dir: Path,
    postgres_copy: Summary,
) -> list[str]:
    """Run every section here and return its report lines; `postgres_copy` is the plain COPY's
    summary, one of the baselines the floor is set against."""
    print("DuckDB", flush=True)
    duck = rounds(duckdb_methods(spark, folder, records_dir, sync_log_dir), os.sync)
    print("the lake", flush=True)
    lake = rounds(lake_methods(spark, folder, records_dir), os.sync)
    print("the floor", flush=True)
    floor = rounds(floor_methods(spark, folder, records_dir), os.sync)
    print("driver memory", flush=True)
    memory = driver_memory(spark, folder)
    duckdb_title = f"{ROWS:,} census sync_log rows into DuckDB"
    return [
        *target_section(duckdb_title, "DuckDB INSERT from Parquet", duck, 0.5),
        *target_section(f"{ROWS:,} records into the lake", "plain df.write.parquet", lake, 0.5),
        *floor_section(floor, [postgres_copy, duck[0], lake[0]]),
        *memory_section(memory),
    ]
