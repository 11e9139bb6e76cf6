"""The dbt package (dbt/): `dbt build` over one history synclog wrote per warehouse (DuckDB and
PostgreSQL in `make test`), each mart compared row by row with the answer the marts' definitions
(docs/analysts/dbt.md) give over the reference model's tables for the same history
(`synclog_testing.reference.marts`); every model compiles for Snowflake, BigQuery, Redshift and
Spark too, and parses in their dialect. Marked dbt_all (minutes; `make test` leaves them out):
`dbt build` on fakesnow, through the Redshift wire proxy and in dbt-spark's session, and
BigQuery's, skipped with what its build on local-bigquery hit.

The tests named after a finding of issue 38 compare the columns the package had before it, so
they fail on the package as it was for the reason the finding gives."""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlglot
from dbt_history import LAYOUTS, RETENTION_DAYS, SYNC_A, SYNC_B, history, model, now, write
from harness.dbt_package import PACKAGE, REPO, DbtPackage, dbt_executable
from harness.errors import ServerUnavailable
from harness.fakesnow_server import fakesnow_server
from harness.postgres_server import PostgresServer
from harness.redshift_proxy import redshift_stand_in
from harness.s3_server import S3Server
from psycopg import sql
from pyspark.sql import SparkSession

from synclog.config import Config, SyncSettings
from synclog.model import as_utc
from synclog.plugins.manager import registry
from synclog.storage.location import Location
from synclog.targets.base import Target, TargetSettings
from synclog.tracking import RunQuery, find_runs
from synclog.urls import TargetURL
from synclog.writer import SyncLog
from synclog_testing.reference import Layouts, ReferenceLog
from synclog_testing.reference.marts import Settings, marts
from synclog_testing.reference.observed import differences, expected, sql_tables

SCHEMA = "marts"
"""Where dbt builds the package's models."""
VARS = {
    "synclog_anomaly_runs": 2,
    "synclog_anomaly_min_runs": 1,
    "synclog_anomaly_volume_threshold": 0.2,
    "synclog_anomaly_rejection_rate_threshold": 0.02,
}
SETTINGS = Settings(
    anomaly_runs=2, anomaly_min_runs=1, anomaly_volume_threshold=0.2, anomaly_rejection_rate_threshold=0.02
)
"""VARS, as the reference marts take them."""
MARTS = (
    "rejections",
    "record_last_synced",
    "segment_membership",
    "run_health",
    "volume_anomalies",
    "field_changes",
)
GRAINS = {
    "rejections": ("layout", "sync_id", "rejected_on", "error_code", "status_message"),
    "record_last_synced": ("layout", "sync_id", "record_identifier"),
    "segment_membership": ("layout", "sync_id", "record_identifier", "first_run_id"),
    "run_health": ("layout", "sync_id", "sync_run_id"),
    "volume_anomalies": ("layout", "sync_id", "sync_run_id"),
    "field_changes": ("layout", "sync_id", "record_identifier", "field_name", "sync_run_id"),
}
COMPILED_ONLY = {"bigquery": "bigquery", "redshift": "redshift", "snowflake": "snowflake", "spark": "spark"}
"""The adapters `make test` only compiles for, by the sqlglot dialect their SQL must parse in."""
SOURCE_TABLES = ("census.sync_log", "census.synclog_runs", "hightouch.sync_changelog", "hightouch.sync_runs")
"""The tables the package reads, as the reference model names them."""


@dataclass(frozen=True)
class Built:
    """A warehouse holding the history synclog wrote and the package's models built over it,
    the reference model given the same history, and the marts its tables define."""

    marts: dict[str, list[dict[str, Any]]]
    target: Target
    reference: ReferenceLog
    unbuilt: dict[str, str]
    """Marts `dbt build` left out on this warehouse, with why."""
    marts_schema: str

    def mart(self, name: str) -> list[dict[str, Any]]:
        """The mart's rows; the test skips where the warehouse did not build it."""
        if name in self.unbuilt:
            pytest.skip(self.unbuilt[name])
        return self.marts[name]

    def answer(self, name: str) -> list[dict[str, Any]]:
        """The mart's rows as its definition gives them over the reference model's tables."""
        return marts(self.reference.tables(), SETTINGS)[name]


def dbt_package(folder: Path, outputs: dict[str, dict[str, Any]]) -> DbtPackage:
    """The package with a profile of `outputs`; the test skips where .venv-dbt is missing."""
    try:
        return DbtPackage.with_outputs(folder, {k: {**v, "threads": 1} for k, v in outputs.items()})
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> DbtPackage:
    """The package with a profile of every compile-only adapter, their credentials fake."""
    folder = tmp_path_factory.mktemp("dbt")
    executable = dbt_package(folder, {"none": {"type": "duckdb"}}).executable
    outputs = {
        "bigquery": {"type": "bigquery", "method": "service-account-json", "project": "nowhere"}
        | {"dataset": SCHEMA, "keyfile_json": _fake_service_account(executable)},
        "redshift": {"type": "redshift", "host": "127.0.0.1", "port": 1, "user": "nobody"}
        | {"password": "none", "dbname": "analytics", "schema": SCHEMA},
        "snowflake": {"type": "snowflake", "account": "nowhere", "user": "nobody", "password": "none"}
        | {"database": "ANALYTICS", "schema": SCHEMA, "warehouse": "WH"},
        "spark": {"type": "spark", "method": "session", "host": "NA", "schema": SCHEMA},
    }
    return dbt_package(folder, outputs)


def _fake_service_account(dbt: Path) -> dict[str, str]:
    """A service-account key dbt-bigquery accepts offline (a fresh RSA key, made by dbt's Python)."""
    pem = subprocess.run(
        [
            str(dbt.parent / "python"),
            "-c",
            "from cryptography.hazmat.primitives import serialization as s;"
            "from cryptography.hazmat.primitives.asymmetric import rsa;"
            "k = rsa.generate_private_key(public_exponent=65537, key_size=2048);"
            "print(k.private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption()).decode())",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {
        "type": "service_account",
        "project_id": "nowhere",
        "private_key_id": "none",
        "private_key": pem,
        "client_email": "nobody@nowhere.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": "https://oauth2.googleapis.com/token",
    }


@dataclass(frozen=True)
class Warehouse:
    """Where synclog writes (`url`, staging files in `storage`), how dbt reaches it (`output`) and
    where the marts land."""

    url: str
    storage: Location
    output: dict[str, Any]
    marts: str
    """The marts' schema as a SQL prefix."""
    build: tuple[str, ...] = ()
    """What `dbt build` leaves out there."""
    unbuilt: tuple[str, str] | None = None
    """A mart left out there, and why."""
    publish: Callable[[], None] | None = None
    """What makes synclog's tables visible to dbt, after synclog wrote them."""
    read_mart: Callable[[Target, str], pa.Table] | None = None
    """A mart's rows where they are not in the target (default: the target's `marts` schema)."""


def duckdb(request: pytest.FixtureRequest, folder: Path, stack: ExitStack) -> Warehouse:
    path = folder / "logs.duckdb"
    output = {"type": "duckdb", "path": str(path), "schema": SCHEMA}
    return Warehouse(f"duckdb:///{path}", local_storage(folder), output, SCHEMA)


def postgres(request: pytest.FixtureRequest, folder: Path, stack: ExitStack) -> Warehouse:
    pg: PostgresServer = request.getfixturevalue("postgres")
    output = {"type": "postgres", "host": pg.host, "port": pg.port, "user": pg.user, "password": ""}
    return Warehouse(
        pg.url, local_storage(folder), output | {"dbname": pg.database, "schema": SCHEMA}, SCHEMA
    )


def snowflake(request: pytest.FixtureRequest, folder: Path, stack: ExitStack) -> Warehouse:
    try:
        server = stack.enter_context(fakesnow_server())
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)
    url = f"snowflake://fake:snow@fakesnow/CENSUS?host={server.host}&port={server.port}&protocol=http"
    output = {"type": "snowflake", "account": "fakesnow", "user": "fake", "password": "snow"}
    output |= {"host": server.host, "port": server.port, "protocol": "http", "warehouse": "WH"}
    # fakesnow: a model in CENSUS reading CENSUS.CENSUS.SYNC_LOG is an ambiguous name to its
    # DuckDB binder (so is a schema named as its database), and a unit test's temporary table
    # may not have a three-part name.
    output |= {"database": "ANALYTICS", "schema": SCHEMA}
    with registry().open(TargetURL.parse(url)) as writer:
        writer.query("CREATE DATABASE IF NOT EXISTS ANALYTICS")
    return Warehouse(url, local_storage(folder), output, f"ANALYTICS.{SCHEMA}", NO_UNIT_TESTS)


def redshift(request: pytest.FixtureRequest, folder: Path, stack: ExitStack) -> Warehouse:
    """The wire proxy in front of a database of its own on the run's PostgreSQL, S3 on moto."""
    pg: PostgresServer = request.getfixturevalue("postgres")
    s3: S3Server = request.getfixturevalue("s3")
    try:
        rs = stack.enter_context(redshift_stand_in(pg, s3))
    except ServerUnavailable as exc:
        pytest.skip(exc.reason)
    database = f"dbt_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg.dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    s3.create_bucket(database.replace("_", "-"))
    storage = Location.parse(f"s3://{database.replace('_', '-')}/synclog", s3.storage_options())
    url = f"redshift://{rs.user}:unused@{rs.host}:{rs.port}/{database}?ssl=false"
    output = {"type": "redshift", "host": rs.host, "port": rs.port, "user": rs.user, "password": "unused"}
    output |= {"dbname": database, "schema": SCHEMA, "sslmode": "disable"}
    # dbt-redshift's unit tests read pg_get_late_binding_view_cols(), which only Redshift has
    build = (*NO_UNIT_TESTS, "--exclude", "int_synclog__payload_values+")
    return Warehouse(url, storage, output, SCHEMA, build, ("field_changes", REDSHIFT_UNPIVOT))


REDSHIFT_UNPIVOT = (
    "the Redshift proxy's translation drops PartiQL's `unpivot r.payload as j_value at j_key` from "
    "int_synclog__payload_values' FROM clause, so PostgreSQL gets `FROM appearances AS r, )`: "
    'syntax error at or near ")"'
)


def spark_session_warehouse(request: pytest.FixtureRequest, folder: Path, stack: ExitStack) -> Warehouse:
    """dbt-spark's in-process session (`method: session`, Hive metastore and warehouse in `folder`).

    The session lives in dbt's process, so synclog cannot write into its catalog: synclog writes
    DuckDB, the sources' tables are copied to Parquet and declared there as Parquet tables (by
    .venv-dbt's pyspark, before `dbt build`), and the marts are read back from their Parquet files.
    """
    path = folder / "logs.duckdb"
    tables = folder / "sources"
    warehouse_dir = folder / "dbt" / "spark-warehouse"
    output = {"type": "spark", "method": "session", "host": "NA", "schema": SCHEMA}
    output["server_side_parameters"] = {"spark.sql.warehouse.dir": str(warehouse_dir)}

    def publish() -> None:
        statements = []
        with registry().open(TargetURL.parse(f"duckdb:///{path}")) as target:
            for table in SPARK_SOURCES:
                files = tables / table
                files.mkdir(parents=True)
                pq.write_table(target.query(f"SELECT * FROM {table}"), files / "part-0.parquet")
                statements += [
                    f"CREATE DATABASE IF NOT EXISTS {table.split('.')[0]}",
                    f"CREATE TABLE {table} USING parquet LOCATION '{files}'",
                ]
        declare = (
            "import json, sys; from pyspark.sql import SparkSession;"
            "s = SparkSession.builder.enableHiveSupport()"
            ".config('spark.sql.warehouse.dir', sys.argv[1]).getOrCreate();"
            "[s.sql(q) for q in json.loads(sys.argv[2])]; s.stop()"
        )
        python = dbt_executable().parent / "python"
        subprocess.run(
            [str(python), "-c", declare, str(warehouse_dir), json.dumps(statements)],
            cwd=folder / "dbt",  # where dbt's session finds the metastore (metastore_db)
            check=True,
            capture_output=True,
        )

    def read_mart(target: Target, name: str) -> pa.Table:
        table = pq.read_table(warehouse_dir / f"{SCHEMA}.db" / f"synclog_{name}")
        utc = pa.timestamp("us", "UTC")  # Spark's Parquet timestamps are UTC, read back without a zone
        return table.cast(
            pa.schema(f.with_type(utc) if pa.types.is_timestamp(f.type) else f for f in table.schema)
        )

    return Warehouse(f"duckdb:///{path}", local_storage(folder), output, SCHEMA, (), None, publish, read_mart)


BIGQUERY_CTAS = (
    "dbt build on local-bigquery (dbt-bigquery, method oauth-secrets, api_endpoint) built the 7 views, but "
    "local-bigquery answers a CREATE TABLE AS SELECT job without a destination table, so each table model "
    "and unit test fails in dbt-bigquery's client.get_table(query_job.destination): "
    "'NoneType' object has no attribute 'path'"
)
SPARK_SOURCES = (
    "census.sync_log",
    "census.synclog_runs",
    "hightouch_audit.sync_changelog",
    "hightouch_audit.sync_runs",
)
"""The tables the package's sources read."""


def local_storage(folder: Path) -> Location:
    """synclog's staging files in the test's folder."""
    return Location.parse(str(folder / "storage"))


NO_UNIT_TESTS = ("--exclude-resource-type", "unit_test")
WAREHOUSES = {
    "duckdb": duckdb,
    "postgres": postgres,
    "snowflake": snowflake,
    "redshift": redshift,
    "spark": spark_session_warehouse,
}


@pytest.fixture(
    scope="module",
    params=[
        "duckdb",
        "postgres",
        pytest.param("snowflake", marks=pytest.mark.dbt_all),
        pytest.param("redshift", marks=pytest.mark.dbt_all),
        pytest.param("spark", marks=pytest.mark.dbt_all),
        pytest.param("bigquery", marks=[pytest.mark.dbt_all, pytest.mark.skip(reason=BIGQUERY_CTAS)]),
    ],
)
def built(
    request: pytest.FixtureRequest,
    spark: SparkSession,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Built]:
    """The history written on the warehouse (and given to the reference model), retention run on
    both at the same `now`, then `dbt build` of the package."""
    folder = tmp_path_factory.mktemp(request.param)
    present = now()
    steps = history(present)
    with ExitStack() as stack:
        place = WAREHOUSES[request.param](request, folder, stack)
        runner = dbt_package(folder / "dbt", {request.param: place.output})
        config = Config(
            storage=place.storage, defaults=SyncSettings(layouts=LAYOUTS, retention_days=RETENTION_DAYS)
        )
        with SyncLog.open(place.url, config, spark=spark) as log:
            write(log, steps)
            log.cleanup(present)
            caps = log.connector.capabilities
        layouts = Layouts(LAYOUTS, run_metadata=caps.run_metadata_columns, fields_column=caps.fields_column)
        reference = model(steps, layouts)
        reference.cleanup(present)
        if place.publish:
            place.publish()
        runner.run(request.param, "build", *place.build, variables=VARS).check()  # DuckDB: file closed
        settings = TargetSettings(storage=place.storage)
        target = stack.enter_context(registry().open(TargetURL.parse(place.url), settings))
        unbuilt = dict([place.unbuilt] if place.unbuilt else [])
        read = place.read_mart or (
            lambda target, name: target.query(f"SELECT * FROM {place.marts}.synclog_{name}")
        )
        found = {name: rows_of(read(target, name)) for name in MARTS if name not in unbuilt}
        yield Built(found, target, reference, unbuilt, place.marts)


def rows_of(table: pa.Table) -> list[dict[str, Any]]:
    """Rows keyed by lower-case column names (Snowflake answers in upper case)."""
    return table.rename_columns([c.lower() for c in table.column_names]).to_pylist()


def normal(value: Any) -> Any:
    """A value as both sides give it: times in UTC, numbers rounded (integral ones as int)."""
    if isinstance(value, datetime):
        return as_utc(value)
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        number = round(float(value), 9)
        return int(number) if number.is_integer() else number
    return value


def table_of(rows: Iterable[Mapping[str, Any]], columns: Iterable[str]) -> Counter[tuple[Any, ...]]:
    """`rows` projected on `columns`, normalised, as a multiset."""
    names = tuple(columns)
    return Counter(tuple(normal(row[c]) for c in names) for row in rows)


def assert_same(
    got: Iterable[Mapping[str, Any]], want: Iterable[Mapping[str, Any]], columns: Iterable[str]
) -> None:
    """The mart's rows equal the answer's, on `columns`; the difference listed row by row."""
    names = tuple(columns)
    mine, theirs = table_of(got, names), table_of(want, names)
    missing, unexpected = theirs - mine, mine - theirs
    lines = [f"missing: {dict(zip(names, row, strict=True))}" for row in sorted(missing, key=repr)]
    lines += [f"unexpected: {dict(zip(names, row, strict=True))}" for row in sorted(unexpected, key=repr)]
    assert not lines, f"{len(lines)} rows differ on {names}:\n" + "\n".join(lines[:40])


def columns_of(rows: list[dict[str, Any]]) -> tuple[str, ...]:
    """Every column of a mart's answer (the hashed keys are not in it)."""
    return tuple(rows[0])


# -- the history and each mart, row by row -------------------------------------------------------


def test_the_history_as_written_is_the_models(built: Built) -> None:
    """The tables the package reads hold what the reference model says, so the answers below
    are about the marts, not about the writer."""
    syncs = [SYNC_A, SYNC_B]
    want = {k: v for k, v in expected(built.reference.tables(syncs)).items() if k in SOURCE_TABLES}
    got = sql_tables(built.target, list(want), syncs, [])
    assert not differences(want, got)
    assert sum(want["census.sync_log"].values()) > 20


@pytest.mark.parametrize("name", MARTS)
def test_mart_is_its_definition(built: Built, name: str) -> None:
    """Every column of every row (but the hashed keys) equals the definition's answer."""
    want = built.answer(name)
    assert want, name
    got = built.mart(name)
    assert_same(got, want, columns_of(want))
    grain = [tuple(normal(r[c]) for c in GRAINS[name]) for r in got]
    assert len(grain) == len(set(grain)), f"{name}: its grain repeats"


# -- issue 38's findings: each on the columns the package had before it --------------------------


def kept_runs(built: Built) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The mart's and the answer's rows of the runs not past retention (which the package
    before issue 38 knew of)."""
    want = [r for r in built.answer("run_health") if not r["past_retention"]]
    keys = {(r["layout"], r["sync_id"], r["sync_run_id"]) for r in want}
    got = [r for r in built.mart("run_health") if (r["layout"], r["sync_id"], r["sync_run_id"]) in keys]
    return got, want


def test_run_status_is_the_one_synclog_runs_shows(built: Built) -> None:
    """Finding 1: a failed run whose records the destination accepted is partial."""
    got, want = kept_runs(built)
    assert_same(got, want, ("layout", "sync_id", "sync_run_id", "run_status"))
    rows = built.mart("run_health")
    shown = {
        (layout, r["sync_id"], r["sync_run_id"]): r["status"]
        for layout in LAYOUTS
        for sync_id in (SYNC_A, SYNC_B)
        for r in find_runs(built.target, RunQuery(sync_id, limit=100), layout).to_pylist()
    }
    statuses = {(r["layout"], r["sync_id"], r["sync_run_id"]): r["run_status"] for r in rows}
    assert {run: statuses.get(run) for run in shown} == shown  # census: the runs whose records are kept
    assert shown[("census", SYNC_A, 3)] == shown[("hightouch", SYNC_A, 3)] == "partial"


def test_attempted_counts_only_records_sent(built: Built) -> None:
    """Finding 1: records flagged DUPLICATE that were never sent are not attempted; flagged
    records the destination answered count by that answer, and so does the rejection rate."""
    counts = ("planned", "attempted", "succeeded", "rejected", "aborted", "rejection_rate")
    got, want = kept_runs(built)
    assert_same(got, want, ("layout", "sync_id", "sync_run_id", *counts))
    rows = built.mart("run_health")
    hightouch = {r["sync_run_id"]: r for r in rows if (r["layout"], r["sync_id"]) == ("hightouch", SYNC_A)}
    runs = built.reference.tables([SYNC_A])["hightouch.sync_runs"]
    for run in (dict(r) for r in runs):
        sent = sum(run[f"num_attempted_{op}"] for op in ("add", "change", "remove"))
        assert hightouch[run["sync_run_id"]]["attempted"] == sent


def test_runs_are_joined_on_sync_id(built: Built) -> None:
    """Finding 1: sync A's flagged rows stay in sync A's runs, though sync B has the same run ids."""
    got, want = kept_runs(built)
    assert_same(got, want, ("layout", "sync_id", "sync_run_id", "invalid_null", "invalid_duplicate"))


def test_last_synced_counts_flagged_records(built: Built) -> None:
    """Finding 2: a flagged row the destination answered is an attempt like any other."""
    columns = (
        "layout",
        "sync_id",
        "record_identifier",
        "last_attempt_run_id",
        "last_attempted_at",
        "last_attempt_status",
        "last_attempt_message",
        "last_succeeded_run_id",
        "last_succeeded_at",
    )
    want = built.answer("record_last_synced")
    assert_same(built.mart("record_last_synced"), want, columns)
    only_flagged = {(r["layout"], r["record_identifier"]) for r in want if r["last_attempt_invalid_reason"]}
    assert ("census", "u13@example.com") in only_flagged


STAY = ("layout", "sync_id", "record_identifier", "entered_run_id", "valid_from", "left_run_id", "valid_to")


def test_hightouch_changed_does_not_start_a_stay(built: Built) -> None:
    """Finding 3: only `added` starts a stay; a stay whose first kept row is `changed` began
    before the kept rows."""
    want = [r for r in built.answer("segment_membership") if r["layout"] == "hightouch"]
    got = [r for r in built.mart("segment_membership") if r["layout"] == "hightouch"]
    assert_same(got, want, STAY)
    assert any(not r["entry_retained"] for r in want)


def test_census_stay_before_the_horizon_has_no_invented_start(built: Built) -> None:
    """Finding 3: in a census log retention cut, a record's first kept row does not date its entry."""
    want = [r for r in built.answer("segment_membership") if r["layout"] == "census"]
    got = [r for r in built.mart("segment_membership") if r["layout"] == "census"]
    assert_same(got, want, STAY)
    u1 = [r for r in want if (r["sync_id"], r["record_identifier"]) == (SYNC_A, "u1@example.com")]
    assert [(r["valid_from"], r["entry_retained"]) for r in u1] == [(None, False)]


def test_membership_reads_flagged_rows_in_both_layouts(built: Built) -> None:
    """Finding 3: a flagged row the destination accepted moves a census record as it moves a
    hightouch one."""
    columns = ("layout", "sync_id", "record_identifier")
    assert_same(built.mart("segment_membership"), built.answer("segment_membership"), columns)


def test_volume_anomalies_follow_run_health(built: Built) -> None:
    """Finding 4: the anomalies are judged on the runs' right counts and rates."""
    columns = (
        "layout",
        "sync_id",
        "sync_run_id",
        "median_records",
        "median_rejection_rate",
        "records_anomaly",
        "rejection_rate_anomaly",
    )
    want = built.answer("volume_anomalies")
    assert_same(built.mart("volume_anomalies"), want, columns)
    assert any(r["rejection_rate_anomaly"] for r in want)


def test_field_changes_of_flagged_payloads_in_one_text_form(built: Built) -> None:
    """Findings 5 and 7: payloads a run sent flagged are read as the definition says, and each
    value has one JSON text on every warehouse."""
    columns = columns_of(built.answer("field_changes"))
    assert_same(built.mart("field_changes"), built.answer("field_changes"), columns)
    values = {v for r in built.answer("field_changes") for v in (r["old_value"], r["new_value"])}
    assert {'["x","z"]', '"enterprise"', "1000", "12.5", "1e+30"} <= values
    flagged = {
        (r["layout"], r["field_name"], r["old_value"], r["new_value"])
        for r in built.answer("field_changes")
        if (r["sync_id"], r["record_identifier"], r["sync_run_id"]) == (SYNC_A, "u6@example.com", 5)
    }
    assert flagged == {(layout, "plan", '"free"', '"pro"') for layout in LAYOUTS}, "u6's flagged payload"


# -- the docs --------------------------------------------------------------------------------------

DOCS = REPO / "docs" / "analysts" / "dbt.md"


def test_docs_define_every_column_of_every_mart(built: Built) -> None:
    """Finding 7: docs/analysts/dbt.md has a column table for each mart naming all its columns."""
    text = DOCS.read_text(encoding="utf-8")
    for name in MARTS:
        section = text.split(f"### `synclog_{name}`", 1)
        assert len(section) == 2, f"no section for synclog_{name}"
        table = section[1].split("\n### ", 1)[0]
        named = set(
            re.findall(
                r"`(\w+)`",
                "\n".join(line.split("|")[1] for line in table.splitlines() if line.startswith("| `")),
            )
        )
        columns = {
            c.lower()
            for c in built.target.query(
                f"SELECT * FROM {built.marts_schema}.synclog_{name} WHERE 1 = 0"
            ).column_names
        }
        assert columns <= named, f"synclog_{name}: {sorted(columns - named)} not defined"


def test_docs_examples_run(built: Built) -> None:
    """Finding 7: the doc's questions run as written on the marts its profile builds, and the
    most common reason counts each rejected record once."""
    text = DOCS.read_text(encoding="utf-8")
    block = text.split("## Questions, answered on the demo", 1)[1].split("```sql", 1)[1].split("```", 1)[0]
    statements = [s.strip() for s in block.split(";") if s.strip()]
    assert len(statements) == len(MARTS)
    answers = [rows_of(built.target.query(s)) for s in statements]
    rejected = sum(r["records"] for r in built.answer("rejections") if r["layout"] == "census")
    assert sum(r["records"] for r in answers[0]) == rejected


# -- the other adapters ----------------------------------------------------------------------------


@pytest.mark.parametrize("adapter", sorted(COMPILED_ONLY))
def test_every_model_compiles_for(adapter: str, package: DbtPackage) -> None:
    """`dbt compile` with no connection (fake credentials, no cache, no introspection)."""
    package.run(adapter, "compile", "--no-populate-cache", "--no-introspect").check()
    compiled = package.compiled(adapter)
    assert set(compiled) >= {p.stem for p in (PACKAGE / "models").rglob("*.sql")}
    for text in compiled.values():
        sqlglot.parse_one(text, read=COMPILED_ONLY[adapter])  # raises on SQL the dialect cannot read
    source = {
        "bigquery": "`nowhere`.`census`.`sync_log`",  # the profile's project
        "redshift": '"analytics"."census"."sync_log"',  # the profile's database
        "snowflake": "CENSUS.census.sync_log",  # synclog's database there
        "spark": "census.sync_log",
    }
    assert source[adapter] in compiled["stg_synclog__census_records"], compiled["stg_synclog__census_records"]
