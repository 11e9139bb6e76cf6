"""Snowflake checks beyond the conformance suite, run on fakesnow and on a real account.

Not a test module itself: `test_snowflake.py` (fakesnow) and `test_snowflake_live.py` (a real
account) subclass `SnowflakeSuite` with their own `target_url` and names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from pyspark.sql import SparkSession

from synclog.errors import TargetError
from synclog.layouts.census import SYNC_LOG
from synclog.targets.base import Target
from synclog.targets.keys import Keys
from synclog.targets.rows import Rows
from synclog.targets.sql import STAGE_PREFIX
from synclog.targets.tables import Column, ColumnType, TableSpec
from synclog_testing.conformance import TargetConformance
from synclog_testing.factories import make_records, make_run, record_rows
from synclog_testing.read_back import check_empty_read_back, check_read_back, read_back_rows

#: Seed 000's two Snowflake queries character for character (trailing blanks and semicolons too).
SEED_000_VERBATIM = (
    "SELECT * \nFROM CENSUS.CENSUS.SYNC_LOG log\nLEFT JOIN CENSUS.CENSUS.SOURCE_OBJECTS source\n"
    "ON log.source_object_id = source.id\nWHERE log.sync_id = 1234;",
    "SELECT * \nFROM CENSUS.CENSUS.SYNC_LOG log \nLEFT JOIN CENSUS.CENSUS.SOURCE_OBJECTS source \n"
    "ON log.source_object_id = source.id\nWHERE log.sync_run_id = 5678\n  AND log.operation = 'delete';",
)


#: Every logical column type, in a schema of its own: the target is generic over TableSpecs.
EVERY_TYPE = TableSpec(
    layout="probe",
    schema="probe_audit",
    name="every_type",
    columns=(
        Column("id", ColumnType.BIGINT),
        Column("small", ColumnType.INTEGER),
        Column("label", ColumnType.STRING),
        Column("doc", ColumnType.JSON),
        Column("seen_at", ColumnType.TIMESTAMP),
        Column("flag", ColumnType.BOOLEAN),
    ),
    replace_key=("id",),
)
AT = datetime(2024, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)


def database(target: Target) -> str:
    """The database `target` writes into (CENSUS unless the URL names another)."""
    return str(target.settings.database)


def record_statements(monkeypatch: pytest.MonkeyPatch, target: Target) -> list[str]:
    """Every statement `target` sends from now on."""
    sent: list[str] = []
    original = target.client.cursor  # type: ignore[attr-defined]

    @contextmanager
    def recording(sql: str, params: Any = ()) -> Iterator[Any]:
        sent.append(sql)
        with original(sql, params) as cursor:
            yield cursor

    monkeypatch.setattr(target.client, "cursor", recording)  # type: ignore[attr-defined]
    return sent


def fail_on(monkeypatch: pytest.MonkeyPatch, target: Target, starts: str) -> None:
    """Make the first statement of `target` that starts with `starts` fail."""
    original: Callable[..., Any] = target.client.cursor  # type: ignore[attr-defined]

    @contextmanager
    def failing(sql: str, params: Any = ()) -> Iterator[Any]:
        if sql.startswith(starts):
            raise TargetError("Snowflake: injected failure")
        with original(sql, params) as cursor:
            yield cursor

    monkeypatch.setattr(target.client, "cursor", failing)  # type: ignore[attr-defined]


class SnowflakeSuite(TargetConformance):
    """The conformance suite plus what is particular to Snowflake."""

    model_examples = 3  # model sequences in make test: about 13 s each on this stand-in (make soak runs more)

    # -- loading -------------------------------------------------------------------------------

    def test_payloads_are_variant_objects(self, target: Target, spark: SparkSession) -> None:
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        rows = target.query(
            "SELECT record_payload:email::VARCHAR AS email, record_payload:seats::INT AS seats "
            f"FROM {self.seed('CENSUS.CENSUS.SYNC_LOG')} "
            "WHERE record_identifier = 'user1234-6@example.com'"
        ).to_pylist()
        assert rows == [{"EMAIL": "user6@example.com", "SEATS": 6}]
        columns = target.query(
            f"SELECT column_name, data_type FROM {database(target)}.INFORMATION_SCHEMA.COLUMNS "
            "WHERE table_schema = 'CENSUS' AND table_name = 'SYNC_LOG_RECORDS' "
            "AND column_name IN ('RECORD_PAYLOAD', 'BATCH_STARTED_AT')"
        ).to_pylist()
        assert {(c["COLUMN_NAME"], c["DATA_TYPE"]) for c in columns} == {
            ("RECORD_PAYLOAD", "VARIANT"),
            ("BATCH_STARTED_AT", "TIMESTAMP_TZ"),
        }

    def test_loads_go_through_the_stage(
        self, target: Target, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        sent = record_statements(monkeypatch, target)
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        log_table = target.relation(SYNC_LOG).render()
        puts = [s for s in sent if s.startswith("PUT 'file://")]
        copies = [s for s in sent if s.startswith("COPY INTO")]
        assert len(puts) >= 5  # a Parquet file per table: the log, three metadata tables, synclog_runs
        assert len(copies) == 5
        assert all("FROM (SELECT" in c and "@" in c for c in copies)
        assert not [s for s in sent if s.startswith(f"INSERT INTO {log_table}") and "VALUES" in s]
        leftovers = target.query(
            f"SELECT COUNT(*) AS n FROM {database(target)}.INFORMATION_SCHEMA.TABLES WHERE table_name LIKE ?",
            [f"{STAGE_PREFIX.upper()}%"],
        )
        assert leftovers.column(0)[0].as_py() == 0

    def test_a_failed_replacement_changes_nothing(
        self, target: Target, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        run = make_run()
        rows = record_rows(run)
        log = self.log(target, spark)
        log.write_run(run, make_records(spark, rows))
        log_table = target.relation(SYNC_LOG).render()
        fail_on(monkeypatch, target, f"INSERT INTO {log_table}")
        result = log.write(run, make_records(spark, [r for r in rows if r[5] == 0][:5]))
        assert result.pending  # the failed load is kept for `synclog flush`, not lost
        # The DELETE of batch 0 ran inside the transaction and was rolled back with it.
        assert self.count(target) == 40
        assert self.count(target, "batch_number = 0") == 20

    def test_any_table_spec_round_trips(self, target: Target, spark: SparkSession) -> None:
        target.ensure([EVERY_TYPE])
        first = [
            {"id": 1, "small": 7, "label": "one", "doc": '{"k": [1, 2]}', "seen_at": AT, "flag": True},
            {"id": 2, "small": None, "label": None, "doc": None, "seen_at": AT, "flag": None},
        ]
        loaded = Rows.local(spark, EVERY_TYPE, first)
        assert target.replace_rows(EVERY_TYPE, loaded, Keys.of_rows(EVERY_TYPE, loaded)) == 2
        again = spark.createDataFrame(
            [(2, 9, "two", '{"k": []}', AT, False)],
            "id bigint, small int, label string, doc string, seen_at timestamp, flag boolean",
        )
        assert (
            target.replace_rows(EVERY_TYPE, Rows.of(again), Keys.of_values(EVERY_TYPE.replace_key, [(2,)]))
            == 1
        )
        relation = target.relation(EVERY_TYPE).render()
        rows = target.query(
            'SELECT "ID", "SMALL", "LABEL", "DOC":k[1]::INT AS k, "SEEN_AT", "FLAG" '
            f'FROM {relation} ORDER BY "ID"'
        ).to_pylist()
        assert [tuple(r.values()) for r in rows] == [
            (1, 7, "one", 2, AT, True),
            (2, 9, "two", None, AT, False),
        ]
        assert str(target.relation(EVERY_TYPE)) == f"{database(target)}.PROBE_AUDIT.EVERY_TYPE"

    # -- reads -------------------------------------------------------------------------------

    def test_read_rows_streams_the_export_in_chunks(
        self, target: Target, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # No NULL timestamp: fakesnow's server reads one back as 1970-01-01 (FAKESNOW_NOTES.md).
        monkeypatch.setattr(type(target.client), "chunk_rows", 3)
        check_read_back(target, spark, read_back_rows(null_timestamps=False), row_groups=[3, 3, 2])

    def test_read_rows_of_a_sync_without_rows_is_an_empty_file_with_the_schema(
        self, target: Target, spark: SparkSession
    ) -> None:
        check_empty_read_back(target, spark)

    # -- seeds -------------------------------------------------------------------------------

    def test_seed_000_queries_run_verbatim(self, target: Target, spark: SparkSession) -> None:
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        by_sync, deletes = (target.query(self.seed(sql)) for sql in SEED_000_VERBATIM)
        assert (by_sync.num_rows, deletes.num_rows) == (40, 10)
        assert set(deletes.column("OPERATION").to_pylist()) == {"delete"}
        assert set(by_sync.column("NAME").to_pylist()) == {"High-value customers"}
