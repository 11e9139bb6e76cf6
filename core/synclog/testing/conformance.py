"""The conformance suite every target passes: subclass it once per target (dbt-style).

class TestMyWarehouse(TargetConformance):
    seed_names = {"CENSUS.CENSUS.SYNC_LOG": "census.sync_log", ...}

    @pytest.fixture
    def target_url(self) -> Iterator[str]:
        yield "mywarehouse://…"   # a fresh, empty database per test
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import ClassVar

import pytest
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from synclog.config import Config, SyncSettings
from synclog.errors import InputError
from synclog.layouts.census import SYNC_LOG
from synclog.plugins.manager import registry
from synclog.spark import spark_session
from synclog.targets.base import Target, TargetSettings
from synclog.targets.sql import VERSIONS_TABLE
from synclog.testing.factories import REJECTION, make_records, make_run, record_rows
from synclog.urls import TargetURL
from synclog.writer import SyncLog

SEED_000_BY_SYNC = """SELECT *
FROM CENSUS.CENSUS.SYNC_LOG log
LEFT JOIN CENSUS.CENSUS.SOURCE_OBJECTS source
ON log.source_object_id = source.id
WHERE log.sync_id = 1234"""

SEED_000_DELETES = """SELECT *
FROM CENSUS.CENSUS.SYNC_LOG log
LEFT JOIN CENSUS.CENSUS.SOURCE_OBJECTS source
ON log.source_object_id = source.id
WHERE log.sync_run_id = 5678
  AND log.operation = 'delete'"""


FAILURE = "synclog-conformance-failure"
"""What the frame of `failing_sync_log_frame` raises, on an executor, part-way through."""
FAIL_AT = 399


def _batch_or_fail(i: int) -> int:
    if i == FAIL_AT:
        raise RuntimeError(FAILURE)
    return i % 2


def sync_log_frame(spark: SparkSession, sync_run_id: int, batch_number: Column, rows: int = 400) -> DataFrame:
    """`rows` census `sync_log` rows of `sync_run_id` in 4 partitions, built on the executors."""
    values = {
        "log_id": F.concat(F.lit("frame-"), F.col("id").cast("string")),
        "sync_id": F.lit(1234),
        "sync_run_id": F.lit(sync_run_id),
        "record_identifier": F.concat(F.lit("frame-"), F.col("id").cast("string")),
        "record_payload": F.lit('{"loaded": false}'),
        "batch_started_at": F.current_timestamp(),
        "operation": F.lit("upsert"),
        "status": F.lit("succeeded"),
        "batch_number": batch_number,
    }
    return spark.range(0, rows, numPartitions=4).select(
        *[values.get(c.name, F.lit(None)).cast(c.type.spark()).alias(c.name) for c in SYNC_LOG.columns]
    )


def failing_sync_log_frame(spark: SparkSession, sync_run_id: int) -> DataFrame:
    """Rows of batches 0 and 1 of `sync_run_id` whose last row raises FAILURE on its executor.

    The first partitions are complete (and may already be staged) when the last one raises.
    """
    batch_number = F.udf(_batch_or_fail, "int", useArrow=False)("id")
    return sync_log_frame(spark, sync_run_id, batch_number, rows=FAIL_AT + 1)


class TargetConformance:
    """What every target must do. Subclasses provide `target_url` and the target's names."""

    seed_names: ClassVar[dict[str, str]] = {
        "CENSUS.CENSUS.SYNC_LOG": "census.sync_log",
        "CENSUS.CENSUS.SOURCE_OBJECTS": "census.source_objects",
    }
    """How the seed queries' Snowflake names are spelt on this target."""
    expected_sync_log: ClassVar[str] = "census.sync_log"
    settings: ClassVar[TargetSettings] = TargetSettings()

    @pytest.fixture
    def target_url(self) -> Iterator[str]:
        raise NotImplementedError("a conformance subclass provides a fresh target URL")

    @pytest.fixture(scope="session")
    @classmethod
    def spark(cls) -> SparkSession:
        return spark_session()

    @pytest.fixture
    def target(self, target_url: str) -> Iterator[Target]:
        target = registry().open(TargetURL.parse(target_url), self.settings)
        yield target
        target.close()

    def log(self, target: Target, spark: SparkSession, config: Config | None = None) -> SyncLog:
        state_dir = tempfile.mkdtemp(prefix="synclog-conformance-")
        return SyncLog(target, replace(config or Config(), state_dir=state_dir), spark)

    def count(self, target: Target, where: str = "1 = 1") -> int:
        log = target.relation(SYNC_LOG, SYNC_LOG.view).render()
        return int(target.query(f"SELECT COUNT(*) AS n FROM {log} WHERE {where}").column(0)[0].as_py())

    def seed(self, sql: str) -> str:
        for snowflake_name, own_name in self.seed_names.items():
            sql = sql.replace(snowflake_name, own_name)
        return sql

    # -- naming and DDL ------------------------------------------------------------------------

    def test_sync_log_is_named_as_documented(self, target: Target) -> None:
        assert str(target.relation(SYNC_LOG, SYNC_LOG.view)) == self.expected_sync_log

    def test_ddl_is_idempotent_and_versioned(self, target: Target, spark: SparkSession) -> None:
        target.ensure([SYNC_LOG])
        target.ensure([SYNC_LOG])
        versions = target.relation(SYNC_LOG, VERSIONS_TABLE).render()
        rows = target.query(f"SELECT * FROM {versions}").to_pylist()
        assert len(rows) == 1
        assert target.existing_tables([SYNC_LOG]) == [SYNC_LOG]

    def test_new_columns_are_added_at_the_end(self, target: Target, spark: SparkSession) -> None:
        older = replace(SYNC_LOG, columns=SYNC_LOG.columns[:-1])
        target.ensure([older])
        target.ensure([SYNC_LOG])
        versions = target.relation(SYNC_LOG, VERSIONS_TABLE).render()
        rows = target.query(f"SELECT * FROM {versions}").to_pylist()
        assert len(rows) == 2
        log = target.relation(SYNC_LOG).render()
        columns = target.query(f"SELECT * FROM {log} WHERE 1 = 0").column_names
        assert [c.lower() for c in columns] == SYNC_LOG.column_names()

    # -- loading -------------------------------------------------------------------------------

    def test_seed_000_queries_run_unchanged(self, target: Target, spark: SparkSession) -> None:
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        by_sync = target.query(self.seed(SEED_000_BY_SYNC))
        deletes = target.query(self.seed(SEED_000_DELETES))
        assert by_sync.num_rows == 40
        assert deletes.num_rows == 10
        names = {n.lower() for n in by_sync.column_names}
        assert {"log_id", "record_payload", "_census_logged_at", "name", "type"} <= names

    def test_statuses_and_invalid_records(self, target: Target, spark: SparkSession) -> None:
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        assert self.count(target) == 40
        assert self.count(target, "invalid_reason = 'NULL'") == 1
        assert self.count(target, "invalid_reason = 'DUPLICATE'") == 2
        # Every 5th record is rejected (8), but record 9 is a duplicate: flagged as invalid instead.
        assert self.count(target, f"status = 'rejected' AND status_message = '{REJECTION}'") == 7
        assert self.count(target, "status NOT IN ('succeeded', 'rejected')") == 0

    def test_replayed_run_and_batch_leave_one_copy(self, target: Target, spark: SparkSession) -> None:
        run = make_run()
        rows = record_rows(run)
        log = self.log(target, spark)
        log.write(run, make_records(spark, rows))
        log.write_run(run, make_records(spark, rows))
        assert self.count(target) == 40
        first_batch = [r for r in rows if r[5] == 0][:5]
        log.write(run, make_records(spark, first_batch))
        assert self.count(target) == 25
        assert self.count(target, "batch_number = 1") == 20

    def test_failure_mid_load_leaves_nothing_half_written(self, target: Target, spark: SparkSession) -> None:
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        log = target.relation(SYNC_LOG, SYNC_LOG.view).render()
        before = target.query(f"SELECT log_id FROM {log} ORDER BY log_id").column(0).to_pylist()
        with pytest.raises(Exception, match=FAILURE):
            target.replace_rows(SYNC_LOG, failing_sync_log_frame(spark, run.sync_run_id))
        after = target.query(f"SELECT log_id FROM {log} ORDER BY log_id").column(0).to_pylist()
        assert len(before) == 40
        assert after == before

    def test_bad_input_writes_nothing(self, target: Target, spark: SparkSession) -> None:
        run = make_run()
        rows = record_rows(run)
        rows[7] = (*rows[7][:2], "exploded", *rows[7][3:])
        with pytest.raises(InputError, match="'status' has unknown value 'exploded'"):
            self.log(target, spark).write_run(run, make_records(spark, rows))
        assert target.existing_tables([SYNC_LOG]) == []

    def test_oversized_payloads_are_truncated(self, target: Target, spark: SparkSession) -> None:
        limit = target.capabilities.max_json_bytes
        if limit is None:
            pytest.skip("this target has no payload size limit")
        run = make_run()
        rows = record_rows(run, count=4, null_at=(), duplicate_of={})
        rows[0] = (*rows[0][:4], '{"blob": "' + "x" * (limit + 10) + '"}', *rows[0][5:])
        self.log(target, spark).write_run(run, make_records(spark, rows))
        assert self.count(target) == 4

    # -- retention -----------------------------------------------------------------------------

    def test_retention_counts_from_the_batch_time(self, target: Target, spark: SparkSession) -> None:
        now = datetime.now(UTC)
        config = Config(syncs={99: SyncSettings(retention_days=30)})
        log = self.log(target, spark, config)
        for sync_id, run_id, age in ((1234, 1, 10), (1234, 2, 1), (99, 3, 10)):
            run = make_run(sync_id=sync_id, sync_run_id=run_id)
            rows = record_rows(run, count=10, started_at=now - timedelta(days=age))
            log.write(run, make_records(spark, rows))
        result = log.cleanup(now)
        assert result.total == 10
        assert self.count(target, "sync_run_id = 1") == 0
        assert self.count(target, "sync_run_id = 2") == 10
        assert self.count(target, "sync_run_id = 3") == 10
        assert log.cleanup(now).total == 0
