"""The lake target on a local folder and on a moto S3 server (loopback, started by the tests).

Files and names, seed 003's query, replays, metadata.json, fact tables, retention, and the demo.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from harness.s3_server import S3Server
from pyspark.sql import SparkSession

from synclog.cli.main import main
from synclog.config import Config, SyncSettings
from synclog.demo.report import SEED_003, SEED_003_PATH
from synclog.layouts import lake as lake_layout
from synclog.layouts.lake import ABORTED_MESSAGE, RECORDS, RUN_METADATA
from synclog.model import DestinationObject, SourceObject
from synclog.naming import LineageDataset
from synclog.plugins.manager import registry
from synclog.storage.location import Location
from synclog.targets.base import TargetSettings
from synclog.targets.lake import LakeTarget
from synclog.targets.lake_files import publish, write_parquet
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_testing.factories import REJECTION, make_records, make_run, record_rows
from synclog_testing.lake import LakeConformance
from synclog_testing.privacy import (
    MASK_KEY,
    MASK_KEY_ENV,
    RAW,
    check_masked,
    check_tracking_cli,
    files_text,
    masked_demo_runs,
)

RUN_FOLDER = "sync_tracking_datasets/1/1234/5678"
FILE_COLUMNS = RECORDS.column_names()
BATCH_OPERATIONS = {"records_upserted": "upsert", "records_deleted": "delete"}


@pytest.fixture(params=["folder", "s3"])
def lake(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LakeTarget]:
    """A fresh, empty lake: a temp folder, or a new bucket on the S3 server."""
    if request.param == "folder":
        url, settings = f"lake:///{tmp_path / 'lake'}", TargetSettings()
    else:
        s3: S3Server = request.getfixturevalue("s3")
        bucket = f"lake-{uuid.uuid4().hex[:12]}"
        s3.create_bucket(bucket)
        url, settings = f"lake+s3://{bucket}/synclog", TargetSettings(options=s3.storage_options())
    target = registry().open(TargetURL.parse(url), settings)
    assert isinstance(target, LakeTarget)
    yield target
    target.close()


def sync_log(lake: LakeTarget, spark: SparkSession, config: Config | None = None) -> SyncLog:
    storage = Location.parse(tempfile.mkdtemp(prefix="synclog-lake-test-"))
    return SyncLog(lake, replace(config or Config(), storage=storage), spark)


def files(lake: LakeTarget, under: str = "") -> list[str]:
    """Every file under `under`, relative to the lake's root."""
    selector = pafs.FileSelector(lake.location.path(under), recursive=True, allow_not_found=True)
    found = [lake.location.relative(i.path) for i in lake.fs.get_file_info(selector) if i.is_file]
    return sorted(found)


def names(lake: LakeTarget, folder: str = RUN_FOLDER) -> set[str]:
    return {path.rsplit("/", 1)[1] for path in files(lake, folder)}


def read(lake: LakeTarget, relative: str) -> pa.Table:
    return pq.read_table(lake.location.path(relative), filesystem=lake.fs)


def seed_003(lake: LakeTarget, folder: str = RUN_FOLDER) -> dict[str, list[str]]:
    """Seed 003's query, its text unchanged but for the path, on the lake's DuckDB."""
    sql = SEED_003.replace(SEED_003_PATH, f"'{lake.uri(folder)}/*.parquet'")
    return {row["status_message"]: sorted(row["rejected_records"]) for row in lake.query(sql).to_pylist()}


ALL_RECORDS = "sync_tracking_datasets/*/*/*/*.parquet"


def count(lake: LakeTarget, where: str = "1 = 1", glob: str = ALL_RECORDS) -> int:
    sql = f"SELECT COUNT(*) FROM read_parquet(?, union_by_name=True) WHERE {where}"
    return int(lake.query(sql, [lake.uri(glob)]).column(0)[0].as_py())


def with_payload(row: tuple[Any, ...], payload: str) -> tuple[Any, ...]:
    return (*row[:4], payload, *row[5:])


# -- files, names, the seed's query ---------------------------------------------------------------


def test_files_are_named_and_shaped_as_documented(lake: LakeTarget, spark: SparkSession) -> None:
    run = make_run()
    loaded = sync_log(lake, spark).write_run(run, make_records(spark, record_rows(run))).loaded
    assert loaded["sync_tracking_datasets.records"] == 40
    assert names(lake) == {
        "records_upserted.0.parquet",
        "records_deleted.0.parquet",
        "records_upserted.1.parquet",
        "records_deleted.1.parquet",
        "metadata.json",
    }
    rows = 0
    for name in names(lake) - {"metadata.json"}:
        table = read(lake, f"{RUN_FOLDER}/{name}")
        assert table.column_names == FILE_COLUMNS
        batch_type = name.split(".")[0]
        assert set(table.column("operation").to_pylist()) == {BATCH_OPERATIONS[batch_type]}
        rows += table.num_rows
    assert rows == 40
    assert files(lake, "metadata") == [
        "metadata/1/destination_objects/401.parquet",
        "metadata/1/destinations/301.parquet",
        "metadata/1/source_objects/201.parquet",
    ]


def test_seed_003_query_runs_unchanged_and_all_statuses_appear(lake: LakeTarget, spark: SparkSession) -> None:
    run = make_run()
    rows = record_rows(run)
    rows[2] = (*rows[2][:2], "aborted", None, *rows[2][4:])  # never sent: the run ended first
    sync_log(lake, spark).write_run(run, make_records(spark, rows))
    rejected = seed_003(lake)
    # Every 5th record is rejected (8), but record 9 is a duplicate: flagged as invalid instead.
    assert len(rejected[REJECTION]) == 7
    assert rejected[ABORTED_MESSAGE] == ["user1234-2@example.com"]
    statuses = lake.query(f"SELECT DISTINCT status FROM read_parquet('{lake.uri(RUN_FOLDER)}/*.parquet')")
    assert set(statuses.column(0).to_pylist()) == {"succeeded", "rejected", "NULL", "DUPLICATE"}
    assert count(lake, "status = 'NULL' AND identifier IS NULL") == 1
    assert count(lake, "status = 'DUPLICATE'") == 2


# -- replays and atomic files -----------------------------------------------------------------------


def test_a_replayed_batch_replaces_its_files(lake: LakeTarget, spark: SparkSession) -> None:
    run = make_run()
    rows = record_rows(run)
    log = sync_log(lake, spark)
    log.write(run, make_records(spark, rows))
    # Batch 0 again, now only five upserts: its deletes file must go, batch 1 stays as it was.
    upserts = [r for r in rows if r[5] == 0 and r[1] == "upsert"][:5]
    log.write(run, make_records(spark, upserts))
    assert names(lake) == {
        "records_upserted.0.parquet",
        "records_upserted.1.parquet",
        "records_deleted.1.parquet",
    }
    assert count(lake) == 5 + 20
    log.write_run(run, make_records(spark, rows))
    assert count(lake) == 40
    assert count(lake, glob=f"{RUN_FOLDER}/*.0.parquet") == 20


def test_a_failed_write_leaves_the_old_file_whole(lake: LakeTarget) -> None:
    path = lake.location.path("metadata/7/destinations/1.parquet")
    old = pa.table({"id": [1], "name": ["old"]})
    write_parquet(lake.fs, path, old)

    def half_then_fail(stream: Any) -> None:
        pq.write_table(pa.table({"id": [2], "name": ["new"]}), stream)
        raise RuntimeError("network gone")

    with pytest.raises(RuntimeError, match="network gone"):
        publish(lake.fs, path, half_then_fail)
    assert read(lake, "metadata/7/destinations/1.parquet").equals(old)
    assert files(lake, "metadata/7") == ["metadata/7/destinations/1.parquet"]  # no temporary file left


# -- metadata.json and fact tables ------------------------------------------------------------------


def test_metadata_json_holds_the_run_and_its_payload_schema(lake: LakeTarget, spark: SparkSession) -> None:
    run = make_run()
    rows = record_rows(run, count=3, null_at=(), duplicate_of={})
    rows[0] = with_payload(
        rows[0], '{"email": "a@x.io", "seats": 3, "vip": true, "tags": ["x"], "address": {"city": "Oslo"}, '
        '"note": null, "mixed": 1}'
    )  # fmt: skip
    rows[1] = with_payload(rows[1], '{"email": "b@x.io", "seats": 2.5, "address": null, "mixed": "one"}')
    rows[2] = with_payload(rows[2], '["not", "an", "object"]')
    sync_log(lake, spark).write_run(run, make_records(spark, rows))
    with lake.fs.open_input_stream(lake.location.path(f"{RUN_FOLDER}/metadata.json")) as stream:
        metadata = json.loads(stream.read())
    assert metadata["record_payload_schema"] == {
        "address": "object",
        "email": "string",
        "mixed": ["number", "string"],
        "note": "null",
        "seats": "number",
        "tags": "array",
        "vip": "boolean",
    }
    assert {k: metadata[k] for k in ("organization_id", "workspace_id", "sync_id", "sync_run_id")} == {
        "organization_id": 1,
        "workspace_id": 11,
        "sync_id": 1234,
        "sync_run_id": 5678,
    }
    assert (metadata["source_type"], metadata["source_id"]) == ("Snowflake::Connection", 101)
    assert (metadata["destination_type"], metadata["destination_id"]) == ("Salesforce::Connection", 301)
    assert datetime.fromisoformat(metadata["sync_run_started_at"]) == run.started_at


def facts(lake: LakeTarget, org_id: int, table: str) -> list[dict[str, Any]]:
    """A fact table as readers query it: every file of its folder, one table."""
    glob = lake.uri(f"metadata/{org_id}/{table}/*.parquet")
    return lake.query("SELECT * FROM read_parquet(?) ORDER BY id", [glob]).to_pylist()


def test_fact_tables_hold_one_file_per_object(lake: LakeTarget, spark: SparkSession) -> None:
    log = sync_log(lake, spark)
    first = make_run()
    second = make_run(
        sync_id=99,
        sync_run_id=7,
        source_object=replace(first.source_object, name="Renamed segment"),
        destination_object=DestinationObject(402, "Salesforce::ObjectTypes::Lead", "Lead"),
    )
    other_org = make_run(org_id=2, source_object=SourceObject(209, "DataWarehouse::Table", "T"))
    for run in (first, second, second, other_org):
        log.finish(run)  # a run without records still gets metadata.json and its facts
    sources = facts(lake, 1, "source_objects")
    assert [(s["id"], s["name"]) for s in sources] == [(201, "Renamed segment")]  # the newest description
    assert sources[0]["filter_segment_id"] == 31
    assert [o["id"] for o in facts(lake, 1, "destination_objects")] == [401, 402]
    assert files(lake, "metadata/1/destination_objects") == [
        "metadata/1/destination_objects/401.parquet",
        "metadata/1/destination_objects/402.parquet",
    ]
    assert len(facts(lake, 1, "destinations")) == 1
    assert [s["id"] for s in facts(lake, 2, "source_objects")] == [209]
    assert "metadata.json" in names(lake, "sync_tracking_datasets/1/99/7")


# -- retention --------------------------------------------------------------------------------------


def test_retention_removes_whole_expired_run_folders(lake: LakeTarget, spark: SparkSession) -> None:
    now = datetime.now(UTC)
    log = sync_log(lake, spark, Config(syncs={99: SyncSettings(retention_days=30)}))
    for sync_id, run_id, age in ((1234, 1, 10), (1234, 2, 1), (99, 3, 10)):
        run = make_run(sync_id=sync_id, sync_run_id=run_id)
        rows = record_rows(run, count=10, started_at=now - timedelta(days=age))
        log.write_run(run, make_records(spark, rows))
    assert log.cleanup(now).total == 10
    assert files(lake, "sync_tracking_datasets/1/1234/1") == []
    assert "metadata.json" in names(lake, "sync_tracking_datasets/1/1234/2")
    assert count(lake, glob="sync_tracking_datasets/1/99/3/*.parquet") == 10
    assert files(lake, "metadata")  # facts are not the retention's business
    assert log.cleanup(now).total == 0


# -- S3 settings from the environment, and the demo -------------------------------------------------


def test_s3_settings_come_from_the_environment(
    s3: S3Server, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in s3.environment.items():
        monkeypatch.setenv(name, value)
    s3.create_bucket("from-env")
    config = replace(Config(), storage=Location.parse(tempfile.mkdtemp()))
    with SyncLog.open("lake+s3://from-env/logs", config, spark) as log:
        run = make_run()
        log.write_run(run, make_records(spark, record_rows(run, count=8)))
        assert isinstance(log.target, LakeTarget)
        assert log.target.uri(RUN_FOLDER) == f"s3://from-env/logs/{RUN_FOLDER}"
        assert len(seed_003(log.target)[REJECTION]) == 1


@pytest.mark.timeout(1800)
def test_demo_writes_a_lake_that_seed_003_queries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    # The last day's runs (one per sync, 5678 among them): each holds NULL and DUPLICATE records.
    assert main(["demo", "--target", "lake:///lake", "--scale", "0.02", "--days", "1"]) == 0
    out = capsys.readouterr().out
    assert "(seed 003, on" in out
    lake = tmp_path / "lake"
    run_files = lake / "sync_tracking_datasets" / "1" / "1234" / "5678"
    sql = SEED_003.replace(SEED_003_PATH, f"'{run_files}/*.parquet'")
    answers = duckdb.sql(sql).fetchall()  # plain DuckDB, as a reader of the lake runs it
    assert answers
    assert all(message and identifiers for message, identifiers in answers)
    statuses = duckdb.sql(
        f"SELECT DISTINCT status FROM read_parquet('{lake}/sync_tracking_datasets/*/*/*/*.parquet')"
    ).fetchall()
    assert {s for (s,) in statuses} == {"succeeded", "rejected", "NULL", "DUPLICATE"}
    metadata = json.loads((run_files / "metadata.json").read_text())
    assert metadata["record_payload_schema"] == {
        "email": "string",
        "lifetime_value": "number",
        "marketing_opt_in": "boolean",
        "model_version": "number",
        "name": "string",
        "plan": "string",
        "tags": "array",
    }


def test_masked_demo_runs_on_s3_hold_no_raw_email_and_sync_tracking_answers(
    s3: S3Server,
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The demo's last runs of sync 1234 under the masked demo's policy (the whole masked demo
    runs through `synclog demo` on DuckDB, tests/test_privacy.py)."""
    for name, value in s3.environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(MASK_KEY_ENV, MASK_KEY)
    s3.create_bucket("masked-demo")
    target = "lake+s3://masked-demo/lake"
    config = masked_demo_runs(tmp_path, target, str(tmp_path / "storage"), spark)
    lake = registry().open(TargetURL.parse(target))
    assert isinstance(lake, LakeTarget)
    with lake:
        files, text = files_text(lake.location)
        schemas = lake.query(
            "SELECT DISTINCT json -> 'record_payload_schema' FROM read_json_objects(?)",
            [lake.uri("sync_tracking_datasets/*/*/*/metadata.json")],
        )
    assert files >= 2 * 3  # each of the 3 runs: its records and its metadata.json
    check_masked(text)
    assert [json.loads(schema) for schema in schemas.column(0).to_pylist()] == [
        {"email": "string", "model_version": "number", "plan": "string"}
    ]
    assert RAW not in files_text(Location.parse(str(tmp_path / "storage")))[1]
    check_tracking_cli(config, target, "lake", tmp_path, capsys)


class TestLakeConformance(LakeConformance):
    """The conformance suite on the lake in buckets of the S3 server (the lake-layout tests)."""

    @pytest.fixture(autouse=True)
    def aws_environment(self, s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
        for name, value in s3.environment.items():
            monkeypatch.setenv(name, value)


def test_lineage_names_a_local_lake_s_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The naming spec's local file system row: `file` and the absolute path of the folder that
    holds a table's files (records and run metadata share one)."""
    monkeypatch.chdir(tmp_path)
    settings = TargetSettings(storage=Location.parse("store"))
    with registry().open(TargetURL.parse("lake:///logs"), settings) as lake:
        named = {table.name: lake.lineage_dataset(lake.relation(table)) for table in (RECORDS, RUN_METADATA)}
        objects = lake.lineage_dataset(lake.relation(lake_layout.SOURCE_OBJECTS))
    runs = LineageDataset("file", f"{tmp_path}/logs/sync_tracking_datasets")
    assert named == {"records": runs, "metadata": runs}
    assert objects == LineageDataset("file", f"{tmp_path}/logs/metadata")
