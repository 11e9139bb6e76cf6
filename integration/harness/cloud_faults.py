"""Fault scenarios of the cloud warehouses on their stand-ins (see `harness.faults`).

    snowflake   fakesnow's server (HTTP), its DuckDB reading `s3://` stage files from moto;
                storage on moto S3: COPY from an external stage over the executors' files
    redshift    the wire proxy in front of a real PostgreSQL, its COPY reading moto S3;
                storage on moto S3: one COPY with a manifest
    bigquery    local-bigquery (REST); storage on the GCS emulator that its load jobs read:
                one load job over the staged files' URIs
    databricks  the SQL-warehouse stand-in (Spark behind the Statement Execution API), its
                COPY INTO reading moto S3; storage on moto S3: COPY INTO from the cloud path

Every one has a loopback `Switch` in front of the warehouse's endpoint, so a `cut` and an
`outage` apply to all: the switch carries the writer's connection to the warehouse; storage
(S3, GCS) is reached directly. Each trial gets a warehouse namespace of its own (a database,
project or schema) and a storage prefix of its own; the checks read the warehouse through
its own client, never through synclog.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .faults import Contents, PostgresScenario, Scenario, Switch, TrialTarget


class ObjectStorage(Scenario):
    """A scenario whose `storage` is a prefix of an object store bucket, one per trial."""

    scheme = "s3"
    bucket = ""

    def storage_of(self, trial: str, folder: Path) -> str:
        return f"{self.scheme}://{self.bucket}/{self.name}/{trial}"

    def discard(self, target: TrialTarget) -> None:
        from synclog.storage.location import Location

        location = Location.parse(target.storage, dict(self.storage_options))
        with contextlib.suppress(OSError):
            location.filesystem().delete_dir(location.path(""))
        super().discard(target)

    def outage_for(self, target: TrialTarget) -> contextlib.AbstractContextManager[None]:
        return self.outage()


def _s3_options(s3_env: Mapping[str, str]) -> dict[str, str]:
    """moto's endpoint as `[storage]` keys (the keys come from the writers' AWS_* variables)."""
    return {"endpoint_url": s3_env["AWS_ENDPOINT_URL"], "region": s3_env["AWS_REGION"]}


# -- Snowflake -----------------------------------------------------------------------------------


class SnowflakeScenario(ObjectStorage):
    name = "snowflake"
    layouts = ("census",)
    faults = ("kill@point", "kill@random", "cut", "outage")

    def __init__(self, root: Path, host: str, port: int, s3_env: Mapping[str, str], bucket: str) -> None:
        super().__init__(root)
        self.server = (host, port)
        self.switch = Switch(host, port)
        self.switch.up()
        self.bucket = bucket
        self.storage_options = _s3_options(s3_env)

    def make_target(self, trial: str, folder: Path) -> str:
        database = f"F_{trial}".replace("-", "_").upper()
        assert self.switch is not None
        return (
            f"snowflake://fake:snow@fakesnow/{database}?host=127.0.0.1&port={self.switch.port}"
            "&protocol=http&network_timeout=30"
        )

    @contextlib.contextmanager
    def _cursor(self, target: TrialTarget) -> Iterator[Any]:
        import snowflake.connector

        host, port = self.server
        database = self._database(target)
        with (
            snowflake.connector.connect(
                user="fake", password="snow", account="fakesnow", host=host, port=port,
                protocol="http", database=database, network_timeout=30,
            ) as conn,
            conn.cursor() as cursor,
        ):  # fmt: skip
            yield cursor

    def _tables(self, cursor: Any) -> list[tuple[str, str]]:
        cursor.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_type = 'BASE TABLE' AND table_schema <> 'INFORMATION_SCHEMA' ORDER BY 1, 2"
        )
        return [(str(s), str(t)) for s, t in cursor.fetchall()]

    def contents(self, target: TrialTarget) -> Contents:
        found: Contents = {}
        with self._cursor(target) as cursor:
            for schema, table in self._tables(cursor):
                if table.lower() == "synclog_versions" or table.lower().startswith("_synclog_stage_"):
                    continue
                cursor.execute(f'SELECT * FROM "{schema}"."{table}"')
                names = [d[0].lower() for d in cursor.description]
                found[f"{schema}.{table}".lower()] = [
                    dict(zip(names, r, strict=True)) for r in cursor.fetchall()
                ]
        return found

    def leftovers(self, target: TrialTarget) -> list[str]:
        """Staging tables, and stages other than temporary ones (synclog makes only those, which
        end with their session on Snowflake; fakesnow keeps them, so they cannot be told here)."""
        with self._cursor(target) as cursor:
            tables = [
                f"{schema}.{table}"
                for schema, table in self._tables(cursor)
                if table.lower().startswith("_synclog_stage_")
            ]
            cursor.execute(f"SHOW STAGES IN DATABASE {self._database(target)}")
            names = [d[0].lower() for d in cursor.description]
            stages = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        return tables + [
            f"stage {s['schema_name']}.{s['name']}"
            for s in stages
            if "TEMPORARY" not in str(s["type"]).upper()
        ]

    def _database(self, target: TrialTarget) -> str:
        return target.url.split("?")[0].rsplit("/", 1)[1]


# -- Redshift ------------------------------------------------------------------------------------


class RedshiftScenario(ObjectStorage, PostgresScenario):
    """The proxy's PostgreSQL holds a database per trial; the switch is in front of the proxy."""

    name = "redshift"
    layouts = ("census",)
    faults = ("kill@point", "kill@random", "cut", "outage")

    def __init__(
        self,
        root: Path,
        postgres: tuple[str, int, str, str],
        proxy: tuple[str, int],
        iam_role: str,
        s3_env: Mapping[str, str],
        bucket: str,
    ) -> None:
        PostgresScenario.__init__(self, root, *postgres)
        assert self.switch is not None
        self.switch.down()
        self.switch = Switch(*proxy)
        self.switch.up()
        self.bucket = bucket
        self.options = {"iam_role": iam_role}
        self.storage_options = _s3_options(s3_env)

    def make_target(self, trial: str, folder: Path) -> str:
        _, _, user, _ = self.server
        assert self.switch is not None
        return f"redshift://{user}:unused@127.0.0.1:{self.switch.port}/{self.new_database(trial)}?ssl=false"

    def discard(self, target: TrialTarget) -> None:
        ObjectStorage.discard(self, target)
        with self._admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self._database(target)}" WITH (FORCE)')


# -- BigQuery ------------------------------------------------------------------------------------


class BigQueryScenario(ObjectStorage):
    """A project of the stand-in per trial; the switch is in front of its REST endpoint."""

    name = "bigquery"
    layouts = ("census",)
    faults = ("kill@point", "kill@random", "cut", "outage")
    scheme = "gs"

    def __init__(self, root: Path, endpoint: str, gcs_endpoint: str, bucket: str) -> None:
        super().__init__(root)
        host, port = endpoint.removeprefix("http://").split(":")
        self.endpoint = endpoint
        self.switch = Switch(host, int(port))
        self.switch.up()
        self.bucket = bucket
        self.storage_options = {"endpoint_url": gcs_endpoint}

    def make_target(self, trial: str, folder: Path) -> str:
        assert self.switch is not None
        project = f"f-{trial}".lower()
        return (
            f"bigquery://{project}?endpoint=http://127.0.0.1:{self.switch.port}"
            "&retry_seconds=15"  # calls give up after 15 s (the plugin's default is 60)
        )

    def _client(self, target: TrialTarget) -> Any:
        from google.api_core.client_options import ClientOptions
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import bigquery

        project = target.url.removeprefix("bigquery://").split("?")[0]
        return bigquery.Client(
            project=project,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options=ClientOptions(api_endpoint=self.endpoint),
        )

    def _tables(self, target: TrialTarget) -> list[Any]:
        client = self._client(target)
        return [t for d in client.list_datasets() for t in client.list_tables(d.reference)]

    def contents(self, target: TrialTarget) -> Contents:
        client = self._client(target)
        found: Contents = {}
        for table in self._tables(target):
            name = table.table_id
            if (
                table.table_type != "TABLE"
                or name == "synclog_versions"
                or name.startswith("_synclog_stage_")
            ):
                continue
            rows = client.query(f"SELECT * FROM `{table.project}.{table.dataset_id}.{name}`").result()
            found[f"{table.dataset_id}.{name}"] = [dict(row.items()) for row in rows]
        return found

    def leftovers(self, target: TrialTarget) -> list[str]:
        return [
            f"{t.dataset_id}.{t.table_id}"
            for t in self._tables(target)
            if t.table_id.startswith("_synclog_stage_")
        ]


# -- Databricks (SQL warehouse) ------------------------------------------------------------------


class DatabricksWarehouseScenario(ObjectStorage):
    """A schema of the stand-in's catalog per trial (the census layout's, renamed)."""

    name = "databricks"
    layouts = ("census",)
    faults = ("kill@point", "kill@random", "cut", "outage")
    catalog = "census"

    def __init__(self, root: Path, server: Any, s3_env: Mapping[str, str], bucket: str) -> None:
        super().__init__(root)
        self.server = server
        self.switch = Switch(server.host, server.port)
        self.switch.up()
        self.bucket = bucket
        self.storage_options = _s3_options(s3_env)

    def schemas_of(self, trial: str) -> dict[str, str]:
        return {"census": f"f_{trial}".replace("-", "_").lower()}

    def make_target(self, trial: str, folder: Path) -> str:
        assert self.switch is not None
        return (
            f"databricks://token:{self.server.token}@127.0.0.1:{self.switch.port}"
            f"?http_path={self.server.http_path}&scheme=http&use_sea=true&catalog={self.catalog}"
            "&retry_seconds=15"  # the connector's retries: an outage is told after 15 s, not 120
        )

    def _schema(self, target: TrialTarget) -> str:
        return self.schemas_of(target.name)["census"]

    @contextlib.contextmanager
    def _cursor(self) -> Iterator[Any]:
        import databricks.sql

        with databricks.sql.connect(**self.server.connect_kwargs()) as conn, conn.cursor() as cursor:
            yield cursor

    def _tables(self, cursor: Any, schema: str) -> list[str]:
        cursor.execute(f"SHOW SCHEMAS IN `{self.catalog}`")
        if schema not in {str(row[0]) for row in cursor.fetchall()}:
            return []
        cursor.execute(f"SHOW TABLES IN `{self.catalog}`.`{schema}`")
        return [str(row[1]) for row in cursor.fetchall() if not row[2]]

    def contents(self, target: TrialTarget) -> Contents:
        schema = self._schema(target)
        found: Contents = {}
        with self._cursor() as cursor:
            for table in self._tables(cursor, schema):
                if table == "synclog_versions" or table.startswith("_synclog_stage_"):
                    continue
                cursor.execute(f"SELECT * FROM `{self.catalog}`.`{schema}`.`{table}`")
                names = [d[0] for d in cursor.description]
                found[table] = [
                    dict(zip(names, r, strict=True)) for r in cursor.fetchall()
                ]  # schemas differ per trial
        return found

    def leftovers(self, target: TrialTarget) -> list[str]:
        schema = self._schema(target)
        with self._cursor() as cursor:
            tables = [
                f"{schema}.{t}" for t in self._tables(cursor, schema) if t.startswith("_synclog_stage_")
            ]
        volume = self.server.volume_root / self.catalog / schema
        return tables + sorted(str(p) for p in volume.rglob("*") if p.is_file())

    def discard(self, target: TrialTarget) -> None:
        with self._cursor() as cursor:
            cursor.execute(f"DROP SCHEMA IF EXISTS `{self.catalog}`.`{self._schema(target)}` CASCADE")
        super().discard(target)


# -- Databricks (in the cluster) -----------------------------------------------------------------


class DatabricksClusterScenario(Scenario):
    """`databricks+spark://census` on a Spark Connect server standing in for the cluster, its
    catalog `census` an alias of the session catalog (`harness.spark_catalogs`), tables Parquet
    (no Delta jars here). The writers are Spark Connect clients of the server (as Databricks
    Connect is), so a kill ends the writer, not the cluster: a statement it had sent runs on.
    The target is the Spark session itself, so there is no connection to cut or take down apart
    from Spark's: only kills. A schema per trial; storage is a folder the server sees too."""

    name = "databricks-cluster"
    layouts = ("census",)
    faults = ("kill@point", "kill@random")
    catalog = "census"

    def __init__(self, root: Path, remote: str, warehouse: Path) -> None:
        super().__init__(root)
        from pyspark.sql import SparkSession

        self.worker_env = {"SPARK_REMOTE": remote}
        self.warehouse = warehouse
        self.spark = SparkSession.builder.remote(remote).getOrCreate()

    def schemas_of(self, trial: str) -> dict[str, str]:
        return {"census": f"f_{trial}".replace("-", "_").lower()}

    def make_target(self, trial: str, folder: Path) -> str:
        return f"databricks+spark://{self.catalog}"

    def _schema(self, target: TrialTarget) -> str:
        return self.schemas_of(target.name)["census"]

    def _tables(self, schema: str) -> list[str]:
        schemas = {row[0] for row in self.spark.sql(f"SHOW SCHEMAS IN `{self.catalog}`").collect()}
        if schema not in schemas:
            return []
        rows = self.spark.sql(f"SHOW TABLES IN `{self.catalog}`.`{schema}`").collect()
        return [str(row["tableName"]) for row in rows if not row["isTemporary"]]

    def contents(self, target: TrialTarget) -> Contents:
        schema = self._schema(target)
        found: Contents = {}
        for table in self._tables(schema):
            if table == "synclog_versions" or table.startswith("_synclog_stage_"):
                continue
            rows = self.spark.sql(f"SELECT * FROM `{self.catalog}`.`{schema}`.`{table}`").collect()
            found[table] = [row.asDict() for row in rows]
        return found

    def leftovers(self, target: TrialTarget) -> list[str]:
        """Stage tables, and folders in the schema's warehouse folder that no table owns (the
        files of a killed writer's job)."""
        schema = self._schema(target)
        tables = self._tables(schema)
        folder = self.warehouse / f"{schema}.db"
        owned = {t.lower() for t in tables}
        strays = sorted(
            str(p.relative_to(self.warehouse))
            for p in (folder.iterdir() if folder.is_dir() else [])
            if p.name.lower() not in owned
        )
        return [f"{schema}.{t}" for t in tables if t.startswith("_synclog_stage_")] + strays

    def discard(self, target: TrialTarget) -> None:
        self.spark.sql(f"DROP SCHEMA IF EXISTS `{self.catalog}`.`{self._schema(target)}` CASCADE")
        super().discard(target)

    def close(self) -> None:
        self.spark.stop()
        super().close()
