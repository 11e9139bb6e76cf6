"""The Spark side of the Databricks SQL stand-in: Databricks SQL on a local Spark session.

:class:`Engine` keeps a Spark session per SEA session and runs statements on it. Most SQL goes
to Spark unchanged; what Databricks has and open-source Spark has not is translated here:
``USE CATALOG``, ``CREATE CATALOG`` (a new alias catalog), ``CREATE/DROP VOLUME`` (a folder),
``PUT/GET/REMOVE`` on ``/Volumes/…`` (answered with presigned URLs of the HTTP side), ``LIST``,
``COPY INTO … FROM '/Volumes/…'`` (a Spark read of the files and an ``INSERT``), also from
``'s3://…' [WITH (CREDENTIAL (…))]`` (the named files fetched from the S3 endpoint in
``AWS_ENDPOINT_URL`` with the statement's keys, else ``AWS_*``, then read the same way),
``USING DELTA`` (Parquet), ``CREATE OR REPLACE TABLE`` (drop, create), ``SHOW CATALOGS`` and
``SHOW TABLES IN CATALOG`` (what the connector's metadata calls send), and ``DELETE`` and
``MERGE`` with only ``WHEN MATCHED THEN DELETE`` / ``WHEN NOT MATCHED THEN INSERT`` clauses on
Parquet tables (emulated; a delete rewrites the table, not atomically). VARIANT results are sent
as JSON text, as Databricks does. ``DATABRICKS_NOTES.md`` has the details.
It imports nothing from the harness package: ``databricks_sql_app.py`` runs as a script.
"""

from __future__ import annotations

import datetime as dt
import decimal
import fnmatch
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

ALIAS_CLASS = "synclog.harness.SessionCatalogAlias"  # spark_catalogs.CATALOG_CLASS
TRANSFER_TTL_S = 900  # how long a presigned Volume URL is valid
_IDENT = r"(?:`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)"
_NAME3 = rf"{_IDENT}(?:\s*\.\s*{_IDENT}){{0,2}}"
_VOLUME_PATH = re.compile(r"^/Volumes/([^/]+)/([^/]+)/([^/]+)(?:/(.*))?$")


class StatementError(Exception):
    """A statement failed: answered as state FAILED (the connector raises ServerOperationError)."""

    def __init__(self, message: str, error_code: str = "BAD_REQUEST", sql_state: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.error_code = error_code
        self.sql_state = sql_state


@dataclass
class Result:
    """Rows (Arrow) and their SEA column descriptions."""

    table: pa.Table
    columns: list[dict[str, Any]]
    volume_operation: bool = False


@dataclass
class Transfer:
    """One presigned Volume URL: what it may do, to which file, until when."""

    operation: str
    path: Path
    overwrite: bool
    expires: float


# --------------------------------------------------------------------------- Spark types → SEA


def _sea_type(data_type: T.DataType) -> str:
    names: dict[type[T.DataType], str] = {
        T.ByteType: "BYTE", T.ShortType: "SHORT", T.IntegerType: "INT", T.LongType: "LONG",
        T.FloatType: "FLOAT", T.DoubleType: "DOUBLE", T.DecimalType: "DECIMAL", T.BooleanType: "BOOLEAN",
        T.DateType: "DATE", T.TimestampType: "TIMESTAMP", T.TimestampNTZType: "TIMESTAMP_NTZ",
        T.StringType: "STRING", T.BinaryType: "BINARY", T.ArrayType: "ARRAY", T.MapType: "MAP",
        T.StructType: "STRUCT", T.NullType: "NULL", T.VariantType: "VARIANT",
    }  # fmt: skip
    for cls, name in names.items():
        if isinstance(data_type, cls):
            return name
    if isinstance(data_type, T.DayTimeIntervalType | T.YearMonthIntervalType):
        return "INTERVAL"
    return "USER_DEFINED_TYPE"


def _columns(schema: T.StructType) -> list[dict[str, Any]]:
    columns = []
    for position, spark_field in enumerate(schema.fields):
        column: dict[str, Any] = {
            "name": spark_field.name,
            "type_name": _sea_type(spark_field.dataType),
            "type_text": spark_field.dataType.simpleString().upper(),
            "position": position,
        }
        if isinstance(spark_field.dataType, T.DecimalType):
            column["type_precision"] = spark_field.dataType.precision
            column["type_scale"] = spark_field.dataType.scale
        if isinstance(spark_field.dataType, T.DayTimeIntervalType | T.YearMonthIntervalType):
            column["type_interval_type"] = spark_field.dataType.simpleString().upper()
        columns.append(column)
    return columns


def _literal(param: dict[str, Any]) -> Any:
    """A SEA parameter (``{name, value, type}``, the value as text) as the Python value Spark binds.

    Spark takes literals only (no CAST), so the text is parsed here by the parameter's type.
    """
    value, type_name = param.get("value"), str(param.get("type") or "STRING").upper()
    if value is None or type_name == "VOID":
        return None
    text = str(value)
    if type_name in ("TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "LONG", "SHORT", "BYTE"):
        return int(text)
    if type_name in ("FLOAT", "DOUBLE", "REAL"):
        return float(text)
    if type_name.startswith(("DECIMAL", "NUMERIC")):
        return decimal.Decimal(text)
    if type_name == "BOOLEAN":
        return text.strip().lower() in ("true", "1")
    if type_name == "DATE":
        return dt.date.fromisoformat(text)
    if type_name.startswith("TIMESTAMP"):
        return dt.datetime.fromisoformat(text)
    return text


# --------------------------------------------------------------------------- the engine


class Engine:
    """Spark sessions per SEA session, statement execution, Volumes and COPY INTO."""

    def __init__(self, spark: SparkSession, volume_root: Path, catalogs: list[str], base_url: str) -> None:
        self.spark = spark
        self.base_url = base_url
        self.volume_root = volume_root
        self.catalogs = {c.lower() for c in catalogs}
        self.sessions: dict[str, SparkSession] = {}
        self.transfers: dict[str, Transfer] = {}
        self.loaded: dict[str, set[tuple[str, int, int]]] = {}  # table → files COPY INTO loaded
        self.lock = threading.Lock()

    # sessions ------------------------------------------------------------------

    def open_session(self, catalog: str | None, schema: str | None, confs: dict[str, str]) -> str:
        """A new Spark session using ``catalog`` and ``schema``; StatementError if either is missing."""
        session = self.spark.newSession()
        for name in self.catalogs:
            session.conf.set(f"spark.sql.catalog.{name}", ALIAS_CLASS)
        for key, value in confs.items():
            if key.lower() == "timezone":
                session.conf.set("spark.sql.session.timeZone", value)
            elif key.lower() == "ansi_mode":
                session.conf.set("spark.sql.ansi.enabled", value)
        try:
            if catalog:
                self._check_catalog(catalog)
                session.sql(f"SET CATALOG `{catalog}`")
            if schema:
                session.sql(f"USE SCHEMA `{schema}`")
        except PySparkException as exc:
            raise StatementError(_message(exc), "NOT_FOUND", _sql_state(exc)) from None
        session_id = str(uuid.uuid4())
        self.sessions[session_id] = session
        return session_id

    def _check_catalog(self, catalog: str) -> None:
        if catalog.lower() not in self.catalogs | {"spark_catalog"}:
            raise StatementError(
                f"[NO_SUCH_CATALOG_EXCEPTION] The catalog '{catalog}' was not found. "
                "Create it with CREATE CATALOG, or start the server with it.",
                "NOT_FOUND",
                "42704",
            )

    # statements ----------------------------------------------------------------

    def execute(self, session: SparkSession, sql: str, params: list[dict[str, Any]], tag: str) -> Result:
        text = _strip(sql)
        # Each statement sees every table as last committed, whichever session wrote it (Delta's
        # reads are snapshots of the latest version); Spark would keep the file list of a
        # Parquet table this session read earlier, missing what other sessions wrote since.
        session._jsparkSession.sessionState().catalog().invalidateAllCachedTables()
        handlers: list[tuple[re.Pattern[str], Callable[..., Result]]] = [
            (_PUT, self._put), (_GET, self._get), (_REMOVE, self._remove), (_LIST, self._list),
            (_CREATE_CATALOG, self._create_catalog), (_CREATE_VOLUME, self._create_volume),
            (_DROP_VOLUME, self._drop_volume), (_COPY_INTO, self._copy_into),
            (_SHOW_CATALOGS, self._show_catalogs), (_SHOW_TABLES_IN_CATALOG, self._show_tables),
        ]  # fmt: skip
        for pattern, handler in handlers:
            match = pattern.match(text)
            if match:
                return handler(session, match)
        use_catalog = _USE_CATALOG.match(text)
        if use_catalog:  # Databricks SQL; Spark spells it SET CATALOG
            self._check_catalog(use_catalog.group("name").strip("`"))
            text = f"SET CATALOG {use_catalog.group('name')}"
        text = re.sub(r"`(/Volumes/[^`]+)`", lambda m: f"`{self._local(m.group(1))}`", text)
        args = _args(params)
        session.addTag(tag)
        try:
            if _CREATE_TABLE.match(text):
                text = re.sub(r"\bUSING\s+DELTA\b", "USING PARQUET", text, flags=re.IGNORECASE)
                replace = _CREATE_OR_REPLACE_TABLE.match(text)
                if replace:  # v1 (Parquet) tables cannot be replaced: drop, then create (not atomic)
                    session.sql(f"DROP TABLE IF EXISTS {replace.group('name')}")
                    text = "CREATE TABLE " + text[replace.start("name") :]
            try:
                return _to_result(session.sql(text, args=args))
            except PySparkException as exc:
                if not _unsupported_table_operation(exc):
                    raise
                delete, merge = _DELETE.match(text), _emulated_merge(text)
                if delete:
                    return self._emulate_delete(session, delete, args)
                if merge:
                    return self._emulate_merge(session, merge, args)
                raise StatementError(
                    _message(exc) + " (the local stand-in emulates DELETE, and MERGE with only "
                    "WHEN MATCHED THEN DELETE and WHEN NOT MATCHED THEN INSERT clauses, on Parquet tables)",
                    _error_code(exc),
                    _sql_state(exc),
                ) from None
        except PySparkException as exc:
            raise StatementError(_message(exc), _error_code(exc), _sql_state(exc)) from None
        except Py4JJavaError as exc:  # a JVM exception pyspark does not convert (e.g. DATA_SOURCE_NOT_FOUND)
            message = str(exc.java_exception.getMessage() or exc.java_exception.toString())
            state = re.search(r"SQLSTATE: (\w{5})", message)
            raise StatementError(
                message.strip(), "BAD_REQUEST" if state else "INTERNAL_ERROR", state and state.group(1)
            ) from None
        finally:
            session.removeTag(tag)

    # DELETE and MERGE on Parquet (v1) tables, which Spark refuses ----------------

    def _emulate_delete(self, session: SparkSession, match: re.Match[str], args: Any) -> Result:
        """Rewrite the table without the rows the condition holds for (whole table, not atomic)."""
        name, alias, cond = match.group("name"), match.group("alias"), match.group("cond")
        source = f"{name} AS {alias}" if alias else name
        total = session.table(name).count()
        kept = session.sql(
            f"SELECT * FROM {source} WHERE NOT COALESCE(({cond or 'TRUE'}), FALSE)", args=args
        ).localCheckpoint()
        deleted = total - kept.count()
        if deleted:
            self._overwrite(session, name, kept)
        return _longs({"num_affected_rows": deleted})

    def _emulate_merge(self, session: SparkSession, merge: dict[str, str | None], args: Any) -> Result:
        """``WHEN MATCHED THEN DELETE`` and ``WHEN NOT MATCHED THEN INSERT``, against the table as it was.

        Without deleted rows, the source rows with no match are inserted. With them, the whole
        table is rewritten without the matched rows and with the inserted ones (``INSERT
        OVERWRITE`` of every partition, from a checkpoint): not atomic, like the emulated DELETE.
        """
        name = merge["target"] or ""
        target = name + (f" AS {merge['target_alias']}" if merge["target_alias"] else "")
        source = (merge["source"] or "") + (f" AS {merge['source_alias']}" if merge["source_alias"] else "")
        share = dict(zip(_MERGE_PARTS, _split_args(args, [merge[p] for p in _MERGE_PARTS]), strict=True))
        rows: DataFrame | None = None
        if merge["insert"]:
            where = f"NOT EXISTS (SELECT 1 FROM {target} WHERE {merge['on']})"
            if merge["and"]:
                where += f" AND ({merge['and']})"
            values = merge["values"] or f"{merge['source_alias'] or merge['source']}.*"
            rows = session.sql(
                f"SELECT {values} FROM {source} WHERE {where}",
                args=_joined(share["values"], share["source"], share["on"], share["and"]),
            ).localCheckpoint()
            if merge["columns"]:
                rows = rows.toDF(*[c.strip().strip("`") for c in merge["columns"].split(",")])
        inserted, deleted = (rows.count() if rows is not None else 0), 0
        if merge["delete"]:
            matched = f"SELECT 1 FROM {source} WHERE ({merge['on']})"
            if merge["delete_and"]:
                matched += f" AND ({merge['delete_and']})"
            kept = session.sql(
                f"SELECT {merge['target_alias'] or name}.* FROM {target} WHERE NOT EXISTS ({matched})",
                args=_joined(share["source"], share["on"], share["delete_and"]),
            ).localCheckpoint()
            deleted = session.table(name).count() - kept.count()
        if deleted:
            if rows is not None:
                kept = kept.unionByName(self._align(session, name, session.table(name).schema, rows, False))
            self._overwrite(session, name, kept)
        elif rows is not None and inserted:
            view = f"_synclog_merge_{uuid.uuid4().hex}"
            self._align(session, name, session.table(name).schema, rows, False).createOrReplaceTempView(view)
            try:
                session.sql(f"INSERT INTO {name} SELECT * FROM {view}")
            finally:
                session.catalog.dropTempView(view)
        return _longs(
            {
                "num_affected_rows": inserted + deleted,
                "num_updated_rows": 0,
                "num_deleted_rows": deleted,
                "num_inserted_rows": inserted,
            }
        )

    def _overwrite(self, session: SparkSession, name: str, rows: DataFrame) -> None:
        """Replace every row of table `name` by `rows` (a static overwrite of every partition)."""
        view = f"_synclog_rows_{uuid.uuid4().hex}"
        rows.createOrReplaceTempView(view)
        mode = session.conf.get("spark.sql.sources.partitionOverwriteMode")
        session.conf.set("spark.sql.sources.partitionOverwriteMode", "static")
        try:
            session.sql(f"INSERT OVERWRITE TABLE {name} SELECT * FROM {view}")
        finally:
            session.conf.set("spark.sql.sources.partitionOverwriteMode", str(mode))
            session.catalog.dropTempView(view)

    # Volumes -------------------------------------------------------------------

    def _local(self, volume_path: str, *, must_exist_volume: bool = True) -> Path:
        match = _VOLUME_PATH.match(volume_path)
        if not match:
            raise StatementError(
                f"[INVALID_VOLUME_PATH] '{volume_path}' is not /Volumes/<catalog>/<schema>/<volume>/<path>",
                "INVALID_PARAMETER_VALUE",
            )
        catalog, schema, volume, rest = match.groups()
        volume_dir = self.volume_root / catalog.lower() / schema.lower() / volume.lower()
        if must_exist_volume and not volume_dir.is_dir():
            raise StatementError(
                f"NOT_FOUND: Volume '{catalog}.{schema}.{volume}' does not exist (CREATE VOLUME first)",
                "NOT_FOUND",
            )
        parts = [p for p in (rest or "").split("/") if p]
        if any(p in (".", "..") for p in parts):
            raise StatementError(f"[INVALID_VOLUME_PATH] '{volume_path}' leaves its volume")
        return volume_dir.joinpath(*parts)

    def _transfer(self, operation: str, path: Path, overwrite: bool = False) -> str:
        token = uuid.uuid4().hex + uuid.uuid4().hex
        self.transfers[token] = Transfer(operation, path, overwrite, time.monotonic() + TRANSFER_TTL_S)
        return f"{self.base_url}/files/{token}"

    def _staging_row(self, operation: str, local_file: str | None, url: str) -> Result:
        table = pa.table(
            {
                "operation": pa.array([operation], pa.string()),
                "localFile": pa.array([local_file], pa.string()),
                "presignedUrl": pa.array([url], pa.string()),
                "headers": pa.array(["{}"], pa.string()),
            }
        )
        schema = T.StructType([T.StructField(n, T.StringType()) for n in table.column_names])
        return Result(table, _columns(schema), volume_operation=True)

    def _put(self, _session: SparkSession, match: re.Match[str]) -> Result:
        local, remote, overwrite = match.group("local"), match.group("remote"), bool(match.group("overwrite"))
        if not local:
            raise StatementError("[EMPTY_LOCAL_FILE_IN_STAGING_ACCESS_QUERY] The local file path is empty")
        path = self._local(remote)
        if path.exists() and not overwrite:
            raise StatementError(
                f"[FILE_IN_STAGING_PATH_ALREADY_EXISTS] File {remote} already exists; add OVERWRITE",
                "ALREADY_EXISTS",
            )
        return self._staging_row("PUT", local, self._transfer("PUT", path, overwrite))

    def _get(self, _session: SparkSession, match: re.Match[str]) -> Result:
        path = self._local(match.group("remote"))
        return self._staging_row("GET", match.group("local"), self._transfer("GET", path))

    def _remove(self, _session: SparkSession, match: re.Match[str]) -> Result:
        path = self._local(match.group("remote"))
        return self._staging_row("REMOVE", None, self._transfer("REMOVE", path))

    def _list(self, _session: SparkSession, match: re.Match[str]) -> Result:
        """A folder's entries (folders' names end in `/`), with Databricks' columns."""
        remote = match.group("remote").rstrip("/")
        folder = self._local(remote)
        if not folder.is_dir():
            raise StatementError(f"[PATH_NOT_FOUND] Path does not exist: {remote}", "NOT_FOUND")
        entries = sorted(folder.iterdir())
        names = [e.name + ("/" if e.is_dir() else "") for e in entries]
        stats = [e.stat() for e in entries]
        table = pa.table(
            {
                "path": pa.array([f"{remote}/{n}" for n in names], pa.string()),
                "name": pa.array(names, pa.string()),
                "size": pa.array(
                    [0 if e.is_dir() else st.st_size for e, st in zip(entries, stats, strict=True)],
                    pa.int64(),
                ),
                "modification_time": pa.array([int(st.st_mtime * 1000) for st in stats], pa.int64()),
            }
        )
        kinds = (T.StringType(), T.StringType(), T.LongType(), T.LongType())
        schema = T.StructType([T.StructField(n, k) for n, k in zip(table.column_names, kinds, strict=True)])
        return Result(table, _columns(schema))

    def _create_volume(self, session: SparkSession, match: re.Match[str]) -> Result:
        catalog, schema, volume = _parts(match.group("name"), session)
        self._check_catalog(catalog)
        try:
            session.sql(f"DESCRIBE SCHEMA `{catalog}`.`{schema}`").collect()
        except PySparkException as exc:
            raise StatementError(_message(exc), _error_code(exc), _sql_state(exc)) from None
        volume_dir = self.volume_root / catalog.lower() / schema.lower() / volume.lower()
        if volume_dir.exists() and not match.group("if_not_exists"):
            raise StatementError(
                f"[VOLUME_ALREADY_EXISTS] Volume {catalog}.{schema}.{volume} already exists", "ALREADY_EXISTS"
            )
        volume_dir.mkdir(parents=True, exist_ok=True)
        return _empty()

    def _drop_volume(self, session: SparkSession, match: re.Match[str]) -> Result:
        catalog, schema, volume = _parts(match.group("name"), session)
        volume_dir = self.volume_root / catalog.lower() / schema.lower() / volume.lower()
        if not volume_dir.exists() and not match.group("if_exists"):
            raise StatementError(
                f"NOT_FOUND: Volume '{catalog}.{schema}.{volume}' does not exist", "NOT_FOUND"
            )
        shutil.rmtree(volume_dir, ignore_errors=True)
        return _empty()

    def _create_catalog(self, _session: SparkSession, match: re.Match[str]) -> Result:
        name = match.group("name").strip("`")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or name.lower() == "spark_catalog":
            raise StatementError(f"[INVALID_CATALOG_NAME] {name!r} cannot be a local catalog")
        if name.lower() in self.catalogs and not match.group("if_not_exists"):
            raise StatementError(
                f"[CATALOG_ALREADY_EXISTS] Catalog '{name}' already exists", "ALREADY_EXISTS"
            )
        with self.lock:
            self.catalogs.add(name.lower())
            for session in self.sessions.values():
                session.conf.set(f"spark.sql.catalog.{name.lower()}", ALIAS_CLASS)
        return _empty()

    # metadata (what cursor.catalogs() and cursor.tables() send) ----------------

    def _show_catalogs(self, _session: SparkSession, match: re.Match[str]) -> Result:
        names = sorted(n for n in self.catalogs if _like(n, match.group("like")))
        return _strings({"catalog": names})

    def _show_tables(self, session: SparkSession, match: re.Match[str]) -> Result:
        """Databricks' ``SHOW TABLES IN CATALOG c [SCHEMA LIKE p] [LIKE t]`` (or ``IN ALL CATALOGS``)."""
        catalogs = sorted(self.catalogs) if match.group("all") else [match.group("catalog").strip("`")]
        rows: dict[str, list[str | None]] = {
            k: []
            for k in (
                "catalog_name",
                "schema_name",
                "table_name",
                "owner",
                "creation_time",
                "table_type",
                "remarks",
            )
        }
        try:
            for catalog in catalogs:
                self._check_catalog(catalog)
                for (schema,) in session.sql(f"SHOW SCHEMAS IN `{catalog}`").collect():
                    if not _like(schema, match.group("schema")):
                        continue
                    views = {r[1] for r in session.sql(f"SHOW VIEWS IN `{catalog}`.`{schema}`").collect()}
                    for table in session.sql(f"SHOW TABLES IN `{catalog}`.`{schema}`").collect():
                        if table[2] or not _like(table[1], match.group("table")):
                            continue  # temporary views belong to no catalog
                        for key, value in zip(
                            rows,
                            (
                                catalog,
                                schema,
                                table[1],
                                None,
                                None,
                                "VIEW" if table[1] in views else "TABLE",
                                "",
                            ),
                            strict=True,
                        ):
                            rows[key].append(value)
        except PySparkException as exc:
            raise StatementError(_message(exc), _error_code(exc), _sql_state(exc)) from None
        return _strings(rows)

    # COPY INTO -----------------------------------------------------------------

    def _copy_into(self, session: SparkSession, match: re.Match[str]) -> Result:
        target, source, file_format = match.group("target"), match.group("source"), match.group("format")
        options = _copy_clauses(match.group("rest"))
        if source.startswith("s3://"):
            keys = _credential(match.group("credential"))
            files, stamps = self._fetched(source, options.get("files"), keys)
        else:
            files = _copy_files(self._local(source), options.get("files"), options.get("pattern"))
            stamps = {f: (str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files}
        try:
            table = session.table(target)
            key = ".".join(_parts(target, session)).lower()
            done = self.loaded.setdefault(key, set())
            force = options.get("copy_options", {}).get("force", "false").lower() == "true"
            todo = [f for f in files if force or stamps[f] not in done]
            inserted = 0
            if todo:
                reader = session.read.format(file_format.lower()).options(**options.get("format_options", {}))
                df = reader.load([str(f) for f in todo])
                merge = options.get("copy_options", {}).get("mergeschema", "false").lower() == "true"
                df = self._align(session, target, table.schema, df, merge)
                inserted = df.count()
                # SQL, not DataFrameWriter.insertInto: that turns census.census.t into the two-part
                # census.t, which the catalog named census then shadows.
                view = f"_synclog_copy_{uuid.uuid4().hex}"
                df.createOrReplaceTempView(view)
                try:
                    session.sql(f"INSERT INTO {target} SELECT * FROM {view}")
                finally:
                    session.catalog.dropTempView(view)
                done.update(stamps[f] for f in todo)
        except PySparkException as exc:
            raise StatementError(_message(exc), _error_code(exc), _sql_state(exc)) from None
        finally:
            if source.startswith("s3://"):
                shutil.rmtree(self._fetch_root, ignore_errors=True)
        result = pa.table(
            {
                "num_affected_rows": pa.array([inserted], pa.int64()),
                "num_inserted_rows": pa.array([inserted], pa.int64()),
                "num_skipped_corrupt_files": pa.array([0], pa.int64()),
            }
        )
        schema = T.StructType([T.StructField(n, T.LongType()) for n in result.column_names])
        return Result(result, _columns(schema))

    @property
    def _fetch_root(self) -> Path:
        """Where this thread's COPY from S3 keeps its copies while it reads them (outside the volumes)."""
        return self.volume_root.parent / "fetched" / str(threading.get_ident())

    def _fetched(
        self, source: str, files: list[str] | None, keys: dict[str, str]
    ) -> tuple[list[Path], dict[Path, tuple[str, int, int]]]:
        """The named files under `s3://…` `source`, copied from S3 into a folder of this server
        (as a warehouse reads them), each stamped with its URL and size. FILES is required."""
        if files is None:
            raise StatementError("[UNSUPPORTED_COPY_INTO] the stand-in reads s3:// with FILES = (…) only")
        s3 = pafs.S3FileSystem(
            access_key=keys.get("AWS_ACCESS_KEY", os.environ.get("AWS_ACCESS_KEY_ID")),
            secret_key=keys.get("AWS_SECRET_KEY", os.environ.get("AWS_SECRET_ACCESS_KEY")),
            session_token=keys.get("AWS_SESSION_TOKEN"),
            region=os.environ.get("AWS_REGION", "us-east-1"),
            endpoint_override=os.environ.get("AWS_ENDPOINT_URL"),
        )
        folder = self._fetch_root
        shutil.rmtree(folder, ignore_errors=True)  # what a COPY that failed to fetch left
        folder.mkdir(parents=True)
        fetched, stamps = [], {}
        for name in files:
            path = source.removeprefix("s3://").rstrip("/") + "/" + name
            local = folder / f"{len(fetched):05d}.parquet"
            try:
                pafs.copy_files(path, str(local), source_filesystem=s3)
            except OSError as exc:
                raise StatementError(f"[PATH_NOT_FOUND] s3://{path}: {exc}", "NOT_FOUND", "42K03") from None
            fetched.append(local)
            stamps[local] = (f"s3://{path}", local.stat().st_size, 0)
        return fetched, stamps

    def _align(
        self, session: SparkSession, target: str, schema: T.StructType, df: DataFrame, merge: bool
    ) -> DataFrame:
        """The files' columns by name in the table's order and types (COPY INTO matches by name)."""
        by_name = {c.lower(): c for c in df.columns}
        known = {f.name.lower() for f in schema.fields}
        extra = [c for c in df.columns if c.lower() not in known]
        if extra and merge:
            added = ", ".join(f"`{c}` {df.schema[c].dataType.simpleString()}" for c in extra)
            session.sql(f"ALTER TABLE {target} ADD COLUMNS ({added})")
            schema = session.table(target).schema
        return df.select(
            *[
                (F.col(f"`{by_name[f.name.lower()]}`") if f.name.lower() in by_name else F.lit(None))
                .cast(f.dataType)
                .alias(f.name)
                for f in schema.fields
            ]
        )


# --------------------------------------------------------------------------- SQL shapes

_FLAGS = re.IGNORECASE | re.DOTALL
_PUT = re.compile(
    r"PUT\s+'(?P<local>[^']*)'\s+INTO\s+'(?P<remote>[^']+)'(?P<overwrite>\s+OVERWRITE)?\s*$", _FLAGS
)
_GET = re.compile(r"GET\s+'(?P<remote>[^']+)'\s+TO\s+'(?P<local>[^']*)'\s*$", _FLAGS)
_REMOVE = re.compile(r"REMOVE\s+'(?P<remote>[^']+)'\s*$", _FLAGS)
_LIST = re.compile(r"LIST\s+'(?P<remote>[^']+)'\s*$", _FLAGS)
_CREATE_CATALOG = re.compile(
    rf"CREATE\s+CATALOG\s+(?P<if_not_exists>IF\s+NOT\s+EXISTS\s+)?(?P<name>{_IDENT})\b", _FLAGS
)
_CREATE_VOLUME = re.compile(
    rf"CREATE\s+(?:EXTERNAL\s+)?VOLUME\s+(?P<if_not_exists>IF\s+NOT\s+EXISTS\s+)?(?P<name>{_NAME3})", _FLAGS
)
_DROP_VOLUME = re.compile(rf"DROP\s+VOLUME\s+(?P<if_exists>IF\s+EXISTS\s+)?(?P<name>{_NAME3})\s*$", _FLAGS)
_COPY_INTO = re.compile(
    rf"COPY\s+INTO\s+(?P<target>{_NAME3})\s+FROM\s+'(?P<source>[^']+)'"
    r"(?:\s+WITH\s*\(\s*CREDENTIAL\s*\((?P<credential>[^)]*)\)\s*\))?"
    rf"\s+FILEFORMAT\s*=\s*(?P<format>\w+)(?P<rest>.*)$",
    _FLAGS,
)
_SHOW_CATALOGS = re.compile(r"SHOW\s+CATALOGS(?:\s+LIKE\s+'(?P<like>[^']*)')?\s*$", _FLAGS)
_SHOW_TABLES_IN_CATALOG = re.compile(
    rf"SHOW\s+TABLES\s+IN\s+(?:(?P<all>ALL\s+CATALOGS)|CATALOG\s+(?P<catalog>{_IDENT}))"
    r"(?:\s+SCHEMA\s+LIKE\s+'(?P<schema>[^']*)')?(?:\s+LIKE\s+'(?P<table>[^']*)')?\s*$",
    _FLAGS,
)
_USE_CATALOG = re.compile(rf"USE\s+CATALOG\s+(?P<name>{_IDENT})\s*$", _FLAGS)
_DELETE = re.compile(
    rf"DELETE\s+FROM\s+(?P<name>{_NAME3})(?:\s+(?:AS\s+)?(?!WHERE\b)(?P<alias>{_IDENT}))?"
    r"(?:\s+WHERE\s+(?P<cond>.+))?$",
    _FLAGS,
)
_MERGE_HEAD = re.compile(
    rf"MERGE\s+INTO\s+(?P<target>{_NAME3})(?:\s+(?:AS\s+)?(?!USING\b)(?P<alias>{_IDENT}))?\s+USING\b", _FLAGS
)
_NO_WHEN = r"(?:(?!\bWHEN\b).)+?"  # text without another WHEN clause in it
_MERGE_TAIL = re.compile(
    rf"(?:\s+(?:AS\s+)?(?!ON\b)(?P<alias>{_IDENT}))?\s+ON\s+(?P<on>{_NO_WHEN})"
    rf"(?P<delete>\s+WHEN\s+MATCHED(?:\s+AND\s+(?P<delete_and>{_NO_WHEN}))?\s+THEN\s+DELETE)?"
    rf"(?P<insert>\s+WHEN\s+NOT\s+MATCHED(?:\s+BY\s+TARGET)?(?:\s+AND\s+(?P<and>{_NO_WHEN}))?"
    r"\s+THEN\s+INSERT\s*(?:\*|\((?P<columns>[^)]*)\)\s*VALUES\s*\((?P<values>.*)\)))?\s*$",
    _FLAGS,
)
_MERGE_PARTS = ("source", "on", "delete_and", "and", "values")
"""The parts of an emulated MERGE that may hold parameter markers, in the order they come."""
_CREATE_OR_REPLACE_TABLE = re.compile(rf"CREATE\s+OR\s+REPLACE\s+TABLE\s+(?P<name>{_NAME3})", _FLAGS)
_CREATE_TABLE = re.compile(r"(CREATE|REPLACE|CREATE\s+OR\s+REPLACE)\s+TABLE\b", _FLAGS)
_QUOTED = r"'((?:[^']|'')*)'"


def _strip(sql: str) -> str:
    """The statement without leading comments, surrounding blanks and a trailing semicolon."""
    text = sql.strip()
    while text.startswith("--") or text.startswith("/*"):
        text = text.split("\n", 1)[1].strip() if text.startswith("--") else text.split("*/", 1)[1].strip()
    return text.rstrip(";").rstrip()


def _parts(name: str, session: SparkSession) -> tuple[str, str, str]:
    """``catalog.schema.object`` of a (possibly shorter) name, filled in from the session."""
    parts = [p.strip().strip("`") for p in re.findall(_IDENT, name)]
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    current = session.sql("SELECT current_catalog(), current_schema()").first()
    assert current is not None
    if len(parts) == 2:
        return str(current[0]), parts[0], parts[1]
    return str(current[0]), str(current[1]), parts[0]


def _copy_clauses(rest: str) -> dict[str, Any]:
    """FILES, PATTERN, FORMAT_OPTIONS and COPY_OPTIONS of a COPY INTO; anything else is refused."""
    options: dict[str, Any] = {}
    text = rest.strip()
    clauses = [
        ("files", re.compile(r"FILES\s*=\s*\((?P<body>[^)]*)\)", _FLAGS)),
        ("pattern", re.compile(rf"PATTERN\s*=\s*{_QUOTED}", _FLAGS)),
        ("format_options", re.compile(r"FORMAT_OPTIONS\s*\((?P<body>[^)]*)\)", _FLAGS)),
        ("copy_options", re.compile(r"COPY_OPTIONS\s*\((?P<body>[^)]*)\)", _FLAGS)),
    ]
    while text:
        for name, pattern in clauses:
            match = pattern.match(text)
            if match:
                if name == "files":
                    options[name] = [v.replace("''", "'") for v in re.findall(_QUOTED, match.group("body"))]
                elif name == "pattern":
                    options[name] = match.group(1).replace("''", "'")
                else:
                    pairs = re.findall(rf"{_QUOTED}\s*=\s*{_QUOTED}", match.group("body"))
                    options[name] = {k.lower() if name == "copy_options" else k: v for k, v in pairs}
                text = text[match.end() :].strip()
                break
        else:
            raise StatementError(
                f"[UNSUPPORTED_COPY_INTO] the local stand-in does not understand COPY INTO … {text[:80]!r}; "
                "it takes FILES, PATTERN, FORMAT_OPTIONS and COPY_OPTIONS",
                "NOT_IMPLEMENTED",
            )
    return options


def _credential(text: str | None) -> dict[str, str]:
    """`AWS_ACCESS_KEY = '…', AWS_SECRET_KEY = '…'` of a COPY's CREDENTIAL, by name."""
    return {k.upper(): v for k, v in re.findall(rf"(\w+)\s*=\s*{_QUOTED}", text or "")}


def _copy_files(root: Path, files: list[str] | None, pattern: str | None) -> list[Path]:
    if files is not None:
        chosen = [root.joinpath(*[p for p in f.split("/") if p]) for f in files]
        missing = [str(f) for f in chosen if not f.is_file()]
        if missing:
            raise StatementError(f"[PATH_NOT_FOUND] Path does not exist: {missing[0]}", "NOT_FOUND", "42K03")
        return chosen
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise StatementError(f"[PATH_NOT_FOUND] Path does not exist: {root}", "NOT_FOUND", "42K03")
    found = [
        p
        for p in sorted(root.rglob("*"))
        if p.is_file() and not any(part.startswith(("_", ".")) for part in p.relative_to(root).parts)
    ]
    if pattern:
        found = [p for p in found if fnmatch.fnmatchcase(p.relative_to(root).as_posix(), pattern)]
    return found


def _args(params: list[dict[str, Any]]) -> dict[str, Any] | list[Any] | None:
    if not params:
        return None
    if all(p.get("name") for p in params):
        return {str(p["name"]): _literal(p) for p in params}
    return [_literal(p) for p in params]  # positional ? markers


def _unsupported_table_operation(exc: PySparkException) -> bool:
    try:
        condition = exc.getCondition() or ""
    except Exception:  # no error class
        return False
    return condition.startswith("UNSUPPORTED_FEATURE.TABLE_OPERATION")


def _emulated_merge(text: str) -> dict[str, str | None] | None:
    """The parts of ``MERGE INTO t USING s ON c [WHEN MATCHED [AND x] THEN DELETE]
    [WHEN NOT MATCHED [AND y] THEN INSERT …]`` (at least one clause), else None."""
    head = _MERGE_HEAD.match(text)
    if not head:
        return None
    rest = text[head.end() :].lstrip()
    if rest.startswith("("):  # a subquery: find its closing parenthesis, minding quotes
        depth, quote, end = 0, "", -1
        for i, char in enumerate(rest):
            if quote:
                quote = "" if char == quote else quote
            elif char in "'\"`":
                quote = char
            elif char == "(":
                depth += 1
            elif char == ")":
                depth -= 1
                if depth == 0:
                    end = i + 1
                    break
        if end < 0:
            return None
        source, rest = rest[:end], rest[end:]
    else:
        name = re.match(_NAME3, rest)
        if not name:
            return None
        source, rest = name.group(0), rest[name.end() :]
    tail = _MERGE_TAIL.match(rest)
    if not tail or not (tail.group("delete") or tail.group("insert")):
        return None
    return {
        "target": head.group("target"),
        "target_alias": head.group("alias"),
        "source": source,
        "source_alias": tail.group("alias"),
        **{name: tail.group(name) for name in ("on", "delete", "delete_and", "insert", "and")},
        **{name: tail.group(name) for name in ("columns", "values")},
    }


def _markers(text: str) -> int:
    """How many positional ``?`` markers `text` holds outside quotes."""
    count, quote = 0, ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"`":
            quote = char
        elif char == "?":
            count += 1
    return count


def _split_args(args: Any, texts: list[str | None]) -> list[Any]:
    """Positional `args` cut into each of `texts`' share (by its markers); named ones go to each."""
    if not isinstance(args, list):
        return [args] * len(texts)
    shares, at = [], 0
    for text in texts:
        count = _markers(text or "")
        shares.append(args[at : at + count])
        at += count
    return shares


def _joined(*shares: Any) -> Any:
    """The arguments of a query made of parts with these shares, in that order."""
    if any(isinstance(share, list) for share in shares):
        return [arg for share in shares for arg in share] or None
    return shares[0]


def _longs(values: dict[str, int]) -> Result:
    table = pa.table({name: pa.array([value], pa.int64()) for name, value in values.items()})
    schema = T.StructType([T.StructField(name, T.LongType()) for name in values])
    return Result(table, _columns(schema))


def _like(name: str, pattern: str | None) -> bool:
    """Databricks' LIKE of SHOW commands (``*`` and ``%`` any text, ``|`` alternatives), case-insensitive."""
    if not pattern:
        return True
    options = pattern.lower().replace("%", "*").split("|")
    return any(fnmatch.fnmatchcase(name.lower(), option.strip()) for option in options)


def _strings(columns: dict[str, list[str | None]]) -> Result:
    table = pa.table({name: pa.array(values, pa.string()) for name, values in columns.items()})
    schema = T.StructType([T.StructField(name, T.StringType()) for name in columns])
    return Result(table, _columns(schema))


def _to_result(df: DataFrame) -> Result:
    if not df.schema.fields:
        return _empty()
    return Result(_variants_as_json(df).toArrow(), _columns(df.schema))


def _variants_as_json(df: DataFrame) -> DataFrame:
    """VARIANT columns as JSON text: Databricks sends them so (type name VARIANT, Arrow strings)."""
    kinds = [field.dataType for field in df.schema.fields]
    if not any(isinstance(kind, T.VariantType) for kind in kinds):
        return df
    names = df.columns  # may repeat a name: the columns are picked by position
    numbered = df.toDF(*[f"_{i}" for i in range(len(names))])
    return numbered.select(
        *[
            (F.to_json(F.col(f"_{i}")) if isinstance(kind, T.VariantType) else F.col(f"_{i}")).alias(name)
            for i, (name, kind) in enumerate(zip(names, kinds, strict=True))
        ]
    )


def _empty() -> Result:
    return Result(pa.table({}), [])


def _message(exc: PySparkException) -> str:
    text = str(exc).strip()
    text = text.split("\nJVM stacktrace:")[0]
    text = re.split(r"\n(?='|\+-|:)", text)[0]  # drop the analyzed plan Spark appends
    return text.strip().rstrip(";")


def _sql_state(exc: PySparkException) -> str | None:
    try:
        return exc.getSqlState()
    except Exception:  # an exception without error class
        return None


def _error_code(exc: PySparkException) -> str:
    state = _sql_state(exc) or ""
    return "INTERNAL_ERROR" if state.startswith("XX") else "BAD_REQUEST"
