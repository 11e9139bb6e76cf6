"""The in-cluster Databricks path (`databricks+spark://census`) on local Spark, with Parquet tables.

Three-part names resolve through catalog aliases of the session catalog (harness/spark_catalogs.py):
a jar and catalog confs that must be in place when the Spark session starts, and a catalog named
`census` shadows two-part `census.x` names. So this module runs in a Spark process of its own,
which `test_databricks.py` starts with SYNCLOG_DATABRICKS_SPARK=1; anywhere else it is skipped.
There are no Delta jars here, so the tables are Parquet; the Delta path runs in the live test.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

if os.environ.get("SYNCLOG_DATABRICKS_SPARK") != "1":
    pytest.skip("runs in a Spark process of its own, started by test_databricks.py", allow_module_level=True)

from harness.errors import ServerUnavailable
from harness.spark_catalogs import unity_catalog_confs
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from synclog.config import Config, SyncSettings
from synclog.demo.simulator import history, records
from synclog.errors import ConfigError
from synclog.layouts.census import DESTINATION_OBJECTS, DESTINATIONS, SOURCE_OBJECTS, SYNC_LOG
from synclog.layouts.hightouch import CHANGELOG, SNAPSHOT
from synclog.model import RunStatus
from synclog.plugins.manager import registry
from synclog.storage.location import Location
from synclog.targets.base import Target, TargetSettings
from synclog.targets.swaps.partition_replace import COLUMNS, DAY, partitioning_of
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_databricks.cluster import ParquetTarget
from synclog_testing.conformance import TargetConformance
from synclog_testing.factories import make_records, make_run, record_rows
from synclog_testing.model_machine import machine_for
from synclog_testing.reference import Record

SEED_000_VERBATIM = (
    "SELECT * \nFROM census.census.sync_log log\nLEFT JOIN census.census.source_objects source\n"
    "ON log.source_object_id = source.id\nWHERE log.sync_id = 1234;",
    "SELECT * \nFROM census.census.sync_log log \nLEFT JOIN census.census.source_objects source \n"
    "ON log.source_object_id = source.id\nWHERE log.sync_run_id = 5678\n  AND log.operation = 'delete';",
)
"""Seed 000's two queries character for character, with the Databricks names Census documents."""


@pytest.fixture(scope="session")
def catalog_spark(tmp_path_factory: pytest.TempPathFactory) -> SparkSession:
    """A local session in which the catalogs `census` and `logs` resolve, tables in a temp folder."""
    try:
        confs = unity_catalog_confs(["census", "logs"])
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("synclog-databricks-in-cluster")
        .config("spark.driver.memory", "1g")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
    )
    for key, value in confs.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def drop_schemas(spark: SparkSession) -> None:
    """Drop every schema but `default`: the next test starts from an empty catalog."""
    for (name,) in spark.sql("SHOW SCHEMAS IN census").collect():
        if name != "default":
            spark.sql(f"DROP SCHEMA census.`{name}` CASCADE")


class TestDatabricksInCluster(TargetConformance):
    """The conformance suite on `databricks+spark://census` (Parquet tables, partition overwrite)."""

    model_examples = 1  # sequences in make test: about 25 s each (make soak runs more)
    crash_sample = 1  # crash trials in make test: about 40 s each here (make faults runs all)

    seed_names = {
        "CENSUS.CENSUS.SYNC_LOG": "census.census.sync_log",
        "CENSUS.CENSUS.SOURCE_OBJECTS": "census.census.source_objects",
    }
    expected_sync_log = "census.census.sync_log"
    partition_columns = COLUMNS

    @pytest.fixture(scope="session")
    @classmethod
    def spark(cls, catalog_spark: SparkSession) -> SparkSession:
        return catalog_spark

    @pytest.fixture
    def synclog_target_url(self, catalog_spark: SparkSession) -> Iterator[str]:
        yield "databricks+spark://census"
        drop_schemas(catalog_spark)

    # -- names, formats, partitions ------------------------------------------------------------

    def test_seed_000_queries_run_verbatim(self, target: Target, spark: SparkSession) -> None:
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        by_sync, deletes = (target.query(sql) for sql in SEED_000_VERBATIM)
        assert (by_sync.num_rows, deletes.num_rows) == (40, 10)
        assert set(deletes.column("name").to_pylist()) == {run.source_object.name}

    def test_tables_are_parquet_partitioned_by_day_behind_a_plain_view(
        self, target: Target, spark: SparkSession
    ) -> None:
        assert isinstance(target, ParquetTarget)
        log = self.log(target, spark)
        for run_id, day in ((1, 1), (2, 3), (3, 3)):
            run = make_run(sync_run_id=run_id)
            started = datetime(2026, 3, day, 12, tzinfo=UTC)
            log.write(run, make_records(spark, record_rows(run, count=10, started_at=started)))
        assert partition_days(spark) == ["2026-03-01", "2026-03-03"]
        provider = {
            r[0]: r[1] for r in spark.sql("DESCRIBE TABLE EXTENDED census.census.sync_log_records").collect()
        }
        assert provider["Provider"].lower() == "parquet"
        assert spark.table("census.census.sync_log").columns == SYNC_LOG.column_names()
        assert spark.table("census.census.sync_log_records").columns == [*SYNC_LOG.column_names(), DAY]

    def test_a_replayed_batch_that_moved_day_leaves_the_old_day_dropped(
        self, target: Target, spark: SparkSession
    ) -> None:
        run = make_run()
        log = self.log(target, spark)
        for day in (1, 4):
            started = datetime(2026, 3, day, 12, tzinfo=UTC)
            log.write(run, make_records(spark, record_rows(run, count=10, batches=1, started_at=started)))
        assert partition_days(spark) == ["2026-03-04"]
        assert self.count(target) == 10

    def test_cleanup_drops_whole_days_and_rewrites_a_day_a_shorter_retention_cuts(
        self, target: Target, spark: SparkSession
    ) -> None:
        """Retention cuts at whole UTC days (7 days before 03-10 12:00 keeps 03-03 on): 03-01
        expires whole and is dropped; sync 99 keeps 5 days, so 03-03 is rewritten without its rows."""
        now = datetime(2026, 3, 10, 12, tzinfo=UTC)
        log = self.log(target, spark, Config(syncs={99: SyncSettings(retention_days=5)}))
        for sync_id, run_id, started in (
            (1234, 1, datetime(2026, 3, 1, 8, tzinfo=UTC)),
            (1234, 2, datetime(2026, 3, 3, 1, tzinfo=UTC)),
            (1234, 3, datetime(2026, 3, 3, 13, tzinfo=UTC)),
            (99, 4, datetime(2026, 3, 3, 8, tzinfo=UTC)),
        ):
            run = make_run(sync_id=sync_id, sync_run_id=run_id)
            log.write(run, make_records(spark, record_rows(run, count=10, batches=1, started_at=started)))
        assert log.cleanup(now).total == 20
        assert partition_days(spark) == ["2026-03-03"]
        assert self.count(target, "sync_run_id IN (1, 4)") == 0
        assert self.count(target) == 20

    def test_the_reference_model_reads_the_tables_without_their_partition_columns(
        self, target: Target, target_url: str, storage: Location, spark: SparkSession
    ) -> None:
        """Two steps of the model's sequences, fixed: a run finished with no batch (runs tables,
        partitioned by sync) and a run written whole (the changelog, by day; the snapshot, by
        sync). The tables then hold what the model says, read as the model test reads them."""
        machine = machine_for(self.model_harness(target, target_url, storage, spark))()
        try:
            machine.set_up()
            first, second = machine.syncs[:2]
            started = datetime(2026, 3, 2, 9, tzinfo=UTC)
            ended = replace(
                first.run(3, started, False),
                status=RunStatus.SUCCEEDED,
                finished_at=started + timedelta(minutes=30),
            )
            machine.model.finish(ended)
            machine.log.finish(ended)
            whole = replace(second.run(1, started, True), finished_at=started + timedelta(minutes=20))
            records = [
                Record(
                    identifier, "upsert", "succeeded", None, f'{{"id": "{identifier}"}}', 0, started, started
                )
                for identifier in ("a", "b")
            ]
            machine.model.write_run(whole, records)
            machine.log.write_run(whole, [r.as_input() for r in records])
            for table in (CHANGELOG, SNAPSHOT):
                assert partitioning_of(table) is not None, f"{table.name} is no longer partitioned"
            machine.tables_match_the_model()
        finally:
            machine.teardown()

    def test_variant_payloads(self, target_url: str, storage: Location, spark: SparkSession) -> None:
        settings = TargetSettings(storage=storage, options={"json": "variant"})
        target = registry().open(TargetURL.parse(target_url), settings)
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        types = {r[0]: r[1] for r in spark.sql("DESCRIBE TABLE census.census.sync_log_records").collect()}
        assert types["record_payload"] == "variant"
        emails = target.query("SELECT record_payload:email::string AS e FROM census.census.sync_log")
        assert "user2@example.com" in emails.column("e").to_pylist()
        payload = target.query(
            "SELECT record_payload, CAST(NULL AS VARIANT) AS nothing FROM census.census.sync_log "
            "WHERE record_identifier = 'user1234-2@example.com'"
        ).to_pylist()
        assert payload == [{"record_payload": payload[0]["record_payload"], "nothing": None}]
        assert payload[0]["record_payload"].startswith('{"')
        log = self.log(target, spark, self.hightouch_config)
        first = make_run(sync_id=84, sync_run_id=1401)
        again = make_run(sync_id=84, sync_run_id=1402, started_at=first.started_at + timedelta(minutes=5))
        for each in (first, again):
            self.write_people(log, each, [("a", "upsert", "succeeded", 1), ("b", "upsert", "succeeded", 2)])
        assert self.rows(target, CHANGELOG, "sync_run_id = 1402") == [], "the diff read VARIANT back as sent"
        assert self.snapshot(target, 84) == {
            ("a", "unchanged", "succeeded", None, 1402),
            ("b", "unchanged", "succeeded", None, 1402),
        }
        stringly = registry().open(TargetURL.parse(target_url), TargetSettings(storage=storage))
        with pytest.raises(
            ConfigError, match="stores record_payload as VARIANT: set the target's option json"
        ):
            stringly.ensure([SYNC_LOG])

    # -- names and errors ----------------------------------------------------------------------

    def test_catalog_and_schemas_are_configurable(self, storage: Location, spark: SparkSession) -> None:
        settings = TargetSettings(database="logs", schemas={"census": "writeback"}, storage=storage)
        target = registry().open(TargetURL.parse("databricks+spark://"), settings)
        run = make_run()
        self.log(target, spark).write_run(run, make_records(spark, record_rows(run)))
        assert str(target.relation(SYNC_LOG, SYNC_LOG.view)) == "logs.writeback.sync_log"
        assert str(target.relation(CHANGELOG)) == "logs.hightouch_audit.sync_changelog"
        assert spark.sql("SELECT COUNT(*) FROM logs.writeback.sync_log").first()[0] == 40
        drop_schemas(spark)

    def test_bad_urls_are_one_line_config_errors(self, storage: Location) -> None:
        for url, message in (
            ("databricks+spark://census?format=orc", "format must be one of delta, parquet"),
            ("databricks+spark://census?fromat=delta", "unknown option 'fromat'"),
            ("databricks+spark://census/extra", "expected databricks\\+spark://CATALOG"),
            ("databricks+spark://census?json=jsonb", "json must be one of string, variant"),
        ):
            with pytest.raises(ConfigError, match=message):
                registry().open(TargetURL.parse(url), TargetSettings(storage=storage))
        with pytest.raises(ConfigError, match="the URL names catalog census, the settings logs"):
            registry().open(TargetURL.parse("databricks+spark://census"), TargetSettings(database="logs"))

    def test_spark_errors_are_not_outages(self, storage: Location) -> None:
        target = registry().open(
            TargetURL.parse("databricks+spark://nowhere"), TargetSettings(storage=storage)
        )
        with pytest.raises(PySparkException, match="nowhere"):
            target.ensure([SYNC_LOG])


def partition_days(spark: SparkSession) -> list[str]:
    rows = spark.sql("SHOW PARTITIONS census.census.sync_log_records").collect()
    return sorted(row[0].removeprefix(f"{DAY}=") for row in rows)


def test_the_demos_runs_write_every_census_column_and_the_metadata_tables(
    catalog_spark: SparkSession, tmp_path: Path
) -> None:
    """The last run of each of the demo's syncs, as `synclog demo` writes it, on the in-cluster path
    (census layout only: the suite above covers hightouch). Those runs fill every census column;
    the whole demo runs through `synclog demo` on DuckDB (tests/)."""
    simulated = {sim.run.sync_id: sim for sim in history(datetime.now(UTC).replace(microsecond=0), 0.01)}
    config = Config(
        storage=Location.parse(str(tmp_path / "storage")), defaults=SyncSettings(layouts=("census",))
    )
    try:
        with SyncLog.open("databricks+spark://census", config, catalog_spark) as log:
            for sim in simulated.values():
                log.write_run(sim.run, records(catalog_spark, sim, 0.01))
        log_table = catalog_spark.table("census.census.sync_log")
        assert log_table.columns == SYNC_LOG.column_names()
        filled = log_table.selectExpr(*[f"COUNT({c}) AS {c}" for c in log_table.columns]).first()
        assert filled is not None and all(filled), f"a census column is never written: {filled}"
        for table in (SOURCE_OBJECTS, DESTINATIONS, DESTINATION_OBJECTS):
            assert catalog_spark.table(f"census.census.{table.name}").count() == 4, table.name
    finally:
        drop_schemas(catalog_spark)
