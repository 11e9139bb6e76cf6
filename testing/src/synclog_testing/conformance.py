"""The conformance suite: small opt-in classes, one area each (dbt-tests-adapter style);
`TargetConformance` is all of them.

@pytest.fixture
def synclog_target_url(tmp_path):
    yield "mywarehouse://…"   # a fresh, empty database per test

class TestMyWarehouse(TargetConformance):
    seed_names = {"CENSUS.CENSUS.SYNC_LOG": "census.sync_log", ...}

`synclog_target_url` is the fixture of synclog's pytest plugin (`synclog-testing`, see
`synclog_testing.pytest_plugin`); a module or a class may give it (every built-in target does).

Tests of a layout the target does not hold skip. The record-level tests count through
`count`, a SQL `WHERE` over the census `sync_log` columns; a target without the census layout
(the lake) overrides it with an equivalent view of its own records. A subclass that can stage
an outage (a URL that does not answer yet, and a way to bring it up) provides `outage`.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import pyarrow as pa
import pytest
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from synclog import tracking
from synclog.config import Config, SyncSettings, TableSettings, TargetConfig
from synclog.demo import report
from synclog.errors import InputError
from synclog.layouts.census import SYNC_LOG
from synclog.layouts.hightouch import CHANGELOG, RUNS, SNAPSHOT, table_for
from synclog.layouts.registry import layout
from synclog.model import RunStatus
from synclog.naming import LineageDataset, Relation
from synclog.plugins.manager import registry
from synclog.spark import spark_session
from synclog.storage.location import Location
from synclog.targets.base import Target
from synclog.targets.keys import Keys
from synclog.targets.lake import LakeTarget
from synclog.targets.rows import Rows
from synclog.targets.sql import VERSIONS_TABLE
from synclog.targets.sql_statements import Statement
from synclog.tracking import RecordQuery, RunQuery, Tracked, find_records, find_runs, find_syncs
from synclog.writer import SyncLog
from synclog_testing.base import ConformanceBase
from synclog_testing.crash_points import CrashConformance
from synclog_testing.factories import (
    REJECTION,
    make_records,
    make_run,
    record_rows,
)
from synclog_testing.model_machine import Harness, run_sequences
from synclog_testing.outage import Outage
from synclog_testing.privacy import MASK_KEY, MASK_KEY_ENV, POLICY, RAW, digest, files_text, holds_field
from synclog_testing.seed_queries import SEED_002_CURRENT, SEED_002_ENTER_EXIT, SEED_002_ERRORS
from synclog_testing.swaps import SwapConformance

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


def sync_log_keys(sync_run_id: int, batches: tuple[int, ...] = (0, 1)) -> Keys:
    """The keys the rows of `sync_log_frame` (sync 1234, `sync_run_id`) replace: its `batches`."""
    return Keys.of_values(SYNC_LOG.replace_key, [(1234, sync_run_id, batch) for batch in batches])


def failing_sync_log_frame(spark: SparkSession, sync_run_id: int) -> DataFrame:
    """Rows of batches 0 and 1 of `sync_run_id` whose last row raises FAILURE on its executor.

    The first partitions are complete (and may already be staged) when the last one raises.
    """
    batch_number = F.udf(_batch_or_fail, "int", useArrow=False)("id")
    return sync_log_frame(spark, sync_run_id, batch_number, rows=FAIL_AT + 1)


LINEAGE_NAMESPACE = re.compile(r"[a-z][a-z0-9+.-]*(://[^/?#@\s]*(/[^?#@\s]*)?)?")
"""An OpenLineage dataset namespace: `scheme://authority`, a path after it, or a bare scheme;
never a user, password, query or fragment."""


def official_dataset(target: Target, relation: Relation) -> LineageDataset | None:
    """What an official target's `lineage_dataset(relation)` is, worked out apart from the
    targets' code: with the OpenLineage client's naming helpers where the spec has the row, else
    by the forms docs/engines/notices.md gives. None for any other plugin's target."""
    naming = pytest.importorskip("openlineage.client.naming.dataset", reason="needs openlineage-python")
    kind, url, parts = registry().for_url(target.url).name, target.url, relation.parts
    path = url.path.strip("/")
    if kind == "postgres":
        port = str(url.port or 5432)
        helper: Any = naming.Postgres(url.host, port, path, parts[-2], parts[-1])
    elif kind == "redshift":
        host, port = url.host.split("."), str(url.port or 5439)
        if len(host) != 6 or not url.host.endswith(".redshift.amazonaws.com"):  # a stand-in's address
            return LineageDataset(f"redshift://{url.host}:{port}", f"{path}.{relation}")
        helper = naming.Redshift(host[0], host[2], port, path, parts[-2], parts[-1])
    elif kind == "snowflake":
        organization, dash, account = url.host.partition("-")
        if not dash:  # an account named without its organization, such as fakesnow's
            return LineageDataset(f"snowflake://{url.host}", ".".join(parts))
        helper = naming.Snowflake(organization, account, *parts)
    elif kind == "bigquery":
        helper = naming.BigQuery(url.host, parts[-2], parts[-1])
    elif kind == "databricks":
        port = f":{url.port}" if url.port else ""
        return LineageDataset(f"databricks://{url.host}{port}", ".".join(parts))
    elif kind == "databricks-spark":
        workspace = spark_session().conf.get("spark.databricks.workspaceUrl", None)
        return LineageDataset(f"databricks://{workspace}" if workspace else "spark", ".".join(parts))
    elif kind == "duckdb":
        return LineageDataset(f"duckdb://{os.path.abspath(url.file_path())}", ".".join(parts))
    elif kind == "lake":
        folder = "sync_tracking_datasets" if relation.name in ("records", "metadata") else "metadata"
        if url.scheme == "lake":
            helper = naming.LocalFileSystem(os.path.join(os.path.abspath(url.file_path()), folder))
        else:
            helper = naming.S3(url.host, posixpath.join(path, folder))
    else:
        return None
    return LineageDataset(helper.get_namespace(), helper.get_name())


class NamingAndDdlConformance(ConformanceBase):
    """The documented names, idempotent and versioned DDL, columns added at the end, seed 000
    and the demo's questions."""

    def test_sync_log_is_named_as_documented(self, target: Target) -> None:
        self.require(target, "census")
        assert str(target.relation(SYNC_LOG, SYNC_LOG.view)) == self.expected_sync_log

    def test_openlineage_names_follow_the_naming_spec(self, target: Target) -> None:
        """`Target.lineage_dataset` names a log table as the OpenLineage naming spec names datasets:
        a namespace `scheme://authority[/path]` (or a bare scheme) without credentials or query,
        a name, the same when asked again; an official target's in the form its row of the spec
        (docs/engines/notices.md where the spec has none) gives."""
        held = target.capabilities.layouts
        table = SYNC_LOG if "census" in held else layout(held[0]).tables[0]
        relation = target.relation(table, table.view)
        named = target.lineage_dataset(relation)
        assert LINEAGE_NAMESPACE.fullmatch(named.namespace), named
        assert named.name.strip() and not (target.url.password and target.url.password in named.name)
        assert target.lineage_dataset(relation) == named
        expected = official_dataset(target, relation)
        assert expected is None or named == expected

    def test_ddl_is_idempotent_and_versioned(self, target: Target, spark: SparkSession) -> None:
        self.require(target, "census")
        target.ensure([SYNC_LOG])
        target.ensure([SYNC_LOG])
        versions = target.relation(SYNC_LOG, VERSIONS_TABLE).render()
        rows = target.query(f"SELECT * FROM {versions}").to_pylist()
        assert len(rows) == 1
        assert target.existing_tables([SYNC_LOG]) == [SYNC_LOG]

    def test_new_columns_are_added_at_the_end(self, target: Target, spark: SparkSession) -> None:
        self.require(target, "census")
        older = replace(SYNC_LOG, columns=SYNC_LOG.columns[:-1])
        target.ensure([older])
        target.ensure([SYNC_LOG])
        versions = target.relation(SYNC_LOG, VERSIONS_TABLE).render()
        rows = target.query(f"SELECT * FROM {versions}").to_pylist()
        assert len(rows) == 2
        assert self.column_names(target, SYNC_LOG) == SYNC_LOG.column_names()

    def test_seed_000_queries_and_the_demo_questions_run(self, target: Target, spark: SparkSession) -> None:
        self.require(target, "census")
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        by_sync = target.query(self.seed(SEED_000_BY_SYNC))
        deletes = target.query(self.seed(SEED_000_DELETES))
        assert by_sync.num_rows == 40
        assert deletes.num_rows == 10
        names = {n.lower() for n in by_sync.column_names}
        assert {"log_id", "record_payload", "_census_logged_at", "name", "type"} <= names
        # What `synclog demo` asks of the census layout, in the demo's own SQL.
        assert values(report.rejection_reasons(target)) == [(REJECTION, 7)]
        assert values(report.invalid_records(target)) == [("DUPLICATE", 2), ("NULL", 1)]
        lacking = target.capabilities.lacking("ctes", "window_functions")
        if lacking is not None:  # the question needs LAG: not asked, in one line
            with pytest.raises(report.Unanswerable, match=re.escape(lacking)):
                report.segment_changes(target, run.sync_id, run.sync_run_id)
            return
        moves = values(report.segment_changes(target, run.sync_id, run.sync_run_id))
        segment = run.source_object.name
        assert [move[:3] for move in moves] == [(segment, "entered", 22), (segment, "left", 8)]


class WritesConformance(ConformanceBase):
    """Statuses, replayed runs and batches (one on another day), a failure mid-load and one
    mid-swap, bad input and oversized payloads."""

    def test_statuses_and_invalid_records(self, target: Target, spark: SparkSession) -> None:
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        assert self.count(target) == 40
        assert self.count(target, "invalid_reason = 'NULL'") == 1
        assert self.count(target, "invalid_reason = 'DUPLICATE'") == 2
        # Every 5th record is rejected (8); record 9 is one of them and a duplicate too: the flag
        # sits beside the destination's outcome, never in its place.
        assert self.count(target, f"status = 'rejected' AND status_message = '{REJECTION}'") == 8
        assert self.count(target, "status = 'rejected' AND invalid_reason = 'DUPLICATE'") == 1
        assert self.count(target, "status NOT IN ('succeeded', 'rejected')") == 0
        # The error code is read from the message: the part before its first colon.
        assert self.count(target, "error_code = 'INVALID_EMAIL_ADDRESS'") == 8
        assert self.count(target, "error_code IS NOT NULL") == 8

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
        self.require(target, "census")
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        log = target.relation(SYNC_LOG, SYNC_LOG.view).render()
        before = target.query(f"SELECT log_id FROM {log} ORDER BY log_id").column(0).to_pylist()
        with pytest.raises(Exception, match=FAILURE):
            failing = Rows.of(failing_sync_log_frame(spark, run.sync_run_id))
            target.replace_rows(SYNC_LOG, failing, sync_log_keys(run.sync_run_id))
        after = target.query(f"SELECT log_id FROM {log} ORDER BY log_id").column(0).to_pylist()
        assert len(before) == 40
        assert after == before

    def test_replay_of_a_batch_with_a_later_batch_time(self, target: Target, spark: SparkSession) -> None:
        """A batch written again (same sync, run and batch number) with its batch time on another
        day: the table ends with the replayed rows only, and the rows of the run's other batch, of
        another sync's run of the same number and of the day the replay moves to stay as they were."""
        day = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0) - timedelta(days=3)
        later = day + timedelta(days=1)
        run = make_run(started_at=day - timedelta(hours=1))
        other_sync = make_run(sync_id=99, sync_run_id=5678, started_at=run.started_at)  # its run 5678
        next_day = make_run(sync_run_id=5679, started_at=later - timedelta(hours=1))
        log = self.log(target, spark)
        log.write(run, make_records(spark, batch_rows(0, "old", 6, day) + batch_rows(1, "kept", 4, day)))
        log.write(other_sync, make_records(spark, batch_rows(0, "other", 3, day)))
        log.write(next_day, make_records(spark, batch_rows(0, "next", 2, later)))
        log.write(run, make_records(spark, batch_rows(0, "new", 5, later)))
        assert self.count(target) == 5 + 4 + 3 + 2, "the replay changed rows it does not replace"
        assert self.count(target, "record_identifier LIKE 'old-%'") == 0
        assert (
            self.count(target, "sync_run_id = 5678 AND batch_number = 0 AND record_identifier LIKE 'new-%'")
            == 5
        )
        assert (
            self.count(target, "sync_run_id = 5678 AND batch_number = 1 AND record_identifier LIKE 'kept-%'")
            == 4
        )
        assert self.count(target, "sync_id = 99 AND record_identifier LIKE 'other-%'") == 3
        assert self.count(target, "sync_run_id = 5679 AND record_identifier LIKE 'next-%'") == 2

    def test_a_swap_failing_part_way_keeps_the_old_rows_and_a_replay_converges(
        self, target: Target, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The last statement of a replayed batch's swap fails (in the warehouse: it reads a table
        that does not exist), after every statement before it ran: the log keeps its old rows, and
        writing the batch again leaves exactly the replayed ones."""
        self.require(target, "census")
        run_swap = getattr(target, "run_swap", None)
        if run_swap is None:
            pytest.skip("this target's writes run no swap statements")
        relation = target.relation(SYNC_LOG)
        failing: Statement = (f"SELECT * FROM {relation.with_name('synclog_no_such_table').render()}", ())
        failed: list[int] = []

        def fail_last(statements: list[Statement]) -> None:
            if any(relation.render() in sql for sql, _ in statements):
                failed.append(len(statements))
                statements = [*statements[:-1], failing]
            run_swap(statements)

        day = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0) - timedelta(days=2)
        run = make_run(started_at=day - timedelta(hours=1))
        log = self.log(target, spark)
        log.write(run, make_records(spark, batch_rows(0, "old", 3, day) + batch_rows(1, "kept", 2, day)))
        before = self.logged_batches(target)
        assert len(before) == 5
        monkeypatch.setattr(target, "run_swap", fail_last)
        replayed = make_records(spark, batch_rows(0, "new", 2, day))
        with pytest.raises(Exception, match=r"(?i)synclog_no_such_table"):  # the warehouse's own error
            log.write(run, replayed)
        assert failed, "the batch's swap ran"
        assert self.logged_batches(target) == before, "the failed swap changed the log"
        monkeypatch.undo()
        log.write(run, replayed)
        assert self.logged_batches(target) == [(0, "new-0"), (0, "new-1"), (1, "kept-0"), (1, "kept-1")]

    def logged_batches(self, target: Target) -> list[tuple[int, str]]:
        """(batch number, record identifier) of every census `sync_log` row, sorted."""
        log = target.relation(SYNC_LOG, SYNC_LOG.view).render()
        rows = self.rows_sql(target, f"SELECT batch_number, record_identifier FROM {log}")
        return sorted((int(r["batch_number"]), str(r["record_identifier"])) for r in rows)

    def test_bad_input_logs_nothing(self, target: Target, spark: SparkSession) -> None:
        """The write's one job validates and stages together: tables may exist, no row reaches them."""
        run = make_run()
        rows = record_rows(run)
        rows[7] = (*rows[7][:2], "exploded", *rows[7][3:])
        with pytest.raises(InputError, match="'status' has unknown value 'exploded'"):
            self.log(target, spark).write_run(run, make_records(spark, rows))
        for table in self.logged_tables(target):
            relation = target.relation(table).render()
            assert target.query(f"SELECT count(*) AS n FROM {relation}").column(0).to_pylist() == [0], table

    def test_oversized_payloads_are_truncated(self, target: Target, spark: SparkSession) -> None:
        self.require(target, "census")
        limit = target.capabilities.max_json_bytes
        if limit is None:
            pytest.skip("this target has no payload size limit")
        run = make_run()
        rows = record_rows(run, count=4, null_at=(), duplicate_of={})
        rows[0] = (*rows[0][:4], '{"blob": "' + "x" * (limit + 10) + '"}', *rows[0][5:])
        self.log(target, spark).write_run(run, make_records(spark, rows))
        assert self.count(target) == 4


class OutagesConformance(ConformanceBase):
    """Writes survive an outage and `flush` loads them once (needs the `outage` fixture; skips without it)."""

    def test_an_outage_keeps_batches_until_flush(
        self, outage: Outage, storage: Location, spark: SparkSession
    ) -> None:
        """A target that does not answer fails no write and loses no row: `flush` loads it once."""
        run = make_run()
        rows = record_rows(run, count=40, batches=2)
        config = Config(targets={"down": TargetConfig(outage.url, settings=self.settings)}, storage=storage)
        with SyncLog.open("down", config, spark) as log:
            assert log.write(run, make_records(spark, [r for r in rows if r[5] == 0])).pending
            result = log.write_run(run, make_records(spark, [r for r in rows if r[5] == 1]))
            assert (result.pending, result.records) == (True, 20)
            (kept,) = log.spool.every()
            assert (kept.batches, kept.finished) == ((0, 1), True)
            with outage.up():
                assert log.flush() == []
                assert self.count(log.target) == 40
                assert log.flush() == []
                assert self.count(log.target) == 40
            assert not log.store.has(run)

    def test_the_first_write_after_an_outage_loads_what_waited(
        self, outage: Outage, storage: Location, spark: SparkSession
    ) -> None:
        """A target down when the sync starts fails no write; the first write once it is back loads
        the batch that waited along with its own, without a `flush`."""
        run = make_run()
        rows = record_rows(run, count=20, batches=2)
        config = Config(targets={"down": TargetConfig(outage.url, settings=self.settings)}, storage=storage)
        with SyncLog.open("down", config, spark) as log:
            assert log.write(run, make_records(spark, [r for r in rows if r[5] == 0])).pending
            with outage.up():
                assert not log.write(run, make_records(spark, [r for r in rows if r[5] == 1])).pending
                log.finish(run)
                assert self.count(log.target) == 20
            assert not log.store.has(run)

    def test_a_connection_lost_mid_run_waits_for_flush(
        self, outage: Outage, storage: Location, spark: SparkSession
    ) -> None:
        """The target goes away after the first batch: the next one waits, `flush` loads it once."""
        if not outage.goes_down_again:
            pytest.skip("this target's outage cannot start in the middle of a run")
        run = make_run()
        batches = [[r for r in record_rows(run, count=20, batches=2) if r[5] == b] for b in (0, 1)]
        config = Config(targets={"down": TargetConfig(outage.url, settings=self.settings)}, storage=storage)
        with outage.up():
            log = SyncLog.open("down", config, spark)
            assert not log.write(run, make_records(spark, batches[0])).pending
        with log:
            assert log.write_run(run, make_records(spark, batches[1])).pending
            with outage.up():
                assert log.flush() == []
                assert self.count(log.target) == 20
            assert not log.store.has(run)


class RetentionConformance(ConformanceBase):
    """Retention counts from the batch time."""

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


class HightouchConformance(ConformanceBase):
    """The hightouch layout: its tables, the diff of runs, seed 002's first two queries, whole-model
    and failed runs."""

    def test_hightouch_tables_have_the_seed_columns(self, target: Target, spark: SparkSession) -> None:
        self.require(target, "hightouch")
        run = make_run(sync_id=76, sync_run_id=761)
        self.write_people(
            self.log(target, spark, self.hightouch_config), run, [("a", "upsert", "succeeded", 1)]
        )
        seed = {
            CHANGELOG: ["sync_id", "sync_run_id", "op_type", "row_id", "status", "failure_reason", "fields"],
            SNAPSHOT: ["sync_id", "op_type", "row_id", "status", "failure_reason", "fields"],
            RUNS: [
                "sync_id", "sync_run_id", "primary_key", "destination", "model_name", "model_id", "status",
                "error", "started_at", "finished_at",
                *[f"num_{s}_{o}" for s in ("planned", "attempted", "succeeded", "failed")
                  for o in ("add", "change", "remove")],
            ],
        }  # fmt: skip
        for table, columns in seed.items():
            assert str(target.relation(table)).lower().endswith(f"hightouch_audit.{table.name}")
            relation = target.relation(table).render()
            names = [c.lower() for c in target.query(f"SELECT * FROM {relation} WHERE 1 = 0").column_names]
            expected = [c for c in columns if c != "fields" or target.capabilities.fields_column]
            assert names[: len(expected)] == expected
            assert "split_group" not in names, "split_group appears only once a sync uses splits"
        (row,) = self.rows(target, RUNS)
        assert (row["destination"], row["model_name"], row["status"]) == (
            "Salesforce",
            "High-value customers",
            "succeeded",
        )

    def test_hightouch_diff_of_runs_and_seed_002_queries(self, target: Target, spark: SparkSession) -> None:
        self.require(target, "hightouch")
        log = self.log(target, spark, self.hightouch_config)
        first, second, then = self.write_audience_runs(log)
        assert self.changelog(target, first) == Counter(
            [(p, "added", "succeeded", None) for p in ("a", "b", "d", "e", None)]
            + [("c", "added", "failed", REJECTION)]
        )
        assert self.changelog(target, second) == Counter(
            [
                ("b", "changed", "succeeded", None),
                ("c", "changed", "succeeded", None),
                ("d", "removed", "succeeded", None),
                ("f", "added", "failed", REJECTION),
                ("g", "added", "succeeded", None),  # sent twice: flagged DUPLICATE beside its status
                ("g", "added", "succeeded", None),
                ("h", "added", "failed", REJECTION),
            ]
        )
        flagged = self.rows(target, CHANGELOG, "invalid_reason IS NOT NULL")
        assert sorted((r["row_id"] or "", r["invalid_reason"]) for r in flagged) == [
            ("", "NULL"),
            ("g", "DUPLICATE"),
            ("g", "DUPLICATE"),
        ]
        coded = self.rows(target, CHANGELOG, "error_code IS NOT NULL")
        assert {(r["row_id"], r["error_code"]) for r in coded} == {
            (p, "INVALID_EMAIL_ADDRESS") for p in "cfh"
        }
        assert self.snapshot(target, 77) == {
            ("a", "unchanged", "succeeded", None, 702),
            ("b", "changed", "succeeded", None, 702),
            ("c", "unchanged", "succeeded", None, 702),
            ("e", "unchanged", "succeeded", None, 701),
            ("f", "added", "failed", REJECTION, 702),
            ("g", "added", "succeeded", None, 702),
            ("h", "added", "failed", REJECTION, 702),
        }
        self.assert_runs_agree_with_changelog(target)

        errors = target.query(self.seed(SEED_002_ERRORS))
        assert [name.lower() for name in errors.column_names] == ["failure_reason", "c"]
        assert [tuple(r.values()) for r in errors.to_pylist()] == [(REJECTION, 2)]
        # What `synclog demo` asks of the hightouch layout, in the demo's own SQL.
        assert values(report.sync_errors(target)) == [(REJECTION, 2)]
        audience_moves = report.audience_moves(target)
        per_run = [(m[1], m[3], m[4], m[5]) for m in values(audience_moves)]
        assert per_run == [(701, 6, 0, 0), (702, 4, 2, 1)]  # (run, entered, changed, left)
        # The demo names every column it selects: the same names on every engine.
        named = ["audience", "sync_run_id", "run_status", "entered", "changed", "left", "failed", "aborted"]
        assert [name.lower() for name in audience_moves.column_names] == named
        assert values(report.current_members(target)) == [("Audience 77", 5, 2)]  # g: sent, flagged
        if target.capabilities.lacking("ctes", "window_functions") is None:  # the seed's WITH and LAG
            moves = self.rows_sql(target, self.seed(SEED_002_ENTER_EXIT))
            assert list(moves[0]) == ["user_id", "audience", "type", "timestamp"]
            assert {(r["user_id"], r["audience"], r["type"]) for r in moves} == {
                *[(p, "Audience 77", "added") for p in (None, *"abcdefgh")],
                ("d", "Audience 77", "removed"),
            }

        before = self.contents(target)
        self.write_people(log, second, then)
        assert self.contents(target) == before, "replaying the latest run changes nothing"

    def test_hightouch_whole_model_runs_and_failed_runs(self, target: Target, spark: SparkSession) -> None:
        self.require(target, "hightouch")
        log = self.log(target, spark, self.hightouch_config)
        start = make_run(sync_id=78, sync_run_id=801, full_model=True).started_at
        runs = [
            make_run(
                sync_id=78, sync_run_id=801 + i, full_model=True, started_at=start + timedelta(minutes=i)
            )
            for i in range(3)
        ]
        runs[1] = replace(runs[1], status=RunStatus.FAILED, error="Destination quota exhausted")
        self.write_people(log, runs[0], [(p, "upsert", "succeeded", 1) for p in "abc"])
        self.write_people(log, runs[1], [("a", "upsert", "succeeded", 2), ("b", "upsert", "aborted", 1)])
        assert self.changelog(target, runs[1]) == Counter(
            [
                ("a", "changed", "succeeded", None),
                ("b", "changed", "aborted", None),
                ("c", "removed", None, None),  # left the model; the destination was asked nothing
            ]
        )
        assert self.snapshot(target, 78) == {
            ("a", "changed", "succeeded", None, 802),
            ("b", "unchanged", "aborted", None, 802),
        }
        (failed,) = self.rows(target, RUNS, "sync_run_id = 802")
        assert (failed["status"], failed["error"]) == ("failed", "Destination quota exhausted")
        assert (failed["num_planned_remove"], failed["num_attempted_remove"]) == (0, 0)
        assert (failed["num_planned_change"], failed["num_attempted_change"]) == (2, 1)

        self.write_people(log, runs[2], [("a", "upsert", "succeeded", 2)])
        # a is sent again exactly as in run 802, and succeeds again: no operation to log.
        assert self.changelog(target, runs[2]) == Counter([("b", "removed", None, None)])
        assert self.snapshot(target, 78) == {("a", "unchanged", "succeeded", None, 803)}
        self.assert_runs_agree_with_changelog(target)

        before = self.contents(target)
        self.write_people(log, runs[2], [("a", "upsert", "succeeded", 2)])
        assert self.contents(target) == before, "replaying the latest run changes nothing"

    def test_hightouch_split_group_is_added_once_used(self, target: Target, spark: SparkSession) -> None:
        self.require(target, "hightouch")
        log = self.log(target, spark, self.hightouch_config)
        runs = [make_run(sync_id=79, sync_run_id=901 + i) for i in range(3)]
        self.write_people(log, runs[0], [("a", "upsert", "succeeded", 1), ("b", "upsert", "succeeded", 1)])
        for table in (CHANGELOG, SNAPSHOT):
            assert "split_group" not in self.rows(target, table)[0]
        self.write_people(
            log,
            runs[1],
            [("a", "upsert", "succeeded", 2), ("x", "upsert", "succeeded", 1)],
            splits={"a": "treatment", "x": "holdout"},
        )
        self.write_people(log, runs[2], [("b", "upsert", "succeeded", 2)])
        for table in (CHANGELOG, SNAPSHOT):
            assert self.column_names(target, table)[-1] == "split_group", "added at the end"
        groups = {(r["sync_run_id"], r["row_id"]): r["split_group"] for r in self.rows(target, CHANGELOG)}
        assert groups == {
            (901, "a"): None,
            (901, "b"): None,
            (902, "a"): "treatment",
            (902, "x"): "holdout",
            (903, "b"): None,
        }
        kept = {r["row_id"]: r["split_group"] for r in self.rows(target, SNAPSHOT)}
        assert kept == {"a": "treatment", "x": "holdout", "b": None}
        versions = target.relation(SNAPSHOT, VERSIONS_TABLE).render()
        added = [r["added_columns"] for r in self.rows_sql(target, f"SELECT * FROM {versions}")]
        assert "split_group" in added

    def test_hightouch_empty_model_switches_and_retention(self, target: Target, spark: SparkSession) -> None:
        self.require(target, "hightouch")
        now = datetime.now(UTC)
        config = replace(
            self.hightouch_config,
            syncs={81: SyncSettings(layouts=("hightouch",), tables={"sync_snapshot": TableSettings(False)})},
        )
        log = self.log(target, spark, config)
        old = make_run(sync_id=80, sync_run_id=1001, full_model=True, started_at=now - timedelta(days=10))
        self.write_people(log, old, [("a", "upsert", "succeeded", 1), ("b", "upsert", "succeeded", 1)])
        self.write_people(log, make_run(sync_id=81, sync_run_id=1002), [("z", "upsert", "succeeded", 1)])
        emptied = make_run(sync_id=80, sync_run_id=1002, full_model=True, started_at=now)
        log.finish(emptied)  # a run without records: only its end is logged
        assert self.changelog(target, emptied) == Counter(
            [("a", "removed", None, None), ("b", "removed", None, None)]  # left; nothing was sent
        )
        assert self.snapshot(target, 80) == set(), "an empty model empties the sync's snapshot"
        assert self.snapshot(target, 81) == set(), "sync 81 switched its snapshot off"
        assert len(self.rows(target, CHANGELOG, "sync_id = 81")) == 1
        log.cleanup(now)
        assert [r["sync_run_id"] for r in self.rows(target, CHANGELOG, "sync_id = 80")] == [1002, 1002]
        assert len(self.rows(target, RUNS)) == 3, "sync_runs is not retained"


class QualifyConformance(ConformanceBase):
    """Seed 002's third query, which uses QUALIFY (the core's own SQL never does): for warehouses
    that have it."""

    def test_seed_002_current_members_with_qualify(self, target: Target, spark: SparkSession) -> None:
        self.require(target, "hightouch")
        self.write_audience_runs(self.log(target, spark, self.hightouch_config))
        current = self.rows_sql(target, self.seed(SEED_002_CURRENT))
        assert [(r["model_name"], r["user_id"]) for r in current] == [("Audience 77", p) for p in "abceg"]


class ReadBackConformance(ConformanceBase):
    """`read_rows` brings a sync back into Spark."""

    def test_read_rows_brings_a_sync_back_into_spark(self, target: Target, spark: SparkSession) -> None:
        self.require(target, "hightouch")
        table = table_for(SNAPSHOT, fields=True, splits=True)
        with target.read_rows(table, 82, spark) as missing:
            assert missing is None
        log = self.log(target, spark, self.hightouch_config)
        self.write_people(log, make_run(sync_id=82, sync_run_id=1201), [("a", "upsert", "succeeded", 1)])
        self.write_people(log, make_run(sync_id=83, sync_run_id=1301), [("b", "upsert", "succeeded", 1)])
        with target.read_rows(table, 82, spark) as rows:
            assert rows is not None
            assert rows.schema == table.spark_schema()
            found = [r.asDict() for r in rows.collect()]
        assert [(r["row_id"], r["status"], r["split_group"]) for r in found] == [("a", "succeeded", None)]


class PrivacyConformance(ConformanceBase):
    """The payload policy leaves no raw value anywhere."""

    def test_payload_policy_leaves_no_raw_value_anywhere(
        self, target: Target, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Masked and dropped fields are in no table and no stored file; digests are Python's HMAC."""
        monkeypatch.setenv(MASK_KEY_ENV, MASK_KEY)
        config = Config(defaults=SyncSettings(layouts=target.capabilities.layouts, policy=POLICY))
        log = self.log(target, spark, config)
        run = make_run(status=RunStatus.FAILED, error="quota exhausted for ops@example.com")
        rows = record_rows(run)
        rows = [(*r[:3], f"BOUNCED: {json_email(r[4])} is unknown" if r[3] else None, *r[4:]) for r in rows]
        log.write(run, make_records(spark, rows))
        files, stored = files_text(target.storage)
        assert files > 0 and digest("user2@example.com") in stored, "the run store holds the batches"
        log.finish(run)
        logged = self.logged_text(target)
        for where, text in (("storage", stored), ("tables", logged)):
            assert RAW not in text, f"a raw email in the {where}"
            assert not holds_field(text, "plan"), f"a field outside log_fields in the {where}"
            assert holds_field(text, "seats"), f"no payload in the {where}"
        assert digest("user2@example.com") in logged  # a payload's email
        assert digest("user1234-2@example.com") in logged  # an identifier
        assert "BOUNCED: [redacted] is unknown" in logged
        if "hightouch" in target.capabilities.layouts:
            assert "quota exhausted for [redacted]" in logged


class TrackingConformance(ConformanceBase):
    """Sync Tracking reads every layout."""

    def test_sync_tracking_reads_every_layout(self, target: Target, spark: SparkSession) -> None:
        """Records by tracking status, search and pages, and runs, from each layout the target holds."""
        config = Config(defaults=SyncSettings(layouts=target.capabilities.layouts))
        log = self.log(target, spark, config)
        engine = {"sync_name": "users_to_crm", "run_id": "6f1c2e4a"}  # the engine's own names
        first = make_run(status=RunStatus.FAILED, error="quota", finished_at=datetime.now(UTC), extra=engine)
        rows = record_rows(first)
        for aborted in (36, 37):
            rows[aborted] = (*rows[aborted][:2], "aborted", None, *rows[aborted][4:])
        log.write_run(first, make_records(spark, rows))
        second = make_run(
            sync_run_id=5679,
            started_at=first.started_at + timedelta(minutes=30),
            status=RunStatus.FAILED,
            error="timeout",
            finished_at=datetime.now(UTC),
        )
        again = [(*r[:4], r[4].replace('"pro"', '"max"'), *r[5:]) for r in record_rows(second, count=10)]
        log.write_run(second, make_records(spark, again))
        for name in target.capabilities.layouts:
            one_run = RecordQuery(1234, sync_run_id=first.sync_run_id, limit=100)
            everything = find_records(target, one_run, name)
            assert everything.schema == tracking.RECORDS
            assert everything.num_rows == 40, name
            found = Counter(everything.column("status").to_pylist())
            assert found == {"succeeded": 28, "rejected": 7, "invalid": 3, "aborted": 2}, name
            for status, expected in (("failed", 10), ("rejected", 7), ("invalid", 3), ("aborted", 2)):
                query = replace(one_run, status=Tracked(status))
                assert find_records(target, query, name).num_rows == expected, (name, status)
            aborted = find_records(target, replace(one_run, status=Tracked.ABORTED), name)
            assert sorted(aborted.column("record_identifier").to_pylist()) == [
                "user1234-36@example.com",
                "user1234-37@example.com",
            ]
            duplicates = find_records(target, replace(one_run, identifiers=("user1234-8@example.com",)), name)
            assert duplicates.column("status").to_pylist() == ["invalid", "invalid"], name
            pages = [find_records(target, replace(one_run, limit=15, offset=n), name) for n in (0, 15, 30)]
            assert [p.num_rows for p in pages] == [15, 15, 10]
            paged = [tuple(r.values()) for p in pages for r in p.to_pylist()]
            assert sorted(map(str, paged)) == sorted(str(tuple(r.values())) for r in everything.to_pylist())
            newest = find_records(target, RecordQuery(1234, limit=1), name)
            assert newest.column("sync_run_id").to_pylist() == [second.sync_run_id]

            runs = find_runs(target, RunQuery(1234), name)
            assert runs.schema == tracking.RUNS
            assert runs.column("sync_run_id").to_pylist() == [5679, 5678], name
            # It failed after records reached the destination, none aborted: partial all the same.
            assert runs.column("status").to_pylist()[0] == "partial", name
            older = find_runs(target, RunQuery(1234, limit=1, offset=1), name).to_pylist()
            assert [r["sync_run_id"] for r in older] == [5678]
            counts = {k: older[0][k] for k in ("status", "records", "succeeded", "failed", "rejected")}
            # The run failed after some records reached the destination: partial, in every layout.
            want = {"status": "partial", "records": 40, "succeeded": 28, "failed": 10, "rejected": 7}
            assert counts == want, name
            assert (older[0]["invalid"], older[0]["aborted"]) == (3, 2), name
            assert older[0]["top_error_code"] == "INVALID_EMAIL_ADDRESS", name
            # The engine's names come back, whatever the layout.
            assert (json.loads(older[0]["extra"]) if older[0]["extra"] else None) == engine, name
            assert older[0]["started_at"] == first.started_at, name
            assert find_runs(target, RunQuery(99), name).num_rows == 0

            syncs = find_syncs(target, name)
            assert syncs.schema == tracking.SYNCS
            listed = [(r["sync_id"], r["runs"], r["records"]) for r in syncs.to_pylist()]
            assert listed == [(1234, 2, 50)], name
            assert syncs.column("last_started_at").to_pylist() == [second.started_at], name


class ModelConformance(ConformanceBase):
    """The log tables against the reference model (`synclog_testing.reference`): random
    sequences of writes, replays, finishes, outages and retention over several syncs, every
    table compared with the model after every step (`synclog_testing.model_machine`)."""

    model_examples: ClassVar[int | None] = None
    """Sequences per run where a target needs other than the profile's number (a slow stand-in)."""

    def test_log_tables_follow_the_reference_model(
        self, target: Target, target_url: str, storage: Location, spark: SparkSession
    ) -> None:
        run_sequences(self.model_harness(target, target_url, storage, spark), self.model_examples)

    def model_harness(
        self, target: Target, target_url: str, storage: Location, spark: SparkSession
    ) -> Harness:
        """What the model's sequences run against on this target."""
        lake = target.location if isinstance(target, LakeTarget) else None
        return Harness(
            target,
            target_url,
            self.settings,
            spark,
            storage,
            lake_root=None if lake is None else lambda: (lake.filesystem(), lake.root),
            partition_columns=self.partition_columns,
        )


class PortableConformance(
    ModelConformance,
    CrashConformance,
    NamingAndDdlConformance,
    WritesConformance,
    SwapConformance,
    OutagesConformance,
    RetentionConformance,
    HightouchConformance,
    ReadBackConformance,
    PrivacyConformance,
    TrackingConformance,
):
    """Every class of the suite but `QualifyConformance`: what a target holding the census and
    hightouch layouts passes whether or not its SQL has QUALIFY."""


class TargetConformance(PortableConformance, QualifyConformance):
    """Every class of the suite: what a target holding the census and hightouch layouts passes."""


def batch_rows(batch: int, prefix: str, count: int, started: datetime) -> list[tuple[Any, ...]]:
    """`count` succeeded upserts of one batch in `RECORD_DDL` order, identified `prefix-0`, …"""
    return [
        (
            f"{prefix}-{i}",
            "upsert",
            "succeeded",
            None,
            json.dumps({"id": f"{prefix}-{i}"}),
            batch,
            started,
            started + timedelta(seconds=30),
        )
        for i in range(count)
    ]


def values(table: pa.Table) -> list[tuple[Any, ...]]:
    """A result's rows as tuples, whatever case the warehouse gives its column names."""
    return [tuple(row.values()) for row in table.to_pylist()]


def json_email(payload: str) -> str:
    """The email of a factory payload."""
    return str(json.loads(payload)["email"])
