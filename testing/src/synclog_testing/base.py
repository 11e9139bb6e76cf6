"""What every conformance class shares (`ConformanceBase`): the target from the
`synclog_target_url` fixture, its storage, Spark, and helpers to write and read the log."""

from __future__ import annotations

import os
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pyspark.sql import SparkSession

from synclog.config import Config, SyncSettings
from synclog.layouts.census import SYNC_LOG
from synclog.layouts.hightouch import CHANGELOG, RUNS, SNAPSHOT
from synclog.layouts.registry import layout
from synclog.model import Run
from synclog.plugins.manager import registry
from synclog.spark import spark_session
from synclog.storage.location import Location
from synclog.targets.base import Target, TargetSettings
from synclog.targets.tables import TableSpec
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_testing.factories import RECORD_DDL, Person, make_records, make_run, person_rows
from synclog_testing.outage import Outage


class ConformanceBase:
    """The fixtures and helpers every conformance class shares: the target (from the
    `synclog_target_url` fixture), its storage, Spark, and how the seeds' names are spelt."""

    seed_names: ClassVar[dict[str, str]] = {
        "CENSUS.CENSUS.SYNC_LOG": "census.sync_log",
        "CENSUS.CENSUS.SOURCE_OBJECTS": "census.source_objects",
    }
    """How the seed queries' Snowflake names are spelt on this target."""
    expected_sync_log: ClassVar[str] = "census.sync_log"
    settings: ClassVar[TargetSettings] = TargetSettings()
    partition_columns: ClassVar[tuple[str, ...]] = ()
    """Columns the target's storage puts after a table's own (Spark's Parquet partition columns);
    the checks of column order and the reference model's reads leave them out."""
    hightouch_config: ClassVar[Config] = Config(defaults=SyncSettings(layouts=("hightouch",)))

    @pytest.fixture
    def target_url(self, request: pytest.FixtureRequest) -> Iterator[str]:
        """A fresh, empty target per test: the `synclog_target_url` fixture (synclog's pytest plugin)."""
        yield request.getfixturevalue("synclog_target_url")

    @pytest.fixture(scope="session")
    @classmethod
    def spark(cls) -> SparkSession:
        return spark_session()

    @pytest.fixture
    def storage(self, tmp_path: Path) -> Location:
        """Fresh storage for the test: a temp folder, or a new prefix of `$SYNCLOG_TEST_STORAGE`
        (e.g. s3://bucket/prefix, for runs on a cluster whose executors do not share this disk)."""
        shared = os.environ.get("SYNCLOG_TEST_STORAGE")
        if shared:
            return Location.parse(shared).child(uuid.uuid4().hex)
        return Location.parse(str(tmp_path / "storage"))

    @pytest.fixture
    def target(self, target_url: str, storage: Location) -> Iterator[Target]:
        target = registry().open(TargetURL.parse(target_url), replace(self.settings, storage=storage))
        yield target
        target.close()

    @pytest.fixture
    def outage(self) -> Iterator[Outage]:
        pytest.skip("no outage is staged for this target")
        yield  # pragma: no cover

    def log(self, target: Target, spark: SparkSession, config: Config | None = None) -> SyncLog:
        return SyncLog(target, replace(config or Config(), storage=target.storage), spark)

    def require(self, target: Target, layout: str) -> None:
        """Skip the test unless `target` holds `layout`."""
        if layout not in target.capabilities.layouts:
            pytest.skip(f"{target.url.scheme} does not hold the {layout} layout")

    def count(self, target: Target, where: str = "1 = 1") -> int:
        """Logged records matching `where`, a condition on the census `sync_log` columns."""
        log = target.relation(SYNC_LOG, SYNC_LOG.view).render()
        return int(target.query(f"SELECT COUNT(*) AS n FROM {log} WHERE {where}").column(0)[0].as_py())

    def logged_tables(self, target: Target) -> list[TableSpec]:
        """The tables of the target's default layout that exist."""
        return target.existing_tables(layout(target.capabilities.layouts[0]).tables)

    def column_names(self, target: Target, table: TableSpec) -> list[str]:
        """The stored columns of `table` in order, lower case, without `partition_columns`."""
        relation = target.relation(table).render()
        names = [c.lower() for c in target.query(f"SELECT * FROM {relation} WHERE 1 = 0").column_names]
        return [name for name in names if name not in self.partition_columns]

    def seed(self, sql: str) -> str:
        for snowflake_name, own_name in self.seed_names.items():
            sql = sql.replace(snowflake_name, own_name)
        return sql

    def logged_text(self, target: Target) -> str:
        """Every value of every table of every layout the target holds, as text (no column names)."""
        tables = [t for name in target.capabilities.layouts for t in layout(name).tables]
        rows = [tuple(r.values()) for t in target.existing_tables(tables) for r in self.rows(target, t)]
        return "\n".join(map(str, rows))

    def rows(self, target: Target, table: TableSpec, where: str = "1 = 1") -> list[dict[str, Any]]:
        """Every row of `table` matching `where`, with lower-case column names."""
        return self.rows_sql(target, f"SELECT * FROM {target.relation(table).render()} WHERE {where}")

    def rows_sql(self, target: Target, sql: str) -> list[dict[str, Any]]:
        """A query's rows, with lower-case column names."""
        return [{k.lower(): v for k, v in row.items()} for row in target.query(sql).to_pylist()]

    def write_people(
        self, log: SyncLog, run: Run, people: list[Person], splits: dict[str, str] | None = None
    ) -> None:
        rows = person_rows(run, people)
        if splits is None:
            records = make_records(log.spark, rows)
        else:
            rows = [(*row, splits.get(row[0] or "")) for row in rows]
            records = log.spark.createDataFrame(rows, RECORD_DDL + ", split_group string")
        log.write_run(run, records)

    def write_audience_runs(self, log: SyncLog) -> tuple[Run, Run, list[Person]]:
        """Two runs of sync 77 ("Audience 77"): people added, changed, retried, removed, rejected
        and sent twice; returns both runs and the second's people (to replay it)."""
        first = make_run(sync_id=77, sync_run_id=701, model_name="Audience 77")
        second = replace(first, sync_run_id=702, started_at=first.started_at + timedelta(minutes=10))
        ok, rejected = "succeeded", "rejected"
        self.write_people(
            log,
            first,
            [
                ("a", "upsert", ok, 1),
                ("b", "upsert", ok, 1),
                ("c", "upsert", rejected, 1),
                ("d", "upsert", ok, 1),
                ("e", "upsert", ok, 1),
                (None, "upsert", ok, 1),
            ],
        )
        then: list[Person] = [
            ("a", "upsert", ok, 1),  # sent again as before: in the snapshot, not in the changelog
            ("b", "upsert", ok, 2),
            ("c", "upsert", ok, 1),  # sent again after failing: a retry, logged
            ("d", "delete", ok, 1),
            ("f", "upsert", rejected, 1),
            ("g", "upsert", ok, 1),
            ("g", "upsert", ok, 1),
            ("h", "upsert", rejected, 1),
        ]
        self.write_people(log, second, then)
        return first, second, then

    def changelog(self, target: Target, run: Run) -> Counter[tuple[Any, ...]]:
        where = f"sync_id = {int(run.sync_id)} AND sync_run_id = {int(run.sync_run_id)}"
        rows = self.rows(target, CHANGELOG, where)
        return Counter((r["row_id"], r["op_type"], r["status"], r["failure_reason"]) for r in rows)

    def snapshot(self, target: Target, sync_id: int) -> set[tuple[Any, ...]]:
        rows = self.rows(target, SNAPSHOT, f"sync_id = {int(sync_id)}")
        found = {
            (r["row_id"], r["op_type"], r["status"], r["failure_reason"], r["last_sync_run_id"]) for r in rows
        }
        assert len(found) == len(rows), "one snapshot row per row id"
        return found

    def assert_runs_agree_with_changelog(self, target: Target) -> None:
        """Every `sync_runs` count equals what the changelog holds for the run."""
        counts = Counter((r["sync_run_id"], r["op_type"], r["status"]) for r in self.rows(target, CHANGELOG))
        runs = self.rows(target, RUNS)
        assert runs
        for run in runs:
            for op_type, op in (("added", "add"), ("changed", "change"), ("removed", "remove")):

                def n(*statuses: str, op_type: str = op_type, run_id: int = run["sync_run_id"]) -> int:
                    return sum(counts[(run_id, op_type, s)] for s in statuses)

                assert run[f"num_planned_{op}"] == n("succeeded", "failed", "aborted")
                assert run[f"num_attempted_{op}"] == n("succeeded", "failed")
                assert run[f"num_succeeded_{op}"] == n("succeeded")
                assert run[f"num_failed_{op}"] == n("failed")

    def contents(self, target: Target) -> dict[str, list[tuple[Any, ...]]]:
        """Every hightouch table's rows, sorted, to compare before and after a replay."""
        return {
            t.name: sorted((tuple(map(str, r.values())) for r in self.rows(target, t)), key=str)
            for t in (CHANGELOG, SNAPSHOT, RUNS)
        }
