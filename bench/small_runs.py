"""Small runs, as a sync engine has them every 15 minutes: what synclog adds to one run.

Each run is a new Python process, as a scheduled engine's is: it imports synclog, opens a DuckDB
target, writes the run's records in batches (lists of dicts, what a Python engine holds) and
finishes the run, one call after the other (no engine work between them). Modes:

- cold: no Spark running; the process starts its own JVM;
- warm: a server from `synclog spark start` runs (started once, before the runs, warmed up as
  `start` does, not timed), and the process joins its shared session;
- warm, BackgroundLog: the same server, the run logged through a `BackgroundLog` (its writes
  return once durable; closing it waits for the loads, which are counted);
- warm, Spark's jobs alone: the floor, measured apart: the same process joins the same shared
  session and runs, per batch, a job of the write's shape (the batch as a frame, the identifiers'
  window, a `mapInArrow` that writes nothing), with nothing of synclog's.

Reported per mode, as the median over the runs: the first write (in cold mode it includes the
JVM's start), `finish`, and the seconds synclog took in all (import, open, every write, finish,
close); and, step by step, import and open, the writes, finish and close. Writes the section
"Small runs" of bench/RESULTS.md (replacing an earlier one).

    python bench/small_runs.py [--records 5000] [--batches 5] [--runs 3] [--out bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine_bench import answered, start_warm, update_results

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "RESULTS.md"
TITLE = "## Small runs"
GOAL_S = 2.0
"""Warm: synclog's seconds per run at most this."""


STEPS = ("open", "writes", "finish", "close")
"""A run's steps, timed apart: import and open, every write, finish, close."""


def one_run(folder: Path, records: int, batches: int, number: int, background: bool) -> dict[str, float]:
    """One engine run in this process; its timings (seconds)."""
    started = time.perf_counter()
    from synclog import BackgroundLog, SyncLog, stable_id
    from synclog.config import Config
    from synclog.storage.location import Location
    from synclog_testing.factories import make_run

    run = make_run(sync_id=stable_id("bench_small_runs"), sync_run_id=number)
    config = Config(storage=Location.parse(str(folder / "storage")))
    per_batch = records // batches
    timings: dict[str, float] = {"writes": 0.0}
    target = f"duckdb:///{folder / 'logs.duckdb'}"
    with BackgroundLog.open(target, config) if background else SyncLog.open(target, config) as log:
        timings["open"] = time.perf_counter() - started
        for batch in range(batches):
            rows = answered(batch, per_batch)
            began = time.perf_counter()
            log.write(run, rows)
            timings["writes"] += time.perf_counter() - began
            if batch == 0:
                timings["first_write"] = time.perf_counter() - began
        began = time.perf_counter()
        log.finish(run)
        timings["finish"] = time.perf_counter() - began
        closing = time.perf_counter()
    timings["close"] = time.perf_counter() - closing
    timings["total"] = time.perf_counter() - started
    return timings


def spark_alone(records: int, batches: int) -> dict[str, float]:
    """The floor of one run in this process: per batch, a job of the write's shape on the warm
    server's shared session, with nothing of synclog's; its timings (seconds)."""
    started = time.perf_counter()
    import pyarrow as pa
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from synclog.spark import spark_session

    def nothing(parts: Any) -> Any:
        for part in parts:
            yield pa.RecordBatch.from_pydict({"n": pa.array([part.num_rows], pa.int64())})

    spark = spark_session("synclog-bench")
    timings: dict[str, float] = {"open": time.perf_counter() - started, "writes": 0.0, "finish": 0.0}
    per_batch = records // batches
    for batch in range(batches):
        table = pa.Table.from_pylist(answered(batch, per_batch))
        began = time.perf_counter()
        frame = spark.createDataFrame(table)
        counted = frame.withColumn("_n", F.count(F.lit(1)).over(Window.partitionBy("record_identifier")))
        counted.mapInArrow(nothing, "n bigint").collect()
        timings["writes"] += time.perf_counter() - began
        if batch == 0:
            timings["first_write"] = time.perf_counter() - began
    closing = time.perf_counter()
    spark.stop()
    timings["close"] = time.perf_counter() - closing
    timings["total"] = time.perf_counter() - started
    return timings


def measure(
    mode: str, env: dict[str, str], args: argparse.Namespace, folder: Path, first: int
) -> list[dict[str, float]]:
    """`args.runs` runs of `mode`, each a new process, numbered from `first`."""
    found = []
    for number in range(first, first + args.runs):
        done = subprocess.run(
            [
                sys.executable,
                __file__,
                "--one-run",
                str(folder),
                "--records",
                str(args.records),
                "--batches",
                str(args.batches),
                "--number",
                str(number),
                *(["--background"] if "BackgroundLog" in mode else []),
                *(["--spark-alone"] if "alone" in mode else []),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"{mode} run {number} failed: {done.stderr.strip().splitlines()[-1:]}")
        found.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"{mode} run {number}: {found[-1]}", flush=True)
    return found


def section(results: dict[str, list[dict[str, float]]], records: int, batches: int) -> str:
    """The markdown of the section."""
    rows = []
    for mode, runs in results.items():
        cells = [
            f"{statistics.median(r[key] for r in runs):.2f}" for key in ("first_write", "finish", "total")
        ]
        rows.append(f"| {mode} | {records:,} | {' | '.join(cells)} |")
    warm = statistics.median(r["total"] for r in results["warm"])
    verdict = "met" if warm <= GOAL_S else "missed"
    steps = [
        f"| {mode} | {' | '.join(f'{statistics.median(r[step] for r in runs):.2f}' for step in STEPS)} |"
        for mode, runs in results.items()
    ]
    return "\n".join(
        [
            TITLE,
            "",
            f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by bench/small_runs.py; load average "
            f"{os.getloadavg()[0]:.1f}. A {records:,}-record run in {batches} batches plus `finish`, "
            "each run a new process writing lists of dicts into DuckDB; cold: the process starts "
            "its own JVM; warm: `synclog spark start` runs (warmed up as it starts); BackgroundLog: "
            "the run through a `BackgroundLog`, closing it (its loads) included; Spark's jobs alone: "
            "the floor, a job of the write's shape per batch on the same session, nothing of "
            f"synclog's. Medians over {len(results['warm'])} runs per mode.",
            "",
            "| mode | records | first write s | finish s | synclog seconds per run |",
            "|---|---|---|---|---|",
            *rows,
            "",
            f"Goal: warm ≤ {GOAL_S:.0f} s per run — measured {warm:.2f} s ({verdict}).",
            "",
            "Step by step (medians, s; open includes the imports):",
            "",
            "| mode | open | writes | finish | close |",
            "|---|---|---|---|---|",
            *steps,
            "",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--out", type=Path, default=RESULTS, help="the results file (default: bench/RESULTS.md)"
    )
    parser.add_argument("--one-run", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--number", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--background", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--spark-alone", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_run and args.spark_alone:
        print(json.dumps(spark_alone(args.records, args.batches)))
        return 0
    if args.one_run:
        print(json.dumps(one_run(args.one_run, args.records, args.batches, args.number, args.background)))
        return 0

    from synclog import spark_server

    with tempfile.TemporaryDirectory(prefix="synclog-small-runs-") as tmp:
        folder = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
        env[spark_server.DIR_ENV] = os.environ[spark_server.DIR_ENV] = str(folder / "spark")
        results = {"cold": measure("cold", env, args, folder, 1)}
        start_warm(env)
        try:
            results["warm"] = measure("warm", env, args, folder, args.runs + 1)
            background = "warm, BackgroundLog"
            results[background] = measure(background, env, args, folder, 2 * args.runs + 1)
            alone = "warm, Spark's jobs alone"
            results[alone] = measure(alone, env, args, folder, 3 * args.runs + 1)
        finally:
            spark_server.stop()
    update_results(args.out, [(TITLE, section(results, args.records, args.batches))])
    return 0


if __name__ == "__main__":
    sys.exit(main())
