"""What a sync engine pays for its log, and how soon a batch is queryable.

Engine overhead: the example engine (`examples/engine`), its contacts API on loopback made to
answer each batch in `--answer-seconds` (1 s), syncs `--records` records (5,000: four fifths
upserts, one fifth deletes) in batches of `--records / --batches` (1,000), each run a new Python
process, as a scheduled engine's is; its log is a `BackgroundLog` into DuckDB, as the example
logs. Modes, each the median of `--runs` runs:

- sync alone: the same engine with `--no-log` (it still builds its `Run`: `import synclog`
  imports only the model);
- warm: a server from `synclog spark start` runs (started once, before the runs, not timed);
- cold: none runs; the log's thread starts a JVM of its own.

Per mode: the process's wall time (spawn to exit, its API and the log's loads included), the
ratio to the sync alone, the seconds synclog held up the engine's sync (importing synclog,
`BackgroundLog.open`, every `write` and `finish`: the calls the engine makes while it syncs),
and how long after `finish` returned the run's rows were queryable (then `close` returns at once).

Batch latency: through the warm server, `--latency-batches` batches of 10,000 records, each an
Arrow table the engine holds, handed to `SyncLog.write` (in place) or `BackgroundLog.write`
(then `WriteResult.wait`) and timed until a query of `census.sync_log` finds all its rows; DuckDB
and PostgreSQL. The floor, measured apart on the same session and batches: a bare Spark job
(`createDataFrame` + `count`), and a job of the write's shape (a window over the identifiers, then
a `mapInArrow` that writes nothing).

Replaces the sections "Engine overhead" and "Batch latency" of bench/RESULTS.md.

    python bench/engine_bench.py [--runs 3] [--records 5000] [--batches 5] [--latency-batches 50]
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
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
RATIO_GOAL, PATH_GOAL_S, FRESH_GOAL_S = 1.10, 0.5, 3.0
"""Warm: sync with synclog ÷ sync alone, synclog's seconds on the engine's path, queryable after finish."""
LATENCY_ROWS = 10_000
LATENCY_P50, LATENCY_P95 = 0.4, 0.8
"""The batch-latency goal, seconds until a batch is queryable."""
OVERHEAD_TITLE = "## Engine overhead"
LATENCY_TITLE = "## Batch latency"


# -- one engine run, in a process of its own ----------------------------------------------------


ALONE = "warm, Spark's jobs alone"
"""The floor of the warm mode: the engine with `SparkAlone` as its log (`--modes` `alone`)."""


class Spent(dict[str, float]):
    """Seconds per step of an engine's run, added up over its calls."""

    def timed(self, name: str, call: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        try:
            return call()
        finally:
            self[name] = self.get(name, 0.0) + time.perf_counter() - started


def one_run(folder: Path, args: argparse.Namespace) -> dict[str, float]:
    """One run of the example engine in this (new) process; what the log cost it."""
    spent = Spent()
    timed = spent.timed

    log: Any = None
    if args.spark_alone:
        log = SparkAlone()
    elif not args.no_log:
        background = timed("import", lambda: __import__("synclog").BackgroundLog)
        target = f"duckdb:///{folder / 'logs.duckdb'}"
        log = timed("open", lambda: background.open(target))
    from synclog_example_engine import ContactsAPI, already_in_destination, changes, contacts_run, sync

    source = changes(args.records * 4 // 5, args.records - args.records * 4 // 5)
    size = args.records // args.batches
    with ContactsAPI(already_in_destination(source), answer_seconds=args.answer_seconds) as api:
        run = contacts_run(api_url=api.url)
        if log is None:
            sync(source, api.url, None, run, size)
            return {}
        report = sync(source, api.url, TimedLog(log, timed), run, size)
    if args.spark_alone:
        timed("close", log.close)
        return spent
    finished = time.perf_counter()
    log.wait()
    found = log.log.target.client.fetch(
        "SELECT count(*) FROM census.sync_log WHERE sync_run_id = ?", [report.run.sync_run_id]
    )[0][0]
    spent["queryable"] = time.perf_counter() - finished
    timed("close", log.close)
    if found != args.records:
        raise SystemExit(f"the log holds {found} rows of the run, not {args.records}")
    spent["path"] = sum(spent.get(k, 0.0) for k in ("import", "open", "write", "finish"))
    return spent


class SparkAlone:
    """The floor of a log behind the engine: on a thread of its own, joining the warm server's
    shared session and running a job of the write's shape per batch (the batch as a frame, the
    identifiers' window, a `mapInArrow` that writes nothing), nothing else of synclog's."""

    def __init__(self) -> None:
        import queue
        import threading

        self.batches: queue.Queue[Any] = queue.Queue()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def write(self, run: Any, records: Any) -> None:
        self.batches.put(records)

    def finish(self, run: Any) -> None:
        return None

    def close(self) -> None:
        self.batches.put(None)
        self.thread.join()

    def _run(self) -> None:
        import pyarrow as pa
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        from synclog.spark import spark_session

        def nothing(parts: Any) -> Any:
            for part in parts:
                yield pa.RecordBatch.from_pydict({"n": pa.array([part.num_rows], pa.int64())})

        spark = spark_session("synclog-bench")
        while (records := self.batches.get()) is not None:
            frame = spark.createDataFrame(pa.Table.from_pylist(records))
            counted = frame.withColumn("_n", F.count(F.lit(1)).over(Window.partitionBy("record_identifier")))
            counted.mapInArrow(nothing, "n bigint").collect()
        spark.stop()


class TimedLog:
    """The engine's log, its calls timed (`write` and `finish`, the engine's path)."""

    def __init__(self, log: Any, timed: Callable[[str, Callable[[], Any]], Any]) -> None:
        self.log, self.timed = log, timed

    def write(self, run: Any, records: Any) -> Any:
        return self.timed("write", lambda: self.log.write(run, records))

    def finish(self, run: Any) -> Any:
        return self.timed("finish", lambda: self.log.finish(run))


# -- the engine overhead table ------------------------------------------------------------------


def runs(mode: str, env: dict[str, str], args: argparse.Namespace, folder: Path) -> list[dict[str, float]]:
    """`args.runs` runs of the engine in `mode`, each a new process: their timings and wall times."""
    found = []
    for number in range(args.runs):
        where = folder / f"{mode}-{number}"
        where.mkdir(parents=True)
        command = [sys.executable, __file__, "--one-run", str(where), *passed(args)]
        if mode == "sync alone":
            command.append("--no-log")
        if mode == ALONE:
            command.append("--spark-alone")
        started = time.perf_counter()
        done = subprocess.run(command, env=env, cwd=where, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{mode} run {number} failed: {done.stderr.strip().splitlines()[-3:]}")
        timings = {**json.loads(done.stdout.strip().splitlines()[-1]), "wall": wall}
        print(f"{mode} run {number}: " + ", ".join(f"{k} {v:.3f}" for k, v in timings.items()), flush=True)
        found.append(timings)
    return found


def passed(args: argparse.Namespace) -> list[str]:
    return [
        *("--records", str(args.records), "--batches", str(args.batches)),
        *("--answer-seconds", str(args.answer_seconds)),
    ]


def overhead_section(found: dict[str, list[dict[str, float]]], args: argparse.Namespace) -> str:
    def median(mode: str, key: str) -> float:
        return statistics.median(r.get(key, 0.0) for r in found[mode])

    alone = median("sync alone", "wall")
    rows = []
    if ALONE in found:
        wall = median(ALONE, "wall")
        rows.append(f"| {ALONE} (the floor) | {alone:.2f} | {wall:.2f} | {wall / alone:.2f} | - | - |")
    for mode in ("warm", "cold"):
        if mode in found:
            wall = median(mode, "wall")
            rows.append(
                f"| {mode} | {alone:.2f} | {wall:.2f} | {wall / alone:.2f} | {median(mode, 'path'):.2f} | "
                f"{median(mode, 'queryable'):.2f} |"
            )
    ratio, path, fresh = (median("warm", k) for k in ("wall", "path", "queryable"))
    ratio /= alone
    steps = ", ".join(
        f"{key} {median('warm', key):.3f}" for key in ("import", "open", "write", "finish", "close")
    )
    verdict = "met" if ratio <= RATIO_GOAL and path <= PATH_GOAL_S and fresh <= FRESH_GOAL_S else "missed"
    return "\n".join(
        [
            OVERHEAD_TITLE,
            "",
            f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by bench/engine_bench.py; load average "
            f"{os.getloadavg()[0]:.1f}. The example engine syncs {args.records:,} records in "
            f"{args.batches} batches to its contacts API on loopback, which answers each batch in "
            f"{args.answer_seconds:g} s; each run a new process; its log a `BackgroundLog` into DuckDB. "
            f"Medians over {args.runs} runs per mode. *sync with synclog s*: the process's wall time "
            "(spawn to exit); *synclog s on the engine's path*: importing synclog, "
            "`BackgroundLog.open`, the writes and `finish`; *queryable after finish s*: from `finish` "
            "returning until the run's rows are queryable; *warm, Spark's jobs alone*: the floor, the "
            "engine's log a thread that joins the same shared session and runs a job of the write's "
            "shape per batch, nothing else of synclog's.",
            "",
            "| mode | sync alone s | sync with synclog s | ratio | synclog s on the engine's path "
            "| queryable after finish s |",
            "|---|---|---|---|---|---|",
            *rows,
            "",
            f"Warm, the engine's path step by step (medians, s): {steps}.",
            "",
            f"Goal (warm): ratio ≤ {RATIO_GOAL:.2f}, synclog on the engine's path ≤ {PATH_GOAL_S} s, "
            f"queryable ≤ {FRESH_GOAL_S:g} s after finish — measured {ratio:.2f}, {path:.2f} s, "
            f"{fresh:.2f} s ({verdict}).",
            "",
        ]
    )


# -- batch latency ------------------------------------------------------------------------------


def answered(number: int, rows: int) -> list[dict[str, Any]]:
    """`rows` record results of batch `number` as the destination answered them (one in 20
    rejected), a dict per record, as a Python engine holds them."""
    now = datetime.now(UTC)
    return [
        {
            "record_identifier": f"user-{number}-{i}@example.com",
            "operation": "upsert",
            "status": "rejected" if i % 20 == 0 else "succeeded",
            "status_message": "INVALID_EMAIL: not an address" if i % 20 == 0 else None,
            "record_payload": json.dumps({"email": f"user-{number}-{i}@example.com", "plan": "pro"}),
            "batch_number": number,
            "batch_started_at": now,
            "batch_completed_at": now,
        }
        for i in range(rows)
    ]


def records_table(number: int, rows: int) -> Any:
    """`answered` as an Arrow table (what an engine that holds Arrow hands over)."""
    import pyarrow as pa

    return pa.Table.from_pylist(answered(number, rows))


Latency = tuple[str, str, list[float], dict[str, list[float]]]
"""Target, log, each batch's seconds until queryable, and each pass's seconds per batch."""


def latencies(folder: Path, batches: int) -> tuple[list[Latency], dict[str, list[float]]]:
    """Per target and log, the seconds until each batch was queryable; the floor's jobs apart."""
    from harness.postgres_server import postgres_server

    from synclog.spark import spark_session

    spark = spark_session("synclog-bench")
    tables = [records_table(n, LATENCY_ROWS) for n in range(batches)]
    found: list[Latency] = []
    try:
        with postgres_server() as pg:
            for url in (f"duckdb:///{folder / 'latency.duckdb'}", pg.url):
                for api in ("SyncLog.write", "BackgroundLog.write"):
                    storage = folder / f"storage-{len(found)}"
                    seconds, passes = latency(spark, url, api, tables, storage, len(found) + 1)
                    name = "DuckDB" if url.startswith("duckdb") else "PostgreSQL"
                    print(f"  {name}, {api}: p50 {quantile(seconds, 0.5):.2f} s", flush=True)
                    found.append((name, api, seconds, passes))
        return found, floor(spark, tables)
    finally:
        # Close the Connect client while its server runs: an open one sends cleanup calls at
        # exit, which pyspark retries for minutes once `main` has stopped the server.
        spark.stop()


def latency(
    spark: Any, url: str, api: str, tables: list[Any], storage: Path, run_id: int
) -> tuple[list[float], dict[str, list[float]]]:
    """Seconds from handing each of `tables` to `api` until a query finds all its rows; and the
    seconds of each of the write's passes (`WriteResult.passes`), per batch."""
    from synclog import BackgroundLog, SyncLog
    from synclog.config import Config
    from synclog.storage.location import Location
    from synclog_testing.factories import make_run

    run = make_run(sync_run_id=run_id)
    config = Config(storage=Location.parse(str(storage)))
    seconds: list[float] = []
    passes: dict[str, list[float]] = {}

    def timed(number: int, write: Callable[[], Any], log: Any) -> None:
        p = log.target.dialect.placeholder
        sql = f"SELECT count(*) FROM census.sync_log WHERE sync_run_id = {p} AND batch_number = {p}"
        started = time.perf_counter()
        result = write()
        found = log.target.client.fetch(sql, [run_id, number])[0][0]
        seconds.append(time.perf_counter() - started)
        for step, spent in result.passes.items():
            passes.setdefault(step, []).append(spent)
        assert found == LATENCY_ROWS, f"{url}: batch {number} shows {found} rows"

    if api == "SyncLog.write":
        with SyncLog.open(url, config, spark) as log:
            log.write(run, records_table(-1, 100))  # warm: tables made, connections open
            for number, table in enumerate(tables):
                timed(number, lambda table=table: log.write(run, table), log)
            log.finish(run)
    else:
        with BackgroundLog.open(url, config, spark) as behind:
            behind.write(run, records_table(-1, 100)).wait()
            for number, table in enumerate(tables):
                timed(number, lambda table=table: behind.write(run, table).wait(), behind.log)
            behind.finish(run)
    return seconds, passes


def floor(spark: Any, tables: list[Any]) -> dict[str, list[float]]:
    """Spark's own cost per 10,000-record batch on this session: a bare job, and a job of the
    write's shape (a window over the identifiers, then a `mapInArrow` writing nothing)."""
    import pyarrow as pa
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    def nothing(batches: Any) -> Any:
        for batch in batches:
            yield pa.RecordBatch.from_pydict({"n": pa.array([batch.num_rows], pa.int64())})

    seconds: dict[str, list[float]] = {"bare job": [], "window and mapInArrow": []}
    for table in tables:
        started = time.perf_counter()
        spark.createDataFrame(table).count()
        seconds["bare job"].append(time.perf_counter() - started)
        started = time.perf_counter()
        frame = spark.createDataFrame(table)
        counted = frame.withColumn("_n", F.count(F.lit(1)).over(Window.partitionBy("record_identifier")))
        counted.mapInArrow(nothing, "n bigint").collect()
        seconds["window and mapInArrow"].append(time.perf_counter() - started)
    return seconds


def quantile(seconds: list[float], q: float) -> float:
    ordered = sorted(seconds)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def latency_section(found: list[Latency], floors: dict[str, list[float]]) -> str:
    rows = []
    for name, api, seconds, _ in found:
        p50, p95 = quantile(seconds, 0.5), quantile(seconds, 0.95)
        verdict = "met" if p50 < LATENCY_P50 and p95 < LATENCY_P95 else "missed"
        rows.append(
            f"| {name} | {api} | {len(seconds)} | {p50:.2f} | {p95:.2f} | {max(seconds):.2f} | {verdict} |"
        )
    floor_rows = [
        f"| {job} | {quantile(s, 0.5):.2f} | {quantile(s, 0.95):.2f} |" for job, s in floors.items()
    ]
    pass_rows = [
        f"| {name} | {api} | {step} | {quantile(spent, 0.5):.2f} |"
        for name, api, _, passes in found
        for step, spent in passes.items()
    ]
    return "\n".join(
        [
            f"{LATENCY_TITLE}: {LATENCY_ROWS:,}-record batches, the warm server",
            "",
            f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by bench/engine_bench.py; load average "
            f"{os.getloadavg()[0]:.1f}. One session of the warm server (`synclog spark start`); each "
            "batch an Arrow table, handed to the log and timed until a query of `census.sync_log` finds "
            f"all its rows. Goal: p50 < {LATENCY_P50} s and p95 < {LATENCY_P95} s.",
            "",
            "| target | log | batches | p50 s | p95 s | max s | goal |",
            "|---|---|---|---|---|---|---|",
            *rows,
            "",
            "Spark's own floor on the same session and batches:",
            "",
            "| job | p50 s | p95 s |",
            "|---|---|---|",
            *floor_rows,
            "",
            "Where a batch's seconds went, pass by pass (`WriteResult.passes`, medians); the rest of "
            "its seconds is the call's own bookkeeping and the count that finds its rows:",
            "",
            "| target | log | pass | p50 s |",
            "|---|---|---|---|",
            *pass_rows,
            "",
        ]
    )


# -- the report ---------------------------------------------------------------------------------


def start_warm(env: dict[str, str]) -> None:
    """`synclog spark start` (which warms the server up) with `env`'s server folder, without a
    loader (these engines' logs load their own batches); not timed."""
    done = subprocess.run(
        [sys.executable, "-m", "synclog", "spark", "start", "--no-loader"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"synclog spark start failed: {done.stderr.strip()}")
    print(done.stdout.strip(), flush=True)


def update_results(out: Path, sections: list[tuple[str, str]]) -> None:
    """Print each (title, text) section and put it in `out` in place of its earlier self."""
    text = out.read_text(encoding="utf-8") if out.exists() else "# Benchmark results\n"
    for title, section in sections:
        print(section)
        text = replace_section(text, title, section)
    out.write_text(text, encoding="utf-8")


def replace_section(text: str, title: str, new: str) -> str:
    """`text` with its section starting `title` replaced by `new` (appended when there is none)."""
    start = text.find(title)
    if start < 0:
        return text.rstrip("\n") + "\n\n" + new
    end = text.find("\n## ", start + len(title))
    return text[:start] + new + (text[end + 1 :] if end >= 0 else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--answer-seconds", type=float, default=1.0)
    parser.add_argument("--latency-batches", type=int, default=50, help="0: no batch latency")
    parser.add_argument(
        "--modes", default="alone,warm,cold", help="engine modes beside the sync alone (alone: the floor)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--one-run", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--no-log", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--spark-alone", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_run:
        print(json.dumps(one_run(args.one_run, args)))
        return 0

    sys.path.insert(0, str(HERE.parent / "integration"))
    from synclog import spark_server

    sections = []
    with tempfile.TemporaryDirectory(prefix="synclog-engine-bench-") as tmp:
        folder = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
        cold = {**env, spark_server.DIR_ENV: str(folder / "no-server")}
        env[spark_server.DIR_ENV] = os.environ[spark_server.DIR_ENV] = str(folder / "spark")
        modes = [m for m in args.modes.split(",") if m]
        found = {"sync alone": runs("sync alone", env, args, folder)}
        if "cold" in modes:
            found["cold"] = runs("cold", cold, args, folder)
        start_warm(env)
        try:
            if "alone" in modes:
                found[ALONE] = runs(ALONE, env, args, folder)
            if "warm" in modes:
                found["warm"] = runs("warm", env, args, folder)
                sections.append((OVERHEAD_TITLE, overhead_section(found, args)))
            if args.latency_batches:
                sections.append((LATENCY_TITLE, latency_section(*latencies(folder, args.latency_batches))))
        finally:
            spark_server.stop()
    update_results(args.out, sections)
    return 0


if __name__ == "__main__":
    sys.exit(main())
