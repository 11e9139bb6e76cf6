"""Benchmark: the hightouch diff of a 1,000,000-row model against its snapshot, on DuckDB.

    .venv/bin/python bench/diff_bench.py [--rows 1000000] [--out bench/diff_bench.txt]

Run 1 logs the whole model (every row `added`) and so creates the snapshot. Run 2 hands over
the whole model again (`Run.full_model`): 10 % of the rows changed, 2 % are new and 2 % of
the snapshot's rows are missing (removed). Timed: run 2's staging (`SyncLog.write`), its
finish (read the snapshot back, diff, write baseline, snapshot, changelog and runs), and the
diff alone (the same frames written to Spark's `noop` sink, no target).

Proof that nothing is collected: the Spark session runs with `spark.driver.maxResultSize=8m`,
so a collect of the run would fail the job (the control at the end collects run 2's records and
must fail); the peak of Python-level allocations (tracemalloc) stays far below the run's size;
and the peaks of the Python process (embedded DuckDB included) and of the Spark JVM (driver and
executors: local mode; used heap and RSS) are sampled for each phase.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from synclog.config import Config, SyncSettings
from synclog.diff import diff
from synclog.layouts.hightouch import SNAPSHOT, copy_order, run_side, table_for
from synclog.spark import spark_session
from synclog.storage.location import Location
from synclog.writer import SyncLog
from synclog_testing.factories import make_run

MB = 1024 * 1024


def rss(pid: int) -> int:
    """Resident memory of process `pid` now, in bytes (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@dataclass
class Phase:
    name: str
    seconds: float = 0.0
    python_objects: int = 0
    """Peak of Python-level allocations (tracemalloc): where a collected run would land."""
    driver_rss: int = 0
    """Peak resident memory of the Python driver process, embedded DuckDB included."""
    heap_used: int = 0
    """Peak used heap of the Spark JVM (driver and, in local mode, executors)."""
    jvm_rss: int = 0


@contextmanager
def measured(phase: Phase, spark: SparkSession) -> Iterator[None]:
    """Time the block and sample the processes' memory every 100 ms while it runs."""
    jvm_pid = spark.sparkContext._gateway.proc.pid  # type: ignore[attr-defined]
    runtime = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()  # type: ignore[union-attr]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            phase.driver_rss = max(phase.driver_rss, rss(os.getpid()))
            phase.jvm_rss = max(phase.jvm_rss, rss(jvm_pid))
            phase.heap_used = max(phase.heap_used, runtime.totalMemory() - runtime.freeMemory())
            done.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    tracemalloc.start()
    sampler.start()
    started = time.perf_counter()
    try:
        yield
    finally:
        phase.seconds = time.perf_counter() - started
        done.set()
        sampler.join()
        phase.python_objects = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


def model(spark: SparkSession, rows: int, version: int) -> DataFrame:
    """The record results of a whole-model run: ids 1..rows, fields changed for 10 % at `version`."""
    ids = spark.range(1, rows + 1, numPartitions=8)
    if version > 1:  # 2 % of the old ids left the model, 2 % new ids joined it
        ids = ids.where(F.pmod(F.xxhash64("id"), F.lit(50)) != 0).unionByName(
            spark.range(rows + 1, rows + rows // 50 + 1, numPartitions=2)
        )
    changed = F.pmod(F.xxhash64(F.col("id"), F.lit("change")), F.lit(10)) == 0
    at = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=version)
    fields = F.to_json(
        F.struct(
            F.format_string("user%09d@example.com", "id").alias("email"),
            F.format_string("Person %d", "id").alias("name"),
            (F.pmod(F.xxhash64("id"), F.lit(100_000)) / 100).alias("lifetime_value"),
            F.when(changed, F.lit(version)).otherwise(F.lit(1)).alias("version"),
        )
    )
    return ids.select(
        F.format_string("user%09d@example.com", "id").alias("record_identifier"),
        F.lit("upsert").alias("operation"),
        F.lit("succeeded").alias("status"),
        F.lit(None).cast("string").alias("status_message"),
        fields.alias("record_payload"),
        (F.col("id") / 100_000).cast("int").alias("batch_number"),
        F.lit(at).alias("batch_started_at"),
        F.lit(at + timedelta(seconds=30)).alias("batch_completed_at"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_suffix(".txt"))
    args = parser.parse_args()

    # A collect of the run to the driver would exceed this and fail the job.
    os.environ["PYSPARK_SUBMIT_ARGS"] = "--conf spark.driver.maxResultSize=8m pyspark-shell"
    spark = spark_session("synclog-diff-bench")
    folder = Path(tempfile.mkdtemp(prefix="synclog-diff-bench-"))
    storage = Location.parse(str(folder / "storage"))
    config = Config(defaults=SyncSettings(layouts=("hightouch",)), storage=storage)
    first = make_run(sync_id=1, sync_run_id=1, full_model=True)
    second = replace(first, sync_run_id=2, started_at=first.started_at + timedelta(days=1))
    names = ("run 1: write + finish", "run 2: write", "run 2: diff only", "run 2: finish")
    phases = [Phase(n) for n in names]
    try:
        with SyncLog.open(f"duckdb:///{folder / 'bench.duckdb'}", config, spark) as log:
            with measured(phases[0], spark):
                log.write_run(first, model(spark, args.rows, 1))
            with measured(phases[1], spark):
                log.write(second, model(spark, args.rows, 2))
            staged = log.store.read(spark, second)
            with measured(phases[2], spark):
                diff_only(log, staged)
            control = collect_fails(staged)  # before finish drops the staged run
            with measured(phases[3], spark):
                loaded = log.finish(second).loaded
            totals = log.target.query(
                "SELECT op_type, COUNT(*) AS n FROM hightouch_audit.sync_changelog "
                "WHERE sync_run_id = 2 GROUP BY op_type ORDER BY op_type"
            ).to_pylist()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    report = render(args.rows, phases, loaded, totals, spark)
    report += f"control: collecting run 2's staged records to the driver fails: {control}\n"
    print(report)
    args.out.write_text(report, encoding="utf-8")


def diff_only(log: SyncLog, staged: DataFrame) -> None:
    """The next snapshot's and the changelog's rows, computed on the executors and thrown away."""
    with log.target.read_rows(table_for(SNAPSHOT, fields=True, splits=True), 1, log.spark) as previous:
        assert previous is not None
        d = diff(run_side(staged), previous, full_model=True, order=copy_order())
        d.joined.where(d.kept).write.format("noop").mode("overwrite").save()
        d.joined.where(d.logged).write.format("noop").mode("overwrite").save()


def collect_fails(frame: DataFrame) -> str:
    """Whether collecting `frame` hits the driver's result size limit, and why."""
    try:
        frame.collect()
    except Exception as exc:
        reason = str(exc).splitlines()[0] if "maxResultSize" not in str(exc) else "exceeds maxResultSize"
        return f"yes ({reason})"
    return "NO: the limit did not stop it"


def render(
    rows: int, phases: list[Phase], loaded: dict[str, int], totals: list[dict[str, Any]], spark: SparkSession
) -> str:
    cores = os.cpu_count()
    lines = [
        f"hightouch diff benchmark: {rows:,}-row model against its snapshot, DuckDB target",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {cores} cores, Spark {spark.version}, "
        f"driver memory {spark.conf.get('spark.driver.memory')}, "
        f"maxResultSize {spark.sparkContext.getConf().get('spark.driver.maxResultSize')}, "
        f"load average {os.getloadavg()[0]:.1f} (the machine is shared: compare phases, not runs)",
        "",
        "peaks in MiB: python objects (tracemalloc), python process RSS (embedded DuckDB included),",
        "Spark JVM used heap and RSS (driver and executors: local mode)",
        "",
        f"{'phase':<22} {'seconds':>8} {'py objects':>10} {'py RSS':>7} {'JVM heap':>8} {'JVM RSS':>8}",
    ]
    for p in phases:
        lines.append(
            f"{p.name:<22} {p.seconds:8.1f} {p.python_objects / MB:10.1f} {p.driver_rss / MB:7.0f} "
            f"{p.heap_used / MB:8.0f} {p.jvm_rss / MB:8.0f}"
        )
    lines += ["", "run 2 loaded: " + ", ".join(f"{t} {n:,}" for t, n in loaded.items())]
    lines += ["run 2 changelog: " + ", ".join(f"{r['op_type']} {r['n']:,}" for r in totals), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
