"""Benchmark: the same census `sync_log` rows into PostgreSQL by synclog and by the alternatives.

One run, one throwaway server, the same rows (≈300-byte JSON payloads) for every method, in
rounds that rotate the order (medians reported), so the ratios hold on a busy machine even when
the absolute numbers do not:

- plain COPY: one psycopg binary `COPY … FROM STDIN` of rows prepared in advance as tuples (the
  physical limit), into a table with synclog's DDL (daily partitions, replace-key index);
- synclog load: `PostgresTarget.replace_rows` of the `sync_log` Spark frame (executors COPY into
  staging, one transaction moves the rows);
- synclog write_run: the whole pipeline from record results (checks, run store, load), with
  the seconds of each of its passes;
- Spark JDBC: `DataFrame.write.jdbc` (pgjdbc defaults) into the same DDL;
- dlt: `pipeline.run` of the rows as an Arrow table, into dlt's own table.

Then `write_bench.py`'s sections: the same table for DuckDB and the lake, and driver memory.
Last, retention: `SyncLog.cleanup` (what `synclog cleanup` runs) on 10M rows generated
server-side, against a plain `DELETE … WHERE batch_started_at < …` of the same rows (and the
VACUUM it needs) on an unpartitioned copy, with PostgreSQL's default durability settings.

Run with `make bench`; SYNCLOG_BENCH_ROWS / SYNCLOG_BENCH_CLEANUP_ROWS / SYNCLOG_BENCH_ROUNDS /
SYNCLOG_BENCH_MEMORY_ROWS shrink it for a try.
Prints a table and writes bench/RESULTS.md.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
import tempfile
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import write_bench
from bench_kit import (
    BATCH_ROWS,
    ROWS,
    STARTED,
    Method,
    Result,
    Summary,
    checkpoint,
    count,
    frame_keys,
    goal_line,
    measure,
    method_table,
    open_target,
    pass_lines,
    records_frame,
    rounds,
    settle,
    table_lines,
)
from psycopg.types.json import Jsonb
from pyspark.sql import DataFrame, SparkSession

from synclog.canonical import canonical_frame
from synclog.config import Config
from synclog.layouts.base import LayoutContext
from synclog.layouts.census import SYNC_LOG, CensusLayout
from synclog.records import VIOLATION
from synclog.retention import cutoff
from synclog.spark import spark_session
from synclog.storage.location import Location
from synclog.targets.rows import Rows
from synclog.targets.tables import ColumnType
from synclog.writer import SyncLog
from synclog_postgres import partitions
from synclog_postgres.capabilities import CAPABILITIES
from synclog_postgres.target import PostgresDialect, PostgresTarget
from synclog_testing.factories import make_run

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "integration"))
from harness.postgres_server import PostgresServer, postgres_server  # noqa: E402

CLEANUP_ROWS = int(os.environ.get("SYNCLOG_BENCH_CLEANUP_ROWS", "10000000"))
JDBC_JAR = "/usr/share/java/postgresql.jar"
RESULTS = ROOT / "bench" / "RESULTS.md"
LOAD_AT_START = os.getloadavg()[0]
SERVER_SETTINGS = {"shared_buffers": "512MB", "max_wal_size": "8GB", "work_mem": "64MB"}


# -- memory ------------------------------------------------------------------------------------


# -- data --------------------------------------------------------------------------------------


def prepare(spark: SparkSession, folder: Path) -> tuple[Path, Path]:
    """Record results and the census `sync_log` rows built from them, as Parquet."""
    records_dir, sync_log_dir = folder / "records", folder / "sync_log"
    records_frame(spark, ROWS).write.parquet(str(records_dir))
    run = make_run()
    records = spark.read.parquet(str(records_dir))
    canonical = canonical_frame(run, records, datetime.now(UTC)).drop(VIOLATION)
    ctx = LayoutContext(run, canonical, CAPABILITIES)
    load = next(iter(CensusLayout().batch_rows(ctx)))
    assert load.table == SYNC_LOG
    load.rows.frame().write.parquet(str(sync_log_dir))
    return records_dir, sync_log_dir


# -- methods -----------------------------------------------------------------------------------


def prepared_table(pg: PostgresServer, schema: str, days: list[date]) -> PostgresTarget:
    """synclog's `sync_log_records` DDL in `schema`, with the day partitions already made."""
    target = open_target(pg, schema)
    target.ensure([SYNC_LOG])
    relation = target.relation(SYNC_LOG)
    for day in days:
        target.client.execute(partitions.create_sql(relation, partitions.partition(relation, day)))
    return target


PG_TYPES = {
    "BIGINT": "int8",
    "INTEGER": "int4",
    "TEXT": "text",
    "JSONB": "jsonb",
    "TIMESTAMPTZ": "timestamptz",
}


def plain_copy(pg: PostgresServer, rows: list[tuple[Any, ...]]) -> None:
    """psycopg's binary COPY, row by row in its C extension: the fastest plain psycopg COPY here."""
    columns = ", ".join(f'"{c}"' for c in SYNC_LOG.column_names())
    names = {**PostgresDialect.type_names, ColumnType.JSON: CAPABILITIES.json_type}
    types = [PG_TYPES[names[c.type]] for c in SYNC_LOG.columns]
    with psycopg.connect(pg.dsn) as conn, conn.cursor() as cursor:
        with cursor.copy(f"COPY bench_copy.sync_log_records ({columns}) FROM STDIN (FORMAT binary)") as copy:
            copy.set_types(types)
            for row in rows:
                copy.write_row(row)
        conn.commit()


def arrow_table(sync_log_dir: Path) -> pa.Table:
    """The rows as one Arrow table, times as UTC microseconds (Spark wrote them as INT96)."""
    table = pq.read_table(sync_log_dir).select(SYNC_LOG.column_names())
    utc = pa.timestamp("us", tz="UTC")
    return table.cast(
        pa.schema([pa.field(f.name, utc if pa.types.is_timestamp(f.type) else f.type) for f in table.schema])
    )


def prepared_rows(sync_log_dir: Path) -> list[tuple[Any, ...]]:
    """The rows as Python tuples, JSON text wrapped to go to jsonb as is (not re-encoded)."""
    table = arrow_table(sync_log_dir)
    json_at = [i for i, c in enumerate(SYNC_LOG.columns) if c.type is ColumnType.JSON]
    columns = [column.to_pylist() for column in table.columns]
    for i in json_at:
        columns[i] = [None if v is None else Jsonb(v, dumps=_as_is) for v in columns[i]]
    return list(zip(*columns, strict=True))


def _as_is(text: str) -> str:
    return text


def jdbc_write(pg: PostgresServer, frame: DataFrame) -> None:
    frame.write.jdbc(
        f"{pg.jdbc_url}?stringtype=unspecified",
        "bench_jdbc.sync_log_records",
        mode="append",
        properties={"user": pg.user, "driver": "org.postgresql.Driver"},
    )


def dlt_load(pg: PostgresServer, table: pa.Table, folder: Path) -> None:
    import dlt

    pipeline = dlt.pipeline(
        pipeline_name="synclog_bench",
        # dlt insists on a password; the throwaway server trusts loopback connections and ignores it.
        destination=dlt.destinations.postgres(credentials=pg.url.replace("@", ":unused@", 1)),
        dataset_name="bench_dlt",
        pipelines_dir=str(folder / "dlt"),
    )
    pipeline.run(table, table_name="sync_log_records")


def fresh_schema(pg: PostgresServer, schema: str) -> None:
    with psycopg.connect(pg.dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(f"CREATE SCHEMA {schema}")


def load_methods(
    spark: SparkSession, pg: PostgresServer, folder: Path, records_dir: Path, sync_log_dir: Path
) -> list[Method]:
    days = sorted({(STARTED + timedelta(minutes=b)).date() for b in range(ROWS // BATCH_ROWS + 1)})
    frame = spark.read.parquet(str(sync_log_dir))
    warm = open_target(pg, "bench_warmup")
    warm.ensure([SYNC_LOG])
    warming = frame.limit(20_000)
    warm.replace_rows(
        SYNC_LOG, Rows.of(warming), frame_keys(SYNC_LOG, warming)
    )  # JIT, Python workers, connections
    keys = frame_keys(SYNC_LOG, frame)
    warm.close()
    arrow = arrow_table(sync_log_dir)
    prepared: list[tuple[Any, ...]] = []
    targets: list[PostgresTarget] = []

    def copy_setup() -> None:
        fresh_schema(pg, "bench_copy")
        prepared_table(pg, "bench_copy", days).close()
        prepared[:] = prepared_rows(sync_log_dir)

    def copy_run() -> None:
        plain_copy(pg, prepared)
        prepared.clear()

    def load_setup() -> None:
        fresh_schema(pg, "census")
        target = open_target(pg, "census")
        target.ensure([SYNC_LOG])
        targets[:] = [target]

    def load_run() -> None:
        (target,) = targets
        target.replace_rows(SYNC_LOG, Rows.of(spark.read.parquet(str(sync_log_dir))), keys)
        target.close()

    def write_run_setup() -> None:
        fresh_schema(pg, "bench_e2e")
        shutil.rmtree(folder / "storage", ignore_errors=True)

    def write_run() -> dict[str, float]:
        config = replace(Config(), storage=Location.parse(str(folder / "storage")))
        with SyncLog(open_target(pg, "bench_e2e"), config, spark) as log:
            return log.write_run(make_run(), spark.read.parquet(str(records_dir))).passes

    def jdbc_setup() -> None:
        fresh_schema(pg, "bench_jdbc")
        prepared_table(pg, "bench_jdbc", days).close()

    def dlt_setup() -> None:
        fresh_schema(pg, "bench_dlt")
        shutil.rmtree(folder / "dlt", ignore_errors=True)

    return [
        Method("plain psycopg COPY", copy_setup, copy_run, count(pg, "bench_copy.sync_log")),
        Method("synclog load", load_setup, load_run, count(pg, "census.sync_log")),
        Method("synclog write_run", write_run_setup, write_run, count(pg, "bench_e2e.sync_log")),
        Method(
            "Spark JDBC writer",
            jdbc_setup,
            lambda: jdbc_write(pg, spark.read.parquet(str(sync_log_dir))),
            count(pg, "bench_jdbc.sync_log_records"),
        ),
        Method(
            "dlt (postgres)",
            dlt_setup,
            lambda: dlt_load(pg, arrow, folder),
            count(pg, "bench_dlt.sync_log_records"),
        ),
    ]


# -- retention ---------------------------------------------------------------------------------

GENERATE = """
INSERT INTO {table} ({columns})
SELECT md5(g::text), 1234, 5678 + g / 1000000, 'user' || g || '@example.com',
       jsonb_build_object('email', 'user' || g || '@example.com', 'first_name', 'First' || mod(g, 997),
           'last_name', 'Lastname' || mod(g, 7919), 'company', 'Company ' || mod(g, 50021) || ' Inc.',
           'title', 'Head of Data Platform Engineering', 'city', 'Berlin', 'plan', 'enterprise',
           'seats', mod(g, 500), 'lifetime_value', round(mod(g, 100000) / 7.0, 2),
           'created_at', '2025-11-02T10:15:00Z', 'tags', jsonb_build_array('vip', 'newsletter', 'beta'),
           'marketing_opt_in', mod(g, 3) = 0),
       ts, ts + interval '30 seconds', 'upsert', 'succeeded', NULL, now(), 301, 401, 101, 201,
       mod(g / 100000, 1000), NULL, NULL
FROM generate_series(0, %s - 1) AS g,
     LATERAL (SELECT %s::timestamptz + (g * %s::float8 / %s) * interval '1 second' AS ts) AS t
"""


DURABLE = {
    "fsync": "on",
    "full_page_writes": "on",
    "synchronous_commit": "on",
    "max_wal_size": "1GB",
    "checkpoint_timeout": "5min",
}
"""PostgreSQL's defaults, restored (by reload) for the timed part of the retention benchmark:
a DELETE's cost is mostly WAL and full-page writes, which the harness's fast settings skip."""


def table_bytes(pg: PostgresServer, relation: str) -> int:
    """On-disk size of a table with its indexes and partitions."""
    with psycopg.connect(pg.dsn) as conn:
        found = conn.execute(
            "SELECT pg_total_relation_size(%s::regclass) + coalesce(("
            "SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree(%s::regclass) "
            "WHERE relid <> %s::regclass), 0)",
            [relation] * 3,
        ).fetchone()
    return int(found[0]) if found else 0


def cleanup_benchmark(
    spark: SparkSession, pg: PostgresServer, folder: Path
) -> tuple[list[tuple[Result, int]], int]:
    """10 days of rows, 7 days kept, `now` at noon: the cut-off is the start of the UTC day 7 days
    before (`synclog.retention.cutoff`), so 3 whole days have expired, for both methods.

    Returns each method's result and the table's size after it (rows removed: counted in the
    table), and the rows `cleanup` reported (an estimate, from the partitions' `reltuples`).
    """
    start = datetime(2026, 3, 1, tzinfo=UTC)
    now = start + timedelta(days=10, hours=12)
    span = timedelta(days=10).total_seconds()
    target = prepared_table(pg, "bench_cleanup", [(start + timedelta(days=d)).date() for d in range(10)])
    columns = ", ".join(f'"{c}"' for c in SYNC_LOG.column_names())
    print(f"  generating {CLEANUP_ROWS:,} rows server-side …", flush=True)
    with psycopg.connect(pg.dsn, autocommit=True) as conn:
        sql = GENERATE.format(table="bench_cleanup.sync_log_records", columns=columns)
        conn.execute(sql, [CLEANUP_ROWS, start, span, CLEANUP_ROWS])
        conn.execute("CREATE TABLE bench_delete.sync_log_records (LIKE bench_cleanup.sync_log_records)")
        conn.execute("INSERT INTO bench_delete.sync_log_records SELECT * FROM bench_cleanup.sync_log_records")
        conn.execute("CREATE INDEX ON bench_delete.sync_log_records (sync_run_id, batch_number)")
        conn.execute("VACUUM ANALYZE bench_cleanup.sync_log_records")
        conn.execute("VACUUM ANALYZE bench_delete.sync_log_records")
        for name, value in DURABLE.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        conn.execute("SELECT pg_reload_conf()")
    expired_before = cutoff(now, 7)
    plain = "bench_delete.sync_log_records"

    def plain_delete() -> None:
        with psycopg.connect(pg.dsn, autocommit=True) as conn:
            conn.execute(f"DELETE FROM {plain} WHERE batch_started_at < %s", [expired_before])

    def vacuum() -> None:
        with psycopg.connect(pg.dsn, autocommit=True) as conn:
            conn.execute(f"VACUUM {plain}")

    removed: dict[str, int] = {}
    kept = "bench_cleanup.sync_log_records"

    def synclog_cleanup() -> None:
        config = replace(Config(), storage=Location.parse(str(folder / "storage")))
        with SyncLog(target, config, spark) as log:
            removed["rows"] = log.cleanup(now).total

    results = []
    for method, run, rows, table in (
        ("plain DELETE (unpartitioned)", plain_delete, lambda: CLEANUP_ROWS - count(pg, plain)(), plain),
        ("VACUUM after that DELETE", vacuum, lambda: 0, plain),
        ("synclog cleanup", synclog_cleanup, lambda: CLEANUP_ROWS - count(pg, kept)(), kept),
    ):
        checkpoint(pg)
        results.append((measure(method, run, rows), table_bytes(pg, table)))
    actual = results[-1][0].rows
    assert abs(removed["rows"] - actual) <= actual / 100, "cleanup's estimate is off by more than 1%"
    return results, removed["rows"]


# -- report ------------------------------------------------------------------------------------


def report(
    loads: list[Summary],
    others: list[str],
    cleanups: list[tuple[Result, int]],
    estimate: int,
    started: datetime,
    versions: str,
) -> str:
    by = {r.method: r for r in loads}
    copy, jdbc, synclog = by["plain psycopg COPY"], by["Spark JDBC writer"], by["synclog load"]
    (plain, _), (vacuum, _), (ours, _) = cleanups
    cleanup_rows = [
        [
            r.method,
            f"{r.rows:,}" if r.rows else "-",
            f"{r.seconds:.3f}",
            f"{size / 2**20:,.0f}",
            f"{r.start_bytes / 2**20:,.0f} → {r.peak_bytes / 2**20:,.0f}",
        ]
        for r, size in cleanups
    ]
    speedup = plain.seconds / ours.seconds
    lines = [
        "# Benchmark results",
        "",
        f"Measured {started:%Y-%m-%d %H:%M} UTC by `make bench` (bench/postgres_bench.py, "
        f"bench/write_bench.py) on this machine: {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {versions}; load average {LOAD_AT_START:.1f} at the start and "
        f"{os.getloadavg()[0]:.1f} at the end (the machine is shared: absolute numbers are noisy, "
        "ratios within the run are what count).",
        "",
        f"## {ROWS:,} census sync_log rows into PostgreSQL (≈300-byte JSON payloads)",
        "",
        f"{len(copy.rounds)} rounds, each running every method once on a fresh table after a "
        "CHECKPOINT, in an order rotated by one method per round; seconds and rates are the "
        "median round's.",
        "",
        *method_table(loads, copy.method),
        "",
        goal_line(copy, by["synclog write_run"], 0.8),
        ahead_line(by["synclog write_run"], [jdbc, by["dlt (postgres)"]]),
        f"synclog load alone: {synclog.rate / copy.rate:.2f}x plain COPY; Spark's JDBC writer "
        f"{jdbc.rate / copy.rate:.2f}x.",
        "",
        *pass_lines(by["synclog write_run"]),
        "",
        *others,
        f"## Retention on {CLEANUP_ROWS:,} rows (10 days, 7 kept: 3 whole days expired)",
        "",
        *table_lines(
            ["method", "rows removed", "seconds", "table size after (MiB)", "client RSS MiB (start → peak)"],
            cleanup_rows,
        ),
        "",
        f"Goal: synclog cleanup ≥ 50x a plain DELETE — measured {speedup:.0f}x "
        f"({'met' if speedup >= 50 else 'missed'}); "
        f"{(plain.seconds + vacuum.seconds) / ours.seconds:.0f}x the DELETE and the VACUUM "
        "that lets its space be reused (the file does not shrink; dropped partitions free their disk "
        "at once). Timed with PostgreSQL's default durability settings (fsync, full_page_writes, "
        "synchronous_commit on, max_wal_size 1GB), reloaded after the rows were generated. "
        f"`cleanup` reported {estimate:,} rows removed (PostgreSQL's `reltuples` of the dropped "
        f"partitions, no scan); they held {ours.rows:,}.",
        "",
    ]
    return "\n".join(lines)


def ahead_line(ours: Summary, others: list[Summary]) -> str:
    """The goal's second half: write_run ahead of the other writers in the same run."""
    ahead = all(ours.seconds < other.seconds for other in others)
    times = ", ".join(f"{other.method} {other.seconds:.1f} s" for other in others)
    names = " and ".join(other.method for other in others)
    return (
        f"Goal: write_run ahead of {names} — write_run {ours.seconds:.1f} s, {times} "
        f"({'met' if ahead else 'missed'})."
    )


def main() -> int:
    started = datetime.now(UTC)
    os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", f"--jars {JDBC_JAR} pyspark-shell")
    spark = spark_session("synclog-bench")
    folder = Path(tempfile.mkdtemp(prefix="synclog-bench-"))
    try:
        with postgres_server(settings=SERVER_SETTINGS) as pg:
            with psycopg.connect(pg.dsn, autocommit=True) as conn:
                for schema in ("bench_cleanup", "bench_delete"):
                    conn.execute(f"CREATE SCHEMA {schema}")
                version = conn.execute("SHOW server_version").fetchone()
            print(f"loading {ROWS:,} rows", flush=True)
            records_dir, sync_log_dir = prepare(spark, folder)
            methods = load_methods(spark, pg, folder, records_dir, sync_log_dir)
            loads = rounds(methods, lambda: settle(pg))
            copy = next(s for s in loads if s.method == "plain psycopg COPY")
            others = write_bench.sections(spark, folder, records_dir, sync_log_dir, copy)
            print(f"retention on {CLEANUP_ROWS:,} rows", flush=True)
            cleanups, estimate = cleanup_benchmark(spark, pg, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    versions = f"PostgreSQL {version[0] if version else '?'}, Spark {spark.version}"
    text = report(loads, others, cleanups, estimate, started, versions)
    print(text)
    RESULTS.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
