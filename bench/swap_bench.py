"""Swap seconds against table size: a write's swap reads its own run's data, not the table.

On DuckDB and PostgreSQL, census `sync_log_records` grows in bulk to each size (1 thousand to
16 million rows: runs of forty 2,000-row batches, one run an hour, over fifty syncs), and at each
size the newest run's first batch is written again with 2,000 rows (`replace_rows`: the stage,
then the swap), its swap timed (the statements of `run_swap`) right after the growth (the table's
statistics as the growth left them: PostgreSQL's autovacuum is off on the bench's server, so its
planner has not seen the new rows) and then settled (after ANALYZE). Beside each, the same moment's
DELETE of the swap before constant keys, which matched the table against the stage's keys
(`(keys) IN (SELECT DISTINCT … FROM stage)`), run on the same stage and rolled back.

Writes the section "Swap seconds against table size" of bench/RESULTS.md (replacing an earlier
one).

    python bench/swap_bench.py [--sizes 1000,16000,256000,2000000,16000000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench_kit import STARTED
from engine_bench import replace_section

from synclog.layouts.census import SYNC_LOG
from synclog.spark import spark_session
from synclog.storage.location import Location
from synclog.targets.base import TargetSettings
from synclog.targets.duckdb import TARGET_TYPE as DUCKDB
from synclog.targets.keys import Keys
from synclog.targets.rows import Rows
from synclog.targets.sql import SqlTarget
from synclog.targets.sql_statements import Statement
from synclog.urls import TargetURL
from synclog_postgres import partitions
from synclog_postgres.plugin import TARGET_TYPE as POSTGRES

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "integration"))
from harness.postgres_server import postgres_server  # noqa: E402

RESULTS = ROOT / "bench" / "RESULTS.md"
TITLE = "## Swap seconds against table size"
SIZES = (1_000, 16_000, 256_000, 2_000_000, 16_000_000)
BATCH = 2_000
BATCHES_PER_RUN = 40
SYNCS = 50
GROWN = (
    "SELECT 'g' || CAST(i AS VARCHAR), {run} % {syncs} + 1, {run} + 1000, 'user' || CAST(i AS VARCHAR) || "
    "'@example.com', {json}, {started}, {started}, 'upsert', 'succeeded', CAST({batch} AS INTEGER)"
)
"""The columns of row `i` of the bulk growth: its run is `i / BATCH / BATCHES_PER_RUN`."""
COLUMNS = (
    "log_id",
    "sync_id",
    "sync_run_id",
    "record_identifier",
    "record_payload",
    "batch_started_at",
    "batch_completed_at",
    "operation",
    "status",
    "batch_number",
)


class Bench:
    """One target's table, grown in bulk and swapped into, and the swaps' seconds."""

    def __init__(self, name: str, target: SqlTarget) -> None:
        self.name, self.target = name, target
        self.relation = target.relation(SYNC_LOG).render()
        self.rows = 0
        self.swaps: list[float] = []
        self.joined: list[float] = []
        target.ensure([SYNC_LOG])
        run_swap = target.run_swap

        def timed(statements: Sequence[Statement]) -> None:
            self.joined.append(self.stage_join(statements))
            started = time.perf_counter()
            run_swap(statements)
            self.swaps.append(time.perf_counter() - started)

        target.run_swap = timed  # type: ignore[method-assign]

    def grow(self, size: int) -> float:
        """Insert generated rows up to `size` in one statement; its seconds."""
        started = time.perf_counter()
        self.make_room(size)
        self.target.client.execute(self.growth_sql(self.rows, size))
        self.rows = size
        return time.perf_counter() - started

    def growth_sql(self, first: int, end: int) -> str:
        raise NotImplementedError

    def make_room(self, size: int) -> None:
        """Whatever the table needs before rows up to `size` arrive (PostgreSQL: day partitions)."""

    def analyze(self) -> None:
        raise NotImplementedError

    def replay(self, spark: Any) -> None:
        """The newest run's first batch written again, 2,000 rows, through `replace_rows`."""
        run = (self.rows - 1) // BATCH // BATCHES_PER_RUN
        started = STARTED + timedelta(hours=run)
        rows = [
            {
                "log_id": f"r{i}",
                "sync_id": run % SYNCS + 1,
                "sync_run_id": run + 1000,
                "record_identifier": f"user{i}@example.com",
                "record_payload": "{}",
                "batch_started_at": started,
                "batch_completed_at": started,
                "operation": "upsert",
                "status": "succeeded",
                "batch_number": 0,
            }
            for i in range(BATCH)
        ]
        loaded = Rows.local(spark, SYNC_LOG, rows)
        self.target.replace_rows(SYNC_LOG, loaded, Keys.of_rows(SYNC_LOG, loaded))

    def stage_join(self, statements: Sequence[Statement]) -> float:
        """The seconds of the swap before's DELETE, matched against the stage's keys, rolled back."""
        stage = re.findall(r"FROM (\S+)$", statements[-1][0])[0]
        keys = ", ".join(self.target.dialect.quote(k) for k in SYNC_LOG.replace_key)
        delete = f"DELETE FROM {self.relation} WHERE ({keys}) IN (SELECT DISTINCT {keys} FROM {stage})"
        with self.rolled_back():
            started = time.perf_counter()
            self.target.client.execute(delete)
            return time.perf_counter() - started

    @contextmanager
    def rolled_back(self) -> Iterator[None]:
        self.target.client.execute("BEGIN")
        try:
            yield
        finally:
            self.target.client.execute("ROLLBACK")


def _growth(dialect: str, first: int, end: int, series: str) -> str:
    run = (
        f"(i / {BATCH} / {BATCHES_PER_RUN})"
        if dialect == "postgres"
        else f"(i // {BATCH} // {BATCHES_PER_RUN})"
    )
    batch = (
        f"(i / {BATCH} % {BATCHES_PER_RUN})"
        if dialect == "postgres"
        else f"(i // {BATCH} % {BATCHES_PER_RUN})"
    )
    started = f"TIMESTAMPTZ '{STARTED.isoformat()}' + {run} * INTERVAL '1 hour'"
    json = "CAST('{}' AS JSONB)" if dialect == "postgres" else "CAST('{}' AS JSON)"
    select = GROWN.format(run=run, syncs=SYNCS, json=json, started=started, batch=batch)
    rows = series.format(first=first, end=end)
    return f"INSERT INTO census.sync_log_records ({', '.join(COLUMNS)}) {select} FROM {rows}"


class DuckDBBench(Bench):
    def growth_sql(self, first: int, end: int) -> str:
        return _growth("duckdb", first, end, "range({first}, {end}) AS t(i)")

    def analyze(self) -> None:
        self.target.client.execute("ANALYZE")


class PostgresBench(Bench):
    def growth_sql(self, first: int, end: int) -> str:
        return _growth("postgres", first, end, "generate_series({first}, {end} - 1) AS g(i)")

    def make_room(self, size: int) -> None:
        relation = self.target.relation(SYNC_LOG)
        runs = (size - 1) // BATCH // BATCHES_PER_RUN + 1
        days = sorted({(STARTED + timedelta(hours=run)).date() for run in range(runs)})
        for day in days:
            self.target.client.execute(partitions.create_sql(relation, partitions.partition(relation, day)))

    def analyze(self) -> None:
        self.target.client.execute(f"ANALYZE {self.relation}")


def measure(bench: Bench, sizes: Sequence[int], rounds: int, spark: Any) -> list[dict[str, Any]]:
    """Per size: the growth's seconds, then the swap's and the stage join's medians, right after
    the growth and settled."""
    found = []
    for size in sizes:
        grown = bench.grow(size)
        row: dict[str, Any] = {"size": size, "grown": grown}
        for when in ("after growth", "settled"):
            if when == "settled":
                bench.analyze()
            bench.swaps.clear()
            bench.joined.clear()
            for _ in range(rounds):
                bench.replay(spark)
            row[when] = (statistics.median(bench.swaps), statistics.median(bench.joined))
        counted = bench.target.client.fetch(f"SELECT count(*) FROM {bench.relation}")[0][0]
        row["rows"] = int(counted)
        print(
            f"{bench.name:10} {row['rows']:>12,} rows  grown in {grown:6.1f}s  swap "
            f"{row['after growth'][0]:.3f}s / {row['settled'][0]:.3f}s  "
            f"(stage join {row['after growth'][1]:.3f}s / {row['settled'][1]:.3f}s)",
            flush=True,
        )
        found.append(row)
    return found


def section(results: dict[str, list[dict[str, Any]]], rounds: int) -> str:
    lines = [
        TITLE,
        "",
        "`bench/swap_bench.py`: census `sync_log_records` grown in bulk to each size, then the",
        "newest run's first batch written again (2,000 rows, `replace_rows`); the seconds of its swap",
        "(the statements of `run_swap`: the DELETE of the keys, as constants, and the INSERT from the",
        f"stage, in one transaction), the median of {rounds}, right after the growth (PostgreSQL: before its",
        "statistics saw the new rows) and settled (after ANALYZE). Beside it, the DELETE of the swap",
        "before constant keys, matched against the stage's keys (`(keys) IN (SELECT DISTINCT … FROM",
        "stage)`), on the same stage at the same moment, rolled back. (At 1,000 rows, half a batch,",
        "the replay's 2,000 rows make the table 2,000 rows after the first round.)",
        "",
        "| target | rows | swap, after growth | swap, settled | stage join, after growth "
        "| stage join, settled |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, rows in results.items():
        for row in rows:
            (swap_new, join_new), (swap_set, join_set) = row["after growth"], row["settled"]
            lines.append(
                f"| {name} | {row['size']:,} | {swap_new:.3f} s | {swap_set:.3f} s | "
                f"{join_new:.3f} s | {join_set:.3f} s |"
            )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--targets", default="duckdb,postgres")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    spark = spark_session()
    results: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="synclog-swap-bench-") as folder:
        settings = TargetSettings(storage=Location.parse(str(Path(folder) / "storage")))
        benches: dict[str, Callable[[], None]] = {}

        def duckdb() -> None:
            target = DUCKDB.open(TargetURL.parse(f"duckdb:///{folder}/bench.duckdb"), settings)
            assert isinstance(target, SqlTarget)
            with target:
                results["DuckDB"] = measure(DuckDBBench("DuckDB", target), sizes, args.rounds, spark)

        def postgres() -> None:
            with postgres_server() as pg:
                target = POSTGRES.open(TargetURL.parse(pg.url), settings)
                assert isinstance(target, SqlTarget)
                with target:
                    results["PostgreSQL"] = measure(
                        PostgresBench("PostgreSQL", target), sizes, args.rounds, spark
                    )

        benches = {"duckdb": duckdb, "postgres": postgres}
        for name in args.targets.split(","):
            benches[name]()
    text = section(results, args.rounds)
    print(text)
    before = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    args.out.write_text(replace_section(before, TITLE, text), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
