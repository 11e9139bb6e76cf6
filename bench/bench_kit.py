"""What the benchmarks share: the rows, timing and memory of a method, rounds, and the report's tables."""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from synclog.targets.base import TargetSettings
from synclog.targets.keys import Keys
from synclog.targets.tables import TableSpec
from synclog.urls import TargetURL
from synclog_postgres.plugin import TARGET_TYPE
from synclog_postgres.target import PostgresTarget
from synclog_testing.factories import REJECTION

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "integration"))
from harness.postgres_server import PostgresServer  # noqa: E402

ROWS = int(os.environ.get("SYNCLOG_BENCH_ROWS", "1000000"))
ROUNDS = int(os.environ.get("SYNCLOG_BENCH_ROUNDS", "3"))
BATCH_ROWS = 100_000
STARTED = datetime(2026, 3, 1, 8, tzinfo=UTC)


@dataclass(frozen=True)
class Result:
    """One method's run: rows it left in its table, seconds, client memory at start and at peak,
    and for synclog's write_run the seconds of each pass."""

    method: str
    rows: int
    seconds: float
    start_bytes: int
    peak_bytes: int
    passes: dict[str, float] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.rows / self.seconds


class PeakMemory(threading.Thread):
    """Samples the RSS of this process and its descendants (Spark's JVM and Python workers)."""

    def __init__(self, interval: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.interval, self.peak, self._done = interval, 0, threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, tree_rss(os.getpid()))
            self._done.wait(self.interval)

    def stop(self) -> int:
        self._done.set()
        self.join()
        return max(self.peak, tree_rss(os.getpid()))


def tree_rss(root: int) -> int:
    """Resident bytes of `root` and every process below it."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    for pid in tree:
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * page
        except OSError:
            continue
    return total


def measure(method: str, run: Callable[[], Any], count: Callable[[], int]) -> Result:
    """Time `run` while sampling memory; `count` then says how many rows it left."""
    start_bytes = tree_rss(os.getpid())
    sampler = PeakMemory()
    sampler.start()
    started = time.perf_counter()
    try:
        returned = run()
    finally:
        seconds = time.perf_counter() - started
        peak = sampler.stop()
    passes = returned if isinstance(returned, dict) else {}
    result = Result(method, count(), seconds, start_bytes, peak, passes)
    print(f"  {method}: {result.rows:,} rows in {seconds:.1f}s ({result.rate:,.0f} rows/s)", flush=True)
    return result


def records_frame(spark: SparkSession, rows: int, batch_rows: int = BATCH_ROWS) -> DataFrame:
    """Record results with ≈300-byte JSON payloads, in batches of `batch_rows`, 5% rejected."""
    i = F.col("id")
    payload = F.to_json(
        F.struct(
            F.concat(F.lit("user"), i.cast("string"), F.lit("@example.com")).alias("email"),
            F.concat(F.lit("First"), (i % 997).cast("string")).alias("first_name"),
            F.concat(F.lit("Lastname"), (i % 7919).cast("string")).alias("last_name"),
            F.concat(F.lit("Company "), (i % 50021).cast("string"), F.lit(" Inc.")).alias("company"),
            F.lit("Head of Data Platform Engineering").alias("title"),
            F.element_at(
                F.array(*map(F.lit, ("Berlin", "Lisbon", "Austin", "Osaka"))), (i % 4 + 1).cast("int")
            ).alias("city"),
            F.lit("enterprise").alias("plan"),
            (i % 500).alias("seats"),
            F.round((i % 100000) / 7.0, 2).alias("lifetime_value"),
            F.lit("2025-11-02T10:15:00Z").alias("created_at"),
            F.array(F.lit("vip"), F.lit("newsletter"), F.lit("beta")).alias("tags"),
            (i % 3 == 0).alias("marketing_opt_in"),
        )
    )
    batch = (i / batch_rows).cast("int")
    rejected = i % 20 == 0
    started = F.lit(STARTED) + F.make_interval(mins=batch)
    return spark.range(rows, numPartitions=4).select(
        F.concat(F.lit("user"), i.cast("string"), F.lit("@example.com")).alias("record_identifier"),
        F.element_at(
            F.array(*map(F.lit, ("upsert", "update", "create", "delete"))), (i % 4 + 1).cast("int")
        ).alias("operation"),
        F.when(rejected, F.lit("rejected")).otherwise(F.lit("succeeded")).alias("status"),
        F.when(rejected, F.lit(REJECTION)).alias("status_message"),
        payload.alias("record_payload"),
        batch.alias("batch_number"),
        started.alias("batch_started_at"),
        (started + F.make_interval(secs=F.lit(30))).alias("batch_completed_at"),
    )


def frame_keys(table: TableSpec, frame: DataFrame) -> Keys:
    """The replace keys of the rows of `frame` (a bench's load of rows it wrote itself)."""
    key = table.replace_key
    return Keys.of_values(key, [tuple(row) for row in frame.select(*key).distinct().collect()])


def open_target(pg: PostgresServer, schema: str) -> PostgresTarget:
    """A target whose census tables live in `schema`."""
    target = TARGET_TYPE.open(TargetURL.parse(pg.url), TargetSettings(schemas={"census": schema}))
    assert isinstance(target, PostgresTarget)
    return target


def count(pg: PostgresServer, relation: str) -> Callable[[], int]:
    def rows() -> int:
        with psycopg.connect(pg.dsn) as conn:
            found = conn.execute(f"SELECT count(*) FROM {relation}").fetchone()
        return int(found[0]) if found else 0

    return rows


@dataclass(frozen=True)
class Method:
    """A load method: `setup` (untimed) gives it a fresh empty table, `run` loads, `count` checks."""

    name: str
    setup: Callable[[], None]
    run: Callable[[], Any]
    """Loads; may return the seconds of each pass (a dict)."""
    count: Callable[[], int]


@dataclass(frozen=True)
class Summary:
    """A method over every round: the median round's time, the highest memory peak."""

    method: str
    rounds: list[Result]

    @property
    def rows(self) -> int:
        return self.rounds[-1].rows

    @property
    def seconds(self) -> float:
        return statistics.median(r.seconds for r in self.rounds)

    @property
    def rate(self) -> float:
        return self.rows / self.seconds

    @property
    def start_bytes(self) -> int:
        return min(r.start_bytes for r in self.rounds)

    @property
    def peak_bytes(self) -> int:
        return max(r.peak_bytes for r in self.rounds)

    @property
    def median_round(self) -> Result:
        return sorted(self.rounds, key=lambda r: r.seconds)[(len(self.rounds) - 1) // 2]


def settle(pg: PostgresServer) -> None:
    """Flush what the previous method left dirty, so it does not slow the next one down."""
    checkpoint(pg)
    os.sync()


def rounds(methods: list[Method], settle: Callable[[], None]) -> list[Summary]:
    """Every method once per round, the order rotated each round so none always goes first;
    `settle` runs after each method's setup."""
    results: dict[str, list[Result]] = {m.name: [] for m in methods}
    for number in range(ROUNDS):
        print(f" round {number + 1} of {ROUNDS}", flush=True)
        shift = number % len(methods)
        for method in methods[shift:] + methods[:shift]:
            method.setup()
            settle()
            results[method.name].append(measure(method.name, method.run, method.count))
    return [Summary(m.name, results[m.name]) for m in methods]


def checkpoint(pg: PostgresServer) -> None:
    with psycopg.connect(pg.dsn, autocommit=True) as conn:
        conn.execute("CHECKPOINT")


def table_lines(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def method_table(summaries: list[Summary], baseline: str) -> list[str]:
    """The methods' table, each against `baseline`."""
    base = next(s for s in summaries if s.method == baseline)
    rows = [
        [
            r.method,
            f"{r.rows:,}",
            f"{r.seconds:.1f}",
            " / ".join(f"{x.seconds:.1f}" for x in r.rounds),
            f"{r.rate:,.0f}",
            f"{r.start_bytes / 2**20:,.0f} → {r.peak_bytes / 2**20:,.0f}",
            f"{r.rate / base.rate:.2f}x",
        ]
        for r in summaries
    ]
    header = [
        "method",
        "rows",
        "seconds (median)",
        "seconds per round",
        "rows/s",
        "client RSS MiB (lowest start → highest peak)",
        f"vs {baseline}",
    ]
    return table_lines(header, rows)


def goal_line(baseline: Summary, ours: Summary, goal: float) -> str:
    """write_run ≥ `goal` times the baseline: the median ratio and every round's."""
    per_round = ", ".join(
        f"{b.seconds / o.seconds:.2f}x" for b, o in zip(baseline.rounds, ours.rounds, strict=True)
    )
    ratio = ours.rate / baseline.rate
    return (
        f"Goal: synclog write_run ≥ {goal}x {baseline.method} — measured {ratio:.2f}x "
        f"({'met' if ratio >= goal else 'missed'}; per round {per_round})."
    )


def pass_lines(write_run: Summary) -> list[str]:
    """What each pass of write_run's median round cost."""
    chosen = write_run.median_round
    rest = chosen.seconds - sum(chosen.passes.values())
    rows = [
        [name, f"{seconds:.1f}", f"{seconds / chosen.seconds:.0%}"] for name, seconds in chosen.passes.items()
    ]
    rows.append(["the rest (session, DDL, run bookkeeping)", f"{rest:.1f}", f"{rest / chosen.seconds:.0%}"])
    return [
        "synclog write_run, its median round pass by pass:",
        "",
        *table_lines(["pass", "seconds", "share"], rows),
    ]
